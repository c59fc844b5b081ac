// Solution 02.3 - Inverse-CDF sampling.                     Chapter 02: temperature and sampling
#include "decodebook/exercises.hpp"

namespace decodebook {

int your_sample_inverse_cdf(const xt::xtensor<float, 1>& probs, double coin) {
    const std::vector<int> order = candidate_order(probs);
    double total = 0;
    for (int id : order) total += probs(static_cast<size_t>(id));
    double running = 0;
    for (int id : order) {
        running += probs(static_cast<size_t>(id));
        if (coin * total < running) return id;
    }
    return order.back();
}

}  // namespace decodebook
