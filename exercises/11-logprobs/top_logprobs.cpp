// Exercise 11.1 - The top K entries with the sampled token appended.    Chapter 11: logprobs
//
// An API that returns `logprobs` reports, for each generated token, the K most likely
// alternatives and the token it actually chose. Return the entries {token, value, rank} of one
// step, as vLLM's gather_logprobs and OpenAI's `top_logprobs` give them:
//   - First the K largest `values`, largest first; equal values the lower id first. They are
//     ranked 1, 2, ..., K in that order. When K exceeds the vocabulary, every token is listed.
//   - Then the sampled token, only when it is not among those K. Its rank is how many values are
//     >= its own (vLLM's batched_count_greater_than): itself included, and a tie counts against
//     it. So the result has K entries, or K + 1.
//   - K = 0 gives the sampled token alone, with its rank.
//   - An entry's value is values(token), as given: -inf (a token the chain removed) is a value
//     like any other, the smallest, and -inf >= -inf.
//   - Throw decodebook::Error (problem, fix) when k is outside 0..20 (kMaxLogprobs) or
//     `sampled` is outside 0..V-1.
//
//   values [-2.0, -0.5, -1.0, -0.5, -3.0] (ids 0..4): by value, then id: 1, 3, 2, 0, 4
//     k 2, sampled 3: the top 2 hold it       -> [(1, -0.5, 1), (3, -0.5, 2)]
//     k 2, sampled 2: outside the top 2; 3 values are >= -1.0
//                                              -> [(1, -0.5, 1), (3, -0.5, 2), (2, -1.0, 3)]
//     k 1, sampled 3: outside the top 1 (id 1 wins the tie); 2 values are >= -0.5
//                                              -> [(1, -0.5, 1), (3, -0.5, 2)]
//     k 0, sampled 4: all 5 values are >= -3.0 -> [(4, -3.0, 5)]
//   values [0, -inf, -1, -inf], k 3, sampled 3: the top 3 are 0, 2, then 1 (-inf, the lower id);
//     every value is >= -inf               -> [(0, 0, 1), (2, -1, 2), (1, -inf, 3), (3, -inf, 4)]
//
// Tested by: "ex11.1 ..." in tests/exercises/test_11_logprobs.cpp (the cases above and more:
// ties at the K-th place, -inf, K + 1, K = 0, K beyond the vocabulary, vLLM's own facts, the
// float64 reference's prompt logprobs, bad k and sampled ids).
// Do not call decodebook::top_logprobs or decodebook::logprob_rank: they are the answer.
// Graded by: ./grade 11
#include <algorithm>
#include <numeric>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<LogprobEntry> your_top_logprobs(const xt::xtensor<float, 1>& values, int k, int sampled) {
    // TODO: check k and sampled; order the ids by value (ties: the lower id first) and take the
    // first k, ranked 1..k; append the sampled token, ranked by how many values are >= its own,
    // when it is not among them.
    (void)values, (void)k, (void)sampled;
    throw NotImplemented("11.1 (your_top_logprobs)", "exercises/11-logprobs/top_logprobs.cpp");
}

}  // namespace decodebook
