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

}  // namespace decodebook
