#pragma once
/// @file exercises.hpp
/// @brief The exercises' final signatures. You implement them in `exercises/NN-name/*.cpp`;
/// worked answers with the same signatures are in `solutions/`. The library's own versions
/// keep every chapter running while yours are unfinished.
///
/// The list, order, hints and points live in `exercises/manifest.json`; `./grade` grades them.
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

// Everything a stub may use, so a stub includes this file and nothing of the library's wings.
#include "decodebook/base/error.hpp"  // throw Error(problem, fix) on bad input
#include "decodebook/base/vocabulary.hpp"
#include "decodebook/constrain/regex.hpp"        // Dfa (chapter 09)
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/sampling/sampling.hpp"  // the library's helpers (softmax, candidate_order,
                                             // sample_inverse_cdf: 08.1 draws its residual with it)
#include "decodebook/sampling/other_samplers.hpp"  // chapter 10's rules (the answers to 10.1-10.3)
#include "decodebook/sampling/logprobs.hpp"  // LogprobEntry, log_softmax (chapter 11; 11.1's answer)
#include "decodebook/decoding/scoring.hpp"   // Perplexity (chapter 11; 11.2's answer)
#include "decodebook/decoding/block_pool.hpp"  // BlockHash, hash_block_tokens, FreeOrder (chapter 12)

namespace decodebook {

/// Thrown by an untouched exercise stub: names the exercise and the file to edit.
/// Introduced in chapter 00.
class NotImplemented : public std::logic_error {
public:
    /// @param exercise e.g. "01.1 (argmax)"
    /// @param file e.g. "exercises/01-greedy/argmax.cpp"
    NotImplemented(const std::string& exercise, const std::string& file);
};

// ---------------------------------------------------------------- your implementations
// Each is named your_NAME, beside the library's NAME, so `using namespace decodebook;` never makes
// a call ambiguous. Each one's doc names its exercise; the stubs say what to do.

/// Exercise 00.1: the last row of the logits (T, V) as a vector (V). See decodebook::last_position_logits.
xt::xtensor<float, 1> your_last_position_logits(const xt::xtensor<float, 2>& logits);

/// Exercise 00.2: the naive decode loop. See decodebook::generate_naive.
std::vector<int> your_generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                const Picker& pick, const StepCallback& on_step = {});

/// Exercise 01.1: argmax with ties going to the lowest id. See decodebook::argmax.
int your_argmax(const xt::xtensor<float, 1>& logits);

/// Exercise 01.2: greedy decoding with the EOS rule. See decodebook::greedy_generate.
std::vector<int> your_greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop);

/// Exercise 02.1: a numerically stable softmax. See decodebook::softmax.
xt::xtensor<float, 1> your_softmax(const xt::xtensor<float, 1>& logits);

/// Exercise 02.2: divide the logits by the temperature. See decodebook::apply_temperature.
void your_apply_temperature(xt::xtensor<float, 1>& logits, float temperature);

/// Exercise 02.3: inverse-CDF sampling in candidate order. See decodebook::sample_inverse_cdf.
int your_sample_inverse_cdf(const xt::xtensor<float, 1>& probs, double coin);

/// Exercise 03.1: top-k with HF's tie rule. See decodebook::apply_top_k.
void your_apply_top_k(xt::xtensor<float, 1>& logits, int k, int min_keep);

/// Exercise 03.2: which tokens top-p keeps. See decodebook::top_p_keep.
std::vector<bool> your_top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep);

/// Exercise 03.3: which tokens min-p keeps. See decodebook::min_p_keep.
std::vector<bool> your_min_p_keep(const xt::xtensor<float, 1>& probs, double min_p, int min_keep);

/// Exercise 04.1: the sign-aware repetition penalty. See decodebook::apply_repetition_penalty.
void your_apply_repetition_penalty(xt::xtensor<float, 1>& logits, const std::vector<int>& seen, float theta);

/// Exercise 04.2: presence and frequency penalties. See decodebook::apply_presence_frequency.
void your_apply_presence_frequency(xt::xtensor<float, 1>& logits, const std::vector<int>& output, float presence,
                              float frequency);

/// Exercise 04.3: no-repeat-ngram. See decodebook::apply_no_repeat_ngram.
void your_apply_no_repeat_ngram(xt::xtensor<float, 1>& logits, const std::vector<int>& sequence, int n);

/// Exercise 05.1: one beam step on given log-prob rows (expand, keep the top candidates,
/// finish the EOS ones). See decodebook::beam_step.
BeamStep your_beam_step(const std::vector<Beam>& beams, const std::vector<xt::xtensor<float, 1>>& logprobs,
                        const std::vector<int>& eos_ids, int num_beams, bool last_step);

/// Exercise 05.2: the length-normalised score of a finished hypothesis. See decodebook::beam_score.
double your_beam_score(double sum_logprobs, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                       BeamScoring scoring);

/// Exercise 05.2: HF's early-stopping test. See decodebook::beam_search_done.
bool your_beam_search_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                           int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping);

/// Exercise 06.1: the holdback matcher (earliest stop wins). See decodebook::scan_stops.
StopScan your_scan_stops(std::string_view pending, const std::vector<std::string>& stops);

/// Exercise 06.2: mask every EOS id while fewer than min_new_tokens were generated (HF).
/// See the min_new_tokens processor of decodebook::LogitsChain.
void your_apply_min_new_tokens(xt::xtensor<float, 1>& logits, const std::vector<int>& eos_ids, int generated_count,
                               int min_new_tokens);

/// Exercise 07.1: one cached attention step: write the new key and value at `position`, attend
/// over positions 0..position, head by head. See decodebook::cached_attention_step.
xt::xtensor<float, 1> your_cached_attention_step(xt::xtensor<float, 2>& keys, xt::xtensor<float, 2>& values,
                                                 size_t position, const xt::xtensor<float, 1>& qkv, int n_head);

/// Exercise 07.2: the bytes of a KV cache, refusing negative counts and 64-bit overflow.
/// See decodebook::kv_cache_bytes.
uint64_t your_kv_cache_bytes(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value,
                             int64_t rows);

/// Exercise 07.4: the decode roofline of a GPT-2 shape in milliseconds per token: the weight
/// bytes one decode step reads, over the bandwidth. See decodebook::decode_roofline_ms.
double your_decode_roofline_ms(const ModelConfig& config, int bytes_per_weight, double bytes_per_second);

/// Exercise 07.3: row r becomes the old row source[r], for every r at once (beam search).
/// See decodebook::reorder_rows.
void your_reorder_rows(xt::xtensor<float, 3>& rows, const std::vector<int>& source);

/// Exercise 08.1: keep or replace one drafted token (speculative decoding's verdict at one
/// position): `x` when accept_coin < p(x) / q(x) (never when p(x) or q(x) is 0), else the token
/// sample_inverse_cdf draws with residual_coin from max(0, p - q) (null q: p without x).
/// See decodebook::accept_draft, decodebook::residual and decodebook::verify_drafts.
/// @param p (V) the target's distribution at this position
/// @param q (V) the distribution the draft token was drawn from, or null for a deterministic draft
/// @param x the drafted token
/// @param accept_coin uniform in [0, 1): decides whether x is kept
/// @param residual_coin uniform in [0, 1): draws the replacement when x is not kept
/// @throws Error for an id outside the vocabulary, sizes that differ, or an empty residual.
int your_verify_position(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x, double accept_coin,
                         double residual_coin);

/// Exercise 08.2: Hugging Face's prompt lookup: for n from min(max_ngram, length - 1) down to 1,
/// the leftmost earlier occurrence of the last n tokens; up to num_tokens of what follows it, cut
/// before the first EOS (the first match decides); empty when nothing matches.
/// See decodebook::prompt_lookup_hf.
/// @param sequence the prompt and the tokens generated so far
/// @param max_ngram the longest n-gram tried first (max_matching_ngram_size)
/// @param num_tokens the most tokens proposed (prompt_lookup_num_tokens)
/// @param eos_ids a proposal stops before the first of them
std::vector<int> your_prompt_lookup(std::span<const int> sequence, int max_ngram, int num_tokens,
                                    std::span<const int> eos_ids);

/// Exercise 09.1: one token's walk through a byte automaton: its bytes followed from `state`, one
/// transition each; Dfa::kDead as soon as a byte has none (the token is allowed in `state` iff the
/// result is not kDead). See decodebook::Dfa::walk.
/// @param dfa the automaton (every state live)
/// @param state a state of `dfa`, or Dfa::kDead (which stays kDead)
/// @param token the token's bytes (possibly part of a UTF-8 character)
/// @return the state after the last byte, or Dfa::kDead
/// @throws Error when `state` is neither kDead nor a state of `dfa`.
int32_t your_walk_token(const Dfa& dfa, int32_t state, std::string_view token);

/// Exercise 09.2: the tokens a state allows, without a trie: every text token (not special, not
/// empty, not an EOS id) whose bytes walk `dfa` from `state` to a live state; each EOS id only
/// when `state` accepts. Ascending, each id once; empty for Dfa::kDead.
/// See decodebook::allowed_tokens.
/// @param dfa the automaton (every state live)
/// @param state a state of `dfa`, or Dfa::kDead
/// @param vocabulary every id's bytes and the special ids
/// @param eos_ids the ids that end generation (repeats allowed)
/// @throws Error when `state` is not a state of `dfa`, or an EOS id is outside the vocabulary.
std::vector<int> your_allowed_tokens(const Dfa& dfa, int32_t state, const Vocabulary& vocabulary,
                                     std::span<const int> eos_ids);

/// Exercise 10.1: Hugging Face's typical-p keep mask: rank the tokens with p > 0 by |-ln p - H|
/// (H the entropy), keep them up to the one where the running sum reaches `mass`, the ties of the
/// last one kept and the max(1, min_keep) most typical. See decodebook::typical_keep.
/// @param probs (V) probabilities
/// @param mass in (0, 1]; 1 keeps every token with p > 0
/// @param min_keep the most typical tokens that always stay (at least 1)
/// @return (V) true where the token is kept
/// @throws Error when mass is not in (0, 1].
std::vector<bool> your_typical_keep(const xt::xtensor<float, 1>& probs, double mass, int min_keep);

/// Exercise 10.2: DRY's penalty for one candidate (llama.cpp): the candidate's repeat length L
/// (the longest suffix of `context` that, followed by it, occurs earlier; at most the tokens after
/// the last breaker), then multiplier * base^(L - allowed_length) if L >= allowed_length, else 0;
/// a breaker candidate is never penalised. See decodebook::dry_repeat_length and dry_penalty.
/// @param context (n) the tokens so far
/// @param candidate the token that might come next
/// @param breakers single-token sequence breakers
/// @param multiplier the penalty's scale (0: off)
/// @param base the penalty's base (< 1: off)
/// @param allowed_length repeats shorter than this cost nothing
/// @return the amount to subtract from the candidate's logit (0: none)
/// @throws Error when multiplier or allowed_length is negative.
float your_dry_penalty(const std::vector<int>& context, int candidate, const std::vector<int>& breakers,
                       float multiplier, float base, int allowed_length);

/// Exercise 10.3: one mirostat 2.0 step (llama.cpp): softmax, keep surprise -log2 p <= mu (at least
/// the most likely), renormalise, draw with `coin` in candidate_order, then
/// mu -= eta * (-log2 q - tau) with q the chosen token's renormalised probability.
/// See decodebook::mirostat_v2_step.
/// @param logits (V) this step's logits
/// @param tau the target surprise in bits (> 0)
/// @param eta the learning rate (> 0)
/// @param mu in-out: the cut-off in bits, updated
/// @param coin in [0, 1): where the draw falls in the renormalised CDF
/// @return the token drawn
/// @throws Error when tau <= 0, eta <= 0 or coin is not in [0, 1).
int your_mirostat_v2_step(const xt::xtensor<float, 1>& logits, double tau, double eta, double& mu, double coin);

/// Exercise 11.1: a step's top `k` entries by value (ties: the lower id first), ranked 1..k in
/// that order, then the sampled token when it is not among them, ranked by how many values are
/// >= its own (vLLM's batched_count_greater_than): k or k + 1 entries; k = 0 gives the sampled
/// token alone. See decodebook::top_logprobs and decodebook::logprob_rank.
/// @param values (V) a step's values (logprobs or logits; -inf for a removed token is a value)
/// @param k how many alternatives, 0..kMaxLogprobs (20)
/// @param sampled the token the step chose, 0..V-1
/// @return the entries, the top k first
/// @throws Error if k is outside 0..20 or `sampled` outside the vocabulary.
std::vector<LogprobEntry> your_top_logprobs(const xt::xtensor<float, 1>& values, int k, int sampled);

/// Exercise 11.2: the perplexity of a text by Hugging Face's sliding window: windows of at most
/// `max_length` tokens start every `stride` tokens; a window scores only the tokens no earlier
/// window scored (never its own first token); its mean NLL is weighted by trg_len - 1 (trg_len =
/// end - previous end); the loop stops at the window that reaches the end.
/// See decodebook::sliding_window_perplexity.
/// @param model the model
/// @param ids the text, at least 2 tokens
/// @param max_length the window, 2..n_positions
/// @param stride 1..max_length
/// @return nll_sum (the weighted sum), tokens (the sum of the weights), windows (forwards run)
/// @throws Error for a text under 2 tokens, or a window or stride out of range.
Perplexity your_sliding_window_perplexity(const Gpt2& model, const std::vector<int>& ids, int max_length, int stride);

/// Exercise 12.1: the chained hashes of a sequence's full blocks: entry i is
/// hash_block_tokens(entry i - 1, block i's tokens), kFirstBlockParent before the first; a partial
/// last block has none. See decodebook::hash_full_blocks.
/// @param tokens the sequence
/// @param block_size positions per block, at least 1
/// @return one hash per full block
/// @throws Error if block_size < 1.
std::vector<BlockHash> your_hash_full_blocks(const std::vector<int>& tokens, int block_size);

/// Exercise 12.1: how many tokens of `prompt` a prefix cache hits when it holds every full block
/// of each sequence of `cached` (nothing evicted): whole blocks from the start, the walk stopping
/// at the first block no cached sequence holds after the same prefix, and at most
/// prompt.size() - 1 tokens (the last one is always computed). See BlockPool::computed_blocks.
/// @param prompt the new prompt (may be empty: 0)
/// @param cached the sequences whose blocks the cache holds
/// @param block_size positions per block, at least 1
/// @return the tokens hit, a multiple of block_size
/// @throws Error if block_size < 1.
int your_prefix_hit_tokens(const std::vector<int>& prompt, const std::vector<std::vector<int>>& cached, int block_size);

/// Exercise 12.2: the free queue after a request holding `table` is freed: its blocks' counts
/// drop in reverse table order, and each block whose count reaches 0 joins the queue: at the
/// tail (FreeOrder::Lru), or with FreeOrder::UncachedFirst the uncached ones at the head in the
/// order they were released and the cached ones at the tail. See BlockPool::free.
/// @param queue the free queue, head (taken next) first
/// @param table the freed request's blocks in token order
/// @param counts every block's reference count before the free (indexed by block id)
/// @param cached whether each block holds a hash (indexed by block id, as long as counts)
/// @param order where released blocks join
/// @return the queue after the free, head first
/// @throws Error if counts and cached differ in length, a table id is out of range, or a table
/// block's count is below 1.
std::vector<int> your_free_queue_after(const std::vector<int>& queue, const std::vector<int>& table,
                                       const std::vector<int>& counts, const std::vector<bool>& cached, FreeOrder order);

}  // namespace decodebook
