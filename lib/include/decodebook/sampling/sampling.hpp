#pragma once
/// @file sampling/sampling.hpp
/// @brief From logits to a random token: softmax, temperature, sampling with an explicit coin
/// (chapter 02), truncation (chapter 03) and penalties (chapter 04).
///
/// Every processor edits a vector of logits (V) in place and removes a token by setting its
/// logit to -infinity, exactly as Hugging Face's logits processors do; a later softmax gives the
/// removed tokens probability 0 and renormalises the survivors. Semantics follow HF `generate`
/// (transformers/generation/logits_process.py) unless a comment says otherwise.
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace decodebook {

// ---------------------------------------------------------------------------------- chapter 02

/// The id of the largest logit; ties go to the lowest id (as torch.argmax, llama.cpp and
/// llama2.c do). Introduced in chapter 01.
int argmax(const xt::xtensor<float, 1>& logits);

/// A knob's number as the table, `--show-config` and `--show-chain` print it ("%g": 0.9, 1.3,
/// 40). Introduced in chapter 02.
std::string knob_number(double v);

/// Softmax with the log-sum-exp trick: p_i = exp(z_i - max z) / sum_j exp(z_j - max z).
/// Entries at -inf get probability 0. Introduced in chapter 02.
/// @throws Error if every entry is -inf (nothing left to sample).
xt::xtensor<float, 1> softmax(const xt::xtensor<float, 1>& logits);

/// Shannon entropy -sum p log p in nats (0 log 0 = 0). Introduced in chapter 02.
double entropy(const xt::xtensor<float, 1>& probs);

/// Divide every logit by the temperature T > 0. T < 1 sharpens the distribution, T > 1 flattens
/// it; T = 0 is greedy decoding and handled by the chain, never by this function.
/// Introduced in chapter 02.
void apply_temperature(xt::xtensor<float, 1>& logits, float temperature);

/// z / T for any T > 0, as apply_temperature, where some z / T would overflow a float too (T =
/// 2e-38 and a logit of 30): then softmax would give inf - inf = NaN, so every logit is taken from
/// the largest first, (z - max) / T: the same distribution (a shift), the largest at 0 and the
/// others at -inf or far below, all but greedy, as the limit T -> 0 is. -inf (a removed token)
/// stays -inf. The chain's temperature stage and dynamic temperature divide with it.
/// Introduced in chapter 02.
void divide_by_temperature(xt::xtensor<float, 1>& logits, float temperature);

/// The candidates with probability > 0 in the order every sampler walks them:
/// probability descending, then id ascending, so ties never depend on a sort's stability.
/// Introduced in chapter 02.
std::vector<int> candidate_order(const xt::xtensor<float, 1>& probs);

/// The `n` most likely ids of `probs` (probabilities: entries <= 0 are skipped), in candidate_order
/// (value desc, id asc): the one ranking every table and picture uses. Introduced in chapter 02.
std::vector<int> top_ids(const xt::xtensor<float, 1>& probs, size_t n);

/// Inverse-CDF sampling: walk the candidates in candidate_order, accumulating probability in
/// double; return the first whose running sum exceeds coin * total. Introduced in chapter 02.
/// @param probs (V) probabilities (need not be normalised; zeros are never chosen)
/// @param coin uniform in [0, 1), from Rng::coin
int sample_inverse_cdf(const xt::xtensor<float, 1>& probs, double coin);

/// How far `coin` fell from the nearest CDF boundary of sample_inverse_cdf, as a fraction of the
/// total mass. A reference sample is only trusted where this margin is safely above float error.
/// Introduced in chapter 02.
double cdf_margin(const xt::xtensor<float, 1>& probs, double coin);

/// The Gumbel-max trick: argmax_i (z_i + g_i) with g_i = -log(-log u_i) is an exact sample from
/// softmax(z). Needs one coin per token. Introduced in chapter 02.
/// @param logits (V) the logits to sample from (-inf entries are never chosen)
/// @param coins (V) uniforms in [0, 1), one per token
int sample_gumbel_max(const xt::xtensor<float, 1>& logits, const std::vector<double>& coins);

// ---------------------------------------------------------------------------------- chapter 03

/// Top-k (HF): keep the logits >= the k-th largest (ties with it are all kept, so more than k
/// may survive); k = max(k, min_keep) capped at V; k = 0 disables. Introduced in chapter 03.
void apply_top_k(xt::xtensor<float, 1>& logits, int k, int min_keep = 1);

/// How top-p decides at the boundary: each engine's own arithmetic. The idea is the same in all
/// three (keep the smallest set of likeliest tokens whose mass reaches p; the token that crosses
/// p is kept); only float rounding and the direction of the sum differ, which decides the cases
/// where the mass lands on p (or within a float32 step of it). Introduced in chapter 03.
enum class TopPRule {
    HuggingFace,  ///< TopPLogitsWarper: sort ascending, cumulative sum stored in float32, remove a
                  ///< token where it is <= 1 - p (p a double, the comparison in float32)
    Vllm,         ///< the same, with 1 - p computed in float32 (vLLM keeps p in a float32 tensor)
    LlamaCpp,     ///< llama_sampler_top_p: walk down with a float running sum and stop right after
                  ///< the first token where it is >= p
};

/// Top-p on probabilities: which tokens survive, by `rule`. With HuggingFace (the default) a token
/// goes when the mass of itself and every less likely token, summed from the least likely up and
/// stored in float32, is <= float32(1 - p). In exact arithmetic that keeps a token iff the mass
/// strictly before it (in candidate_order) is < p: the crossing token stays, and at an exact sum
/// the next one goes. The first max(1, min_keep) candidates always stay; p = 0 keeps exactly
/// max(1, min_keep); p >= 1 keeps every candidate. Ties go by candidate_order (lower id kept).
/// Introduced in chapter 03.
/// @throws Error if p is outside [0, 1]
std::vector<bool> top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep = 1,
                             TopPRule rule = TopPRule::HuggingFace);

/// The double a user typed for a float knob: the shortest decimal that reads back as `knob`
/// (0.8f -> 0.8, not 0.800000011920929). HF receives top_p as a Python float, so its 1 - p is
/// computed from this value. Introduced in chapter 03.
double typed_value(float knob);

/// Top-p (nucleus): softmax, then remove what top_p_keep(probs, typed_value(p), min_keep, rule)
/// drops; p = 1 disables. Introduced in chapter 03.
/// @throws Error if p is outside [0, 1]
void apply_top_p(xt::xtensor<float, 1>& logits, float p, int min_keep = 1, TopPRule rule = TopPRule::HuggingFace);

/// Min-p on probabilities: keep p_i >= min_p * p_max (and at least the min_keep most likely).
/// Introduced in chapter 03.
/// @throws Error if min_p is outside [0, 1]
std::vector<bool> min_p_keep(const xt::xtensor<float, 1>& probs, double min_p, int min_keep = 1);

/// Min-p (HF): softmax, then remove what min_p_keep drops; min_p = 0 disables.
/// Introduced in chapter 03.
/// @throws Error if min_p is outside [0, 1]
void apply_min_p(xt::xtensor<float, 1>& logits, float min_p, int min_keep = 1);

/// Number of tokens with a finite logit (the surviving candidate set). Introduced in chapter 03.
int count_candidates(const xt::xtensor<float, 1>& logits);

// ---------------------------------------------------------------------------------- chapter 04

/// Repetition penalty (CTRL's, with the sign fix of HF, vLLM and llama.cpp): for each distinct token in
/// `seen`, z / theta if z > 0, else z * theta. theta > 1 discourages repeats. Applied once per
/// token whatever its count. Introduced in chapter 04.
void apply_repetition_penalty(xt::xtensor<float, 1>& logits, const std::vector<int>& seen, float theta);

/// Presence and frequency penalties (OpenAI, additive, vLLM's scope): for each token t with
/// count c_t in `output`, z_t -= frequency * c_t + presence * [c_t > 0]. Introduced in chapter 04.
void apply_presence_frequency(xt::xtensor<float, 1>& logits, const std::vector<int>& output, float presence,
                              float frequency);

/// No-repeat-ngram (HF): ban every token that would complete an n-gram already present in
/// `sequence` (prompt + generated): for each earlier occurrence of the last n - 1 tokens, the token
/// that followed it gets -inf. n = 0 disables; nothing is banned while the sequence is shorter
/// than n - 1. Introduced in chapter 04.
void apply_no_repeat_ngram(xt::xtensor<float, 1>& logits, const std::vector<int>& sequence, int n);

}  // namespace decodebook
