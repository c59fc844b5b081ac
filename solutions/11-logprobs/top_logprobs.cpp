// Solution 11.1 - The top K entries with the sampled token appended.    Chapter 11: logprobs
// vLLM's Sampler.gather_logprobs (vllm-project/vllm vllm/v1/sample/sampler.py, commit 3e342658):
// torch.topk for the K entries, the sampled token's rank by batched_count_greater_than
// (vllm/v1/sample/ops/logprobs.py: (x >= value).sum()); the output processor's dict keeps the
// sampled token once, with its top-K rank when it is among the K. Ties here: the lower id first.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<LogprobEntry> your_top_logprobs(const xt::xtensor<float, 1>& values, int k, int sampled) {
    if (k < 0 || k > kMaxLogprobs)
        throw Error("logprobs = " + std::to_string(k) + " is outside 0.." + std::to_string(kMaxLogprobs),
                    "ask for at most " + std::to_string(kMaxLogprobs) + " alternatives per token");
    if (sampled < 0 || static_cast<size_t>(sampled) >= values.size())
        throw Error("token id " + std::to_string(sampled) + " is outside the vocabulary of " +
                        std::to_string(values.size()),
                    "pass the id of a token of this step's values");
    std::vector<int> ids(values.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t n = std::min(static_cast<size_t>(k), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](int a, int b) {
        const float va = values(static_cast<size_t>(a)), vb = values(static_cast<size_t>(b));
        return va != vb ? va > vb : a < b;  // value descending, then the lower id
    });
    std::vector<LogprobEntry> entries;
    bool listed = false;
    for (size_t r = 0; r < n; ++r) {
        entries.push_back({ids[r], values(static_cast<size_t>(ids[r])), static_cast<int>(r + 1)});
        listed = listed || ids[r] == sampled;
    }
    if (!listed) {
        const float v = values(static_cast<size_t>(sampled));
        int rank = 0;
        for (float x : values) rank += x >= v;  // a tie counts against it; -inf >= -inf
        entries.push_back({sampled, v, rank});
    }
    return entries;
}

}  // namespace decodebook
