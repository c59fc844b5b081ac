// Chapters 02-04: everything that turns a vector of logits into one token.
#include "decodebook/sampling/sampling.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "decodebook/base/error.hpp"
#include "removal.hpp"

namespace decodebook {
namespace {

using removal::kRemoved;
using removal::remove_unkept;

// "error: top_p = 1.05 is outside [0, 1]" with the fix: for the range checks of top-p and min-p.
[[noreturn]] void outside_unit_range(const char* name, double value, const char* off) {
    char problem[96], fix[96];
    std::snprintf(problem, sizeof problem, "%s = %g is outside [0, 1]", name, value);
    std::snprintf(fix, sizeof fix, "pass a %s in [0, 1] (%s disables it)", name, off);
    throw Error(problem, fix);
}

}  // namespace

int argmax(const xt::xtensor<float, 1>& logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits(i) > logits(best)) best = i;  // strict '>': the first maximum wins ties
    }
    return static_cast<int>(best);
}

std::string knob_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

void divide_by_temperature(xt::xtensor<float, 1>& z, float t) {
    float max = -std::numeric_limits<float>::infinity();
    bool overflows = false;
    for (float v : z) {
        max = std::max(max, v);
        overflows = overflows || (std::isfinite(v) && !std::isfinite(v / t));
    }
    if (!overflows) return apply_temperature(z, t);
    for (float& v : z) v = (v - max) / t;
}

xt::xtensor<float, 1> softmax(const xt::xtensor<float, 1>& logits) {
    float max = kRemoved;
    for (float z : logits) max = std::max(max, z);
    if (max == kRemoved) {
        throw Error("every token has been removed (all logits are -inf)",
                    "loosen the filters: a larger top_k, top_p or a smaller min_p");
    }
    xt::xtensor<float, 1> p = xt::xtensor<float, 1>::from_shape(logits.shape());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double e = std::exp(static_cast<double>(logits(i)) - max);  // exp(-inf) = 0
        p(i) = static_cast<float>(e);
        sum += e;
    }
    for (float& v : p) v = static_cast<float>(v / sum);
    return p;
}

double entropy(const xt::xtensor<float, 1>& probs) {
    double h = 0;
    for (float p : probs)
        if (p > 0) h -= static_cast<double>(p) * std::log(static_cast<double>(p));
    return h;
}

void apply_temperature(xt::xtensor<float, 1>& logits, float temperature) {
    for (float& z : logits) z /= temperature;
}

std::vector<int> candidate_order(const xt::xtensor<float, 1>& probs) {
    // (probability desc, id asc) as one integer per token, sorted without looking anything up: a
    // positive float's bits order as the float does, so ~bits puts the likeliest first, and the id
    // in the low half breaks ties by id. The same order as comparing (p, id) pairs, 3-4x faster,
    // which matters: every sampled token sorts the whole vocabulary.
    std::vector<uint64_t> keys;
    keys.reserve(probs.size());
    for (size_t i = 0; i < probs.size(); ++i) {
        const float p = probs(i);
        if (!(p > 0)) continue;
        uint32_t bits = 0;
        std::memcpy(&bits, &p, sizeof bits);
        keys.push_back(static_cast<uint64_t>(~bits) << 32 | static_cast<uint64_t>(i));
    }
    std::sort(keys.begin(), keys.end());
    std::vector<int> ids(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) ids[i] = static_cast<int>(keys[i] & 0xFFFFFFFFu);
    return ids;
}

int sample_inverse_cdf(const xt::xtensor<float, 1>& probs, double coin) {
    const std::vector<int> order = candidate_order(probs);
    if (order.empty()) throw Error("no token has probability > 0", "check the filters before sampling");
    double total = 0;
    for (int id : order) total += probs(static_cast<size_t>(id));
    const double target = coin * total;
    double cumulative = 0;
    for (int id : order) {
        cumulative += probs(static_cast<size_t>(id));
        if (target < cumulative) return id;
    }
    return order.back();  // coin * total rounded up to the total
}

std::vector<int> top_ids(const xt::xtensor<float, 1>& probs, size_t n) {
    std::vector<int> order = candidate_order(probs);
    if (order.size() > n) order.resize(n);
    return order;
}

double cdf_margin(const xt::xtensor<float, 1>& probs, double coin) {
    const std::vector<int> order = candidate_order(probs);
    double total = 0;
    for (int id : order) total += probs(static_cast<size_t>(id));
    double cumulative = 0, margin = coin;  // distance to the boundary at 0
    for (int id : order) {
        cumulative += probs(static_cast<size_t>(id));
        margin = std::min(margin, std::abs(coin - cumulative / total));
    }
    return margin;
}

// [ch02:gumbel]
int sample_gumbel_max(const xt::xtensor<float, 1>& logits, const std::vector<double>& coins) {
    if (coins.size() != logits.size()) {
        throw Error("Gumbel-max needs one coin per token (" + std::to_string(logits.size()) + "), got " +
                        std::to_string(coins.size()),
                    "draw logits.size() coins from the Rng");
    }
    int best = -1;
    double best_score = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < logits.size(); ++i) {
        if (logits(i) == kRemoved) continue;
        const double gumbel = -std::log(-std::log(coins[i]));  // coin 0 gives -inf: never chosen
        const double score = static_cast<double>(logits(i)) + gumbel;
        if (best < 0 || score > best_score) {
            best = static_cast<int>(i);
            best_score = score;
        }
    }
    if (best < 0) throw Error("every token has been removed (all logits are -inf)", "loosen the filters");
    return best;
}
// [/ch02:gumbel]

void apply_top_k(xt::xtensor<float, 1>& logits, int k, int min_keep) {
    if (k <= 0) return;  // 0 disables
    const size_t keep = std::min(static_cast<size_t>(std::max(k, min_keep)), logits.size());
    std::vector<float> values(logits.begin(), logits.end());
    std::nth_element(values.begin(), values.begin() + static_cast<long>(keep - 1), values.end(), std::greater<>());
    const float kth = values[keep - 1];
    for (float& z : logits)
        if (z < kth) z = kRemoved;  // ties with the k-th value survive (HF, vLLM)
}

std::vector<bool> top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep, TopPRule rule) {
    if (!(p >= 0.0 && p <= 1.0)) outside_unit_range("top_p", p, "1");
    std::vector<bool> keep(probs.size(), false);
    const std::vector<int> order = candidate_order(probs);  // most likely first
    const size_t forced = static_cast<size_t>(std::max(1, min_keep));  // the top ones always stay
    if (rule == TopPRule::LlamaCpp) {
        // [ch03:top-p-llama]
        // llama.cpp: walk down, a float running sum; stop right after the token that reaches p
        const float pf = static_cast<float>(p);
        float sum = 0.0f;
        for (size_t rank = 0; rank < order.size(); ++rank) {
            keep[static_cast<size_t>(order[rank])] = true;
            sum += probs(static_cast<size_t>(order[rank]));
            if (pf < 1.0f && sum >= pf && rank + 1 >= forced) break;
        }
        return keep;
        // [/ch03:top-p-llama]
    }
    // HF and vLLM: walk UP from the least likely token; each running sum is stored in float32
    // (torch's cumsum on a float32 tensor) and a token goes when its sum is <= 1 - p, compared in
    // float32. HF computes 1 - p from a Python float (double), vLLM in float32 from its tensor.
    const float limit = rule == TopPRule::HuggingFace ? static_cast<float>(1.0 - p) : 1.0f - static_cast<float>(p);
    double sum = 0;  // torch's CPU cumsum accumulates in double and rounds each output to float32
    for (size_t rank = order.size(); rank-- > 0;) {
        sum += probs(static_cast<size_t>(order[rank]));
        const bool removed = static_cast<float>(sum) <= limit && rank >= forced;
        keep[static_cast<size_t>(order[rank])] = !removed;
    }
    return keep;
}

double typed_value(float knob) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, knob);  // the shortest decimal that reads back as knob
    (void)ec;  // 32 chars always fit a float
    double value = knob;
    std::from_chars(buf, end, value);  // reads it back as a double: 0.8f -> 0.8, as Python holds it
    return value;
}

void apply_top_p(xt::xtensor<float, 1>& logits, float p, int min_keep, TopPRule rule) {
    if (!(p >= 0.0f && p <= 1.0f)) outside_unit_range("top_p", p, "1");
    if (p >= 1.0f) return;
    remove_unkept(logits, top_p_keep(softmax(logits), typed_value(p), min_keep, rule));
}

std::vector<bool> min_p_keep(const xt::xtensor<float, 1>& probs, double min_p, int min_keep) {
    if (!(min_p >= 0.0 && min_p <= 1.0)) outside_unit_range("min_p", min_p, "0");
    std::vector<bool> keep(probs.size(), false);
    const std::vector<int> order = candidate_order(probs);
    if (order.empty()) return keep;
    const double threshold = min_p * probs(static_cast<size_t>(order.front()));
    for (size_t rank = 0; rank < order.size(); ++rank) {
        const double pi = probs(static_cast<size_t>(order[rank]));
        if (pi >= threshold || rank < static_cast<size_t>(min_keep)) keep[static_cast<size_t>(order[rank])] = true;
    }
    return keep;
}

void apply_min_p(xt::xtensor<float, 1>& logits, float min_p, int min_keep) {
    if (!(min_p >= 0.0f && min_p <= 1.0f)) outside_unit_range("min_p", min_p, "0");
    if (min_p == 0.0f) return;
    remove_unkept(logits, min_p_keep(softmax(logits), min_p, min_keep));
}

int count_candidates(const xt::xtensor<float, 1>& logits) {
    int n = 0;
    for (float z : logits) n += z != kRemoved;
    return n;
}

void apply_repetition_penalty(xt::xtensor<float, 1>& logits, const std::vector<int>& seen, float theta) {
    const std::set<int> distinct(seen.begin(), seen.end());
    for (int id : distinct) {
        float& z = logits(static_cast<size_t>(id));
        z = z > 0 ? z / theta : z * theta;  // dividing a negative logit would RAISE its probability
    }
}

void apply_presence_frequency(xt::xtensor<float, 1>& logits, const std::vector<int>& output, float presence,
                              float frequency) {
    std::map<int, int> count;
    for (int id : output) ++count[id];
    for (const auto& [id, c] : count) logits(static_cast<size_t>(id)) -= frequency * static_cast<float>(c) + presence;
}

void apply_no_repeat_ngram(xt::xtensor<float, 1>& logits, const std::vector<int>& sequence, int n) {
    if (n <= 0) return;
    const size_t len = sequence.size(), m = static_cast<size_t>(n) - 1;  // m = prefix length
    if (len < m) return;
    // every start i of an earlier n-gram whose first n - 1 tokens equal the last n - 1 tokens
    for (size_t i = 0; i + m < len; ++i) {
        if (std::equal(sequence.begin() + static_cast<long>(i), sequence.begin() + static_cast<long>(i + m),
                       sequence.end() - static_cast<long>(m))) {
            logits(static_cast<size_t>(sequence[i + m])) = kRemoved;
        }
    }
}

}  // namespace decodebook
