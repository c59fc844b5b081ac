// Exercise 08.1 - Keep or replace one drafted token (worked solution; the library's twins are
// decodebook::accept_draft, decodebook::residual and decodebook::verify_drafts).
#include <algorithm>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

int your_verify_position(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x, double accept_coin,
                         double residual_coin) {
    const size_t V = p.size();
    if (q && q->size() != V)
        throw Error("the draft's distribution has " + std::to_string(q->size()) + " ids, the target's " +
                        std::to_string(V),
                    "pass p and q over one vocabulary");
    if (x < 0 || static_cast<size_t>(x) >= V)
        throw Error("drafted token " + std::to_string(x) + " is outside a vocabulary of " + std::to_string(V) + " ids",
                    "draft tokens must be ids of the target's vocabulary");
    const size_t at = static_cast<size_t>(x);
    // 1. keep x with probability min(1, p(x) / q(x)); never a token either side gives no probability
    const double px = p(at), qx = q ? (*q)(at) : 1.0;
    if (px > 0 && qx > 0 && accept_coin < px / qx) return x;
    // 2. rejected: the residual max(0, p - q); a deterministic draft has all its mass on x
    xt::xtensor<float, 1> r = p;
    if (q) {
        for (size_t i = 0; i < V; ++i) r(i) = std::max(0.0f, p(i) - (*q)(i));
    } else {
        r(at) = 0.0f;
    }
    if (std::none_of(r.begin(), r.end(), [](float v) { return v > 0.0f; }))
        throw Error("the residual max(0, p - q) is empty, yet token " + std::to_string(x) + " was rejected",
                    "q must be the distribution the draft token was drawn from");
    return sample_inverse_cdf(r, residual_coin);  // it normalises
}

}  // namespace decodebook
