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

namespace decodebook {

class Tokenizer;
struct GenerationConfig;
struct DecodeContext;

/// One step seen from the coin's side, so the coin -> token mapping can be checked by hand.
/// Introduced in chapter 02.
struct CoinStep {
    double coin = 0;       ///< the step's coin (drawn even when the step is greedy)
    int token = 0;         ///< the token chosen
    float processed = 0;   ///< its probability after the chain: the distribution the coin was drawn from
    float raw = 0;         ///< its probability under the raw logits (T = 1, no processor)
    double from = 0;       ///< its slice [from, to) of the processed CDF (candidate_order, as a fraction
    double to = 0;         ///< of the total): the token is chosen iff from <= coin < to
    bool greedy = false;   ///< argmax step: no coin was used
};

/// make_sampler(config, seed), which also appends a CoinStep to `seen` at every step. It picks
/// exactly the tokens make_sampler picks (same chain, same coins). Introduced in chapter 02.
/// (The return type is generate.hpp's Sampler, spelled out to keep this header light.)
std::function<int(const xt::xtensor<float, 1>&, const DecodeContext&)> make_watched_sampler(
    const GenerationConfig& config, uint64_t seed, std::vector<CoinStep>& seen);

/// A token's bytes made visible for a table cell: quotes, `\n` and `\t` escaped, invalid UTF-8
/// shown as `\xNN`. Introduced in chapter 00.
std::string visible_token(const std::string& bytes);

/// Print the `--show-steps` table: step, id, token text, logit, `p(raw)` (softmax of the raw
/// logits), ms. With `coins` (from make_watched_sampler, one per step) it adds, before ms, the
/// token's probability after the chain `p(chain)` (what the coin was drawn from), the coin and
/// the token's CDF slice. Introduced in chapter 00.
void print_steps(std::ostream& out, const std::vector<StepRecord>& steps, const Tokenizer& tokenizer,
                 const std::vector<CoinStep>& coins = {});

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
