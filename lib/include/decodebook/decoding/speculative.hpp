#pragma once
/// @file decoding/speculative.hpp
/// @brief Speculative decoding (chapter 08): a cheap drafter proposes k tokens, the target model
/// checks them all in one decode call, and a rule keeps a prefix of them so the output has exactly
/// the target's distribution. This header holds the parts that need no model: the verdict on a
/// round (Leviathan et al. 2023, as Hugging Face and vLLM implement it), the prompt-lookup
/// drafters (Hugging Face's and vLLM's rules) and the speed-up a round can bring.
///
/// Notation (Leviathan's and Hugging Face's; Chen et al. swap the letters): p is the target's
/// distribution, q the draft's, both the *processed* distributions (after temperature, truncation
/// and penalties: LogitsChain::distribution), q exactly the one each draft token was drawn from.
///
/// The loop on the model, generate_speculative, runs a round as five steps: 1 draft k tokens,
/// 2 verify [last token, drafts] in one decode call of the target (bit for bit one call per
/// token), 3 keep a prefix and draw the next token (verify_drafts), 4 append_token each kept
/// token, stopping mid-round where plain decoding would, 5 roll the target's cache back to what
/// was kept.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/token_logprobs.hpp"

namespace decodebook {

/// What one round of verification decided. Introduced in chapter 08.
struct Verdict {
    int accepted = 0;  ///< how many drafted tokens were kept (a prefix of the drafts)
    int next = -1;     ///< the token after them: drawn from the residual at the first rejection,
                       ///< or the bonus token from the last target row when every draft was kept
};

/// The coins one round of k drafts uses, in this order, whatever the verdict: coins[i] decides
/// draft i (i < k), coins[k] draws the residual or bonus token. A round always takes k + 1 coins
/// from the caller's Rng, used or not, so a seeded run repeats draw for draw. Introduced in chapter 08.
inline constexpr int coins_per_round(int k) { return k + 1; }

/// Whether drafted token `x` is kept: coin < p(x) / q(x), i.e. with probability min(1, p(x)/q(x))
/// (HF's `r <= p/q` and vLLM's `p/q >= u` differ only on a coin exactly equal to the ratio). A token
/// the draft gave no probability (q(x) = 0) is never kept (vLLM); one the target gives none
/// (p(x) = 0) never is either. With `q` absent the draft is deterministic (prompt lookup, a greedy
/// draft): q(x) = 1, kept with probability p(x). Introduced in chapter 08.
/// @param p (V) the target's distribution at this position
/// @param q (V) the draft's distribution, or null for a deterministic draft
/// @param x the drafted token
/// @param coin uniform in [0, 1)
bool accept_draft(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x, double coin);

/// Where a rejected position draws its token: max(0, p - q) (unnormalised: sample_inverse_cdf
/// normalises), or with a deterministic draft p with x removed. Together with the acceptance rule
/// this makes the emitted token distributed exactly as p. Introduced in chapter 08.
/// @param p (V) the target's distribution
/// @param q (V) the draft's, or null for a deterministic draft
/// @param x the rejected token
/// @throws Error when nothing is left (p equals q at every id but x rejected: impossible unless
/// the distributions are not what the draft sampled from).
xt::xtensor<float, 1> residual(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x);

/// One round's verdict: walk the drafts in order, keep each while accept_draft says so; at the
/// first rejection draw the next token from its residual; when every draft is kept, draw a bonus
/// token from the last target row. With a greedy target (p one-hot at the argmax) this is "keep
/// while the draft is the argmax, then the target's own token". Introduced in chapter 08.
/// @param p k + 1 target distributions: row i scores the token after the context and drafts[0..i)
/// @param drafts the k drafted tokens
/// @param q k draft distributions (row i: what drafts[i] was drawn from), or empty for a
///        deterministic drafter
/// @param coins coins_per_round(k) coins, used as that function says
/// @throws Error when the sizes disagree.
Verdict verify_drafts(std::span<const xt::xtensor<float, 1>> p, std::span<const int> drafts,
                      std::span<const xt::xtensor<float, 1>> q, std::span<const double> coins);

/// llama.cpp's verification (common_sampler_sample_and_accept_n): at each position draw the
/// target's own token from p with that position's coin; keep the draft while they match; the
/// first mismatch's draw is the next token; a bonus from the last row when all match. Exact for
/// any drafter (every emitted token is a draw from p), but a draft x drawn from q survives with
/// probability sum p q instead of Leviathan's sum min(p, q). Same coins as verify_drafts:
/// coins[i] for position i, coins[k] for the bonus. Introduced in chapter 08.
/// @param p k + 1 target distributions, as for verify_drafts
/// @param drafts the k drafted tokens
/// @param coins coins_per_round(k) coins
/// @throws Error when the sizes disagree.
Verdict verify_sample_and_compare(std::span<const xt::xtensor<float, 1>> p, std::span<const int> drafts,
                                  std::span<const double> coins);

/// Hugging Face's prompt lookup (PromptLookupCandidateGenerator): for n from
/// min(max_ngram, length - 1) down to 1, the leftmost earlier occurrence of the sequence's last n
/// tokens whose continuation is not empty; its next tokens, at most `num_tokens`, cut before the
/// first EOS. Empty when nothing matches. Introduced in chapter 08.
/// @param sequence the prompt and the tokens generated so far
/// @param max_ngram max_matching_ngram_size (HF's default 2)
/// @param num_tokens prompt_lookup_num_tokens (HF's default 10)
/// @param eos_ids a continuation stops before any of them (transformers#31301)
std::vector<int> prompt_lookup_hf(std::span<const int> sequence, int max_ngram, int num_tokens,
                                  std::span<const int> eos_ids = {});

/// vLLM's n-gram proposer: the longest n-gram with min_n <= n <= max_n that ends the sequence and
/// occurs earlier, its earliest occurrence among those of that length, and up to `k` tokens that
/// follow it. Empty when no n-gram of at least min_n matches. Introduced in chapter 08.
std::vector<int> prompt_lookup_vllm(std::span<const int> sequence, int min_n, int max_n, int k);

/// What a drafter proposes. Introduced in chapter 08.
struct Draft {
    std::vector<int> ids;               ///< up to k proposed tokens
    std::vector<xt::xtensor<float, 1>> q;  ///< (V) the distribution each id was drawn from; empty for a
                                         ///< deterministic drafter (prompt lookup)
};

/// The drafter seam: from the sequence so far (the context's prompt and generated ids) and k, up
/// to k proposed tokens. Its own state, if any (a draft model's cache), follows the sequence it is
/// given, so a rolled-back round needs nothing from the caller. Introduced in chapter 08.
using Drafter = std::function<Draft(const DecodeContext& context, int k)>;

/// Prompt lookup as a drafter, by Hugging Face's rule (prompt_lookup_hf; `min_ngram` unused) or
/// vLLM's (prompt_lookup_vllm). Introduced in chapter 08.
/// @param vllm true: vLLM's rule (longest n-gram of at least min_ngram); false: HF's
/// @param min_ngram the shortest n-gram vLLM's rule matches
/// @param max_ngram the longest n-gram either rule tries first (max_matching_ngram_size)
/// @param eos_ids HF's rule cuts a continuation before them
Drafter prompt_lookup_drafter(bool vllm, int min_ngram, int max_ngram, std::vector<int> eos_ids);

/// A smaller model as the drafter: it keeps its own cache in step with the sequence it is given
/// (truncating to the common prefix, appending what is new), then drafts k tokens one decode at a
/// time through the same processors as the target (LogitsChain(config)): the argmax when greedy,
/// else a sample with a coin from its own Rng(seed), and reports the distribution each came from.
/// It stops after an EOS. The model must outlive the drafter. Introduced in chapter 08.
/// @param draft the draft model (same vocabulary as the target)
/// @param config the processors it drafts through (the target's config)
/// @param capacity positions its cache holds (the target's prompt + max_new_tokens is enough)
/// @param max_k the most tokens it is asked for at once
/// @param seed its own coin stream (the target's round coins come from config.seed)
/// @throws Error on a bad config or when the draft's vocabulary differs from what it is fed.
Drafter model_drafter(const Gpt2& draft, const GenerationConfig& config, size_t capacity, int max_k, uint64_t seed);

/// What a speculative run did. Introduced in chapter 08.
struct SpeculativeStats {
    int rounds = 0;        ///< verification calls of the target (one per round)
    int drafted = 0;       ///< tokens the drafter proposed (and the target checked)
    int accepted = 0;      ///< of them, kept
    int rejected = 0;      ///< rounds that ended at a rejected draft (the drafts after it are never looked at)
    int emitted = 0;       ///< tokens the run produced
    /// accepted / drafted (0 without drafts): the acceptance rate vLLM and HF report.
    double acceptance() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
    /// accepted / (accepted + rejected): how often a draft the target looked at was kept, the
    /// per-position rate Leviathan's alpha predicts (drafts after a rejection do not count).
    double alpha() const { return accepted + rejected ? static_cast<double>(accepted) / (accepted + rejected) : 0.0; }
};

/// The most drafts one round may verify (num_assistant_tokens' upper bound; the heuristic
/// schedule grows no further). Introduced in chapter 08.
inline constexpr int kMaxDraftsPerRound = 64;

/// The drafts a run asks for in its first round: prompt_lookup_num_tokens when prompt lookup is
/// on, else num_assistant_tokens. Introduced in chapter 08.
int drafts_per_round(const GenerationConfig& config);

/// The drafts the next round asks for, by HF's `update_candidate_strategy`: unchanged for prompt
/// lookup and the "constant" schedule; "heuristic": k + 2 when the round kept all its drafts, else
/// max(1, k - 1) (capped at kMaxDraftsPerRound). Introduced in chapter 08.
/// @param config the knobs
/// @param k this round's number
/// @param drafted drafts this round proposed (0: no change)
/// @param accepted of them, kept
int next_drafts_per_round(const GenerationConfig& config, int k, int drafted, int accepted);

/// The seed of a draft model's own coins: another stream than the target's round coins
/// (Rng(seed) and Rng(seed + 1) share nothing: splitmix64 seeding). Introduced in chapter 08.
inline uint64_t draft_seed(uint64_t seed) { return seed + 1; }

/// The drafter a config asks for: prompt lookup when prompt_lookup_num_tokens > 0 (vLLM's rule
/// when prompt_lookup_min > 0, else HF's), otherwise the draft model, seeded with draft_seed.
/// Introduced in chapter 08.
/// @param config the knobs (the draft model drafts through the same processors)
/// @param assistant the draft model, or null
/// @param eos_ids the ids HF's lookup rule cuts a continuation before
/// @param capacity positions the draft model's cache holds (prompt + max_new_tokens)
/// @throws Error when prompt lookup is off and no draft model is given, or the draft model's
/// context holds fewer than `capacity` positions.
Drafter make_drafter(const GenerationConfig& config, const Gpt2* assistant, std::span<const int> eos_ids,
                     size_t capacity);

/// Speculative decoding on the KV cache: the same Generation plain decoding gives with the same
/// config (greedy: token for token; sampling: in distribution), in fewer target steps when drafts
/// are kept. Each round drafts min(k, tokens left - 1) with k from drafts_per_round and
/// next_drafts_per_round, verifies them in one decode call with BatchKernels::Invariant, keeps a
/// prefix by verify_drafts (or verify_sample_and_compare, by config.verify_rule) with
/// coins_per_round coins from Rng(config.seed), rolls the cache back,
/// and appends each kept token with append_token (EOS, max_new_tokens, min_new_tokens and stop
/// strings act mid-round). The request is checked first (check_request). Introduced in chapter 08.
/// @param target the model whose distribution the output follows
/// @param tokenizer its tokenizer (the text)
/// @param prompt the prompt's ids
/// @param config the knobs, as for generate, with the speculative ones
/// @param drafter proposes each round's tokens
/// @param stats filled with what the run did, when given
/// @param on_step told about every kept token, as in generate
/// @param logprobs when given, a record per emitted token from the target's logits at its
///   position and the chain's output for them (step_logprobs; chapter 11): the target's
///   distribution, never the draft's
/// @throws Error on a bad request or config.
Generation generate_speculative(const Gpt2& target, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                                const GenerationConfig& config, const Drafter& drafter,
                                SpeculativeStats* stats = nullptr, const StepObserver& on_step = {},
                                const LogprobsLog* logprobs = nullptr);

/// Expected tokens one round emits when each draft is kept with probability alpha:
/// (1 - alpha^(k+1)) / (1 - alpha) (k + 1 at alpha = 1). Introduced in chapter 08.
double expected_tokens_per_round(double alpha, int k);

/// Leviathan's predicted wall-time speed-up over plain decoding:
/// (1 - alpha^(k+1)) / ((1 - alpha)(k c + 1)), c = a draft step's cost over a target step's.
/// Introduced in chapter 08.
double predicted_speedup(double alpha, int k, double c);

}  // namespace decodebook
