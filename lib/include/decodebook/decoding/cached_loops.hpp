#pragma once
/// @file decoding/cached_loops.hpp
/// @brief Generation on the KV cache: the general loop over a cached model, batches of prompts,
/// and beam search with its beams as one batch (chapter 07).
#include <cstddef>
#include <vector>

#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/model/cached_sequence.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"

namespace decodebook {

/// The general loop's model seam on the cache: the first call prefills the whole sequence into
/// `row`; each later call must pass the same sequence grown by one token, which is decoded alone.
/// The cache must outlive the returned function. Introduced in chapter 07.
/// @throws Error (from the call) when the sequence is not the previous one plus one token.
NextLogits cached_logits(const Gpt2& model, KvCache& cache, size_t row = 0);

/// How two models' logits differ along one greedy path (chapter 07's f32 against f16 weights).
/// Introduced in chapter 07.
struct LogitAgreement {
    double max_diff = 0;  ///< the largest |logit a - logit b| over every step and token
    int steps = 0;        ///< steps compared
    int differ = 0;       ///< steps whose argmax differs
};

/// Feed two models of one vocabulary the same tokens, the first model's greedy picks, for `steps`
/// steps after `prompt` (the prompt's own logits are step 1), each on its own cache, and compare
/// their logits at every step. Introduced in chapter 07.
/// @throws Error on a bad prompt, steps < 1, a context too short, or vocabularies that differ.
LogitAgreement compare_greedy_logits(const Gpt2& a, const Gpt2& b, const std::vector<int>& prompt, int steps);

/// Chapter 02's loop on the cache: same samplers, stopping criteria and result as `generate`,
/// each step computing one position. Introduced in chapter 07.
/// @throws Error on a bad request or config.
Generation generate_cached(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                           const GenerationConfig& config, const Sampler& sample, const StepObserver& on_step = {});

/// What a batch did, for the chapter's tables. Introduced in chapter 07.
struct BatchStats {
    double prefill_ms = 0;              ///< all prompts' prefill
    double decode_ms = 0;               ///< every decode step
    int decode_steps = 0;               ///< decode calls made
    long decoded_tokens = 0;            ///< tokens computed by those calls (finished rows cost nothing)
    std::vector<int> active_per_step;   ///< rows still generating at each decode call
};

/// Several prompts of different lengths at once: each prefilled into its own cache row, then one
/// decode call per step for every row still going; a row that meets its stopping criteria
/// (EOS, max_new_tokens) leaves the batch and costs nothing more. `samplers[i]` picks for
/// prompt i (greedy, or make_sampler with its own seed). Returns one Generation per prompt
/// (text empty when `tokenizer` is null). Introduced in chapter 07.
/// @throws Error on a bad request, config, or samplers.size() != prompts.size().
std::vector<Generation> generate_batch(const Gpt2& model, const Tokenizer* tokenizer,
                                       const std::vector<std::vector<int>>& prompts, const GenerationConfig& config,
                                       const std::vector<Sampler>& samplers,
                                       BatchKernels kernels = BatchKernels::Fast, BatchStats* stats = nullptr);

/// Beam search's model seam on the cache: one row per beam; each step copies every beam's
/// parent row into place (KvCache::reorder) and decodes all beams' last tokens as one batch.
/// Same log-probabilities as model_log_probs up to float rounding (`first`: the caller's
/// processors, as there). Introduced in chapter 07.
NextLogProbs cached_log_probs(const Gpt2& model, const std::vector<int>& prompt, const GenerationConfig& config,
                              const std::vector<int>& eos_ids, KvCache& cache, std::vector<Processor> first = {});

/// Chapter 05's beam search on the cache (one batch of num_beams rows). Introduced in chapter 07.
/// @throws Error on a bad request or config.
std::vector<Hypothesis> beam_search_cached(const Gpt2& model, const Tokenizer& tokenizer,
                                           const std::vector<int>& prompt, const GenerationConfig& config,
                                           BeamTrace* trace = nullptr);

}  // namespace decodebook
