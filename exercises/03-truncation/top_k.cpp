// Exercise 03.1 - Top-k.                                    Chapter 03: truncation
//
// Keep the k largest logits and remove the rest (set them to -infinity), in place, with
// Hugging Face's rules:
//   - keep = max(k, min_keep), and never more than the vocabulary;
//   - find the keep-th largest value; remove every logit STRICTLY smaller than it, so tokens
//     tied with it all survive (more than k may be kept);
//   - k = 0 disables top-k (change nothing).
//
//   [1, 3, 3, 2], k = 2          -> [-inf, 3, 3, -inf]
//   [5, 4, 4, 4, 1], k = 2       -> [5, 4, 4, 4, -inf]      (ties with the 2nd value kept)
//   [1, 2, 3, 4], k = 1, keep 3  -> [-inf, 2, 3, 4]
//
// std::nth_element or std::partial_sort on a copy finds the k-th value.
// Do not call decodebook::apply_top_k: that is the answer.
// Graded by: ./grade 03
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_top_k(xt::xtensor<float, 1>& logits, int k, int min_keep) {
    // TODO: find the keep-th largest logit and set everything below it to -infinity.
    (void)logits, (void)k, (void)min_keep;
    throw NotImplemented("03.1 (your_apply_top_k)", "exercises/03-truncation/top_k.cpp");
}

}  // namespace decodebook
