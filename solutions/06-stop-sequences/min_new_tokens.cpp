// Solution 06.2 - min_new_tokens.
#include <cmath>

#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_min_new_tokens(xt::xtensor<float, 1>& logits, const std::vector<int>& eos_ids, int generated_count,
                               int min_new_tokens) {
    if (generated_count >= min_new_tokens) return;
    for (int id : eos_ids)
        if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits(static_cast<size_t>(id)) = -INFINITY;
}

}  // namespace decodebook
