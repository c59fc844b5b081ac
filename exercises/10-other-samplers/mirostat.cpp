// Exercise 10.3 - One step of mirostat 2.0.                        Chapter 10: other samplers
//
// Mirostat steers the surprise of what it writes toward a target tau (bits), with no fixed k or
// p: mu (bits, the caller's, starting at 2 tau) is a moving cut-off, learned as it goes.
// llama.cpp's llama_sampler_mirostat_v2, one step on `logits`, with `coin` as its randomness:
//   1. p = softmax(logits).
//   2. Keep the tokens whose surprise -log2 p is <= mu; if none, keep the most likely one (the
//      first of decodebook::candidate_order).
//   3. Renormalise the kept probabilities to sum 1 and draw one token with `coin`: walk the kept
//      tokens in candidate_order (probability desc, id asc) and return the first whose running
//      sum is > coin (decodebook::sample_inverse_cdf does this walk).
//   4. Update mu in place: mu = mu - eta * (s - tau), where s = -log2 q and q is the chosen
//      token's renormalised probability (the one it was drawn with).
// Return the token. Throw decodebook::Error (problem, fix) when tau <= 0, eta <= 0 or coin is not
// in [0, 1).
//
//   logits ln [0.5, 0.25, 0.125, 0.125]: surprises 1, 2, 3, 3 bits; tau 1.5, eta 0.1
//     mu 2.5: keep ids 0, 1 (1 and 2 <= 2.5); renormalised [2/3, 1/3]
//       coin 0.5: 0.5 < 2/3                                                      -> 0
//         mu = 2.5 - 0.1 * (log2(3/2) - 1.5) = 2.5 - 0.1 * (0.5850 - 1.5) = 2.5915
//       coin 0.8: 2/3 <= 0.8 < 1                                                  -> 1
//         mu = 2.5 - 0.1 * (log2 3 - 1.5) = 2.5 - 0.1 * 0.0850 = 2.4915
//     mu 0.5: every surprise is above mu, keep id 0 alone, q = 1, s = 0           -> 0
//         mu = 0.5 - 0.1 * (0 - 1.5) = 0.65
//
// Tested by: "ex10.3 ..." in tests/exercises/test_10_other_samplers.cpp (hand-computed steps:
// the cut, the draw in candidate_order, mu's update from the renormalised probability, mu below
// every surprise, a surprise exactly at mu, a run of steps; bad input).
// Do not call decodebook::mirostat_v2_step (or mirostat_v1_step): it is the answer. You may use
// decodebook::softmax, candidate_order and sample_inverse_cdf.
// Graded by: ./grade 10
#include <cmath>

#include "decodebook/exercises.hpp"

namespace decodebook {

int your_mirostat_v2_step(const xt::xtensor<float, 1>& logits, double tau, double eta, double& mu, double coin) {
    // TODO: softmax, cut at mu (at least one token), renormalise, draw with the coin, then move mu
    // by eta times the chosen token's surprise error.
    (void)logits, (void)tau, (void)eta, (void)mu, (void)coin;
    throw NotImplemented("10.3 (your_mirostat_v2_step)", "exercises/10-other-samplers/mirostat.cpp");
}

}  // namespace decodebook
