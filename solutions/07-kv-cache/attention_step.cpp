// Exercise 07.1 - The cached attention step (worked solution; the library's twin is
// decodebook::cached_attention_step).
#include <algorithm>
#include <cmath>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

xt::xtensor<float, 1> your_cached_attention_step(xt::xtensor<float, 2>& keys, xt::xtensor<float, 2>& values,
                                                 size_t position, const xt::xtensor<float, 1>& qkv, int n_head) {
    const size_t C = keys.shape(1), H = static_cast<size_t>(n_head), D = C / H;
    // 1. the new token's key and value join the cache at its position
    for (size_t j = 0; j < C; ++j) {
        keys(position, j) = qkv(C + j);
        values(position, j) = qkv(2 * C + j);
    }
    // 2. its query attends over positions 0..position, each head on its own D columns
    xt::xtensor<float, 1> out = xt::zeros<float>({C});
    std::vector<double> p(position + 1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    for (size_t h = 0; h < H; ++h) {
        const size_t c0 = h * D;
        double max_score = -INFINITY;
        for (size_t s = 0; s <= position; ++s) {
            double dot = 0;
            for (size_t d = 0; d < D; ++d) dot += static_cast<double>(qkv(c0 + d)) * keys(s, c0 + d);
            p[s] = dot * scale;
            max_score = std::max(max_score, p[s]);
        }
        double total = 0;
        for (size_t s = 0; s <= position; ++s) total += p[s] = std::exp(p[s] - max_score);  // stable softmax
        for (size_t d = 0; d < D; ++d) {
            double sum = 0;
            for (size_t s = 0; s <= position; ++s) sum += p[s] / total * values(s, c0 + d);
            out(c0 + d) = static_cast<float>(sum);
        }
    }
    return out;
}

}  // namespace decodebook
