#pragma once
/// @file report.hpp
/// @brief Printing what the decode loop did: token text, step tables (chapter 00).
#include <ostream>
#include <string>
#include <vector>

#include "decodebook/decode.hpp"
#include "decodebook/tokenizer.hpp"

namespace decodebook {

/// A token's bytes made visible for a table cell: quotes, `\n` and `\t` escaped, invalid UTF-8
/// shown as `\xNN`. Introduced in chapter 00.
std::string visible_token(const std::string& bytes);

/// Print the --show-steps table (step, id, token text, logit, probability, ms).
/// Introduced in chapter 00.
void print_steps(std::ostream& out, const std::vector<StepRecord>& steps, const Tokenizer& tokenizer);

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
