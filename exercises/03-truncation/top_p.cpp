// Exercise 03.2 - Top-p (nucleus), as Hugging Face computes it.      Chapter 03: truncation
//
// Contract: return one flag per token of `probs`, true where top-p keeps the token.
//   - The idea: keep the smallest set of likeliest tokens whose mass reaches p. The token that
//     crosses p is kept. Likeliest means decodebook::candidate_order (probability desc, id asc).
//   - At the boundary (the mass lands on p, or within a float32 step of it) decide exactly as
//     Hugging Face's TopPLogitsWarper does; chapter 03's page shows its arithmetic and why the
//     obvious walk from the top disagrees with it by one token.
//   - The max(1, min_keep) likeliest tokens always stay; a token with probability 0 never does.
//   - p = 0 keeps max(1, min_keep) tokens; p = 1 keeps every token with probability > 0.
// Tests (./grade 03): probs [0.5, 0.3, 0.1, 0.1] at p = 0.79, 0.8, 0.81 and 0.5; HF's own test
// case (probs [0.29999998, 0.099999994, 0.099999994, 0.5], p = 0.8 keeps ids 0 and 3); p = 0,
// p = 1 and min_keep; every case of tests/data/top_p_rules.json (HF's column); the reference's
// candidate sets on the model.
// Do not call decodebook::top_p_keep: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<bool> your_top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep) {
    // TODO: one flag per token, as the contract above says.
    (void)probs, (void)p, (void)min_keep;
    throw NotImplemented("03.2 (your_top_p_keep)", "exercises/03-truncation/top_p.cpp");
}

}  // namespace decodebook
