// Exercise 10.1 - Locally typical sampling, as Hugging Face decides it.  Chapter 10: other samplers
//
// Typical-p keeps the tokens whose surprise is closest to the surprise you expect: a token's
// surprise is -ln p (nats), the expected one is the entropy H = -sum p ln p (tokens with p = 0
// add nothing). Return one flag per token of `probs`, true where Hugging Face's
// TypicalLogitsWarper keeps it:
//   - Rank the tokens with p > 0 by d = |-ln p - H|, smallest first (the most typical first; ties
//     by id). The most likely token may well rank last.
//   - Walk that ranking adding up p. The token at which the sum first reaches `mass` (sum >=
//     mass) is kept, and so is every token ranked before it; if the sum never reaches mass, every
//     token with p > 0 is kept.
//   - Ties are kept together: every token whose d equals the d of the last kept token stays too.
//   - The max(1, min_keep) first tokens of the ranking always stay (the most typical ones, not
//     the most likely). A token with p = 0 is never kept.
//   - mass = 1 keeps every token with p > 0. Throw decodebook::Error (problem, fix) when mass is
//     not in (0, 1] (0, a negative mass, 1.5, NaN).
// Compute H and d in double; the tests keep away from sums that land on mass within rounding.
//
//   probs [0.5, 0.3, 0.2]: H = 0.5 ln 2 + 0.3 ln(1/0.3) + 0.2 ln 5 = 1.0297 nats
//     d = [|0.6931 - 1.0297|, |1.2040 - 1.0297|, |1.6094 - 1.0297|] = [0.3365, 0.1743, 0.5798]
//     ranking: id 1 (0.3), id 0 (0.5), id 2 (0.2); running sums 0.3, 0.8, 1.0
//     mass 0.2: 0.3 >= 0.2 at id 1                                  -> [false, true, false]
//     mass 0.5: 0.8 >= 0.5 at id 0                                  -> [true, true, false]
//     mass 0.2, min_keep 2: the two most typical, ids 1 and 0        -> [true, true, false]
//     mass 0.85: the sum reaches 1.0 only at id 2                    -> [true, true, true]
//   probs [0.4, 0.2, 0.2, 0.2] (HF's own case), mass 0.5: H = 1.3322, d = [0.4159, 0.2773 x 3];
//     0.2 >= 0.5? no; 0.4? no; 0.6 yes at id 3; ids 1..3 kept, the likeliest dropped
//                                                                    -> [false, true, true, true]
//
// Tested by: "ex10.1 ..." in tests/exercises/test_10_other_samplers.cpp (Hugging Face's
// test_typical_dist_warper, llama.cpp's test_typical where the two rules agree, the most typical
// against the most likely, ties, min_keep, mass 1, tokens with p = 0, bad masses).
// Do not call decodebook::typical_keep (or apply_typical_p): it is the answer. You may use
// decodebook::entropy and decodebook::candidate_order.
// Graded by: ./grade 10
#include <algorithm>
#include <cmath>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<bool> your_typical_keep(const xt::xtensor<float, 1>& probs, double mass, int min_keep) {
    // TODO: check mass; compute H and each token's d; rank by d; keep up to the token where the
    // running sum reaches mass, its ties, and the max(1, min_keep) most typical.
    (void)probs, (void)mass, (void)min_keep;
    throw NotImplemented("10.1 (your_typical_keep)", "exercises/10-other-samplers/typical.cpp");
}

}  // namespace decodebook
