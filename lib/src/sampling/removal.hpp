#pragma once
// Chapters 03 and 10, private to sampling/: how a truncation removes a token (its logit becomes
// -inf), written once for sampling.cpp and other_samplers.cpp.
#include <limits>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace decodebook::removal {

/// A removed token's logit: softmax gives it probability 0.
inline constexpr float kRemoved = -std::numeric_limits<float>::infinity();

/// Remove (set to -inf) every token whose `keep` flag is false.
inline void remove_unkept(xt::xtensor<float, 1>& logits, const std::vector<bool>& keep) {
    for (size_t i = 0; i < logits.size(); ++i)
        if (!keep[i]) logits(i) = kRemoved;
}

}  // namespace decodebook::removal
