// Solution 02.1 - A numerically stable softmax.            Chapter 02: temperature and sampling
#include "decodebook/exercises.hpp"

#include <algorithm>
#include <cmath>

namespace decodebook {

xt::xtensor<float, 1> your_softmax(const xt::xtensor<float, 1>& logits) {
    float max = -INFINITY;
    for (float z : logits) max = std::max(max, z);
    xt::xtensor<float, 1> p = xt::xtensor<float, 1>::from_shape(logits.shape());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double e = std::exp(static_cast<double>(logits(i)) - max);  // exp(-inf) = 0
        p(i) = static_cast<float>(e);
        sum += e;
    }
    for (float& v : p) v = static_cast<float>(v / sum);
    return p;
}

}  // namespace decodebook
