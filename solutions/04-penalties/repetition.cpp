// Solution 04.1 - The repetition penalty, sign-aware.       Chapter 04: penalties
#include "decodebook/exercises.hpp"

#include <set>

namespace decodebook {

void your_apply_repetition_penalty(xt::xtensor<float, 1>& logits, const std::vector<int>& seen, float theta) {
    for (int id : std::set<int>(seen.begin(), seen.end())) {
        float& z = logits(static_cast<size_t>(id));
        z = z > 0 ? z / theta : z * theta;
    }
}

}  // namespace decodebook
