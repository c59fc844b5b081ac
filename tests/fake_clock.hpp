// The serving tests' clock (tests/test_serving.cpp, test_paged_serving.cpp, test_paged_engine.cpp):
// one unit of time per model call. A serving loop reads `now` once after each prefill and each
// decode call, so the n-th reading is n (after a wait, the arrival plus the calls since), and a
// schedule worked out by hand can be checked against the stamps.
#pragma once
#include "decodebook/decoding/serving.hpp"

struct FakeClock {
    double t = 0;
    decodebook::ServeClock clock() {
        return {[this] { return t += 1; }, [this](double until) { t = until; }};
    }
};
