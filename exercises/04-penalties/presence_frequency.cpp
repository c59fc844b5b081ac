// Exercise 04.2 - Presence and frequency penalties.         Chapter 04: penalties
//
// Contract: OpenAI's additive penalties with vLLM's scope (`output`: the generated tokens only).
// A token that appears c > 0 times in `output` loses presence once plus frequency per
// occurrence (chapter 04's page has the formula); other logits are unchanged.
// Tests (./grade 04): logits [1, 1, 1], output {0, 0, 0, 2}, presence 0.5, frequency 0.25 ->
// [-0.25, 1, 0.25]; the reference's greedy run with both penalties on the model, token for token.
// Do not call decodebook::apply_presence_frequency: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_presence_frequency(xt::xtensor<float, 1>& logits, const std::vector<int>& output, float presence,
                              float frequency) {
    // TODO: subtract the penalties, as the contract above says.
    (void)logits, (void)output, (void)presence, (void)frequency;
    throw NotImplemented("04.2 (your_apply_presence_frequency)", "exercises/04-penalties/presence_frequency.cpp");
}

}  // namespace decodebook
