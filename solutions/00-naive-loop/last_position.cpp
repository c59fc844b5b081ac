// Solution 00.1 - Take the last position's logits.          Chapter 00: the naive decode loop
#include "decodebook/exercises.hpp"

#include <xtensor/xview.hpp>

namespace decodebook {

xt::xtensor<float, 1> your_last_position_logits(const xt::xtensor<float, 2>& logits) {
    const size_t T = logits.shape(0);
    // Assigning the view to an xtensor copies the row, so the result outlives `logits`.
    return xt::view(logits, T - 1, xt::all());
}

}  // namespace decodebook
