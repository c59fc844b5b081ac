#pragma once
/// @file decoding/scoring.hpp
/// @brief Chapter 11: scoring text instead of writing it. The log-probability of every prompt
/// token given its prefix (vLLM's `prompt_logprobs`), the log-likelihood of a continuation given a
/// context (what evaluation harnesses ask a server for), and the perplexity of a long text by
/// Hugging Face's sliding window. Each is one forward per window: no chain runs (these are the raw
/// values; a processor edits what a model writes, not what it would have said).
#include <optional>
#include <vector>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/logprobs.hpp"

namespace decodebook {

/// One prompt token's entry: its raw log-probability given the tokens before it, its rank, and the
/// top `k` alternatives with it appended from outside them (top_logprobs). Introduced in chapter 11.
struct PromptLogprob {
    int token = 0;                    ///< the prompt's token
    float logprob = 0;                ///< log p(token | the tokens before it)
    int rank = 0;                     ///< its rank at that position (logprob_rank)
    std::vector<LogprobEntry> top;    ///< the top k, then the token when it is not among them
};

/// Every prompt token's entry, from one forward over the prompt: entry i comes from position
/// i - 1's logits. Entry 0 is empty: the first token has no prefix (vLLM returns None for it).
/// Introduced in chapter 11.
/// @param model the model
/// @param ids the prompt, 1..n_positions tokens
/// @param k alternatives per token, 0..kMaxLogprobs
/// @return ids.size() entries, the first std::nullopt
/// @throws Error for an empty prompt, one longer than the context, an id outside the vocabulary,
///   or k outside 0..kMaxLogprobs
std::vector<std::optional<PromptLogprob>> prompt_logprobs(const Gpt2& model, const std::vector<int>& ids, int k);

/// A continuation's score given its context. Introduced in chapter 11.
struct ContinuationScore {
    double logprob = 0;   ///< the sum of its tokens' log-probabilities, each given everything before it
    size_t tokens = 0;    ///< how many tokens were scored
    bool greedy = true;   ///< whether each of its tokens is the argmax at its position (lm-eval's is_greedy)
};

/// Score `continuation` after `context` with one forward over both (lm-eval's loglikelihood
/// request). Introduced in chapter 11.
/// @param model the model
/// @param context at least one token
/// @param continuation at least one token; context and continuation fit the model's context
/// @return the sum of log p, the count and whether greedy decoding would have written it
/// @throws Error for an empty context or continuation, or one too long for the context
ContinuationScore score_continuation(const Gpt2& model, const std::vector<int>& context,
                                     const std::vector<int>& continuation);

/// A text's perplexity by windows, as Hugging Face's guide computes it. Introduced in chapter 11.
struct Perplexity {
    double nll_sum = 0;   ///< sum over windows of the window's mean NLL times its weight
    size_t tokens = 0;    ///< sum of the weights
    size_t windows = 0;   ///< forwards run
    /// @return exp(nll_sum / tokens)
    double value() const;
};

/// Hugging Face's "Perplexity of fixed-length models" (transformers docs/source/en/perplexity.md at 052b1dcd):
/// windows of at most `max_length` tokens start every `stride` tokens; a window's targets are its
/// tokens not scored by an earlier window (trg_len = end - previous end), and its first token is
/// never a target (the labels shift by one); the window's mean NLL over its targets is weighted by
/// trg_len - 1 (the guide's `num_valid_tokens - batch_size`); the loop stops at the window that
/// reaches the end. PPL = exp(sum / sum of weights). Introduced in chapter 11.
/// @param model the model
/// @param ids the text, at least 2 tokens
/// @param max_length the window, 2..n_positions
/// @param stride 1..max_length
/// @return the sums, from which the perplexity
/// @throws Error for a text under 2 tokens, or a window or stride out of range
Perplexity sliding_window_perplexity(const Gpt2& model, const std::vector<int>& ids, int max_length, int stride);

/// A beam search hypothesis's per-token numbers, rebuilt as Hugging Face's
/// `compute_transition_scores` rebuilds them from a beam's `scores` (generation/utils.py at
/// 052b1dcd): at step t the beam's row is the log-softmax of the model's logits after prompt +
/// ids[0..t), then the config's processors on log-probabilities (beam search's own row,
/// chapter 05), and token t's value in it. One forward over prompt + ids. In processed_logits
/// mode the values are those rows, so they sum to the hypothesis's sum_logprobs (its score before
/// the length penalty); processed_logprobs renormalises each row (the same values when no
/// processor changed it); raw_logprobs is the model's own log-softmax. Introduced in chapter 11.
/// @param model the model the search ran on
/// @param prompt the prompt's ids
/// @param ids the hypothesis's new ids (Hypothesis::ids)
/// @param config the search's config (its processors; eos_token_id as the search resolved it)
/// @param request K and the mode
/// @return one record per id
/// @throws Error for an empty `ids`, prompt + ids beyond the context, or K out of range
std::vector<StepLogprobs> transition_scores(const Gpt2& model, const std::vector<int>& prompt, const std::vector<int>& ids,
                                            const GenerationConfig& config, const LogprobsRequest& request);

}  // namespace decodebook
