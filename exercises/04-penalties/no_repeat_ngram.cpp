// Exercise 04.3 - No-repeat-ngram.                          Chapter 04: penalties
//
// Hugging Face's hard rule: never produce an n-gram that already occurs in the sequence
// (prompt + generated). Take the last n - 1 tokens as a prefix; wherever that prefix occurred
// earlier, the token that followed it is banned (logit -> -infinity).
//   - n = 0: do nothing.  - sequence shorter than n - 1: do nothing.
//   - n = 1: the prefix is empty, so every token already in the sequence is banned.
//
//   sequence [1, 2, 3, 1, 2], n = 3: prefix (1, 2) was followed by 3 -> ban 3
//   sequence [1, 2, 3, 1, 2], n = 2: prefix (2) was followed by 3    -> ban 3
//
// Do not call decodebook::apply_no_repeat_ngram: that is the answer.
// Graded by: ./grade 04
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_no_repeat_ngram(xt::xtensor<float, 1>& logits, const std::vector<int>& sequence, int n) {
    // TODO: for every earlier occurrence of the last n - 1 tokens, ban the token that followed it.
    (void)logits, (void)sequence, (void)n;
    throw NotImplemented("04.3 (your_apply_no_repeat_ngram)", "exercises/04-penalties/no_repeat_ngram.cpp");
}

}  // namespace decodebook
