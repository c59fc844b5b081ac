// What a failing check of an exercise test prints: its input, what was expected and what was
// found, in plain words (INFO lines "input: ...", "expected: ...", "found: ..."). Catch2 wraps a
// message at 80 columns and may break after a '.' or a '-', cutting a number in two; wrap() breaks
// the lines itself, at spaces only, so a printed number is never split: FEEDBACK(...) is an INFO
// whose text is wrapped so.
#pragma once

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/base/error.hpp"

namespace feedback {

// A number as people write it: at most `digits` significant digits, no trailing zeros.
inline std::string num(double x, int digits = 6) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    return buf;
}

inline std::string list(const std::vector<int>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

// At most `max` values, then "... (N values)".
inline std::string list(const xt::xtensor<float, 1>& v, size_t max = 8, int digits = 6) {
    std::string s = "[";
    for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + num(v(i), digits);
    return s + (v.size() > max ? ", ... (" + std::to_string(v.size()) + " values)]" : "]");
}

// A vector of floats as the tests write their cases: vec({1, 2, -inf}).
inline xt::xtensor<float, 1> vec(const std::vector<float>& values) {
    xt::xtensor<float, 1> v = xt::xtensor<float, 1>::from_shape({values.size()});
    std::copy(values.begin(), values.end(), v.begin());
    return v;
}

// The same case as printed: "[1, 2, -inf]".
inline std::string floats(const std::vector<float>& values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + num(values[i]);
    return s + "]";
}

// Each line of `text` broken at spaces to at most `width` columns; continuation lines indented.
inline std::string wrap(const std::string& text, size_t width = 72) {
    std::string out;
    std::istringstream lines(text);
    std::string line;
    bool first_line = true;
    while (std::getline(lines, line)) {
        if (!first_line) out += "\n";
        first_line = false;
        while (line.size() > width) {
            size_t cut = line.rfind(' ', width);
            if (cut == std::string::npos || cut < 4) cut = line.find(' ', width);
            if (cut == std::string::npos) break;
            out += line.substr(0, cut) + "\n";
            line = "    " + line.substr(cut + 1);
        }
        out += line;
    }
    return out;
}

// What a call that must refuse its input did: "decodebook::Error" when it threw one, else what it
// returned. Any other exception (an untouched stub's) goes on to Catch2, which prints it.
template <class Call>
std::string refusal(Call&& call) {
    try {
        if constexpr (std::is_void_v<decltype(call())>) {
            call();
            return "no exception: it returned";
        } else {
            std::ostringstream out;
            out << "no exception: it returned " << call();
            return out.str();
        }
    } catch (const decodebook::Error&) {
        return "decodebook::Error";
    }
}

}  // namespace feedback

// INFO, its text wrapped at spaces (feedback::wrap): FEEDBACK("found: " << x) as INFO("found: " << x).
#define FEEDBACK(message)                          \
    INFO(feedback::wrap([&] {                      \
        std::ostringstream feedback_text_;         \
        feedback_text_ << message;                 \
        return feedback_text_.str();               \
    }()))

namespace feedback {

// The call must throw decodebook::Error (any other exception reaches Catch2, which prints it); a
// failure prints the input, why it must be refused, and what the call did instead.
template <class Call>
void check_refused(Call&& call, const std::string& input, const std::string& why) {
    FEEDBACK("input: " << input);
    FEEDBACK(why);
    const std::string found = refusal(call);
    FEEDBACK("expected: decodebook::Error\nfound:    " << found);
    CHECK(found == "decodebook::Error");
}

}  // namespace feedback
