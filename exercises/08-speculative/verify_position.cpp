// Exercise 08.1 - Keep or replace one drafted token.               Chapter 08: speculative decoding
//
// The verdict at one position of a round. The draft proposed token x, drawn from q; the target
// model gives p at the same position (both (V) distributions over one vocabulary). Return:
//   - x, kept, when accept_coin < p(x) / q(x): with probability min(1, p(x) / q(x)). A token with
//     p(x) = 0 (the target never says it) or q(x) = 0 (the draft could not have drawn it) is never
//     kept, whatever the coin. A coin exactly equal to p(x) / q(x) does not keep x.
//   - otherwise the token drawn with residual_coin from the residual max(0, p - q), id by id; with
//     q null (a deterministic draft: prompt lookup, a greedy draft model) q(x) = 1 and the residual
//     is p with x removed. Draw it with decodebook::sample_inverse_cdf, which normalises.
// Kept with min(1, p/q), else replaced from the residual: the token returned is distributed
// exactly as p, whatever q is. Throw decodebook::Error (problem, fix), before anything else, when
// x is outside 0..V-1 or q's size differs from p's; and when the residual has nothing left.
//
//   p [0.5, 0.25, 0.25], q [0.25, 0.25, 0.5]:
//     x 0: p/q = 2, kept whatever the coin                                        -> 0
//     x 2: p/q = 0.5; accept_coin 0.4 keeps it                                   -> 2
//          accept_coin 0.5 does not (0.5 is not < 0.5): residual [0.25, 0, 0]    -> 0
//   q null, p [0.5, 0.25, 0.25], x 0, accept_coin 0.75 (>= p(x) = 0.5): residual [0, 0.25, 0.25],
//     residual_coin 0.6: 0.6 x 0.5 = 0.3 falls past id 1's 0.25, in id 2's share   -> 2
//   p [0.2, 0.3], q [0.5, 0.3], x 0, accept_coin 0.9: the residual max(0, p - q) is all 0: throw
//
// Tested by: "ex08.1 ..." in tests/exercises/test_08_speculative.cpp (Hugging Face's
// test_speculative_sampling round, drafts [1, 4, 5] -> [1, 4, 8], and the law of its
// target-distribution case by chi-squared over seeded coins; a coin exactly at p/q; q(x) = 0 and
// p(x) = 0; deterministic drafts; tokens drafted from q and verified follow p; bad input).
// Do not call decodebook::accept_draft, decodebook::residual or decodebook::verify_drafts: they
// are the answer.
// Graded by: ./grade 08
#include <algorithm>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

int your_verify_position(const xt::xtensor<float, 1>& p, const xt::xtensor<float, 1>* q, int x, double accept_coin,
                         double residual_coin) {
    // TODO: check x and the sizes; keep x when accept_coin < p(x) / q(x) (q null: q(x) = 1), else
    // build the residual and draw from it with sample_inverse_cdf(residual, residual_coin).
    (void)p, (void)q, (void)x, (void)accept_coin, (void)residual_coin;
    throw NotImplemented("08.1 (your_verify_position)", "exercises/08-speculative/verify_position.cpp");
}

}  // namespace decodebook
