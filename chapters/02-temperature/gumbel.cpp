// Chapter 02, part 4: two ways to draw from the same distribution. The inverse CDF needs one coin
// per token drawn; the Gumbel-max trick one per vocabulary entry, but no sorting or normalising.
#include <cstdio>
#include <vector>

#include "chapter02.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter02 {

void two_ways_to_draw(const Vec& logits, const Tokenizer& tok, uint64_t seed) {
    const Vec probs = softmax(logits);
    Rng rng(seed);
    std::vector<int> by_cdf(logits.size(), 0), by_gumbel(logits.size(), 0);
    std::vector<double> many(logits.size());
    const int draws = 5000;
    for (int i = 0; i < draws; ++i) {
        ++by_cdf[static_cast<size_t>(sample_inverse_cdf(probs, rng.coin()))];
        for (double& c : many) c = rng.coin();
        ++by_gumbel[static_cast<size_t>(sample_gumbel_max(logits, many))];
    }
    std::printf("  %-14s %8s %12s %12s\n", "token", "p", "inverse CDF", "Gumbel-max");
    for (int id : top_ids(probs, 6)) {
        const size_t i = static_cast<size_t>(id);
        std::printf("  %-14s %8.3f %12.3f %12.3f\n", visible_token(tok.token_bytes(id)).c_str(), probs(i),
                    by_cdf[i] / double(draws), by_gumbel[i] / double(draws));
    }
    std::printf("  Inverse CDF needs one coin per token drawn; Gumbel-max needs one per vocabulary entry but\n"
                "  no sorting or normalising: argmax(z + Gumbel noise) is an exact sample of softmax(z).\n");
}

}  // namespace chapter02
