#pragma once
/// @file base/error.hpp
/// @brief The one exception type of decodebook: every message names the problem and the fix.
#include <stdexcept>
#include <string>

namespace decodebook {

/// An error a user can act on: bad input, a malformed model file, bad parameters.
/// The message says what is wrong and how to fix it: what() is "PROBLEM\n  fix: FIX".
/// Introduced in chapter 00.
class Error : public std::runtime_error {
public:
    /// @param problem what is wrong, e.g. "prompt is empty"
    /// @param fix what to do about it, e.g. pass `--prompt TEXT`
    Error(const std::string& problem, const std::string& fix);
    /// What is wrong. Introduced in chapter 00.
    const std::string& problem() const { return problem_; }
    /// What to do about it. Introduced in chapter 00.
    const std::string& fix() const { return fix_; }

private:
    std::string problem_, fix_;
};

}  // namespace decodebook
