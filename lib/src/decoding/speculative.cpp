// Chapter 08: speculative decoding's verdict, prompt-lookup drafters and predicted speed-up. No
// model here: these are rules on distributions and token ids, tested on the engines' own cases.
#include "decodebook/decoding/speculative.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <chrono>
#include <memory>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/chain_end.hpp"
#include "decodebook/model/cached_sequence.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

float at(const xt::xtensor<float, 1>& v, int id) {
    if (id < 0 || static_cast<size_t>(id) >= v.size()) {
        throw Error("token id " + std::to_string(id) + " is outside a distribution of " + std::to_string(v.size()) + " ids",
                    "draft tokens must be ids of the target's vocabulary");
    }
    return v(static_cast<size_t>(id));
}

}  // namespace

// [ch08:verdict]
bool accept_draft(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x, double coin) {
    const double px = at(p, x), qx = q ? at(*q, x) : 1.0;
    if (qx <= 0 || px <= 0) return false;  // a token the draft could not draw, or the target never would
    return coin < px / qx;                 // kept with probability min(1, p(x) / q(x))
}

xt::xtensor<float, 1> residual(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x) {
    at(p, x);
    xt::xtensor<float, 1> r = p;
    if (q) {
        if (q->size() != p.size()) throw Error("the draft's and the target's distributions differ in size", "pass rows of one vocabulary");
        for (size_t i = 0; i < r.size(); ++i) r(i) = std::max(0.0f, p(i) - (*q)(i));  // max(0, p - q)
    } else {
        r(static_cast<size_t>(x)) = 0.0f;  // q is all on x: p without x
    }
    if (std::all_of(r.begin(), r.end(), [](float v) { return v <= 0.0f; })) {
        throw Error("the residual max(0, p - q) is empty: the target and the draft agree everywhere, yet token " +
                        std::to_string(x) + " was rejected",
                    "q must be the distribution the draft token was drawn from");
    }
    return r;
}

Verdict verify_drafts(std::span<const xt::xtensor<float, 1>> p, std::span<const int> drafts,
                      std::span<const xt::xtensor<float, 1>> q, std::span<const double> coins) {
    const size_t k = drafts.size();
    if (p.size() != k + 1 || (!q.empty() && q.size() != k) || coins.size() != k + 1) {
        throw Error("verify_drafts got " + std::to_string(k) + " drafts, " + std::to_string(p.size()) + " target rows, " +
                        std::to_string(q.size()) + " draft rows and " + std::to_string(coins.size()) + " coins",
                    "pass k drafts, k + 1 target rows, k draft rows (or none) and k + 1 coins");
    }
    Verdict v;
    for (size_t i = 0; i < k; ++i) {
        const xt::xtensor<float, 1>* qi = q.empty() ? nullptr : &q[i];
        if (accept_draft(p[i], qi, drafts[i], coins[i])) {
            ++v.accepted;
            continue;
        }
        v.next = sample_inverse_cdf(residual(p[i], qi, drafts[i]), coins[k]);  // the first rejection
        return v;
    }
    v.next = sample_inverse_cdf(p[k], coins[k]);  // every draft kept: a bonus token from the last row
    return v;
}
// [/ch08:verdict]

// [ch08:sample-and-compare]
Verdict verify_sample_and_compare(std::span<const xt::xtensor<float, 1>> p, std::span<const int> drafts,
                                  std::span<const double> coins) {
    const size_t k = drafts.size();
    if (p.size() != k + 1 || coins.size() != k + 1) {
        throw Error("verify_sample_and_compare got " + std::to_string(k) + " drafts, " + std::to_string(p.size()) +
                        " target rows and " + std::to_string(coins.size()) + " coins",
                    "pass k drafts, k + 1 target rows and k + 1 coins");
    }
    Verdict v;
    for (size_t i = 0; i < k; ++i) {
        const int own = sample_inverse_cdf(p[i], coins[i]);  // the target's own token at this position
        if (own != drafts[i]) {
            v.next = own;
            return v;
        }
        ++v.accepted;
    }
    v.next = sample_inverse_cdf(p[k], coins[k]);
    return v;
}
// [/ch08:sample-and-compare]

// [ch08:prompt-lookup]
std::vector<int> prompt_lookup_hf(std::span<const int> seq, int max_ngram, int num_tokens, std::span<const int> eos_ids) {
    const long len = static_cast<long>(seq.size());
    for (long n = std::min<long>(max_ngram, len - 1); n >= 1; --n) {
        const std::span<const int> suffix = seq.subspan(static_cast<size_t>(len - n));
        for (long i = 0; i + n < len; ++i) {  // leftmost first; the suffix itself has no continuation
            if (!std::equal(suffix.begin(), suffix.end(), seq.begin() + i)) continue;
            const long start = i + n, end = std::min(start + num_tokens, len);
            std::vector<int> out;
            for (long j = start; j < end; ++j) {
                if (std::find(eos_ids.begin(), eos_ids.end(), seq[static_cast<size_t>(j)]) != eos_ids.end()) break;
                out.push_back(seq[static_cast<size_t>(j)]);
            }
            return out;  // the first match decides, even when EOS leaves nothing of it
        }
    }
    return {};
}
// [/ch08:prompt-lookup]

std::vector<int> prompt_lookup_vllm(std::span<const int> seq, int min_n, int max_n, int k) {
    const long len = static_cast<long>(seq.size());
    for (long n = std::min<long>(max_n, len - 1); n >= std::max(min_n, 1); --n) {  // the longest n-gram first
        const std::span<const int> suffix = seq.subspan(static_cast<size_t>(len - n));
        for (long i = 0; i + n < len; ++i) {  // its earliest occurrence
            if (!std::equal(suffix.begin(), suffix.end(), seq.begin() + i)) continue;
            const long start = i + n, end = std::min(start + k, len);
            return {seq.begin() + start, seq.begin() + end};
        }
    }
    return {};
}

Drafter prompt_lookup_drafter(bool vllm, int min_ngram, int max_ngram, std::vector<int> eos_ids) {
    return [=](const DecodeContext& c, int k) {
        std::vector<int> sequence(c.prompt.begin(), c.prompt.end());
        sequence.insert(sequence.end(), c.generated.begin(), c.generated.end());
        Draft d;
        d.ids = vllm ? prompt_lookup_vllm(sequence, min_ngram, max_ngram, k) : prompt_lookup_hf(sequence, max_ngram, k, eos_ids);
        return d;
    };
}

Drafter model_drafter(const Gpt2& draft, const GenerationConfig& config, size_t capacity, int max_k, uint64_t seed) {
    struct State {
        KvCache cache;
        CachedSequence seq;
        LogitsChain chain;
        Rng rng;
        State(const Gpt2& m, const GenerationConfig& c, size_t cap, int k, uint64_t s)
            : cache(m.config(), 1, cap, std::min(cap, static_cast<size_t>(k) + 1)), seq(m, cache), chain(c), rng(s) {}
    };
    auto s = std::make_shared<State>(draft, config, capacity, max_k, seed);
    return [s](const DecodeContext& c, int k) {
        std::vector<int> sequence(c.prompt.begin(), c.prompt.end());
        sequence.insert(sequence.end(), c.generated.begin(), c.generated.end());
        // 1. bring the draft's cache in step: keep the common prefix (never the last token, whose
        //    logits are needed), then feed what is new: prefill the first time, one decode call after
        const std::vector<int>& held = s->seq.tokens();
        size_t same = 0;
        while (same < held.size() && same + 1 < sequence.size() && held[same] == sequence[same]) ++same;
        xt::xtensor<float, 1> logits;
        if (same == 0) {
            s->seq.clear();
            logits = s->seq.prefill(sequence);
        } else {
            s->seq.truncate(same);
            const xt::xtensor<float, 2> rows = s->seq.append(std::span<const int>(sequence).subspan(same));
            logits = xt::view(rows, rows.shape(0) - 1);
        }
        // 2. draft k tokens, each from the processed distribution of the draft's logits
        Draft d;
        std::vector<int> generated(c.generated.begin(), c.generated.end());
        for (int i = 0; i < k; ++i) {
            const DecodeContext ctx{c.prompt, generated, static_cast<int>(generated.size()), c.eos_ids};
            xt::xtensor<float, 1> q = s->chain.distribution(logits, ctx);
            const int token = s->chain.choose(q, s->rng.coin());
            d.ids.push_back(token);
            d.q.push_back(std::move(q));
            generated.push_back(token);
            const bool eos = std::find(c.eos_ids.begin(), c.eos_ids.end(), token) != c.eos_ids.end();
            if (eos || i + 1 == k) break;  // no draft crosses EOS
            logits = xt::view(s->seq.append(std::span<const int>(&d.ids.back(), 1)), 0);
        }
        return d;
    };
}

int drafts_per_round(const GenerationConfig& config) {
    return config.prompt_lookup_num_tokens > 0 ? config.prompt_lookup_num_tokens : config.num_assistant_tokens;
}

int next_drafts_per_round(const GenerationConfig& config, int k, int drafted, int accepted) {
    if (config.prompt_lookup_num_tokens > 0 || config.num_assistant_tokens_schedule == AssistantSchedule::Constant ||
        drafted == 0)
        return k;
    return accepted == drafted ? std::min(k + 2, kMaxDraftsPerRound) : std::max(1, k - 1);
}

Drafter make_drafter(const GenerationConfig& config, const Gpt2* assistant, std::span<const int> eos_ids,
                     size_t capacity) {
    if (config.prompt_lookup_num_tokens > 0) {
        const bool vllm = config.prompt_lookup_min > 0;
        return prompt_lookup_drafter(vllm, config.prompt_lookup_min, config.max_matching_ngram_size,
                                     std::vector<int>(eos_ids.begin(), eos_ids.end()));
    }
    if (ends_in_state(config))  // validate refuses it with prompt lookup; a draft model is known only here
        throw Error("mirostat = " + std::to_string(config.mirostat) +
                        " with speculative decoding is not offered: verifying k drafts at once would have to roll "
                        "mirostat's mu back at each rejection",
                    "drop --assistant-model, or --mirostat");
    if (!assistant)
        throw Error("speculative decoding needs a drafter: neither a draft model nor prompt lookup was given",
                    "pass --assistant-model DIR, or --prompt-lookup-num-tokens N (N >= 1)");
    if (capacity > static_cast<size_t>(assistant->config().n_positions))  // the draft's cache, not the target's
        throw Error("the draft model's context holds " + std::to_string(assistant->config().n_positions) +
                        " positions, fewer than the " + std::to_string(capacity) +
                        " this request needs (the prompt and max_new_tokens)",
                    "use a draft model whose context holds the prompt and max_new_tokens, or shorten them to " +
                        std::to_string(assistant->config().n_positions) + " positions together");
    return model_drafter(*assistant, config, capacity, kMaxDraftsPerRound, draft_seed(config.seed));
}

Generation generate_speculative(const Gpt2& target, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                                const GenerationConfig& config, const Drafter& drafter, SpeculativeStats* stats,
                                const StepObserver& on_step, const LogprobsLog* logprobs) {
    if (logprobs) check_logprobs_request(logprobs->request);
    using Clock = std::chrono::steady_clock;
    const ModelConfig& mc = target.config();
    const std::vector<int> eos_ids = check_request(mc, prompt, config);
    const LogitsChain chain(config);
    Rng rng(config.seed);
    GenerationState state(mc, &tokenizer, prompt, config, eos_ids);
    int k = drafts_per_round(config);
    const int most = config.prompt_lookup_num_tokens > 0 || config.num_assistant_tokens_schedule == AssistantSchedule::Constant
                         ? k
                         : kMaxDraftsPerRound;
    const size_t capacity = prompt.size() + static_cast<size_t>(config.max_new_tokens);
    // a round decodes at most the last kept token and its drafts, and never more than the cache holds
    KvCache cache(mc, 1, capacity, std::min(capacity, static_cast<size_t>(most) + 1));
    CachedSequence seq(target, cache, 0, BatchKernels::Invariant);
    SpeculativeStats local;
    SpeculativeStats& st = stats ? *stats : local;
    st = SpeculativeStats{};

    // [ch08:round]
    std::vector<xt::xtensor<float, 1>> pending{seq.prefill(prompt)};  // the logits after the prompt
    std::optional<int> uncached;  // the last kept token, not yet in the cache
    for (;;) {
        const auto start = Clock::now();
        const int left = config.max_new_tokens - static_cast<int>(state.out.ids.size());
        // 1. draft: at most one fewer than the tokens left, so a round never overshoots
        Draft d = left > 1 ? drafter(state.context(), std::min(k, left - 1)) : Draft{};
        if (static_cast<int>(d.ids.size()) > std::min(k, left - 1)) throw Error("the drafter returned more than k tokens", "return at most k");
        if (!d.q.empty() && d.q.size() != d.ids.size()) throw Error("the drafter returned q rows for some drafts only", "one row per draft, or none");
        const size_t kk = d.ids.size();
        // 2. verify: [last kept token, drafts...] in one decode call; row i scores the token after it
        std::vector<int> batch;
        if (uncached) batch.push_back(*uncached);
        batch.insert(batch.end(), d.ids.begin(), d.ids.end());
        std::vector<xt::xtensor<float, 1>> logits;
        logits.swap(pending);  // the prompt's logits, first round only
        if (!batch.empty()) {
            const xt::xtensor<float, 2> rows = seq.append(batch);
            for (size_t r = 0; r < rows.shape(0); ++r) logits.push_back(xt::view(rows, r));
        }
        ++st.rounds;
        st.drafted += static_cast<int>(kk);
        // 3. the target's distribution at each position (its context includes the drafts before it),
        //    then the verdict with this round's coins
        std::vector<int> extended = state.out.ids;
        extended.insert(extended.end(), d.ids.begin(), d.ids.end());
        const size_t kept = state.out.ids.size();  // before this round's tokens are appended
        const auto context_at = [&](size_t i) {
            const std::span<const int> generated = std::span<const int>(extended).first(kept + i);
            return DecodeContext{prompt, generated, static_cast<int>(generated.size()), eos_ids};
        };
        std::vector<xt::xtensor<float, 1>> p;
        for (size_t i = 0; i <= kk; ++i) p.push_back(chain.distribution(logits[i], context_at(i)));
        std::vector<double> coins;
        for (int c = 0; c < coins_per_round(static_cast<int>(kk)); ++c) coins.push_back(rng.coin());
        const Verdict v = config.verify_rule == VerifyRule::Leviathan ? verify_drafts(p, d.ids, d.q, coins)
                                                                      : verify_sample_and_compare(p, d.ids, coins);
        st.accepted += v.accepted;
        st.rejected += v.accepted < static_cast<int>(kk);
        k = next_drafts_per_round(config, k, static_cast<int>(kk), v.accepted);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / (v.accepted + 1);
        // 4. each kept token through the one append step, which may end the run mid-round
        for (int i = 0; i <= v.accepted; ++i) {
            const int token = i < v.accepted ? d.ids[static_cast<size_t>(i)] : v.next;
            ++st.emitted;
            if (logprobs) {  // chapter 11: the target's numbers at this position, only when asked
                const size_t at = static_cast<size_t>(i);
                logprobs->out->push_back(step_logprobs(logits[at], chain.apply(logits[at], context_at(at)), token, logprobs->request));
            }
            if (append_token(state, token, logits[static_cast<size_t>(i)], ms, on_step)) return std::move(state.out);
        }
        // 5. roll back: the cache keeps the prompt and every kept token but the last (fed next round)
        seq.truncate(prompt.size() + state.out.ids.size() - 1);
        uncached = v.next;
    }
    // [/ch08:round]
}

// [ch08:speedup]
double expected_tokens_per_round(double alpha, int k) {
    if (alpha >= 1.0) return k + 1;
    return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, int k, double c) {
    return expected_tokens_per_round(alpha, k) / (k * c + 1.0);
}
// [/ch08:speedup]

}  // namespace decodebook
