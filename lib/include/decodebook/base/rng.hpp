#pragma once
/// @file base/rng.hpp
/// @brief decodebook's own random number generator: the same coins on every machine.
///
/// Samplers never draw random numbers themselves: they take a coin in [0, 1) as an argument.
/// The coins come from this generator, whose every bit is specified here, so a seeded run gives
/// the same tokens with any compiler and standard library (std::uniform_real_distribution does
/// not promise that). tests/reference/rng.py is the same generator in Python.
///
/// - Seeding: state = splitmix64(seed) (so seed 0 is fine); a zero state becomes 0x9E3779B97F4A7C15.
/// - Next: xorshift64* (Vigna): state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
///   output = state * 0x2545F4914F6CDD1D (mod 2^64). llama2.c uses the same core.
/// - Coin: the top 53 bits of the output as a double: (next_u64() >> 11) * 2^-53.
#include <cstdint>

namespace decodebook {

/// splitmix64's output for input x (one step from state x). Introduced in chapter 00.
uint64_t splitmix64(uint64_t x);

/// xorshift64* seeded through splitmix64. Introduced in chapter 00.
class Rng {
public:
    /// Start the stream for `seed` (every value is valid).
    explicit Rng(uint64_t seed);
    /// The next 64 random bits.
    uint64_t next_u64();
    /// The next coin, uniform in [0, 1) with 53 random bits.
    double coin();

private:
    uint64_t state_;
};

}  // namespace decodebook
