#pragma once
/// @file course/terminal.hpp
/// @brief Drawing in the terminal: token text, step tables (chapter 00), bars and distributions (chapter 02),
/// text on one line (chapter 05), numbers and byte counts (chapter 07).
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"

namespace decodebook {

class Tokenizer;

/// A token's bytes made visible for a table cell: quotes, `\n` and `\t` escaped, invalid UTF-8
/// shown as `\xNN`. Introduced in chapter 00.
std::string visible_token(const std::string& bytes);

/// Print the `--show-steps` table: step, id, token text, logit, `p(raw)` (softmax of the raw
/// logits), ms. With `coins` (make_watched_sampler's Draws, one per step) it adds, before ms, the
/// token's probability after the chain `p(chain)` (what the coin was drawn from), the coin and
/// the token's CDF slice. Introduced in chapter 00.
void print_steps(std::ostream& out, const std::vector<StepRecord>& steps, const Tokenizer& tokenizer,
                 const std::vector<Draw>& coins = {});

/// A bar of '#' of `width` characters at most, proportional to value / max. Introduced in chapter 00.
std::string bar(double value, double max, int width);

/// Print the `n` most likely tokens of `probs` as rows "token  p  ####", scaled to `scale_max`
/// (pass the same value for pictures you want to compare). Introduced in chapter 02.
void print_distribution(const xt::xtensor<float, 1>& probs, const Tokenizer& tok, size_t n, double scale_max);

/// `text` on one line: each newline shown as `\n` and each tab as `\t`, every other byte as it
/// is (visible_token also quotes the text and shows invalid UTF-8). Introduced in chapter 05.
std::string one_line(const std::string& text);

/// `n` in decimal with a comma between groups of three digits: 8692992 gives "8,692,992".
/// Introduced in chapter 07.
std::string with_commas(uint64_t n);

/// A byte count in binary units (1 KiB = 1024 bytes): below 1 KiB "N bytes", else two decimals
/// of KiB, MiB, GiB or TiB, the largest unit the count reaches: 1572864 gives "1.50 MiB".
/// Introduced in chapter 07.
std::string human_bytes(double bytes);

}  // namespace decodebook
