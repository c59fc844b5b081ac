#pragma once
/// @file decoding/naive_loop.hpp
/// @brief The decode loop (chapter 00) and greedy decoding (chapter 01).
#include <functional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/sampling/sampling.hpp"  // argmax

namespace decodebook {
class Gpt2;
struct ModelConfig;
}  // namespace decodebook

namespace decodebook {

/// The row of the logits that scores the next token: the last position's.
/// Introduced in chapter 00.
/// @param logits (T, V) from Gpt2::forward, T >= 1
/// @return (V) a copy of row T - 1
xt::xtensor<float, 1> last_position_logits(const xt::xtensor<float, 2>& logits);


/// Chooses the next token from the last position's logits (V). Introduced in chapter 00.
using Picker = std::function<int(const xt::xtensor<float, 1>& logits)>;

/// What one step of the loop did, for `--show-steps` and timing tables. Introduced in chapter 00.
struct StepRecord {
    int step = 0;             ///< 0-based index of the new token
    int context_length = 0;   ///< tokens fed to the forward pass at this step
    int token = 0;            ///< the chosen id
    float logit = 0;          ///< its logit
    float probability = 0;    ///< its softmax probability (of the raw logits)
    double milliseconds = 0;  ///< wall time of forward + pick
    /// The text this step released for printing, UTF-8 safe (the general loop of chapter 02 fills
    /// it from its Utf8Stream; chapter 00's naive loop leaves it empty). Introduced in chapter 02.
    std::string text{};
};

/// Called after every step (e.g. to stream the token to the terminal). Introduced in chapter 00.
using StepCallback = std::function<void(const StepRecord&)>;

/// Stop rules of a generation. Introduced in chapter 00.
struct StopRule {
    int max_new_tokens = 32;  ///< stop after this many new tokens (>= 1)
    int eos_id = -1;          ///< stop after generating this id (it stays in the output); -1: never
};

/// Validate a request before any work: non-empty prompt, ids in the vocabulary,
/// max_new_tokens >= 1, and prompt + max_new_tokens <= n_positions. Introduced in chapter 00.
/// @throws Error naming the problem and the fix.
void check_generation_request(const ModelConfig& config, const std::vector<int>& prompt, const StopRule& stop);

/// The naive decode loop: run the WHOLE sequence through the model at every step, take the last
/// position's logits, pick, append, check the stop rules. Cost grows with the prefix (chapter 07's
/// KV cache removes that). Introduced in chapter 00.
/// @return the new tokens only (not the prompt); ends with eos_id if that stopped it
std::vector<int> generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                const Picker& pick, const StepCallback& on_step = {});

/// Greedy decoding: generate_naive with argmax as the picker. Deterministic: the same prompt
/// always gives the same tokens. Introduced in chapter 01.
std::vector<int> greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                 const StepCallback& on_step = {});

}  // namespace decodebook
