// Chapters 02-04: drawing distributions in the terminal.
#include "decodebook/bars.hpp"

#include <algorithm>
#include <cstdio>

#include "decodebook/report.hpp"
#include "decodebook/sampling.hpp"

namespace decodebook {

std::vector<int> top_ids(const xt::xtensor<float, 1>& probs, size_t n) {
    std::vector<int> order = candidate_order(probs);
    if (order.size() > n) order.resize(n);
    return order;
}

std::string bar(double value, double max, int width) {
    const int n = max > 0 ? static_cast<int>(value / max * width + 0.5) : 0;
    return std::string(static_cast<size_t>(std::clamp(n, 0, width)), '#');
}

void print_distribution(const xt::xtensor<float, 1>& probs, const Tokenizer& tok, size_t n, double scale_max) {
    for (int id : top_ids(probs, n)) {
        const double p = probs(static_cast<size_t>(id));
        std::printf("    %-14s %6.3f  %s\n", visible_token(tok.token_bytes(id)).c_str(), p, bar(p, scale_max, 40).c_str());
    }
}

}  // namespace decodebook
