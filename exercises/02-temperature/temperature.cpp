// Exercise 02.2 - Temperature.                              Chapter 02: temperature and sampling
//
// Divide every logit by the temperature T (> 0), in place:  [2, -4, 0] at T = 2 -> [1, -2, 0].
// T < 1 spreads the logits apart (sharper distribution), T > 1 squeezes them (flatter).
// Removed tokens (-inf) stay -inf. T = 0 never reaches this function: the chain runs argmax.
// Graded by: ./grade 02
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_temperature(xt::xtensor<float, 1>& logits, float temperature) {
    // TODO: divide each logit by the temperature.
    (void)logits, (void)temperature;
    throw NotImplemented("02.2 (your_apply_temperature)", "exercises/02-temperature/temperature.cpp");
}

}  // namespace decodebook
