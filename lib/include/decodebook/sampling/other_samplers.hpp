#pragma once
/// @file sampling/other_samplers.hpp
/// @brief Chapter 10: the field's other samplers, each with its engine's exact rule — truncations
/// (typical-p, epsilon and eta cutoffs, top-n-sigma, XTC), the DRY penalty, the adaptive ones
/// (mirostat v1 and v2, dynamic temperature) and the biases (logit bias, sequence bias, bad words,
/// suppressed tokens).
///
/// As in sampling.hpp, a processor edits a vector of logits (V) in place and removes a token by
/// setting its logit to -infinity. Where a rule needs randomness (XTC's coin, mirostat's draw) the
/// coin is an argument. Each function names the engine code it follows; the engines' own test
/// cases are in tests/test_other_samplers.cpp.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace decodebook {

// ------------------------------------------------------------------------- truncation (chapter 10)

/// How typical-p decides which tokens to keep: the engines agree on the idea (keep the tokens whose
/// surprise -ln p is closest to the entropy H, until their mass reaches `mass`) and differ at the
/// boundary. Introduced in chapter 10.
enum class TypicalRule {
    HuggingFace,  ///< TypicalLogitsWarper: ties in |-ln p - H| kept together, the crossing token kept
    LlamaCpp,     ///< llama_sampler_typical: walk the sorted list, stop after the first cumulative sum > mass
};

/// Locally typical sampling on probabilities: which tokens survive, by `rule`; at least
/// max(1, min_keep) stay (the most typical ones; among equal distances the lower ids, where the
/// engines' unstable sorts leave it open); mass >= 1 keeps every candidate; p = 0 is never kept.
/// Introduced in chapter 10 (exercise 10.1).
/// @throws Error if mass is outside (0, 1]
std::vector<bool> typical_keep(const xt::xtensor<float, 1>& probs, double mass, int min_keep = 1,
                               TypicalRule rule = TypicalRule::HuggingFace);

/// Typical-p: softmax, then remove what typical_keep drops; mass = 1 disables. Introduced in chapter 10.
void apply_typical_p(xt::xtensor<float, 1>& logits, float mass, int min_keep = 1,
                     TypicalRule rule = TypicalRule::HuggingFace);

/// Epsilon sampling (HF EpsilonLogitsWarper): remove tokens with p < epsilon, keeping the min_keep
/// most likely; epsilon = 0 disables. Introduced in chapter 10.
/// @throws Error if epsilon is outside [0, 1)
void apply_epsilon_cutoff(xt::xtensor<float, 1>& logits, float epsilon, int min_keep = 1);

/// Eta sampling's threshold: min(epsilon, sqrt(epsilon) * exp(-H)), H the entropy of `probs` in nats
/// (HF EtaLogitsWarper). Introduced in chapter 10.
/// @throws Error if epsilon is outside [0, 1)
double eta_threshold(const xt::xtensor<float, 1>& probs, double epsilon);

/// Eta sampling: remove tokens with p < eta_threshold, keeping the min_keep most likely;
/// epsilon = 0 disables. Introduced in chapter 10.
/// @throws Error if epsilon is outside [0, 1)
void apply_eta_cutoff(xt::xtensor<float, 1>& logits, float epsilon, int min_keep = 1);

/// Top-n-sigma (llama.cpp): keep the logits >= max - n * sigma, sigma the population standard
/// deviation of the finite logits; n <= 0 disables. Introduced in chapter 10.
void apply_top_n_sigma(xt::xtensor<float, 1>& logits, float n);

/// XTC's coin for a step: a pure function of the seed and the step, so a step's decision does not
/// depend on how many steps ran before it in this process (chapter 08 verifies k steps at once):
/// `Rng(seed ^ splitmix64(0x5854430000000000 + step)).coin()` ("XTC" in the high bytes), drawn
/// whether or not XTC applies; tests/reference/other_samplers.py computes the same. llama.cpp
/// draws from its own mt19937 only when XTC could apply: the rule is the same, the bits are not.
/// Introduced in chapter 10.
double xtc_coin(uint64_t seed, int step);

/// Exclude Top Choices (llama.cpp): when coin <= probability and at least two tokens have
/// p >= threshold, remove all of those but the least likely of them (if min_keep candidates remain);
/// probability 0, threshold > 0.5 or fewer than two candidates disable. Introduced in chapter 10.
/// @throws Error if probability or threshold is outside [0, 1]
void apply_xtc(xt::xtensor<float, 1>& logits, float probability, float threshold, int min_keep, double coin);

// ------------------------------------------------------------------------------ DRY (chapter 10)

/// How many tokens before `candidate` would repeat earlier text if `candidate` came next: the
/// longest L such that the last L tokens of `context`, followed by `candidate`, occur earlier in
/// `context`; a match never reaches back across a token of `breakers` (the count stops at the
/// latest breaker). -1 when there is nothing to penalise: `candidate` never follows a token of
/// `context` (not even a repeat of length 0 ends before it), or is itself a breaker (llama.cpp never
/// penalises a single-token breaker). The plain definition, for one candidate: exercise 10.2's twin.
/// Introduced in chapter 10.
int dry_repeat_length(std::span<const int> context, int candidate, std::span<const int> breakers);

/// DRY's penalty for a repeat of length L: multiplier * base^(L - allowed_length) when
/// L >= allowed_length, else 0; the exponent is clamped as llama.cpp does (at
/// int(88.7228391 / ln base), when base > 1.000001). Introduced in chapter 10.
float dry_penalty(int repeat_length, float multiplier, float base, int allowed_length);

/// DRY (llama.cpp's llama_sampler_dry, from koboldcpp): for every token, its repeat length over the
/// last `last_n` tokens of `context` (-1: all) by the reverse Z-algorithm, capped at the latest
/// sequence breaker (`breakers`: token sequences, a head token and the tail that must follow it),
/// then logit -= dry_penalty. multiplier 0, base < 1 or last_n 0 disable. Introduced in chapter 10.
/// @throws Error if multiplier or allowed_length is negative, or last_n < -1
void apply_dry(xt::xtensor<float, 1>& logits, std::span<const int> context, float multiplier, float base,
               int allowed_length, int last_n, const std::vector<std::vector<int>>& breakers);

// ------------------------------------------------------------------------- adaptive (chapter 10)

/// One mirostat 2.0 step (llama.cpp): softmax; keep the tokens whose surprise -log2 p <= mu (at least
/// the most likely); renormalise; draw with `coin` (inverse CDF, candidate_order); then
/// mu -= eta * (-log2 p(chosen) - tau), p from the renormalised distribution. Returns the token.
/// Exercise 10.3's twin. Introduced in chapter 10.
/// @throws Error if tau or eta is not > 0
int mirostat_v2_step(const xt::xtensor<float, 1>& logits, double tau, double eta, double& mu, double coin);

/// One mirostat (v1) step (llama.cpp): estimate the Zipf exponent s from the top m probabilities,
/// k = ((s - 1) 2^mu / (1 - V^-(s-1)))^(1/s) with V = logits.size(), keep the top max(int(k), 1)
/// (no + 1: llama.cpp's code truncates k), draw with `coin`, update mu as v2 does (p renormalised
/// over the kept tokens). Introduced in chapter 10.
/// @throws Error if tau or eta is not > 0, or m < 2
int mirostat_v1_step(const xt::xtensor<float, 1>& logits, double tau, double eta, int m, double& mu, double coin);

/// llama.cpp's temperature 0 (llama_sampler_temp_impl with temp <= 0): only the largest logit stays,
/// the first among equals (the lowest id here; llama.cpp's first in its array's order), every other
/// one becomes -inf. Introduced in chapter 10.
/// @param logits the logits, edited in place (at least one finite, or nothing changes)
void keep_largest_logit(xt::xtensor<float, 1>& logits);

/// Dynamic temperature (llama.cpp temp_ext): T_dyn = T_min + (T_max - T_min) (H / ln n)^exponent,
/// T_min = max(0, T - range), T_max = T + range, H the entropy of the candidates (finite logits) and
/// n their count; then logits / T_dyn (with one candidate or none nothing changes). range 0 is plain
/// temperature. A temperature (or T_dyn) of 0 keeps only the largest logit, as llama.cpp does.
/// Introduced in chapter 10.
/// @throws Error if temperature, range or exponent is negative
void apply_dynamic_temperature(xt::xtensor<float, 1>& logits, float temperature, float range, float exponent);

// ---------------------------------------------------------------------------- biases (chapter 10)

/// Add a bias to single tokens (llama.cpp and vLLM `logit_bias`). Introduced in chapter 10.
/// @throws Error if a token id is outside the vocabulary
void apply_logit_bias(xt::xtensor<float, 1>& logits, const std::vector<std::pair<int, float>>& bias);

/// HF SequenceBiasLogitsProcessor: for each (sequence, bias), add bias to the sequence's last token
/// when the rest of it ends `sequence` (always, for a sequence of one token). Introduced in chapter 10.
/// @throws Error if a sequence is empty or names a token outside the vocabulary
void apply_sequence_bias(xt::xtensor<float, 1>& logits, std::span<const int> sequence,
                         const std::vector<std::pair<std::vector<int>, float>>& bias);

/// HF NoBadWordsLogitsProcessor: ban (-inf) the last token of each bad word whose other tokens end
/// `sequence`; entries that are only an EOS id are ignored. Introduced in chapter 10.
/// @throws Error if a bad word is empty or names a token outside the vocabulary
void apply_bad_words(xt::xtensor<float, 1>& logits, std::span<const int> sequence,
                     const std::vector<std::vector<int>>& bad_words, std::span<const int> eos_ids);

/// HF SuppressTokensLogitsProcessor: -inf for every id in `ids`. Introduced in chapter 10.
void apply_suppress_tokens(xt::xtensor<float, 1>& logits, const std::vector<int>& ids);

}  // namespace decodebook
