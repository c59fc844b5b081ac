// Chapters 01 and 04: measuring a generation.
#include "decodebook/course/metrics.hpp"

#include <set>

namespace decodebook {

Loop find_loop(const std::vector<int>& tokens) {
    const size_t n = tokens.size();
    Loop best;
    for (size_t p = 1; p <= n / 3; ++p) {
        size_t run = 0;  // length of the current stretch where tokens[i] == tokens[i - p]
        for (size_t i = p; i < n; ++i) {
            run = tokens[i] == tokens[i - p] ? run + 1 : 0;
            const size_t covered = run + p;  // the stretch plus the cycle it repeats
            if (run > 0 && covered >= 3 * p && covered >= 12 && covered > best.covered) {
                best = {p, i + 1 - covered, covered};
            }
        }
    }
    return best;
}

double distinct_n(const std::vector<int>& tokens, int n) {
    if (n <= 0 || tokens.size() < static_cast<size_t>(n)) return 0.0;
    std::set<std::vector<int>> grams;
    const size_t count = tokens.size() - static_cast<size_t>(n) + 1;
    for (size_t i = 0; i < count; ++i) grams.emplace(tokens.begin() + static_cast<long>(i), tokens.begin() + static_cast<long>(i) + n);
    return static_cast<double>(grams.size()) / static_cast<double>(count);
}

}  // namespace decodebook
