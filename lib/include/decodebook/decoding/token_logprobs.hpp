#pragma once
/// @file decoding/token_logprobs.hpp
/// @brief Chapter 11: each generated token's numbers, recorded as the loop runs. A sampler that
/// picks exactly as make_sampler's (the same chain, end and coins) and appends, per token, its value
/// in the requested mode, its rank and the top K (vLLM's `logprobs` and `logprobs_mode`). Nothing is
/// computed for a loop that does not ask (make_sampler stays as it is).
#include <cstdint>
#include <vector>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/sampling/logprobs.hpp"

namespace decodebook {

/// What to record per generated token: vLLM's `logprobs` (K alternatives) and `logprobs_mode`.
/// Introduced in chapter 11.
struct LogprobsRequest {
    int k = 0;                                       ///< alternatives per token, 0..kMaxLogprobs (0: the token alone)
    LogprobsMode mode = LogprobsMode::RawLogprobs;   ///< which values (vLLM's default: raw_logprobs)
};

/// One generated token's numbers. Introduced in chapter 11.
struct StepLogprobs {
    int token = 0;                    ///< the token the step chose
    float value = 0;                  ///< its value in the request's mode (raw_logprobs: log p before any processor)
    int rank = 0;                     ///< its rank among the step's values (logprob_rank)
    std::vector<LogprobEntry> top;    ///< top_logprobs(values, k, token): k entries, or k + 1
};

/// One step's record: the values of `mode` from the step's raw logits and the chain's output
/// (logprob_values), the token's value and rank, and top_logprobs(values, k, token). Every loop
/// that records logprobs makes its records here. Introduced in chapter 11.
/// @param raw (V) the model's logits at the step
/// @param processed (V) the chain's output for the same step
/// @param token the token the step chose
/// @param request K and the mode
/// @return the record
StepLogprobs step_logprobs(const xt::xtensor<float, 1>& raw, const xt::xtensor<float, 1>& processed, int token,
                           const LogprobsRequest& request);

/// Where a loop that chooses tokens its own way (speculative decoding, chapter 08) writes a record
/// per emitted token: the request and the caller's list. Introduced in chapter 11.
struct LogprobsLog {
    LogprobsRequest request;              ///< K and the mode
    std::vector<StepLogprobs>* out = nullptr;  ///< the records, one per emitted token (the caller keeps it alive)
};

/// Refuse K outside 0..kMaxLogprobs, naming vLLM's limit. Introduced in chapter 11.
/// @param request the request
/// @throws Error for a K out of range
void check_logprobs_request(const LogprobsRequest& request);

/// make_sampler's Sampler (the same chain, a clone of its end, coin i of Rng(seed) for token i, so
/// the same tokens), appending each step's StepLogprobs to `out`: the values come from the step's
/// raw logits and the chain's output for it (logprob_values). A greedy chain's output stops after
/// its processors (chapter 10), so its processed values hold the penalties and no temperature; a
/// mirostat end truncates inside itself, so its processed values are the chain's output before it.
/// Introduced in chapter 11.
/// @param config the decoding config
/// @param seed the coins' seed
/// @param request K and the mode
/// @param out where the records go, one per call (the caller keeps it alive)
/// @param first the caller's processors at the head of the chain
/// @throws Error on a bad config or K outside 0..kMaxLogprobs
Sampler make_logprobs_sampler(const GenerationConfig& config, uint64_t seed, const LogprobsRequest& request,
                              std::vector<StepLogprobs>& out, std::vector<Processor> first = {});

}  // namespace decodebook
