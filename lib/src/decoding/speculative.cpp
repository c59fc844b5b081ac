// Chapter 08: speculative decoding's verdict, prompt-lookup drafters and predicted speed-up. No
// model here: these are rules on distributions and token ids, tested on the engines' own cases.
#include "decodebook/decoding/speculative.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "decodebook/base/error.hpp"
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

double expected_tokens_per_round(double alpha, int k) {
    if (alpha >= 1.0) return k + 1;
    return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, int k, double c) {
    return expected_tokens_per_round(alpha, k) / (k * c + 1.0);
}

}  // namespace decodebook
