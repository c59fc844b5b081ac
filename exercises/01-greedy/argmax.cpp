// Exercise 01.1 - Argmax with the tie rule.                 Chapter 01: greedy decoding
//
// Contract: return the id of the largest logit. When several logits are equal, return the
// LOWEST of their ids (torch.argmax, llama.cpp and llama2.c agree), so the result never depends
// on how ties happened to be visited. Any finite values, negative ones included.
// Tests (./grade 01, tests/exercises/test_01_greedy.cpp): small vectors with a clear maximum;
// ties ([1, 3, 3, 2] -> 1, [7, 7, 7] -> 0, [0, 5, 1, 5, 5] -> 1); the model's greedy choice on a
// real prompt. Do not call decodebook::argmax: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

int your_argmax(const xt::xtensor<float, 1>& logits) {
    // TODO: the id of the largest logit, ties to the lowest id.
    (void)logits;
    throw NotImplemented("01.1 (your_argmax)", "exercises/01-greedy/argmax.cpp");
}

}  // namespace decodebook
