// Solution 10.2 - DRY's penalty for one candidate.                 Chapter 10: other samplers
// llama.cpp's llama_sampler_dry_apply (ggml-org/llama.cpp src/llama-sampler.cpp, commit
// 00efb3e184262872916bf136b3df63c1822a19bd), for one candidate, single-token breakers and the
// whole context: rep_limit = tokens after the last breaker, the repeat length of the token after
// each earlier position (capped at rep_limit), single-token breakers never penalised, the
// exponent clamped at FLOAT_MAX_LOG / log(base).
#include <algorithm>
#include <cmath>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

float your_dry_penalty(const std::vector<int>& context, int candidate, const std::vector<int>& breakers,
                       float multiplier, float base, int allowed_length) {
    if (multiplier < 0.0f)
        throw Error("DRY multiplier " + std::to_string(multiplier) + " is negative", "pass a multiplier >= 0 (0 turns DRY off)");
    if (allowed_length < 0)
        throw Error("DRY allowed_length " + std::to_string(allowed_length) + " is negative",
                    "pass an allowed_length >= 0 (repeats shorter than it are free)");
    if (multiplier == 0.0f || base < 1.0f) return 0.0f;  // DRY off
    const auto is_breaker = [&](int t) { return std::find(breakers.begin(), breakers.end(), t) != breakers.end(); };
    if (is_breaker(candidate)) return 0.0f;
    const int n = static_cast<int>(context.size());
    int limit = n;  // tokens after the last breaker
    for (int i = n - 1; i >= 0; --i)
        if (is_breaker(context[static_cast<size_t>(i)])) {
            limit = n - 1 - i;
            break;
        }
    int best = -1;  // -1: the candidate follows nothing in the context
    for (int j = 1; j < n; ++j) {  // candidate at j, after context[..j-1]
        if (context[static_cast<size_t>(j)] != candidate) continue;
        int len = 0;  // common suffix of context[..j-1] and context
        while (len < j && context[static_cast<size_t>(j - 1 - len)] == context[static_cast<size_t>(n - 1 - len)]) ++len;
        best = std::max(best, std::min(len, limit));
    }
    if (best < allowed_length) return 0.0f;
    int exponent = best - allowed_length;
    const float kFloatMaxLog = 88.7228391f;
    if (base > 1.000001f) exponent = std::min(exponent, static_cast<int>(kFloatMaxLog / std::log(base)));
    return static_cast<float>(static_cast<double>(multiplier) * std::pow(static_cast<double>(base), exponent));
}

}  // namespace decodebook
