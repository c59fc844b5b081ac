// Solution 10.1 - Locally typical sampling, as Hugging Face decides it.  Chapter 10: other samplers
// HF's TypicalLogitsWarper (huggingface/transformers src/transformers/generation/logits_process.py,
// commit 00857b6cf63a4fa05cbd9bdc8a4fd78b6168c5af): d = |-ln p - H| sorted ascending, remove
// d > d[last_ind] with last_ind = #(cumsum < mass), the first min_tokens_to_keep never removed.
#include <algorithm>
#include <cmath>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<bool> your_typical_keep(const xt::xtensor<float, 1>& probs, double mass, int min_keep) {
    if (!(mass > 0.0 && mass <= 1.0))
        throw Error("typical mass " + std::to_string(mass) + " is outside (0, 1]",
                    "pass a mass in (0, 1]; 1 keeps every token");
    const double h = entropy(probs);  // nats
    std::vector<int> ranked = candidate_order(probs);  // the tokens with p > 0
    std::vector<double> d(probs.size(), 0.0);
    for (int id : ranked) d[static_cast<size_t>(id)] = std::abs(-std::log(static_cast<double>(probs(static_cast<size_t>(id)))) - h);
    std::stable_sort(ranked.begin(), ranked.end(), [&](int a, int b) {  // most typical first, ties by id
        return d[static_cast<size_t>(a)] < d[static_cast<size_t>(b)] ||
               (d[static_cast<size_t>(a)] == d[static_cast<size_t>(b)] && a < b);
    });
    std::vector<bool> keep(probs.size(), false);
    if (mass >= 1.0) {  // every candidate, whatever rounding does to the running sum
        for (int id : ranked) keep[static_cast<size_t>(id)] = true;
        return keep;
    }
    if (ranked.empty()) return keep;
    size_t last = ranked.size() - 1;  // the token where the running sum reaches mass
    double sum = 0.0;
    for (size_t r = 0; r < ranked.size(); ++r) {
        sum += probs(static_cast<size_t>(ranked[r]));
        if (sum >= mass) {
            last = r;
            break;
        }
    }
    const double limit = d[static_cast<size_t>(ranked[last])];
    const size_t always = static_cast<size_t>(std::max(1, min_keep));
    for (size_t r = 0; r < ranked.size(); ++r)
        keep[static_cast<size_t>(ranked[r])] = r < always || d[static_cast<size_t>(ranked[r])] <= limit;
    return keep;
}

}  // namespace decodebook
