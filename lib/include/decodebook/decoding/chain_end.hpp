#pragma once
/// @file decoding/chain_end.hpp
/// @brief The chain's last step: the object that turns processed logits into one token with the
/// step's coin (argmax and the inverse-CDF draw, chapter 02; mirostat, chapter 10, whose mu lives
/// inside it). A small object with its state inside, as llama.cpp's `llama_sampler_i` is: a
/// stateful end is cloned by each sampler that decodes with it, and can be reset.
#include <memory>
#include <string>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/processor.hpp"

namespace decodebook {

/// The end of a LogitsChain. `pick` and `draw` see the chain's processed logits (V); an end with
/// state moves it on every pick, so the same end never serves two sequences at once: clone it.
/// Introduced in chapter 02.
class ChainEnd {
public:
    virtual ~ChainEnd() = default;
    /// "argmax", "sample", "mirostat_v2(tau=5, eta=0.1)": the last word of LogitsChain::describe.
    virtual std::string name() const = 0;
    /// True for argmax: the coin is drawn and not used.
    virtual bool greedy() const { return false; }
    /// True when picking moves state the end keeps (mirostat's mu). A loop that verifies several
    /// tokens at once or keeps several hypotheses would have to roll that state back, so it
    /// refuses such an end (ends_in_state); so do LogitsChain::distribution, choose and draw.
    virtual bool stateful() const { return false; }
    /// For a stateful end: why its distribution is not the processed logits' alone, e.g.
    /// "mirostat truncates by its mu, which each drawn token moves".
    virtual std::string state_rule() const { return {}; }
    /// The token `coin` picks from the processed logits `z` (V); a stateful end moves its state.
    virtual int pick(const xt::xtensor<float, 1>& z, double coin) = 0;
    /// pick, recorded: the token, its probability in what the coin was drawn from and the coin's
    /// slice of that CDF. `raw` (V): the model's logits, for Draw::raw.
    virtual Draw draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, double coin) = 0;
    /// Back to the state a fresh end has (llama.cpp's `reset`); nothing for a stateless end.
    virtual void reset() {}
    /// A fresh copy with this end's state (llama.cpp's `clone`).
    virtual std::unique_ptr<ChainEnd> clone() const = 0;
};

/// The end a config asks for: mirostat 1 or 2 when `mirostat` is set (v1 with
/// m = 100, as llama.cpp's common_sampler_init; mu starts at 2 tau, as llama.cpp's), else argmax
/// when the chain is greedy (`do_sample` false or temperature 0), else the inverse-CDF draw. One
/// exception, llama.cpp's: under `--order llama.cpp` a dynamic-temperature range > 0 at temperature 0
/// draws, at a temperature between 0 and the range (llama_sampler_temp_ext_apply).
/// Introduced in chapter 02.
std::unique_ptr<ChainEnd> make_chain_end(const GenerationConfig& config);

/// Whether the chain runs its warpers (temperature, truncation, typical-p, XTC, ...) before its end.
/// Sampling always does. A greedy chain under HF's and vLLM's orders stops after the processors
/// (the warpers would not change the argmax); under llama.cpp's it runs them all, as
/// common_sampler_init builds one chain for every temperature: typical-p and XTC can remove the
/// largest logit, and temperature 0 then keeps the largest one left (llama_sampler_temp_impl).
/// Introduced in chapter 10.
bool runs_warpers(const GenerationConfig& config);

/// True when the config's chain ends in a stateful end (mirostat): the one flag that loops which
/// cannot roll an end's state back (beam search, speculative decoding) refuse on.
/// Introduced in chapter 10.
bool ends_in_state(const GenerationConfig& config);

}  // namespace decodebook
