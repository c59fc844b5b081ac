// Exercise 03.3 - Min-p.                                    Chapter 03: truncation
//
// Return, for each token, whether min-p keeps it: keep p_i >= min_p * p_max, where p_max is the
// largest probability, plus (whatever their probability) the first min_keep tokens in candidate
// order. Tokens with probability 0 are never kept.
//
//   probs [0.5, 0.3, 0.1, 0.1], min_p 0.25 -> threshold 0.125 -> keep ids 0, 1
//   probs [0.5, 0.3, 0.1, 0.1], min_p 1.0, min_keep 2 -> keep ids 0, 1
//
// Unlike top-p, min-p scales with the model's confidence: a peaked step keeps few tokens, a
// flat step many. Do not call decodebook::min_p_keep: that is the answer.
// Graded by: ./grade 03
#include "decodebook/exercises.hpp"

#include "decodebook/sampling.hpp"

namespace decodebook {

std::vector<bool> your_min_p_keep(const xt::xtensor<float, 1>& probs, double min_p, int min_keep) {
    // TODO: keep tokens at or above min_p * (the largest probability), and the first min_keep.
    (void)probs, (void)min_p, (void)min_keep;
    throw NotImplemented("03.3 (your_min_p_keep)", "exercises/03-truncation/min_p.cpp");
}

}  // namespace decodebook
