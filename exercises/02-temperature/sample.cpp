// Exercise 02.3 - Inverse-CDF sampling.                     Chapter 02: temperature and sampling
//
// Contract: return the token that inverse-CDF sampling with this coin in [0, 1) draws from
// `probs`, exactly as decodebook does it (chapter 02's page): the candidates are the ids with
// probability > 0 in decodebook::candidate_order (probability desc, id asc); `probs` need not
// sum to exactly 1; a coin that rounding carries past the end gives the last candidate.
// Tests (./grade 02): probs [0.25, 0.5, 0.25, 0] at coins 0, 0.3, 0.5, 0.74, 0.75, 0.99 (ids 1,
// 1, 0, 0, 2, 2); probs [0.5, 1.5] that do not sum to 1; the reference's seeded draws on the model.
// Do not call decodebook::sample_inverse_cdf: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

int your_sample_inverse_cdf(const xt::xtensor<float, 1>& probs, double coin) {
    // TODO: the token this coin draws, as the contract above says.
    (void)probs, (void)coin;
    throw NotImplemented("02.3 (your_sample_inverse_cdf)", "exercises/02-temperature/sample.cpp");
}

}  // namespace decodebook
