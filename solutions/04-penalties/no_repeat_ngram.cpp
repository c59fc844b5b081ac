// Solution 04.3 - No-repeat-ngram.                          Chapter 04: penalties
#include "decodebook/exercises.hpp"

#include <algorithm>
#include <cmath>

namespace decodebook {

void your_apply_no_repeat_ngram(xt::xtensor<float, 1>& logits, const std::vector<int>& sequence, int n) {
    if (n <= 0 || sequence.size() + 1 < static_cast<size_t>(n)) return;
    const size_t prefix = static_cast<size_t>(n) - 1;
    const auto tail = sequence.end() - static_cast<long>(prefix);
    for (size_t i = 0; i + prefix < sequence.size(); ++i) {
        const auto start = sequence.begin() + static_cast<long>(i);
        if (std::equal(start, start + static_cast<long>(prefix), tail)) logits(static_cast<size_t>(sequence[i + prefix])) = -INFINITY;
    }
}

}  // namespace decodebook
