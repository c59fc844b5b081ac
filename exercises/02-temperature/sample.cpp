// Exercise 02.3 - Inverse-CDF sampling.                     Chapter 02: temperature and sampling
//
// Draw a token from `probs` with one coin in [0, 1):
//   1. the candidates are the ids with probability > 0, ordered by probability (largest first)
//      and then by id (smallest first) -- decodebook::candidate_order gives you that order;
//   2. total = the sum of their probabilities (they need not add up to exactly 1);
//   3. walk them in order, adding up probability in a double; return the first id whose running
//      sum is GREATER than coin * total; if rounding lets you reach the end, return the last one.
//
//   probs [0.25, 0.5, 0.25]: order 1, 0, 2; running sums 0.5, 0.75, 1.0
//   coin 0.3 -> 1      coin 0.5 -> 0      coin 0.9 -> 2
//
// Do not call decodebook::sample_inverse_cdf: that is the answer.
// Graded by: ./grade 02
#include "decodebook/exercises.hpp"

#include "decodebook/sampling.hpp"

namespace decodebook {

int your_sample_inverse_cdf(const xt::xtensor<float, 1>& probs, double coin) {
    // TODO: walk candidate_order(probs), return the first id whose running sum exceeds coin * total.
    (void)probs, (void)coin;
    throw NotImplemented("02.3 (your_sample_inverse_cdf)", "exercises/02-temperature/sample.cpp");
}

}  // namespace decodebook
