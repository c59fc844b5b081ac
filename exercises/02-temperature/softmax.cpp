// Exercise 02.1 - A numerically stable softmax.            Chapter 02: temperature and sampling
//
// p_i = exp(z_i) / sum_j exp(z_j). Computed literally, exp(1000) overflows to inf and the result
// is nan. Subtract the largest logit first: exp(z_i - max) is at most 1, and the ratio is the same.
// Logits at -inf (removed tokens, chapter 03) must come out as exactly 0.
//
//   [0, ln 3]            -> [0.25, 0.75]
//   [1000, 1001]         -> [0.269, 0.731]       (no overflow)
//   [2, -inf, 2]         -> [0.5, 0, 0.5]
//
// Accumulate the sum in double. Do not call decodebook::softmax: that is the answer.
// Graded by: ./grade 02   (tests in tests/exercises/test_02_temperature.cpp)
#include "decodebook/exercises.hpp"

namespace decodebook {

xt::xtensor<float, 1> your_softmax(const xt::xtensor<float, 1>& logits) {
    // TODO: find the max, exponentiate z - max, divide by the sum.
    (void)logits;
    throw NotImplemented("02.1 (your_softmax)", "exercises/02-temperature/softmax.cpp");
}

}  // namespace decodebook
