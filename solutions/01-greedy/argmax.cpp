// Solution 01.1 - Argmax with the tie rule.                 Chapter 01: greedy decoding
#include "decodebook/exercises.hpp"

namespace decodebook {

int your_argmax(const xt::xtensor<float, 1>& logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits(i) > logits(best)) best = i;  // strict '>' keeps the first of equal values
    }
    return static_cast<int>(best);
}

}  // namespace decodebook
