// Exercise 02.1 - A numerically stable softmax.            Chapter 02: temperature and sampling
//
// Contract: p_i = exp(z_i) / sum_j exp(z_j) for every i, computed so that it never overflows
// (logits of 1000 and more must work), with the sum accumulated in double. A logit of -inf (a
// token a filter removed, chapter 03) gives exactly 0.
// Tests (./grade 02, tests/exercises/test_02_temperature.cpp): small vectors ([0, ln 3] ->
// [0.25, 0.75]); [1000, 1001] and [-1000, -1001] without overflow; -inf entries give exactly 0;
// the model's distribution against the library's. Do not call decodebook::softmax: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

xt::xtensor<float, 1> your_softmax(const xt::xtensor<float, 1>& logits) {
    // TODO: a softmax that cannot overflow, as the contract above says.
    (void)logits;
    throw NotImplemented("02.1 (your_softmax)", "exercises/02-temperature/softmax.cpp");
}

}  // namespace decodebook
