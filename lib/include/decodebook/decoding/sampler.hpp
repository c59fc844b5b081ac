#pragma once
/// @file decoding/sampler.hpp
/// @brief The sampler: the logits-processor chain (penalties, temperature, truncation, then a
/// sample or the argmax; chapters 02-06), explicit and printable, so you can see what runs and in
/// which order; the distribution it draws from; and the Sampler type the loops call with it.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/chain_end.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/processor.hpp"
#include "decodebook/decoding/stages.hpp"

namespace decodebook {

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
    /// @param stages the stage table (the library's; a test may pass its own)
    explicit LogitsChain(const GenerationConfig& config, std::vector<Processor> first = {},
                         const StageTable& stages = stage_table());
    /// Run every processor in order on a copy of the logits. Introduced in chapter 02.
    /// @throws Error naming the processor after which no token is left (every logit -inf): a
    /// caller's constraint, min_new_tokens or a penalty; the fix depends on which.
    xt::xtensor<float, 1> apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const;
    /// The distribution the next token is drawn from (V): the softmax of the processed logits,
    /// or, when the chain is greedy, all the mass on their argmax (ties: the lowest id).
    /// Chapter 08's rejection sampling needs exactly this: with a greedy target it accepts a
    /// draft iff the draft is the argmax. Introduced in chapter 07.
    /// @throws Error as apply, and for a chain whose end is stateful (mirostat, chapter 10): its
    /// distribution depends on state the chain does not hold; make_sampler's own end does.
    xt::xtensor<float, 1> distribution(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const;
    /// The token `coin` picks from `distribution`: its argmax when the chain is greedy, else
    /// inverse-CDF sampling (sample_inverse_cdf: unnormalised weights are fine). Introduced in chapter 07.
    /// @throws Error for a chain whose end is stateful (chapter 10).
    int choose(const xt::xtensor<float, 1>& distribution, double coin) const;
    /// Choose the next token: choose(distribution(logits, context), coin). Introduced in chapter 02.
    int pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const;
    /// pick, recorded: the chain runs once, and the Draw says where the coin fell. Introduced in chapter 02.
    /// @throws Error for a chain whose end is stateful (chapter 10): make_watched_sampler's own end records it.
    Draw draw(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const;
    /// "repetition_penalty(1.3) -> temperature(0.7) -> top_p(0.9) -> sample" (or "-> argmax", or,
    /// with mirostat, "-> mirostat_v2(tau=5, eta=0.1)"). Introduced in chapter 02.
    std::string describe() const;
    /// The processors, in order. Introduced in chapter 02.
    const std::vector<Processor>& processors() const { return processors_; }
    /// The end, fresh: a sampler decodes with its own clone (a stateful end moves as it picks).
    /// Introduced in chapter 10.
    const ChainEnd& end() const { return *end_; }
    /// True when the chain ends in argmax instead of sampling. Introduced in chapter 02.
    bool greedy() const { return end_->greedy(); }

private:
    // Refuses `what` for a chain whose end is stateful, with `fix` (chapter 10).
    void refuse_stateful(const std::string& what, const std::string& fix) const;
    std::vector<Processor> processors_;
    size_t first_ = 0;  // how many of processors_ are the caller's
    // Fresh, and used by this chain only while stateless (its calls are const and may run on
    // several threads); shared so that the chain can be copied.
    std::shared_ptr<ChainEnd> end_;
};

/// Chooses the next token from the last position's logits (V) and the context. A picker with
/// context: greedy, make_sampler's chain, or a later chapter's. Introduced in chapter 02.
using Sampler = std::function<int(const xt::xtensor<float, 1>& logits, const DecodeContext& context)>;

/// The simplest Sampler: argmax of the raw logits (no processors). Introduced in chapter 02.
int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext& context);

/// The Sampler a config describes: LogitsChain(config), then its end (argmax, a sample or, in
/// chapter 10, mirostat) with coin i of Rng(seed) for token i. The sampler owns a clone of the
/// chain's end, so a stateful end's state (mirostat's mu, from 2 tau as llama.cpp's) is its own. Exactly one coin is drawn per step, used or not, so coin i
/// always belongs to token i. Each call starts a fresh coin stream. With `seen`, every step's
/// Draw is appended to it (the same tokens: the chain runs once either way); `first` are the
/// caller's processors at the head of the chain (LogitsChain). Introduced in chapter 02.
/// @throws Error on a bad config.
Sampler make_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>* seen = nullptr,
                     std::vector<Processor> first = {});

/// make_sampler(config, seed, &seen): the `--show-steps` sampler. Introduced in chapter 02.
Sampler make_watched_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>& seen);

}  // namespace decodebook
