// Solution 03.2 - Top-p (nucleus).                          Chapter 03: truncation
#include "decodebook/exercises.hpp"

#include "decodebook/sampling.hpp"

namespace decodebook {

std::vector<bool> your_top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep) {
    std::vector<bool> keep(probs.size(), false);
    const std::vector<int> order = candidate_order(probs);
    double before = 0;
    for (size_t rank = 0; rank < order.size(); ++rank) {
        const bool inside = p >= 1.0 || rank == 0 || before < p || rank < static_cast<size_t>(min_keep);
        if (!inside) break;
        keep[static_cast<size_t>(order[rank])] = true;
        before += probs(static_cast<size_t>(order[rank]));
    }
    return keep;
}

}  // namespace decodebook
