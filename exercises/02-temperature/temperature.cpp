// Exercise 02.2 - Temperature.                              Chapter 02: temperature and sampling
//
// Contract: apply temperature T > 0 to the logits, in place, as Hugging Face's
// TemperatureLogitsWarper does (chapter 02's page has the formula). Removed tokens (-inf) stay
// removed. T = 0 never reaches this function: the chain takes the argmax instead.
// Tests (./grade 02): [2, -4, 0, -inf] at T = 2 -> [1, -2, 0, -inf]; [1, 3] at T = 0.5 -> [2, 6].
#include "decodebook/exercises.hpp"

namespace decodebook {

void your_apply_temperature(xt::xtensor<float, 1>& logits, float temperature) {
    // TODO: apply the temperature, as the contract above says.
    (void)logits, (void)temperature;
    throw NotImplemented("02.2 (your_apply_temperature)", "exercises/02-temperature/temperature.cpp");
}

}  // namespace decodebook
