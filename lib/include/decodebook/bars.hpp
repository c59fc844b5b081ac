#pragma once
/// @file bars.hpp
/// @brief Terminal pictures of a next-token distribution (chapters 02-04).
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/tokenizer.hpp"

namespace decodebook {

/// The `n` most likely ids of `probs`, in candidate order (probability desc, id asc).
/// Introduced in chapter 02.
std::vector<int> top_ids(const xt::xtensor<float, 1>& probs, size_t n);

/// A bar of '#' of `width` characters at most, proportional to value / max. Introduced in chapter 02.
std::string bar(double value, double max, int width);

/// Print the `n` most likely tokens of `probs` as rows "token  p  ####", scaled to `scale_max`
/// (pass the same value for pictures you want to compare). Introduced in chapter 02.
void print_distribution(const xt::xtensor<float, 1>& probs, const Tokenizer& tok, size_t n, double scale_max);

}  // namespace decodebook
