#pragma once
/// @file decoding/sampler.hpp
/// @brief The sampler: the logits-processor chain (penalties, temperature, truncation, then a
/// sample or the argmax; chapters 02-06), explicit and printable, so you can see what runs and in
/// which order; the distribution it draws from; and the Sampler type the loops call with it.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/generation_config.hpp"

namespace decodebook {

/// What a processor may look at besides the logits: views of the caller's ids, so a context for
/// any prefix of a sequence costs nothing (chapter 08 checks k drafted positions at once).
/// Introduced in chapter 04.
struct DecodeContext {
    std::span<const int> prompt;     ///< the prompt's ids
    std::span<const int> generated;  ///< ids generated so far (a view of the loop's own vector)
    int step = 0;                    ///< index of the token being chosen (generated.size())
    std::span<const int> eos_ids{};  ///< the ids that end generation (min_new_tokens masks them)
};

/// One step of the chain: a name for `--show-chain` and the edit it makes to the logits.
/// Introduced in chapter 02.
struct Processor {
    std::string name;  ///< e.g. "top_p(0.9)"
    std::function<void(xt::xtensor<float, 1>& logits, const DecodeContext& context)> apply;  ///< edits in place
};

/// One pick seen from the coin's side: the token, the coin, the token's probability in the
/// distribution the coin was drawn from, and its slice of that distribution's CDF, so the
/// coin -> token mapping can be checked by hand (`--show-steps`). Introduced in chapter 02.
struct Draw {
    double coin = 0;       ///< the step's coin (drawn even when the step is greedy)
    int token = 0;         ///< the token chosen
    float processed = 0;   ///< its probability after the chain's processors (softmax of the processed logits)
    float raw = 0;         ///< its probability under the raw logits (T = 1, no processor)
    double from = 0;       ///< its slice [from, to) of the processed CDF (candidate_order, as a fraction
    double to = 0;         ///< of the total): when sampling, the token is chosen iff from <= coin < to
    bool greedy = false;   ///< argmax step: no coin was used
};

/// The processors a config asks for, in its engine's order (config.order), skipping those that
/// are off; a caller's own processors (a constraint's mask, chapter 09) run first of all.
/// Introduced in chapter 02.
class LogitsChain {
public:
    /// Build (and validate) the chain. Introduced in chapter 02.
    /// @param config the knobs
    /// @param first the caller's processors, run before every other (min_new_tokens, penalties,
    ///        warpers) and in greedy mode too, so one mask serves sampling, greedy and beam search
    ///        (HF's `logits_processor=` argument). Introduced in chapter 07, for chapter 09.
    /// @throws Error on a bad config.
    explicit LogitsChain(const GenerationConfig& config, std::vector<Processor> first = {});
    /// Run every processor in order on a copy of the logits. Introduced in chapter 02.
    /// @throws Error naming the processor after which no token is left (every logit -inf): a
    /// caller's constraint, min_new_tokens or a penalty; the fix depends on which.
    xt::xtensor<float, 1> apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const;
    /// The distribution the next token is drawn from (V): the softmax of the processed logits,
    /// or, when the chain is greedy, all the mass on their argmax (ties: the lowest id).
    /// Chapter 08's rejection sampling needs exactly this: with a greedy target it accepts a
    /// draft iff the draft is the argmax. Introduced in chapter 07.
    /// @throws Error as apply, and for a chain that ends in mirostat (chapter 10): its
    /// distribution depends on mu, which only make_sampler keeps.
    xt::xtensor<float, 1> distribution(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const;
    /// The token `coin` picks from `distribution`: its argmax when the chain is greedy, else
    /// inverse-CDF sampling (sample_inverse_cdf: unnormalised weights are fine). Introduced in chapter 07.
    /// @throws Error for a chain that ends in mirostat (chapter 10).
    int choose(const xt::xtensor<float, 1>& distribution, double coin) const;
    /// Choose the next token: choose(distribution(logits, context), coin). Introduced in chapter 02.
    int pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const;
    /// pick, recorded: the chain runs once, and the Draw says where the coin fell. Introduced in chapter 02.
    /// @throws Error for a chain that ends in mirostat (chapter 10): its draw is not a CDF slice of
    /// the processed distribution.
    Draw draw(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const;
    /// "repetition_penalty(1.3) -> temperature(0.7) -> top_p(0.9) -> sample" (or "-> argmax", or,
    /// with mirostat, "-> mirostat_v2(tau=5, eta=0.1)"). Introduced in chapter 02.
    std::string describe() const;
    /// One step of the chain's mirostat end: run the processors, then mirostat_v1_step (m = 100, as
    /// llama.cpp's common_sampler_init) or mirostat_v2_step with `coin`, updating `mu`. make_sampler
    /// calls it with the mu it keeps. Introduced in chapter 10.
    /// @throws Error as apply, or when the chain has no mirostat end.
    int mirostat_step(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double tau, double eta,
                      double& mu, double coin) const;
    /// 0, or the mirostat version (1 or 2) that ends the chain. Introduced in chapter 10.
    int mirostat() const { return mirostat_; }
    /// The processors, in order. Introduced in chapter 02.
    const std::vector<Processor>& processors() const { return processors_; }
    /// True when the chain ends in argmax instead of sampling. Introduced in chapter 02.
    bool greedy() const { return greedy_; }

private:
    std::vector<Processor> processors_;
    size_t first_ = 0;  // how many of processors_ are the caller's
    bool greedy_ = false;
    int mirostat_ = 0;           // chapter 10: 1 or 2 when mirostat ends the chain
    std::string mirostat_name_;  // "mirostat_v2(tau=5, eta=0.1)"
};

/// Chooses the next token from the last position's logits (V) and the context. A picker with
/// context: greedy, make_sampler's chain, or a later chapter's. Introduced in chapter 02.
using Sampler = std::function<int(const xt::xtensor<float, 1>& logits, const DecodeContext& context)>;

/// The simplest Sampler: argmax of the raw logits (no processors). Introduced in chapter 02.
int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext& context);

/// The Sampler a config describes: LogitsChain(config), then argmax or a sample with
/// coin i of Rng(seed) for token i (with mirostat, chapter 10: LogitsChain::mirostat_step with coin i
/// and the mu this sampler keeps, starting at 2 tau as llama.cpp's; `seen` is then refused). Exactly one coin is drawn per step, used or not, so coin i
/// always belongs to token i. Each call starts a fresh coin stream. With `seen`, every step's
/// Draw is appended to it (the same tokens: the chain runs once either way); `first` are the
/// caller's processors at the head of the chain (LogitsChain). Introduced in chapter 02.
/// @throws Error on a bad config.
Sampler make_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>* seen = nullptr,
                     std::vector<Processor> first = {});

/// make_sampler(config, seed, &seen): the `--show-steps` sampler. Introduced in chapter 02.
Sampler make_watched_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>& seen);

}  // namespace decodebook
