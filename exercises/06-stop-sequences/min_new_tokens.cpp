// Exercise 06.2 - min_new_tokens.                           Chapter 06: EOS and stop sequences
//
// Hugging Face's MinNewTokensLengthLogitsProcessor, in place: while fewer than min_new_tokens
// tokens were generated (generated_count < min_new_tokens), set the logit of EVERY id in eos_ids
// to -infinity, so no EOS can be picked; from then on change nothing. Ids outside the logits
// are ignored; min_new_tokens 0 is off.
//
//   logits [1, 5, 2], eos {1}, generated 0, min 2 -> [1, -inf, 2]
//   logits [1, 5, 2], eos {1}, generated 2, min 2 -> [1, 5, 2]       (the minimum is reached)
//   logits [4, 5, 2], eos {0, 1}, generated 1, min 3 -> [-inf, -inf, 2]
//
// Graded by: ./grade 06 (hand cases, and a greedy generation with your processor that must equal
// the library's generate with min_new_tokens).
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_min_new_tokens(xt::xtensor<float, 1>& logits, const std::vector<int>& eos_ids, int generated_count,
                               int min_new_tokens) {
    // TODO: mask the EOS ids while the generation is shorter than min_new_tokens.
    (void)logits, (void)eos_ids, (void)generated_count, (void)min_new_tokens;
    throw NotImplemented("06.2 (your_apply_min_new_tokens)", "exercises/06-stop-sequences/min_new_tokens.cpp");
}

}  // namespace decodebook
