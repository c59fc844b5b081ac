#pragma once
/// @file decoding/sampler.hpp
/// @brief The sampler: the logits-processor chain (penalties, temperature, truncation, then a
/// sample or the argmax; chapters 02-06), explicit and printable, so you can see what runs and in
/// which order, and the Sampler type the loops call with it.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/generation_config.hpp"

namespace decodebook {

/// What a processor may look at besides the logits. Introduced in chapter 04.
struct DecodeContext {
    const std::vector<int>& prompt;     ///< the prompt's ids
    const std::vector<int>& generated;  ///< ids generated so far (the loop's own vector)
    int step = 0;                       ///< index of the token being chosen (generated.size())
    std::vector<int> eos_ids{};         ///< the ids that end generation (min_new_tokens masks them)
};

/// One step of the chain: a name for `--show-chain` and the edit it makes to the logits.
/// Introduced in chapter 02.
struct Processor {
    std::string name;  ///< e.g. "top_p(0.9)"
    std::function<void(xt::xtensor<float, 1>& logits, const DecodeContext& context)> apply;  ///< edits in place
};

/// The processors a config asks for, in its order (config.order), skipping those that are off.
/// Introduced in chapter 02.
class LogitsChain {
public:
    /// Build (and validate) the chain. Introduced in chapter 02.
    /// @throws Error on a bad config.
    explicit LogitsChain(const GenerationConfig& config);
    /// Run every processor in order on a copy of the logits. Introduced in chapter 02.
    xt::xtensor<float, 1> apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const;
    /// Choose the next token: the argmax of the processed logits when not sampling (do_sample
    /// false, or temperature 0), else inverse-CDF sampling of their softmax with `coin`.
    /// Introduced in chapter 02.
    int pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const;
    /// "repetition_penalty(1.3) -> temperature(0.7) -> top_p(0.9) -> sample" (or "-> argmax").
    /// Introduced in chapter 02.
    std::string describe() const;
    /// The processors, in order. Introduced in chapter 02.
    const std::vector<Processor>& processors() const { return processors_; }
    /// True when the chain ends in argmax instead of sampling. Introduced in chapter 02.
    bool greedy() const { return greedy_; }

private:
    std::vector<Processor> processors_;
    bool greedy_ = false;
};

/// Chooses the next token from the last position's logits (V) and the context. A picker with
/// context: greedy, make_sampler's chain, or a later chapter's. Introduced in chapter 02.
using Sampler = std::function<int(const xt::xtensor<float, 1>& logits, const DecodeContext& context)>;

/// The simplest Sampler: argmax of the raw logits (no processors). Introduced in chapter 02.
int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext& context);

/// The Sampler a config describes: LogitsChain(config), then argmax or a sample with
/// coin i of Rng(seed) for token i. Exactly one coin is drawn per step, used or not, so coin i
/// always belongs to token i. Each call starts a fresh coin stream. Introduced in chapter 02.
/// @throws Error on a bad config.
Sampler make_sampler(const GenerationConfig& config, uint64_t seed);

}  // namespace decodebook
