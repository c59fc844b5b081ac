// Chapter 02, part 5: when float32 is not enough. A CDF walked in float32 ends further from 1 the
// larger the vocabulary, and a coin near a CDF boundary picks another token in float32 than in
// float64: why the reference's goldens keep a margin between every coin and every boundary.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "chapter02.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter02 {
namespace {

// Seeded logits z_i ~ N(0, 2^2) (Box-Muller on the project's coins), or all equal (sigma = 0).
Vec seeded_logits(size_t vocab, double sigma, uint64_t seed) {
    Rng rng(seed);
    Vec z = xt::zeros<float>({vocab});
    for (float& v : z) {
        const double u1 = 1.0 - rng.coin(), u2 = rng.coin();  // u1 in (0, 1]: log(u1) is finite
        v = static_cast<float>(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
    }
    return z;
}

// The end of an inverse-CDF walk down `probs` (candidate_order) with a float32 running sum, and
// with a double one: exactly 1 in real numbers.
std::pair<float, double> walk_sums(const Vec& probs) {
    float f = 0;
    double d = 0;
    for (int id : candidate_order(probs)) {
        f += probs(static_cast<size_t>(id));
        d += probs(static_cast<size_t>(id));
    }
    return {f, d};
}

// The float64 arithmetic of the reference (tests/reference/sampling.py) on the same float32 logits:
// a softmax in double and the walk down the candidates.
int sample_inverse_cdf_f64(const Vec& logits, double coin) {
    double max = -INFINITY, sum = 0;
    for (float z : logits) max = std::max(max, static_cast<double>(z));
    std::vector<double> e(logits.size());
    for (size_t i = 0; i < e.size(); ++i) sum += (e[i] = std::exp(static_cast<double>(logits(i)) - max));
    double cumulative = 0;
    const std::vector<int> order = candidate_order(softmax(logits));
    for (int id : order) {
        cumulative += e[static_cast<size_t>(id)] / sum;
        if (coin < cumulative) return id;
    }
    return order.back();
}

constexpr double kGoldenMargin = 1e-4;  // tests/reference/make_goldens.py MIN_MARGIN

// The end of the walk at V = 64, 2,048 and 50,000, for equal and for seeded logits: float32's
// error grows with V, double's stays far below the goldens' margin.
void print_walk_sums(uint64_t seed) {
    std::printf("  The end of an inverse-CDF walk, p_1 + ... + p_V added down the candidates (exactly 1 in real numbers;\n"
                "  seeded logits, --seed %llu):\n", static_cast<unsigned long long>(seed));
    std::printf("  %8s  %-16s %14s %10s %14s %10s\n", "V", "logits", "float32 sum", "error", "double sum", "error");
    double worst_small = 0, worst_large = 0, worst_double = 0;  // float32 at V = 64, above it; double
    for (size_t vocab : {size_t{64}, size_t{2048}, size_t{50000}}) {
        for (double sigma : {0.0, 2.0}) {
            const auto [f, d] = walk_sums(softmax(seeded_logits(vocab, sigma, seed)));
            const double error = std::abs(static_cast<double>(f) - 1.0);
            double& worst = vocab == 64 ? worst_small : worst_large;
            worst = std::max(worst, error);
            worst_double = std::max(worst_double, std::abs(d - 1.0));
            std::printf("  %8s  %-16s %14.8f %10.1e %14.10f %10.1e\n", with_commas(vocab).c_str(),
                        sigma == 0 ? "all equal" : "N(0, 2^2)", f, error, d, std::abs(d - 1.0));
        }
    }
    std::printf("  Each float32 addition rounds the sum to 24 bits. At V = 64 the walk ends at most %.1e from 1;\n"
                "  at V = 2,048 or 50,000, up to %.1e: %s the goldens' margin of %.0e (below).\n"
                "  decodebook's softmax and sample_inverse_cdf add in double: at most %.1e off here.\n",
                worst_small, worst_large, worst_large > kGoldenMargin ? "more than" : "less than", kGoldenMargin,
                worst_double);
}

// One boundary of the prompt's own distribution, in float32 and in float64: the coin halfway
// between them picks a different token in each.
void print_boundary_coin(const Vec& logits, const Tokenizer& tok) {
    const Vec probs = softmax(logits);
    const std::vector<int> order = candidate_order(probs);
    double total = 0;
    for (int id : order) total += probs(static_cast<size_t>(id));
    double max = -INFINITY, sum = 0, f32 = 0, f64 = 0, b32 = 0, b64 = 0;
    for (float z : logits) max = std::max(max, static_cast<double>(z));
    for (float z : logits) sum += std::exp(static_cast<double>(z) - max);
    size_t rank = 0;
    for (size_t r = 0; r + 1 < std::min<size_t>(order.size(), 8); ++r) {  // the boundary float rounding moved most
        const size_t id = static_cast<size_t>(order[r]);
        f32 += probs(id) / total;
        f64 += std::exp(static_cast<double>(logits(id)) - max) / sum;
        if (std::abs(f32 - f64) > std::abs(b32 - b64)) {
            b32 = f32;
            b64 = f64;
            rank = r;
        }
    }
    const double coin = (b32 + b64) / 2;
    const int here = sample_inverse_cdf(probs, coin), reference = sample_inverse_cdf_f64(logits, coin);
    std::printf("\n  A coin at a CDF boundary: between %s (rank %zu) and %s (rank %zu) of the step above (T = 1),\n",
                visible_token(tok.token_bytes(order[rank])).c_str(), rank + 1,
                visible_token(tok.token_bytes(order[rank + 1])).c_str(), rank + 2);
    std::printf("  the boundary is at %.12f with float32 probabilities (this program's softmax)\n"
                "             and at %.12f with float64 ones (the reference's arithmetic), %.1e apart.\n",
                b32, b64, std::abs(b32 - b64));
    std::printf("  The coin %.12f picks %s in float32 and %s in float64.\n", coin,
                visible_token(tok.token_bytes(here)).c_str(), visible_token(tok.token_bytes(reference)).c_str());
    std::printf("  So tests/reference/ keeps a sampled case only if every coin is at least %.0e from every boundary\n"
                "  (%s times this gap), and every other decision as far from flipping.\n",
                kGoldenMargin, with_commas(static_cast<uint64_t>(std::llround(kGoldenMargin / std::abs(b32 - b64)))).c_str());
}

}  // namespace

void print_numerics(const Vec& logits, const Tokenizer& tok, uint64_t seed) {
    print_walk_sums(seed);
    print_boundary_coin(logits, tok);
}

}  // namespace chapter02
