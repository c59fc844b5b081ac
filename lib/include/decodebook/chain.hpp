#pragma once
/// @file chain.hpp
/// @brief The logits-processor chain: penalties, temperature, truncation, then a sample
/// (chapters 02-04). Explicit and printable, so you can see what runs and in which order.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decode.hpp"

namespace decodebook {

/// Which tokens the repetition penalty looks at. Introduced in chapter 04.
enum class PenaltyScope {
    PromptAndOutput,  ///< HF and vLLM: every token of the prompt and the output
    OutputOnly,       ///< only generated tokens
    LastN,            ///< llama.cpp: the last `penalty_last_n` tokens of prompt + output
};

/// Every decoding parameter, with Hugging Face's names and defaults (except top_k: HF samples
/// with top_k = 50 by default, decodebook with 0 = off, so each chapter adds one filter at a time).
/// Introduced in chapter 02.
struct SamplingParams {
    float temperature = 1.0f;         ///< 0 = greedy (argmax after the penalties); must be >= 0
    int top_k = 0;                    ///< keep the k most likely (ties kept); 0 = off
    float top_p = 1.0f;               ///< nucleus mass in [0, 1]; 1 = off; 0 keeps one token
    float min_p = 0.0f;               ///< keep p >= min_p * p_max, in [0, 1]; 0 = off
    int min_tokens_to_keep = 1;       ///< the truncations never keep fewer (>= 1)
    float repetition_penalty = 1.0f;  ///< CTRL penalty theta > 0; 1 = off
    PenaltyScope penalty_scope = PenaltyScope::PromptAndOutput;  ///< tokens the repetition penalty sees
    int penalty_last_n = 64;          ///< window for PenaltyScope::LastN (>= 1)
    float presence_penalty = 0.0f;    ///< OpenAI presence penalty in [-2, 2], over the output
    float frequency_penalty = 0.0f;   ///< OpenAI frequency penalty in [-2, 2], over the output
    int no_repeat_ngram_size = 0;     ///< ban repeating any n-gram (HF); 0 = off
};

/// Check every parameter; the message names the parameter, the bad value and the valid range.
/// Introduced in chapter 02.
/// @throws Error on the first bad parameter.
void validate(const SamplingParams& params);

/// Processor orders of the engines decodebook compares. Introduced in chapter 03.
enum class ChainOrder {
    HuggingFace,  ///< penalties -> temperature -> top-k -> top-p -> min-p -> sample
    LlamaCpp,     ///< penalties -> top-k -> top-p -> min-p -> temperature -> sample (temperature last)
    Vllm,         ///< penalties -> temperature -> min-p -> top-k -> top-p -> sample
};

/// Parse "hf", "llama.cpp" / "llamacpp", "vllm". Introduced in chapter 03.
/// @throws Error naming the accepted values.
ChainOrder parse_chain_order(const std::string& name);

/// What a processor may look at besides the logits. Introduced in chapter 04.
struct DecodeContext {
    const std::vector<int>& prompt;     ///< the prompt's ids
    const std::vector<int>& generated;  ///< ids generated so far
};

/// One step of the chain: a name for --show-chain and the edit it makes to the logits.
/// Introduced in chapter 02.
struct Processor {
    std::string name;  ///< e.g. "top_p(0.9)"
    std::function<void(xt::xtensor<float, 1>& logits, const DecodeContext& context)> apply;  ///< edits in place
};

/// The processors for `params` in the given order, skipping those that are off.
/// Introduced in chapter 02.
class LogitsChain {
public:
    /// Build (and validate) the chain. Introduced in chapter 02.
    explicit LogitsChain(const SamplingParams& params, ChainOrder order = ChainOrder::HuggingFace);
    /// Run every processor in order on a copy of the logits. Introduced in chapter 02.
    xt::xtensor<float, 1> apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const;
    /// Choose the next token: greedy (argmax of the processed logits) when temperature is 0,
    /// else inverse-CDF sampling of their softmax with `coin`. Introduced in chapter 02.
    int pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const;
    /// "repetition_penalty(1.3) -> temperature(0.7) -> top_p(0.9) -> sample" (or "-> argmax").
    /// Introduced in chapter 02.
    std::string describe() const;
    /// The processors, in order. Introduced in chapter 02.
    const std::vector<Processor>& processors() const { return processors_; }
    /// True when temperature is 0 (argmax instead of sampling). Introduced in chapter 02.
    bool greedy() const { return greedy_; }

private:
    std::vector<Processor> processors_;
    bool greedy_ = false;
};

/// Generate with a chain: the naive loop where step i's token is chain.pick(logits, context,
/// coin i of Rng(seed)). Exactly one coin is drawn per step, used or not, so coin i always
/// belongs to token i. Introduced in chapter 02.
std::vector<int> generate_sampled(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                  const LogitsChain& chain, uint64_t seed, const StepCallback& on_step = {});

}  // namespace decodebook
