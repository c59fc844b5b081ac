// Exercise 04.1 - The repetition penalty, sign-aware.       Chapter 04: penalties
//
// CTRL's repetition penalty makes tokens already seen less likely. For each DISTINCT id in
// `seen` (once, however many times it appears):
//     z > 0  ->  z / theta          z <= 0  ->  z * theta
// With theta > 1 both moves push the logit DOWN. The trap: dividing a negative logit by
// theta moves it toward 0, i.e. UP -- the naive z / theta makes repeats MORE likely.
//
//   logits [-2, 2, 0, 5], seen {0, 1, 2, 1, 1}, theta 1.5  ->  [-3, 1.333, 0, 5]
//
// Do not call decodebook::apply_repetition_penalty: that is the answer.
// Graded by: ./grade 04
#include "decodebook/exercises.hpp"

#include <set>

namespace decodebook {

void your_apply_repetition_penalty(xt::xtensor<float, 1>& logits, const std::vector<int>& seen, float theta) {
    // TODO: for each distinct id in seen, divide a positive logit by theta, multiply a non-positive one.
    (void)logits, (void)seen, (void)theta;
    throw NotImplemented("04.1 (your_apply_repetition_penalty)", "exercises/04-penalties/repetition.cpp");
}

}  // namespace decodebook
