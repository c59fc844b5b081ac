#pragma once
/// @file course/timing.hpp
/// @brief The time between two readings of the steady clock, as the chapters that time their
/// steps print it: milliseconds (chapters 07 and 08) and microseconds (chapter 09).
#include <chrono>

namespace decodebook {

/// Milliseconds from `a` to `b`. Introduced in chapter 07.
inline double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Microseconds from `a` to `b`. Introduced in chapter 09.
inline double us_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace decodebook
