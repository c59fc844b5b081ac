// Exercise 08.2 - Prompt lookup, Hugging Face's rule.              Chapter 08: speculative decoding
//
// A drafter without a model: the text often repeats itself (code, quotes, a list), so look for the
// sequence's last few tokens earlier in it and propose what followed them there. Hugging Face's
// PromptLookupCandidateGenerator, on `sequence` (prompt and generated tokens, length L):
//   for n from min(max_ngram, L - 1) down to 1:
//     the leftmost start i with sequence[i .. i+n) equal to the last n tokens and i + n < L
//     (the suffix itself has nothing after it);
//     the first such match decides: return sequence[i+n ..], at most num_tokens tokens (never past
//     the end), cut before the first token that is one of eos_ids - even when the cut leaves
//     nothing (no other match, no shorter n, is tried then).
//   nothing matched for any n: return {}.
//
//   [1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3], max_ngram 2, num_tokens 2: the last 2 tokens [2, 3]
//     occur at 1, 5 and 9 (the suffix itself); the leftmost, at 1, is followed by 100, 1 -> [100, 1]
//   [1, 3, 6, 2, 3, 4, 1, 2, 3], max_ngram 2, num_tokens 3: [2, 3] at 3                 -> [4, 1, 2]
//                                max_ngram 1, num_tokens 2: [3] at 1                    -> [6, 2]
//   [5, 51, 0, 7, 51], max_ngram 1, num_tokens 3, eos_ids {0}: [51] at 1, then [0, 7, 51]
//     is cut before the EOS 0                                                           -> []
//   [7, 7], max_ngram 3, num_tokens 4: n = min(3, 1) = 1, [7] at 0                      -> [7]
//   [1, 2, 3, 4, 5]: no earlier [4, 5], no earlier [5]                                  -> []
//
// Tested by: "ex08.2 ..." in tests/exercises/test_08_speculative.cpp (Hugging Face's
// test_prompt_lookup_decoding_stops_at_eos, vLLM's n-gram cases where the two rules agree, the
// leftmost match against a later one with a longer continuation, the first match deciding, n
// tried from the longest down, short sequences).
// Do not call decodebook::prompt_lookup_hf (or prompt_lookup_vllm): it is the answer.
// Graded by: ./grade 08
#include <algorithm>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_prompt_lookup(std::span<const int> sequence, int max_ngram, int num_tokens,
                                    std::span<const int> eos_ids) {
    // TODO: try n from min(max_ngram, L - 1) down to 1; at the first (leftmost) match, return what
    // follows it, at most num_tokens, stopping before an EOS.
    (void)sequence, (void)max_ngram, (void)num_tokens, (void)eos_ids;
    throw NotImplemented("08.2 (your_prompt_lookup)", "exercises/08-speculative/prompt_lookup.cpp");
}

}  // namespace decodebook
