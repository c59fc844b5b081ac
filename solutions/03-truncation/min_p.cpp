// Solution 03.3 - Min-p.                                    Chapter 03: truncation
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<bool> your_min_p_keep(const xt::xtensor<float, 1>& probs, double min_p, int min_keep) {
    std::vector<bool> keep(probs.size(), false);
    const std::vector<int> order = candidate_order(probs);
    if (order.empty()) return keep;
    const double threshold = min_p * probs(static_cast<size_t>(order.front()));
    for (size_t rank = 0; rank < order.size(); ++rank) {
        const size_t id = static_cast<size_t>(order[rank]);
        keep[id] = probs(id) >= threshold || rank < static_cast<size_t>(min_keep);
    }
    return keep;
}

}  // namespace decodebook
