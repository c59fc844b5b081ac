// Exercise 04.2 - Presence and frequency penalties.         Chapter 04: penalties
//
// OpenAI's additive penalties (vLLM applies them to the generated tokens only). For each
// token t that appears c_t > 0 times in `output`:
//     z_t -= frequency * c_t + presence
// Presence is a flat fee for having appeared at all; frequency grows with every repeat.
//
//   logits [1, 1, 1], output {0, 0, 0, 2}, presence 0.5, frequency 0.25
//     -> [1 - 0.5 - 0.75, 1, 1 - 0.5 - 0.25] = [-0.25, 1, 0.25]
//
// Do not call decodebook::apply_presence_frequency: that is the answer.
// Graded by: ./grade 04
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_presence_frequency(xt::xtensor<float, 1>& logits, const std::vector<int>& output, float presence,
                              float frequency) {
    // TODO: count each id in output, then subtract frequency * count + presence from its logit.
    (void)logits, (void)output, (void)presence, (void)frequency;
    throw NotImplemented("04.2 (your_apply_presence_frequency)", "exercises/04-penalties/presence_frequency.cpp");
}

}  // namespace decodebook
