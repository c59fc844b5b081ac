#pragma once
/// @file sampling/logprobs.hpp
/// @brief Chapter 11: the numbers behind a token. The log-softmax of a logits vector (beam search's
/// since chapter 05), the four
/// kinds of values an engine can report (vLLM's `logprobs_mode`), and the top-K entries of one
/// step with the sampled token appended when it is not among them (vLLM's and OpenAI's rule).
///
/// Followed: vLLM `vllm/v1/sample/sampler.py` (`compute_logprobs`, `gather_logprobs`) and
/// `vllm/v1/sample/ops/logprobs.py` (`batched_count_greater_than`) at commit 3e342658.
#include <string>
#include <string_view>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace decodebook {

/// What a step's values are, in vLLM's names (`--logprobs-mode`). "Raw" is the model's logits
/// before any processor (the constraint's mask, the penalties, temperature); "processed" is the
/// chain's output, temperature and truncation included. Introduced in chapter 11.
enum class LogprobsMode {
    RawLogprobs,        ///< "raw_logprobs": log_softmax of the model's logits (vLLM's default)
    RawLogits,          ///< "raw_logits": the model's logits
    ProcessedLogprobs,  ///< "processed_logprobs": log_softmax of the chain's output; -inf where it removed a token
    ProcessedLogits,    ///< "processed_logits": the chain's output
};

/// The mode's vLLM name ("raw_logprobs", ...). Introduced in chapter 11.
/// @param mode a mode
/// @return its name
std::string to_string(LogprobsMode mode);

/// Read a mode by its vLLM name. Introduced in chapter 11.
/// @param text "raw_logprobs", "raw_logits", "processed_logprobs" or "processed_logits"
/// @return the mode
/// @throws Error naming the four names for any other text
LogprobsMode parse_logprobs_mode(std::string_view text);

/// The most alternatives a step reports: vLLM's default `max_logprobs` and OpenAI's limit.
/// Introduced in chapter 11.
inline constexpr int kMaxLogprobs = 20;

/// log p_i = z_i - (max z + log sum_j exp(z_j - max z)), in double; a -inf logit (a removed
/// token) stays -inf. Beam search scores with it (chapter 05). Introduced in chapter 05.
/// @param logits (V) logits, at least one finite
/// @return (V) log-probabilities: exp of them sums to 1
/// @throws Error if every logit is -inf
xt::xtensor<float, 1> log_softmax(const xt::xtensor<float, 1>& logits);

/// The values a step reports in `mode`, from the step's raw logits and the chain's output.
/// Introduced in chapter 11.
/// @param raw (V) the model's logits
/// @param processed (V) the chain's output for the same step
/// @param mode which of the four
/// @return (V) the values
xt::xtensor<float, 1> logprob_values(const xt::xtensor<float, 1>& raw, const xt::xtensor<float, 1>& processed,
                                     LogprobsMode mode);

/// A token's rank among `values`: how many values are >= its own (vLLM's
/// `batched_count_greater_than`), so 1 for the largest and a tie counts against it.
/// Introduced in chapter 11.
/// @param values (V) a step's values
/// @param token an id of the vocabulary
/// @return the rank, 1..V
/// @throws Error if `token` is outside the vocabulary
int logprob_rank(const xt::xtensor<float, 1>& values, int token);

/// One reported alternative: a token, its value, its rank. Introduced in chapter 11.
struct LogprobEntry {
    int token = 0;     ///< the id
    float value = 0;   ///< its value in the step's mode
    int rank = 0;      ///< 1 for the largest value
    bool operator==(const LogprobEntry&) const = default;  ///< all three equal
};

/// The step's top `k` entries by value (ties: the lower id first), ranked 1..k by that order, then
/// the sampled token, ranked by logprob_rank, when it is not among them: k entries, or k + 1
/// (vLLM's gather_logprobs and OpenAI's `top_logprobs`). k = 0 gives the sampled token alone.
/// Introduced in chapter 11.
/// @param values (V) a step's values (logprob_values)
/// @param k how many alternatives, 0..kMaxLogprobs
/// @param sampled the token the step chose
/// @return the entries, the top k first
/// @throws Error if k is outside 0..kMaxLogprobs or `sampled` outside the vocabulary
std::vector<LogprobEntry> top_logprobs(const xt::xtensor<float, 1>& values, int k, int sampled);

}  // namespace decodebook
