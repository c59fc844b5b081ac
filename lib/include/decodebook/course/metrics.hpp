#pragma once
/// @file course/metrics.hpp
/// @brief Measuring a generation: repetition loops (chapter 01) and distinct-n (chapter 04).
#include <cstddef>
#include <vector>

namespace decodebook {

/// A repetition loop in a generation. Introduced in chapter 01.
struct Loop {
    size_t period = 0;   ///< tokens per cycle; 0: no loop found
    size_t start = 0;    ///< index of the first token of the looping stretch
    size_t covered = 0;  ///< length of the stretch the repeating cycle covers
};

/// The longest stretch of `tokens` made of one cycle repeated at least three times and covering
/// at least 12 tokens (ties: the shorter period); period 0 if there is none. A greedy run can
/// leave a loop, for another loop or for <|endoftext|>, so the stretch need not be at the end.
/// Introduced in chapter 01.
Loop find_loop(const std::vector<int>& tokens);

/// distinct-n: the number of distinct n-grams in `tokens` divided by the number of n-grams
/// (1 = nothing repeats; 0 if there are fewer than n tokens). Introduced in chapter 04.
double distinct_n(const std::vector<int>& tokens, int n);

}  // namespace decodebook
