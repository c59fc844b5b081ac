// Solution 02.2 - Temperature.                              Chapter 02: temperature and sampling
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_temperature(xt::xtensor<float, 1>& logits, float temperature) {
    for (float& z : logits) z /= temperature;
}

}  // namespace decodebook
