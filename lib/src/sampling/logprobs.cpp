// Chapters 05 and 11: log-softmax (beam search's scores, chapter 05), the four modes of reported values, and a step's top-K entries.
#include "decodebook/sampling/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "decodebook/base/error.hpp"

namespace decodebook {
namespace {

struct ModeName {
    LogprobsMode mode;
    const char* name;
};
constexpr ModeName kModeNames[] = {{LogprobsMode::RawLogprobs, "raw_logprobs"},
                                   {LogprobsMode::RawLogits, "raw_logits"},
                                   {LogprobsMode::ProcessedLogprobs, "processed_logprobs"},
                                   {LogprobsMode::ProcessedLogits, "processed_logits"}};

void check_token(const xt::xtensor<float, 1>& values, int token) {
    if (token < 0 || static_cast<size_t>(token) >= values.size())
        throw Error("token id " + std::to_string(token) + " is outside the vocabulary of " + std::to_string(values.size()),
                    "pass an id in 0.." + std::to_string(values.size() - 1));
}

}  // namespace

std::string to_string(LogprobsMode mode) {
    for (const ModeName& m : kModeNames)
        if (m.mode == mode) return m.name;
    return "?";
}

LogprobsMode parse_logprobs_mode(std::string_view text) {
    for (const ModeName& m : kModeNames)
        if (text == m.name) return m.mode;
    throw Error("logprobs mode '" + std::string(text) + "' is not one of vLLM's four",
                "pass raw_logprobs (the default), raw_logits, processed_logprobs or processed_logits");
}

// [ch11:log-softmax]
// log p = z - (max + log sum exp(z - max)), in double; exp(-inf - max) = 0 and -inf - c = -inf, so
// a removed token stays removed.
xt::xtensor<float, 1> log_softmax(const xt::xtensor<float, 1>& logits) {
    double max = -std::numeric_limits<double>::infinity();
    for (float z : logits) max = std::max(max, static_cast<double>(z));
    if (max == -std::numeric_limits<double>::infinity())
        throw Error("every token has been removed (all logits are -inf)", "a step's log-probabilities need one token left");
    double total = 0;
    for (float z : logits) total += std::exp(static_cast<double>(z) - max);
    const double log_total = max + std::log(total);
    xt::xtensor<float, 1> out = logits;
    for (float& z : out) z = static_cast<float>(static_cast<double>(z) - log_total);
    return out;
}

xt::xtensor<float, 1> logprob_values(const xt::xtensor<float, 1>& raw, const xt::xtensor<float, 1>& processed,
                                     LogprobsMode mode) {
    switch (mode) {
        case LogprobsMode::RawLogprobs: return log_softmax(raw);
        case LogprobsMode::RawLogits: return raw;
        case LogprobsMode::ProcessedLogprobs: return log_softmax(processed);
        case LogprobsMode::ProcessedLogits: return processed;
    }
    return raw;
}
// [/ch11:log-softmax]

// [ch11:top-logprobs]
int logprob_rank(const xt::xtensor<float, 1>& values, int token) {
    check_token(values, token);
    const float v = values(static_cast<size_t>(token));
    int rank = 0;
    for (float x : values) rank += x >= v;
    return rank;
}

std::vector<LogprobEntry> top_logprobs(const xt::xtensor<float, 1>& values, int k, int sampled) {
    if (k < 0 || k > kMaxLogprobs)
        throw Error("logprobs = " + std::to_string(k) + " is outside 0.." + std::to_string(kMaxLogprobs),
                    "ask for at most " + std::to_string(kMaxLogprobs) + " alternatives per token (vLLM's max_logprobs)");
    check_token(values, sampled);
    const size_t n = std::min(static_cast<size_t>(k), values.size());
    std::vector<int> ids(values.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
    const auto larger = [&](int a, int b) {  // value descending, then the lower id
        const float va = values(static_cast<size_t>(a)), vb = values(static_cast<size_t>(b));
        return va != vb ? va > vb : a < b;
    };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), larger);
    std::vector<LogprobEntry> entries;
    bool sampled_in = false;
    for (size_t r = 0; r < n; ++r) {
        entries.push_back({ids[r], values(static_cast<size_t>(ids[r])), static_cast<int>(r + 1)});
        sampled_in = sampled_in || ids[r] == sampled;
    }
    if (!sampled_in) entries.push_back({sampled, values(static_cast<size_t>(sampled)), logprob_rank(values, sampled)});
    return entries;
}
// [/ch11:top-logprobs]

}  // namespace decodebook
