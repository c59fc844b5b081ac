// Chapter 00: the project's RNG (documented bit for bit in rng.hpp).
#include "decodebook/base/rng.hpp"

namespace decodebook {

uint64_t splitmix64(uint64_t x) {
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) : state_(splitmix64(seed)) {
    if (state_ == 0) state_ = 0x9E3779B97F4A7C15ull;  // xorshift must not start at 0
}

uint64_t Rng::next_u64() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
}

double Rng::coin() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

}  // namespace decodebook
