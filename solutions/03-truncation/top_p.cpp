// Solution 03.2 - Top-p (nucleus), as Hugging Face computes it.      Chapter 03: truncation
#include "decodebook/exercises.hpp"

#include <algorithm>

namespace decodebook {

std::vector<bool> your_top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep) {
    std::vector<bool> keep(probs.size(), false);
    const std::vector<int> order = candidate_order(probs);  // most likely first
    const size_t always = static_cast<size_t>(std::max(1, min_keep));
    const float limit = static_cast<float>(1.0 - p);  // HF: 1 - p from a double, compared in float32
    double sum = 0;                                   // torch's cumsum: a double sum, each output a float32
    for (size_t rank = order.size(); rank-- > 0;) {  // from the least likely token up
        sum += probs(static_cast<size_t>(order[rank]));
        keep[static_cast<size_t>(order[rank])] = rank < always || static_cast<float>(sum) > limit;
    }
    return keep;
}

}  // namespace decodebook
