// Exercise 03.2 - Top-p (nucleus).                          Chapter 03: truncation
//
// Return, for each token, whether top-p keeps it. Walk the tokens in candidate order
// (decodebook::candidate_order: probability desc, then id asc) and keep a token while the
// probability mass STRICTLY BEFORE it is < p. So:
//   - the token that crosses p is kept;
//   - at an exact sum the next token is dropped (HF's rule):
//       probs [0.5, 0.3, 0.1, 0.1], p = 0.8  -> keep ids 0, 1 (0.5 + 0.3 = 0.8 exactly)
//       probs [0.5, 0.3, 0.1, 0.1], p = 0.81 -> keep ids 0, 1, 2
//   - the first token is always kept (p = 0 keeps exactly one), and so are the first min_keep;
//   - p >= 1 keeps every token with probability > 0.
// Accumulate the mass in a double. Do not call decodebook::top_p_keep: that is the answer.
// Graded by: ./grade 03
#include "decodebook/exercises.hpp"

#include "decodebook/sampling.hpp"

namespace decodebook {

std::vector<bool> your_top_p_keep(const xt::xtensor<float, 1>& probs, double p, int min_keep) {
    // TODO: walk candidate_order(probs), marking tokens kept while the mass before them is < p.
    (void)probs, (void)p, (void)min_keep;
    throw NotImplemented("03.2 (your_top_p_keep)", "exercises/03-truncation/top_p.cpp");
}

}  // namespace decodebook
