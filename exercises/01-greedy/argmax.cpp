// Exercise 01.1 - Argmax with the tie rule.                 Chapter 01: greedy decoding
//
// Greedy decoding picks the token with the largest logit. When several logits are equal,
// take the LOWEST id (torch.argmax, llama.cpp and llama2.c all do), so results never depend
// on how a sort or a loop happened to visit ties.
//
//   [0.5, 2.0, -1.0]        -> 1
//   [1.0, 3.0, 3.0, 2.0]    -> 1      (ids 1 and 2 tie; 1 is lower)
//   [-5.0, -2.0, -3.0]      -> 1      (all negative is fine)
//
// Do not call decodebook::argmax: that is the answer.
// Graded by: ./grade 01   (tests in tests/exercises/test_01_greedy.cpp)
#include "decodebook/exercises.hpp"

namespace decodebook {

int your_argmax(const xt::xtensor<float, 1>& logits) {
    // TODO: return the index of the largest value; ties go to the lowest index.
    (void)logits;
    throw NotImplemented("01.1 (your_argmax)", "exercises/01-greedy/argmax.cpp");
}

}  // namespace decodebook
