// Exercise 04.1 - The repetition penalty, sign-aware.       Chapter 04: penalties
//
// Contract: for each DISTINCT id in `seen` (once, however often it appears), change its logit so
// that, for theta > 1, the token always gets LESS likely, whatever the sign of its logit, as
// Hugging Face's RepetitionPenaltyLogitsProcessor does (vLLM and llama.cpp agree). Chapter 04's
// page explains why CTRL's plain division is not enough. Other logits are unchanged.
// Tests (./grade 04): logits [-2, 2, 0, 5], seen {0, 1, 2, 1, 1}, theta 1.5 -> [-3, 1.333, 0, 5];
// the reference's greedy run with repetition_penalty on the model, token for token.
// Do not call decodebook::apply_repetition_penalty: that is the answer.
#include "decodebook/exercises.hpp"

#include <set>

namespace decodebook {

void your_apply_repetition_penalty(xt::xtensor<float, 1>& logits, const std::vector<int>& seen, float theta) {
    // TODO: penalise each distinct seen token, as the contract above says.
    (void)logits, (void)seen, (void)theta;
    throw NotImplemented("04.1 (your_apply_repetition_penalty)", "exercises/04-penalties/repetition.cpp");
}

}  // namespace decodebook
