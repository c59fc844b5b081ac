// Cases drawn when a graded test runs (docs/design.md, "No grade from the visible cases"): the
// inputs come from a seed the system gives when the test runs, so no stub can know them in
// advance; the expected answers come from the library in the test program (never the student's
// module). A test prints the seed with the first case that differs.
#pragma once
#include <cstdint>
#include <random>

#include "decodebook/base/rng.hpp"

namespace drawn {

/// A seed no stub can know: 64 bits from the system's random device, new at every call.
inline uint64_t seed() {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
}

/// An integer in [lo, hi] from `rng` (hi >= lo).
inline int between(decodebook::Rng& rng, int lo, int hi) {
    return lo + static_cast<int>(rng.next_u64() % static_cast<uint64_t>(hi - lo + 1));
}

/// A double in [lo, hi) from `rng`.
inline double uniform(decodebook::Rng& rng, double lo, double hi) { return lo + (hi - lo) * rng.coin(); }

}  // namespace drawn
