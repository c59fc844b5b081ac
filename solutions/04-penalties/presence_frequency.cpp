// Solution 04.2 - Presence and frequency penalties.         Chapter 04: penalties
#include "decodebook/exercises.hpp"

#include <map>

namespace decodebook {

void your_apply_presence_frequency(xt::xtensor<float, 1>& logits, const std::vector<int>& output, float presence,
                              float frequency) {
    std::map<int, int> count;
    for (int id : output) ++count[id];
    for (const auto& [id, c] : count) logits(static_cast<size_t>(id)) -= frequency * static_cast<float>(c) + presence;
}

}  // namespace decodebook
