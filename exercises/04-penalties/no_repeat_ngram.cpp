// Exercise 04.3 - No-repeat-ngram.                          Chapter 04: penalties
//
// Contract: Hugging Face's no_repeat_ngram_size = n: after this call no next token can complete
// an n-gram that already occurs in `sequence` (prompt + generated); such tokens get -inf, all
// others are unchanged. n = 0 does nothing; so does a sequence too short to hold n - 1 tokens;
// n = 1 bans every token already in the sequence.
// Tests (./grade 04): sequence [1, 2, 3, 1, 2] with n = 3 (bans 3), n = 1 and n = 0; a sequence
// shorter than n - 1; the reference's greedy run with no_repeat_ngram_size 3 on the model.
// Do not call decodebook::apply_no_repeat_ngram: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_no_repeat_ngram(xt::xtensor<float, 1>& logits, const std::vector<int>& sequence, int n) {
    // TODO: ban the completions of earlier n-grams, as the contract above says.
    (void)logits, (void)sequence, (void)n;
    throw NotImplemented("04.3 (your_apply_no_repeat_ngram)", "exercises/04-penalties/no_repeat_ngram.cpp");
}

}  // namespace decodebook
