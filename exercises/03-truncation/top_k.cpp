// Exercise 03.1 - Top-k.                                    Chapter 03: truncation
//
// Contract: top-k with Hugging Face's rules, in place (a removed token's logit becomes -inf):
//   - keep the max(k, min_keep) largest logits (never more than the vocabulary);
//   - every token TIED with the last one kept is kept too (so more than k may survive);
//   - k = 0 changes nothing.
// Tests (./grade 03): [1, 3, 3, 2] k 2 -> [-inf, 3, 3, -inf]; [5, 4, 4, 4, 1] k 2 ->
// [5, 4, 4, 4, -inf]; [1, 2, 3, 4] k 1 with min_keep 3 -> [-inf, 2, 3, 4]; k = 0; k > V; the
// reference's candidate sets on the model. Do not call decodebook::apply_top_k: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_top_k(xt::xtensor<float, 1>& logits, int k, int min_keep) {
    // TODO: top-k with ties, as the contract above says.
    (void)logits, (void)k, (void)min_keep;
    throw NotImplemented("03.1 (your_apply_top_k)", "exercises/03-truncation/top_k.cpp");
}

}  // namespace decodebook
