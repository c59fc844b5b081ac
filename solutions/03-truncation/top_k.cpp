// Solution 03.1 - Top-k.                                    Chapter 03: truncation
#include "decodebook/exercises.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace decodebook {

void your_apply_top_k(xt::xtensor<float, 1>& logits, int k, int min_keep) {
    if (k <= 0) return;
    const size_t keep = std::min(static_cast<size_t>(std::max(k, min_keep)), logits.size());
    std::vector<float> sorted(logits.begin(), logits.end());
    std::partial_sort(sorted.begin(), sorted.begin() + static_cast<long>(keep), sorted.end(), std::greater<>());
    const float kth = sorted[keep - 1];
    for (float& z : logits)
        if (z < kth) z = -INFINITY;
}

}  // namespace decodebook
