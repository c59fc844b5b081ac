// Exercise 03.3 - Min-p.                                    Chapter 03: truncation
//
// Contract: one flag per token of `probs`, true where min-p keeps it: a token is kept when its
// probability is at least min_p times the largest probability (ties at the threshold are kept),
// and the min_keep likeliest tokens (decodebook::candidate_order) are kept whatever their
// probability. A token with probability 0 is never kept.
// Tests (./grade 03): probs [0.5, 0.3, 0.1, 0.1, 0] at min_p 0.25, 0.7, 0.2 (a tie at the
// threshold) and 1.0 with min_keep 2; the reference's candidate sets on the model.
// Do not call decodebook::min_p_keep: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<bool> your_min_p_keep(const xt::xtensor<float, 1>& probs, double min_p, int min_keep) {
    // TODO: one flag per token, as the contract above says.
    (void)probs, (void)min_p, (void)min_keep;
    throw NotImplemented("03.3 (your_min_p_keep)", "exercises/03-truncation/min_p.cpp");
}

}  // namespace decodebook
