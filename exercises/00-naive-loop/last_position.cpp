// Exercise 00.1 - Take the last position's logits.          Chapter 00: the naive decode loop
//
// Contract: given the logits Gpt2::forward returns, shape (T, V) with T >= 1, return a copy of
// the scores for the token that comes after the whole sequence, shape (V).
// Tests (./grade 00, tests/exercises/test_00_naive_loop.cpp): a 3 x 4 matrix of known values;
// a single position (T = 1); the embedded model's logits for a real prompt.
#include "decodebook/exercises.hpp"

#include <xtensor/xview.hpp>

namespace decodebook {

xt::xtensor<float, 1> your_last_position_logits(const xt::xtensor<float, 2>& logits) {
    // TODO: return the scores for the next token, as the contract above says.
    (void)logits;
    throw NotImplemented("00.1 (your_last_position_logits)", "exercises/00-naive-loop/last_position.cpp");
}

}  // namespace decodebook
