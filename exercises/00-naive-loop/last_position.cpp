// Exercise 00.1 - Take the last position's logits.          Chapter 00: the naive decode loop
//
// Gpt2::forward returns logits of shape (T, V): row t scores every possible token that could
// follow ids[0..t]. To choose the NEXT token you only need the last row, t = T - 1.
//
//   logits (T = 3, V = 4)        result (V = 4)
//   [[1, 2, 3, 4],
//    [5, 6, 7, 8],        ->     [9, 10, 11, 12]
//    [9, 10, 11, 12]]
//
// You may use anything from xtensor (xt::view, xt::all) or plain loops over logits(t, v).
// Graded by: ./grade 00   (tests in tests/exercises/test_00_naive_loop.cpp)
#include "decodebook/exercises.hpp"

#include <xtensor/xview.hpp>

namespace decodebook {

xt::xtensor<float, 1> your_last_position_logits(const xt::xtensor<float, 2>& logits) {
    // TODO: return a copy of the last row of `logits` (shape (V)).
    (void)logits;
    throw NotImplemented("00.1 (your_last_position_logits)", "exercises/00-naive-loop/last_position.cpp");
}

}  // namespace decodebook
