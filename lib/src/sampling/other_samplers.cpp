// Chapter 10: the field's other samplers, each following one engine's code (cited above each
// function, with the commit read). The engines' own test cases are in tests/test_other_samplers.cpp.
//
// Engine sources read for this file:
//   llama.cpp     ggml-org/llama.cpp src/llama-sampler.cpp @ 00efb3e184262872916bf136b3df63c1822a19bd
//   Hugging Face  huggingface/transformers src/transformers/generation/logits_process.py
//                 @ 00857b6cf63a4fa05cbd9bdc8a4fd78b6168c5af
//
// One convention replaces llama.cpp's candidate array: the candidates are the tokens with a finite
// logit (probability > 0), walked in candidate_order (probability descending, id ascending), so a
// tie never depends on a sort's stability. llama.cpp sorts with std::sort and partial_sort, whose
// order among equal values is unspecified; where that order decides (XTC, top-k inside mirostat),
// the comment says so.
//
// Where this differs from the llama.cpp code it cites (chapter 10's page, "Where the library and
// llama.cpp's code part ways"): llama.cpp's array keeps tokens a -inf logit bias or a grammar
// removed, and counts them. Its typical-p entropy then adds -0 * log 0 = NaN; its dynamic
// temperature divides by ln(array length), not ln(live count); its XTC counts them toward
// min_keep; its mirostat v1 takes ln(p_i / p_{i+1}) = inf over a zero and keeps one token. Here
// every rule sees the live candidates only, as its paper defines it.
#include "decodebook/sampling/other_samplers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "removal.hpp"

namespace decodebook {
namespace {

using removal::kRemoved;
using removal::remove_unkept;

// "error: typical_p = 1.5 is outside (0, 1]" with the fix.
[[noreturn]] void bad_knob(const char* name, double value, const char* range, const char* off) {
    char problem[128], fix[128];
    std::snprintf(problem, sizeof problem, "%s = %g is outside %s", name, value, range);
    std::snprintf(fix, sizeof fix, "pass a %s in %s (%s disables it)", name, range, off);
    throw Error(problem, fix);
}

// A token id outside the vocabulary: the problem and the fix.
[[noreturn]] void bad_token(const char* what, int id, size_t vocab) {
    throw Error(std::string(what) + " names token " + std::to_string(id) + ", outside the vocabulary [0, " +
                    std::to_string(vocab) + ")",
                "use token ids below " + std::to_string(vocab));
}

// The value of the n-th largest logit (n >= 1, ties counted): HF's `torch.topk(scores, n)[0][..., -1]`.
float nth_largest(const xt::xtensor<float, 1>& logits, size_t n) {
    std::vector<float> values(logits.begin(), logits.end());
    n = std::min(n, values.size());
    std::nth_element(values.begin(), values.begin() + static_cast<long>(n - 1), values.end(), std::greater<>());
    return values[n - 1];
}

// HF's cutoff warpers (epsilon, eta): remove p < threshold unless the logit is among the min_keep
// largest (`scores < torch.topk(scores, top_k)[0][..., -1, None]`, so ties with the last are kept).
void remove_below(xt::xtensor<float, 1>& logits, const xt::xtensor<float, 1>& probs, float threshold, int min_keep) {
    const float floor = nth_largest(logits, static_cast<size_t>(std::max(1, min_keep)));
    for (size_t i = 0; i < logits.size(); ++i)
        if (probs(i) < threshold && logits(i) < floor) logits(i) = kRemoved;
}

// The candidates sorted by |-ln p - H| ascending (typical-p's order); ties keep candidate_order.
// shifted (V) receives each candidate's distance. H is the entropy of `probs` in nats.
std::vector<int> typical_order(const xt::xtensor<float, 1>& probs, std::vector<double>& shifted) {
    const double h = entropy(probs);
    shifted.assign(probs.size(), std::numeric_limits<double>::infinity());  // p = 0: infinitely atypical
    std::vector<int> order = candidate_order(probs);
    for (int id : order) shifted[static_cast<size_t>(id)] = std::abs(-std::log(static_cast<double>(probs(id))) - h);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return shifted[static_cast<size_t>(a)] < shifted[static_cast<size_t>(b)];
    });
    return order;
}

// llama.cpp's int(k) for mirostat's float k, made total: NaN (a single candidate makes s_hat 0/0)
// keeps 1; k at or beyond the candidate count (+inf included) keeps them all. int() of a NaN or
// out-of-range float is undefined in C++: x86-64 yields INT_MIN (llama.cpp then keeps 1 token),
// AArch64 saturates (llama.cpp then keeps all); we take the saturating reading, which is k's meaning.
size_t mirostat_k(float k, size_t candidates) {
    if (!(k >= 1.0f)) return 1;  // NaN, or below 1: max(int(k), 1) = 1
    if (k >= static_cast<float>(candidates)) return candidates;
    return static_cast<size_t>(k);  // truncation, as int(k)
}

// Keep `order`'s first n tokens, renormalise with softmax, draw with `coin`, return (token, its
// renormalised probability). The draw is sample_inverse_cdf over the kept tokens.
std::pair<int, float> draw_from_prefix(const xt::xtensor<float, 1>& logits, const std::vector<int>& order, size_t n,
                                       double coin) {
    xt::xtensor<float, 1> kept = xt::xtensor<float, 1>::from_shape(logits.shape());
    kept.fill(kRemoved);
    for (size_t r = 0; r < n; ++r) kept(order[r]) = logits(order[r]);
    const xt::xtensor<float, 1> p = softmax(kept);  // llama_sampler_softmax_impl on the truncated array
    const int token = sample_inverse_cdf(p, coin);
    return {token, p(token)};
}

// Mirostat's update, both versions: mu -= eta * (observed surprise in bits - tau).
void update_mu(double& mu, double tau, double eta, float p_chosen) {
    const double surprise = -std::log2(static_cast<double>(p_chosen));
    mu -= eta * (surprise - tau);
}

void check_mirostat(double tau, double eta, double coin) {
    if (!(tau > 0)) bad_knob("mirostat_tau", tau, "(0, inf)", "mirostat 0");
    if (!(eta > 0)) bad_knob("mirostat_eta", eta, "(0, inf)", "mirostat 0");
    if (!(coin >= 0.0 && coin < 1.0))
        throw Error("mirostat's coin " + std::to_string(coin) + " is outside [0, 1)",
                    "draw the coin with Rng::coin(), which is always in [0, 1)");
}

// Does `sequence` end with `tail`? (An empty tail always matches.)
bool ends_with(std::span<const int> sequence, std::span<const int> tail) {
    return tail.size() <= sequence.size() && std::equal(tail.begin(), tail.end(), sequence.end() - static_cast<long>(tail.size()));
}

// llama.cpp's step 1 of DRY: how many of the window's last tokens may count towards a repeat, i.e.
// how many follow the latest complete breaker sequence (head, then its tail). Walking back from the
// newest token, the first head whose tail follows it ends the scan; among a head's tails the
// longest that fits and matches wins. No breaker: the whole window.
int dry_rep_limit(std::span<const int> window, const std::vector<std::vector<int>>& breakers) {
    const int w = static_cast<int>(window.size());
    for (int i = 0; i < w; ++i) {  // i: distance from the newest token
        const int head = window[static_cast<size_t>(w - 1 - i)];
        int longest = -1;
        for (const auto& b : breakers) {
            if (b.empty() || b[0] != head) continue;
            const int tail_len = static_cast<int>(b.size()) - 1;
            if (tail_len <= longest || tail_len > i) continue;
            bool match = true;  // the tail follows the head: window[w - i + offset] == b[1 + offset]
            for (int offset = 0; offset < tail_len && match; ++offset)
                match = b[static_cast<size_t>(1 + offset)] == window[static_cast<size_t>(w - i + offset)];
            if (match) longest = tail_len;
        }
        if (longest >= 0) return i - longest;
    }
    return w;
}

// llama.cpp's step 2 of DRY, the Z-algorithm run backwards: z[j] (W) = the length of the longest
// common suffix of window[0..j] and the whole window, capped at rep_limit (z[W-1] is unused, 0).
// rat(n) is the n-th newest token, as in llama.cpp's ring buffer.
std::vector<int> dry_suffix_matches(std::span<const int> window, int rep_limit) {
    const int w = static_cast<int>(window.size()), last = w - 1;
    auto rat = [&](int n) { return window[static_cast<size_t>(last - n)]; };
    std::vector<int> z(static_cast<size_t>(w), 0);
    int lt = 0, rt = 0;  // the current Z-box [lt, rt], in distances from the newest token
    for (int k = 1; k < w; ++k) {
        if (k > rt) {  // outside the box: compare naively
            int n = 0;
            while (n + k < w && rat(n) == rat(n + k)) ++n;
            z[static_cast<size_t>(last - k)] = std::min(n, rep_limit);
            if (n > 0) {
                lt = k;
                rt = k + n - 1;
            }
        } else {  // inside the box: reuse the pair's value, or extend past the box's right end
            const int p = k - lt, right_part_len = rt - k + 1;
            if (z[static_cast<size_t>(last - p)] < right_part_len) {
                z[static_cast<size_t>(last - k)] = std::min(z[static_cast<size_t>(last - p)], rep_limit);
            } else {
                int i = rt + 1;
                while (i < w && rat(i) == rat(i - k)) ++i;
                z[static_cast<size_t>(last - k)] = std::min(i - k, rep_limit);
                lt = k;
                rt = i - 1;
            }
        }
    }
    return z;
}

}  // namespace

// ------------------------------------------------------------------------- truncation (chapter 10)

// [ch10:typical]
// HF TypicalLogitsWarper.__call__ and llama.cpp llama_sampler_typical_apply (see the file header).
std::vector<bool> typical_keep(const xt::xtensor<float, 1>& probs, double mass, int min_keep, TypicalRule rule) {
    if (!(mass > 0.0 && mass <= 1.0)) bad_knob("typical_p", mass, "(0, 1]", "1");
    std::vector<bool> keep(probs.size(), false);
    std::vector<double> shifted;
    const std::vector<int> order = typical_order(probs, shifted);  // candidates, most typical first
    if (mass >= 1.0) {
        for (int id : order) keep[static_cast<size_t>(id)] = true;
        return keep;
    }
    const size_t forced = std::min(order.size(), static_cast<size_t>(std::max(1, min_keep)));
    size_t kept = 0;  // how many of `order` stay
    if (rule == TypicalRule::LlamaCpp) {
        // llama.cpp: a float running sum; stop right after the first token where it is > mass,
        // once min_keep tokens are in (`i >= min_keep - 1`); never crossing keeps all.
        const float pf = static_cast<float>(mass);
        float cum = 0.0f;
        kept = order.size();
        for (size_t i = 0; i < order.size(); ++i) {
            cum += probs(order[i]);
            if (cum > pf && i + 1 >= forced) {
                kept = i + 1;
                break;
            }
        }
    } else {
        // HF: last_ind = how many cumulative sums (float32, of the sorted probabilities) are < mass,
        // clamped to V - 1; every token whose distance is <= the distance at last_ind stays, so a
        // tie with the crossing token stays with it. (The cumulative sum runs over all V entries;
        // tokens with p = 0 sort last, at infinite distance, and never count.)
        const float limit = static_cast<float>(mass);
        double cum = 0;  // torch's CPU cumsum accumulates in double and rounds each output to float32
        size_t last_ind = 0;
        for (int id : order) {
            cum += probs(id);
            if (static_cast<float>(cum) < limit) ++last_ind;
        }
        if (last_ind >= order.size()) {
            kept = order.size();  // last_ind lands on a p = 0 token (distance inf): everything stays
        } else {
            const double boundary = shifted[static_cast<size_t>(order[last_ind])];
            while (kept < order.size() && shifted[static_cast<size_t>(order[kept])] <= boundary) ++kept;
        }
    }
    // The min_keep most TYPICAL tokens always stay (both engines). Where min_keep splits a group of
    // equal distances, the engines' sorts (torch.sort, std::sort: neither stable) decide which;
    // here the lower ids stay. Checked against HF's own code (torch, 3000 random rows): the kept
    // sets agreed except in 9 such splits.
    kept = std::max(kept, forced);
    for (size_t r = 0; r < kept; ++r) keep[static_cast<size_t>(order[r])] = true;
    return keep;
}
// [/ch10:typical]

void apply_typical_p(xt::xtensor<float, 1>& logits, float mass, int min_keep, TypicalRule rule) {
    if (!(mass > 0.0f && mass <= 1.0f)) bad_knob("typical_p", mass, "(0, 1]", "1");
    if (mass >= 1.0f) return;
    remove_unkept(logits, typical_keep(softmax(logits), typed_value(mass), min_keep, rule));
}

// HF EpsilonLogitsWarper: probabilities < epsilon go, except the min_keep largest logits.
void apply_epsilon_cutoff(xt::xtensor<float, 1>& logits, float epsilon, int min_keep) {
    if (!(epsilon >= 0.0f && epsilon < 1.0f)) bad_knob("epsilon_cutoff", epsilon, "[0, 1)", "0");
    if (epsilon == 0.0f) return;
    remove_below(logits, softmax(logits), epsilon, min_keep);
}

// HF EtaLogitsWarper: eta = min(epsilon, sqrt(epsilon) * exp(-entropy)).
double eta_threshold(const xt::xtensor<float, 1>& probs, double epsilon) {
    if (!(epsilon >= 0.0 && epsilon < 1.0)) bad_knob("eta_cutoff", epsilon, "[0, 1)", "0");
    return std::min(epsilon, std::sqrt(epsilon) * std::exp(-entropy(probs)));
}

void apply_eta_cutoff(xt::xtensor<float, 1>& logits, float epsilon, int min_keep) {
    if (!(epsilon >= 0.0f && epsilon < 1.0f)) bad_knob("eta_cutoff", epsilon, "[0, 1)", "0");
    if (epsilon == 0.0f) return;
    const xt::xtensor<float, 1> probs = softmax(logits);
    // HF keeps epsilon in a float32 tensor, so the threshold starts from the float knob itself
    remove_below(logits, probs, static_cast<float>(eta_threshold(probs, epsilon)), min_keep);
}

// [ch10:top-n-sigma]
// llama.cpp llama_sampler_top_n_sigma_apply: max, mean and population standard deviation over the
// finite logits, in float as llama.cpp computes them; then remove logit < max - n * std.
void apply_top_n_sigma(xt::xtensor<float, 1>& logits, float n) {
    if (!(n > 0.0f) || logits.size() <= 1) return;  // n <= 0 is a no-op (PR #13345)
    float max = kRemoved, sum = 0.0f;
    size_t count = 0;
    for (float z : logits) {
        if (z == kRemoved) continue;
        max = std::max(max, z);
        sum += z;
        ++count;
    }
    const float mean = count > 0 ? sum / static_cast<float>(count) : 0.0f;
    float acc = 0.0f;
    for (float z : logits)
        if (z != kRemoved) acc = static_cast<float>(acc + std::pow(static_cast<double>(z - mean), 2));  // float += double
    const float sigma = count > 0 ? std::sqrt(acc / static_cast<float>(count)) : 0.0f;
    for (float& z : logits)
        if (z < max - n * sigma) z = kRemoved;
}
// [/ch10:top-n-sigma]

double xtc_coin(uint64_t seed, int step) {
    return Rng(seed ^ splitmix64(0x5854430000000000ull + static_cast<uint64_t>(static_cast<int64_t>(step)))).coin();
}

// [ch10:xtc]
// llama.cpp llama_sample_xtc_apply: off when probability <= 0, threshold > 0.5 or fewer than two
// candidates; otherwise, when the coin is <= probability (llama.cpp returns when `chance >
// probability`), walk the candidates most likely first; pos_last = the rank of the last one with
// p >= threshold; the pos_last tokens before it go, if that leaves at least min_keep and pos_last > 0.
// Among equal probabilities the higher id ranks later, so it is the one kept (llama.cpp: unspecified).
void apply_xtc(xt::xtensor<float, 1>& logits, float probability, float threshold, int min_keep, double coin) {
    if (!(probability >= 0.0f && probability <= 1.0f)) bad_knob("xtc_probability", probability, "[0, 1]", "0");
    if (!(threshold >= 0.0f && threshold <= 1.0f)) bad_knob("xtc_threshold", threshold, "[0, 1]", "a value > 0.5");
    if (probability <= 0.0f || threshold > 0.5f || count_candidates(logits) < 2) return;
    if (coin > probability) return;
    const xt::xtensor<float, 1> probs = softmax(logits);
    const std::vector<int> order = candidate_order(probs);
    size_t pos_last = 0;
    for (size_t i = 0; i < order.size() && probs(order[i]) >= threshold; ++i) pos_last = i;
    if (pos_last == 0 || order.size() - pos_last < static_cast<size_t>(std::max(0, min_keep))) return;
    for (size_t i = 0; i < pos_last; ++i) logits(order[i]) = kRemoved;
}
// [/ch10:xtc]

// ------------------------------------------------------------------------------ DRY (chapter 10)

// [ch10:dry-plain]
// The plain definition (what llama.cpp's apply computes for one candidate, without the Z-algorithm):
// for every position j (but the last) where `candidate` follows, the length of the longest common
// suffix of context[0..j] and the whole context, capped at the tokens after the latest breaker;
// the largest over j. -1 when there is nothing to penalise: candidate never follows a token of the
// context, or is itself a breaker (llama.cpp never penalises a single-token breaker).
int dry_repeat_length(std::span<const int> context, int candidate, std::span<const int> breakers) {
    auto is_breaker = [&](int t) { return std::find(breakers.begin(), breakers.end(), t) != breakers.end(); };
    if (is_breaker(candidate)) return -1;
    const size_t n = context.size();
    size_t limit = n;  // tokens after the latest breaker
    for (size_t i = n; i-- > 0;) {
        if (is_breaker(context[i])) {
            limit = n - 1 - i;
            break;
        }
    }
    int best = -1;
    for (size_t j = 0; j + 1 < n; ++j) {
        if (context[j + 1] != candidate) continue;
        size_t len = 0;  // context[j - len] == context[n - 1 - len]
        while (len <= j && len < limit && context[j - len] == context[n - 1 - len]) ++len;
        best = std::max(best, static_cast<int>(len));
    }
    return best;
}
// [/ch10:dry-plain]

// llama.cpp step 4: the exponent is clamped so pow(base, exponent) stays finite in float:
// max_exponent = int(88.7228391f / log(base)) when base > 1.000001 (no clamp otherwise).
float dry_penalty(int repeat_length, float multiplier, float base, int allowed_length) {
    if (repeat_length < allowed_length) return 0.0f;
    int exponent = repeat_length - allowed_length;
    const float kFloatMaxLog = 88.7228391f;
    int max_exponent = 0;
    if (base > 1.000001f) max_exponent = static_cast<int>(kFloatMaxLog / std::log(base));
    if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
    return static_cast<float>(multiplier * std::pow(static_cast<double>(base), exponent));
}

// [ch10:dry]
// llama.cpp llama_sampler_dry_apply (ported from koboldcpp PR 982): the window is the last last_n
// tokens (-1: all of them); nothing happens when the window is not longer than allowed_length or
// when fewer than allowed_length tokens follow the latest breaker. Each token's repeat length is
// the largest capped suffix match over the positions it follows; a repeat of allowed_length or
// more costs dry_penalty, except to a token that is a single-token breaker.
void apply_dry(xt::xtensor<float, 1>& logits, std::span<const int> context, float multiplier, float base,
               int allowed_length, int last_n, const std::vector<std::vector<int>>& breakers) {
    if (!(multiplier >= 0.0f)) bad_knob("dry_multiplier", multiplier, "[0, inf)", "0");
    if (allowed_length < 0) bad_knob("dry_allowed_length", allowed_length, "[0, inf)", "a large value");
    if (last_n < -1) bad_knob("dry_penalty_last_n", last_n, "[-1, inf)", "0");
    if (multiplier == 0.0f || base < 1.0f || last_n == 0) return;
    const size_t w = last_n == -1 ? context.size() : std::min(context.size(), static_cast<size_t>(last_n));
    if (static_cast<int>(w) <= allowed_length) return;
    const std::span<const int> window = context.subspan(context.size() - w);
    const int rep_limit = dry_rep_limit(window, breakers);
    if (rep_limit < allowed_length) return;
    const std::vector<int> z = dry_suffix_matches(window, rep_limit);
    std::map<int, int> longest;  // token -> the longest repeat it would extend
    for (size_t j = 0; j + 1 < w; ++j) {
        if (z[j] < allowed_length) continue;
        const int token = window[j + 1];
        auto it = longest.find(token);
        if (it == longest.end() || it->second < z[j]) longest[token] = z[j];
    }
    for (const auto& [token, length] : longest) {
        if (token < 0 || static_cast<size_t>(token) >= logits.size()) bad_token("DRY's context", token, logits.size());
        bool single_token_breaker = false;
        for (const auto& b : breakers) single_token_breaker = single_token_breaker || (b.size() == 1 && b[0] == token);
        if (!single_token_breaker) logits(token) -= dry_penalty(length, multiplier, base, allowed_length);
    }
}
// [/ch10:dry]

// ------------------------------------------------------------------------- adaptive (chapter 10)

// [ch10:mirostat-v2]
// llama.cpp llama_sampler_mirostat_v2_apply: softmax; the candidates (most likely first) up to the
// first whose surprise -log2 p exceeds mu, at least one; softmax again over them; draw; the surprise
// of the update is -log2 of the chosen token's RENORMALISED probability (llama.cpp reads
// cur_p->data[idx].p after the second softmax).
int mirostat_v2_step(const xt::xtensor<float, 1>& logits, double tau, double eta, double& mu, double coin) {
    check_mirostat(tau, eta, coin);
    const xt::xtensor<float, 1> probs = softmax(logits);
    const std::vector<int> order = candidate_order(probs);
    size_t kept = 0;
    const float mu_f = static_cast<float>(mu);  // llama.cpp compares -log2f(p) > mu in float
    while (kept < order.size() && !(-std::log2(probs(order[kept])) > mu_f)) ++kept;
    const auto [token, p] = draw_from_prefix(logits, order, std::max<size_t>(kept, 1), coin);
    update_mu(mu, tau, eta, p);
    return token;
}
// [/ch10:mirostat-v2]

// [ch10:mirostat-v1]
// llama.cpp llama_sampler_mirostat_apply, in float as llama.cpp computes it: s_hat from the m - 1
// ratios of neighbouring probabilities among the top m (sum t_i b_i / sum t_i^2, t_i = ln((i+2)/(i+1)),
// b_i = ln(p_i / p_{i+1})); epsilon_hat = s_hat - 1; k = (epsilon_hat 2^mu / (1 - V^-epsilon_hat))^(1/s_hat)
// with V the vocabulary size; keep the top max(int(k), 1) (exactly that many, in candidate_order);
// softmax over them; draw; the surprise uses the renormalised probability, as in v2.
int mirostat_v1_step(const xt::xtensor<float, 1>& logits, double tau, double eta, int m, double& mu, double coin) {
    check_mirostat(tau, eta, coin);
    if (m < 2) bad_knob("mirostat m", m, "[2, inf)", "mirostat 0");
    const xt::xtensor<float, 1> probs = softmax(logits);
    const std::vector<int> order = candidate_order(probs);
    float sum_ti_bi = 0.0f, sum_ti_sq = 0.0f;
    for (size_t i = 0; i + 1 < static_cast<size_t>(m) && i + 1 < order.size(); ++i) {
        const float t_i = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
        const float b_i = std::log(probs(order[i]) / probs(order[i + 1]));
        sum_ti_bi += t_i * b_i;
        sum_ti_sq += t_i * t_i;
    }
    const float s_hat = sum_ti_bi / sum_ti_sq;
    const float epsilon_hat = s_hat - 1;
    const float n_vocab = static_cast<float>(logits.size());
    const float k = std::pow((epsilon_hat * std::pow(2.0f, static_cast<float>(mu))) / (1 - std::pow(n_vocab, -epsilon_hat)),
                             1 / s_hat);
    const auto [token, p] = draw_from_prefix(logits, order, mirostat_k(k, order.size()), coin);
    update_mu(mu, tau, eta, p);
    return token;
}
// [/ch10:mirostat-v1]

void keep_largest_logit(xt::xtensor<float, 1>& logits) {
    const auto best = std::max_element(logits.begin(), logits.end());
    const size_t keep = static_cast<size_t>(best - logits.begin());
    for (size_t i = 0; i < logits.size(); ++i)
        if (i != keep) logits(i) = kRemoved;
}

// [ch10:dynatemp]
// llama.cpp llama_sampler_temp_ext_apply. range > 0: with at most one candidate nothing changes
// (not even the base temperature); otherwise T_dyn from the normalised entropy of the candidates,
// then the logits are divided by T_dyn, so their softmax is the distribution llama.cpp recomputes.
// range 0: plain temperature. Either way a temperature <= 0 is llama.cpp's greedy: only the largest
// logit stays (the lowest id among equals).
void apply_dynamic_temperature(xt::xtensor<float, 1>& logits, float temperature, float range, float exponent) {
    if (!(temperature >= 0.0f)) bad_knob("temperature", temperature, "[0, inf)", "1");
    if (!(range >= 0.0f)) bad_knob("dynatemp_range", range, "[0, inf)", "0");
    if (!(exponent >= 0.0f)) bad_knob("dynatemp_exponent", exponent, "[0, inf)", "1");
    float t = temperature;
    if (range > 0.0f) {
        const int n = count_candidates(logits);
        if (n <= 1) return;
        const float min_temp = std::max(0.0f, temperature - range), max_temp = temperature + range;
        const float max_entropy = -std::log(1.0f / static_cast<float>(n));
        const float normalized = static_cast<float>(entropy(softmax(logits))) / max_entropy;
        t = min_temp + (max_temp - min_temp) * std::pow(normalized, exponent);
    }
    if (t <= 0.0f) return keep_largest_logit(logits);  // llama_sampler_temp_impl's greedy branch
    divide_by_temperature(logits, t);  // t may be tiny on a confident step: z / t must not overflow
}
// [/ch10:dynatemp]

// ---------------------------------------------------------------------------- biases (chapter 10)

// llama.cpp llama_sampler_logit_bias_apply: every entry adds its bias (a token named twice gets both).
void apply_logit_bias(xt::xtensor<float, 1>& logits, const std::vector<std::pair<int, float>>& bias) {
    for (const auto& [id, b] : bias) {
        if (id < 0 || static_cast<size_t>(id) >= logits.size()) bad_token("logit_bias", id, logits.size());
        logits(id) += b;
    }
}

// [ch10:sequence-bias]
// HF SequenceBiasLogitsProcessor: the list becomes a dict (a sequence named twice keeps its last
// bias); a sequence of one token always adds its bias; a longer one adds its bias to its last
// token when its other tokens end `sequence`, and is skipped while it is longer than `sequence`
// (`len(sequence_ids) > input_ids.shape[1]`, even when its prefix alone would fit). The biases of
// sequences sharing a last token add up.
void apply_sequence_bias(xt::xtensor<float, 1>& logits, std::span<const int> sequence,
                         const std::vector<std::pair<std::vector<int>, float>>& bias) {
    std::map<std::vector<int>, float> unique;
    for (const auto& [ids, b] : bias) {
        if (ids.empty()) throw Error("sequence_bias has an empty token sequence", "give every biased sequence a token");
        for (int id : ids)
            if (id < 0 || static_cast<size_t>(id) >= logits.size()) bad_token("sequence_bias", id, logits.size());
        unique[ids] = b;
    }
    xt::xtensor<float, 1> add = xt::zeros<float>(logits.shape());
    for (const auto& [ids, b] : unique) {
        if (ids.size() > 1 && ids.size() > sequence.size()) continue;
        if (ends_with(sequence, std::span<const int>(ids).first(ids.size() - 1))) add(ids.back()) += b;
    }
    logits += add;
}
// [/ch10:sequence-bias]

// HF NoBadWordsLogitsProcessor: drop the entries that are exactly [eos] for some EOS id, then a
// sequence bias of -inf for every other entry (so the same length rule applies).
void apply_bad_words(xt::xtensor<float, 1>& logits, std::span<const int> sequence,
                     const std::vector<std::vector<int>>& bad_words, std::span<const int> eos_ids) {
    std::vector<std::pair<std::vector<int>, float>> bias;
    for (const auto& word : bad_words) {
        if (word.empty()) throw Error("bad_words_ids has an empty entry", "give every bad word at least one token");
        for (int id : word)
            if (id < 0 || static_cast<size_t>(id) >= logits.size()) bad_token("bad_words_ids", id, logits.size());
        const bool only_eos = word.size() == 1 && std::find(eos_ids.begin(), eos_ids.end(), word[0]) != eos_ids.end();
        if (!only_eos) bias.emplace_back(word, kRemoved);
    }
    apply_sequence_bias(logits, sequence, bias);
}

// HF SuppressTokensLogitsProcessor: `torch.isin(vocab, suppress_tokens)` -> -inf; an id outside
// the vocabulary matches nothing, so it is ignored, as in HF.
void apply_suppress_tokens(xt::xtensor<float, 1>& logits, const std::vector<int>& ids) {
    for (int id : ids)
        if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits(id) = kRemoved;
}

}  // namespace decodebook
