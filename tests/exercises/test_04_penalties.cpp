// Graded tests for chapter 04's exercises (see exercises/manifest.json).
// Each exercise also meets cases drawn when the test runs, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library in this test program,
// which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "decodebook/base/rng.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "replay.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;

namespace {

std::string show(const Vec& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + feedback::num(v(i), 7);
    return s + "]";
}

void check_logits(const Vec& found, const Vec& expected, const std::string& what) {
    FEEDBACK("input: " << what);
    FEEDBACK("expected: " << show(expected));
    FEEDBACK("found:    " << show(found));
    REQUIRE(found.size() == expected.size());
    for (size_t i = 0; i < found.size(); ++i) {
        if (std::isinf(expected(i))) CHECK(found(i) == expected(i));
        else CHECK(found(i) == Approx(expected(i)).margin(1e-6));
    }
}

// Replay every greedy reference case with this chain, the penalty done by `penalize`.
void check_greedy_cases(const std::string& chain, const std::function<void(Vec&, const std::vector<int>&,
                                                                             const std::vector<int>&)>& penalize) {
    const auto cases = replay::cases_with_chain("sampling.json", {chain});
    REQUIRE_FALSE(cases.empty());
    for (const auto& c : cases) {
        const std::vector<int> found = replay::generate(c, [&](const Vec& logits, const std::vector<int>& prompt,
                                                               const std::vector<int>& generated, double) {
            Vec z = logits;
            penalize(z, prompt, generated);
            return decodebook::argmax(z);
        });
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        FEEDBACK("case " << c["name"] << " (" << c["chain"] << ")");
        FEEDBACK("expected: " << golden::join(expected));
        FEEDBACK("found:    " << golden::join(found));
        CHECK(found == expected);
    }
}

std::vector<int> concat(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> all = a;
    all.insert(all.end(), b.begin(), b.end());
    return all;
}

// check_logits' rule as a verdict: the same size, infinities exactly, the rest within 1e-6.
bool close(const Vec& found, const Vec& expected) {
    if (found.shape() != expected.shape()) return false;
    for (size_t i = 0; i < found.size(); ++i) {
        if (std::isinf(expected(i)) ? found(i) != expected(i) : !(found(i) == Approx(expected(i)).margin(1e-6))) return false;
    }
    return true;
}

// The first id whose logit differs (or the size when only the sizes differ).
size_t first_difference(const Vec& found, const Vec& expected) {
    for (size_t i = 0; i < std::min(found.size(), expected.size()); ++i)
        if (!close(Vec{found(i)}, Vec{expected(i)})) return i;
    return std::min(found.size(), expected.size());
}

// Logits as the drawn cases use them: V values, multiples of 1/4 in [-4, 4] (0 included), about
// one in ten -inf.
Vec draw_logits(Rng& rng, size_t V) {
    Vec z = Vec::from_shape({V});
    for (float& x : z) x = drawn::between(rng, 0, 9) == 0 ? -INFINITY : static_cast<float>(drawn::between(rng, -16, 16)) / 4;
    return z;
}

// `n` ids in [0, V) (repeats likely).
std::vector<int> draw_ids(Rng& rng, int n, int V) {
    std::vector<int> ids(static_cast<size_t>(n));
    for (int& id : ids) id = drawn::between(rng, 0, V - 1);
    return ids;
}

// A penalty strength: a multiple of 1/4 in [lo, hi], or any value in [lo, hi).
float draw_strength(Rng& rng, float lo, float hi) {
    return drawn::between(rng, 0, 1) ? lo + static_cast<float>(drawn::between(rng, 0, static_cast<int>((hi - lo) * 4))) / 4
                                     : static_cast<float>(drawn::uniform(rng, lo, hi));
}

}  // namespace

TEST_CASE("ex04.1 repetition penalty divides positive and multiplies negative logits", "[ex04.1]") {
    Vec z{-2.0f, 2.0f, 0.0f, 5.0f};
    your_apply_repetition_penalty(z, {0, 1, 2, 1, 1}, 1.5f);
    check_logits(z, {-3.0f, 2.0f / 1.5f, 0.0f, 5.0f},
                 "logits [-2, 2, 0, 5], seen {0, 1, 2, 1, 1}, theta 1.5 (each id once; -2 * 1.5, not -2 / 1.5)");
}

TEST_CASE("ex04.1 repetition penalty reproduces the reference's greedy run", "[ex04.1]") {
    check_greedy_cases("repetition_penalty(1.3) -> argmax", [](Vec& z, const std::vector<int>& prompt,
                                                               const std::vector<int>& generated) {
        your_apply_repetition_penalty(z, concat(prompt, generated), 1.3f);
    });
}

namespace {

// What a wrong repetition penalty says about the rule that was missed.
std::string repetition_diagnosis(const Vec& z, const std::vector<int>& seen, float theta, const Vec& expected, const Vec& found) {
    const size_t i = first_difference(found, expected);
    if (i >= z.size() || found.size() != z.size())
        return "one logit per token, changed in place: " + std::to_string(z.size()) + " values";
    const long c = std::count(seen.begin(), seen.end(), static_cast<int>(i));
    const float x = z(i), f = found(i);
    const auto near = [](float a, float b) { return a == Approx(b).margin(1e-6); };
    std::string s = "id " + std::to_string(i) + " (logit " + feedback::num(x, 7) + ", count " + std::to_string(c) + " in seen): ";
    if (c == 0) return s + "only the ids in seen change";
    if (x > 0 && near(f, x * theta)) return s + "a positive logit is divided by theta";
    if (x < 0 && near(f, x / theta)) return s + "a negative logit is multiplied by theta (dividing it would raise it)";
    if (c > 1 && (near(f, x / std::pow(theta, static_cast<float>(c))) || near(f, x * std::pow(theta, static_cast<float>(c)))))
        return s + "penalise each distinct id once, however often it appears";
    return s + "z > 0 ? z / theta : z * theta = " + feedback::num(expected(i), 7);
}

}  // namespace

TEST_CASE("ex04.1 on cases drawn when the test runs", "[ex04.1]") {
    // 300 vectors of 1 to 8 logits (multiples of 1/4 in [-4, 4], 0 and -inf included), seen 0 to
    // 8 ids with repeats, theta a multiple of 1/4 in [1, 3] or any value in [1, 3): the expected
    // logits are the library's apply_repetition_penalty.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, std::vector<int>, float>> cases;
    for (int i = 0; i < 300; ++i) {
        const int V = drawn::between(rng, 1, 8);
        Vec z = draw_logits(rng, static_cast<size_t>(V));
        std::vector<int> seen = draw_ids(rng, drawn::between(rng, 0, 8), V);
        cases.emplace_back(z, seen, draw_strength(rng, 1, 3));
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_apply_repetition_penalty", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) {
            Vec z = std::get<0>(c);
            your_apply_repetition_penalty(z, std::get<1>(c), std::get<2>(c));
            out.push_back(z);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& z = std::get<0>(cases[i]);
        const std::vector<int>& seen = std::get<1>(cases[i]);
        const float theta = std::get<2>(cases[i]);
        Vec expected = z;
        apply_repetition_penalty(expected, seen, theta);
        const bool same = close(found[i], expected);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << show(z) << ", seen {" << golden::join(seen) << "}, theta "
                                          << feedback::num(theta, 9));
        FEEDBACK("expected: " << show(expected) << " (the library's apply_repetition_penalty)\nfound:    " << show(found[i]));
        FEEDBACK((same ? std::string() : "hint: " + repetition_diagnosis(z, seen, theta, expected, found[i])));
        REQUIRE(same);
    }
}

TEST_CASE("ex04.2 presence and frequency penalties subtract per count", "[ex04.2]") {
    Vec z{1.0f, 1.0f, 1.0f};
    your_apply_presence_frequency(z, {0, 0, 0, 2}, 0.5f, 0.25f);
    check_logits(z, {-0.25f, 1.0f, 0.25f}, "logits [1, 1, 1], output {0, 0, 0, 2}, presence 0.5, frequency 0.25");
    Vec w{0.0f, 0.0f};
    your_apply_presence_frequency(w, {}, 0.5f, 0.25f);
    check_logits(w, {0.0f, 0.0f}, "logits [0, 0], output {} (empty), presence 0.5, frequency 0.25: nothing changes");
}

TEST_CASE("ex04.2 presence and frequency reproduce the reference's greedy run", "[ex04.2]") {
    check_greedy_cases("presence_frequency(0.8, 0.5) -> argmax", [](Vec& z, const std::vector<int>&,
                                                                    const std::vector<int>& generated) {
        your_apply_presence_frequency(z, generated, 0.8f, 0.5f);
    });
}

namespace {

// What a wrong presence/frequency penalty says about the rule that was missed.
std::string presence_diagnosis(const Vec& z, const std::vector<int>& output, float presence, float frequency, const Vec& expected,
                               const Vec& found) {
    const size_t i = first_difference(found, expected);
    if (i >= z.size() || found.size() != z.size())
        return "one logit per token, changed in place: " + std::to_string(z.size()) + " values";
    const long c = std::count(output.begin(), output.end(), static_cast<int>(i));
    const float x = z(i), f = found(i), n = static_cast<float>(c);
    const auto near = [](float a, float b) { return a == Approx(b).margin(1e-6); };
    std::string s = "id " + std::to_string(i) + " (logit " + feedback::num(x, 7) + ", count " + std::to_string(c) + " in output): ";
    if (c == 0) return s + "a token that is not in output is unchanged";
    if (near(f, x - frequency * n)) return s + "it also pays the presence penalty, once";
    if (c > 1 && near(f, x - (frequency + presence) * n)) return s + "presence is paid once, not per occurrence";
    if (c > 1 && near(f, x - frequency - presence)) return s + "frequency is paid per occurrence: " + std::to_string(c) + " times";
    return s + "z - (frequency x count + presence) = " + feedback::num(expected(i), 7);
}

}  // namespace

TEST_CASE("ex04.2 on cases drawn when the test runs", "[ex04.2]") {
    // 300 vectors of 1 to 8 logits (multiples of 1/4 in [-4, 4], -inf included), outputs of 0 to
    // 10 ids with repeats, presence and frequency each a multiple of 1/4 in [0, 2] or any value in
    // [0, 2): the expected logits are the library's apply_presence_frequency.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, std::vector<int>, float, float>> cases;
    for (int i = 0; i < 300; ++i) {
        const int V = drawn::between(rng, 1, 8);
        Vec z = draw_logits(rng, static_cast<size_t>(V));
        std::vector<int> output = draw_ids(rng, drawn::between(rng, 0, 10), V);
        const float presence = draw_strength(rng, 0, 2);
        cases.emplace_back(z, output, presence, draw_strength(rng, 0, 2));
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_apply_presence_frequency", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) {
            Vec z = std::get<0>(c);
            your_apply_presence_frequency(z, std::get<1>(c), std::get<2>(c), std::get<3>(c));
            out.push_back(z);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& z = std::get<0>(cases[i]);
        const std::vector<int>& output = std::get<1>(cases[i]);
        const float presence = std::get<2>(cases[i]), frequency = std::get<3>(cases[i]);
        Vec expected = z;
        apply_presence_frequency(expected, output, presence, frequency);
        const bool same = close(found[i], expected);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << show(z) << ", output {" << golden::join(output) << "}, presence "
                                          << feedback::num(presence, 9) << ", frequency " << feedback::num(frequency, 9));
        FEEDBACK("expected: " << show(expected) << " (the library's apply_presence_frequency)\nfound:    " << show(found[i]));
        FEEDBACK((same ? std::string() : "hint: " + presence_diagnosis(z, output, presence, frequency, expected, found[i])));
        REQUIRE(same);
    }
}

TEST_CASE("ex04.3 no-repeat-ngram bans completions of earlier n-grams", "[ex04.3]") {
    const std::vector<int> seq{1, 2, 3, 1, 2};
    const float X = -INFINITY;
    Vec a = xt::zeros<float>({5});
    your_apply_no_repeat_ngram(a, seq, 3);
    check_logits(a, {0, 0, 0, X, 0}, "logits all 0, sequence [1, 2, 3, 1, 2], n = 3: (1, 2) was followed by 3");
    Vec b = xt::zeros<float>({5});
    your_apply_no_repeat_ngram(b, seq, 1);
    check_logits(b, {0, X, X, X, 0}, "logits all 0, sequence [1, 2, 3, 1, 2], n = 1: the empty prefix matches everywhere, every token seen is banned");
    Vec c = xt::zeros<float>({5});
    your_apply_no_repeat_ngram(c, {1, 2}, 4);
    check_logits(c, {0, 0, 0, 0, 0}, "logits all 0, sequence [1, 2], n = 4: shorter than n - 1, nothing banned");
    Vec d = xt::zeros<float>({5});
    your_apply_no_repeat_ngram(d, seq, 0);
    check_logits(d, {0, 0, 0, 0, 0}, "logits all 0, sequence [1, 2, 3, 1, 2], n = 0: disabled");
}

TEST_CASE("ex04.3 no-repeat-ngram reproduces the reference's greedy run", "[ex04.3]") {
    check_greedy_cases("no_repeat_ngram(3) -> argmax", [](Vec& z, const std::vector<int>& prompt,
                                                          const std::vector<int>& generated) {
        your_apply_no_repeat_ngram(z, concat(prompt, generated), 3);
    });
}

namespace {

// Which earlier n-grams this case's tail completes, and the ids they ban.
std::string ngram_diagnosis(const std::vector<int>& sequence, int n) {
    if (n <= 0) return "n = " + std::to_string(n) + " changes nothing";
    const size_t m = static_cast<size_t>(n) - 1;
    if (sequence.size() < m) return "the sequence is shorter than n - 1 = " + std::to_string(m) + ": nothing is banned";
    const std::vector<int> tail(sequence.end() - static_cast<long>(m), sequence.end());
    std::vector<int> starts, banned;
    for (size_t i = 0; i + m < sequence.size(); ++i)
        if (std::equal(tail.begin(), tail.end(), sequence.begin() + static_cast<long>(i))) {
            starts.push_back(static_cast<int>(i));
            banned.push_back(sequence[i + m]);
        }
    return "the last n - 1 = " + std::to_string(m) + " tokens [" + golden::join(tail) + "] also start at positions [" +
           golden::join(starts) + "]" + (m == 0 ? " (the empty prefix starts everywhere)" : "") +
           ", followed there by [" + golden::join(banned) +
           "]: exactly those ids get -inf, every other logit is unchanged";
}

}  // namespace

TEST_CASE("ex04.3 on cases drawn when the test runs", "[ex04.3]") {
    // 300 sequences of 0 to 12 ids over an alphabet of 1 to 5 (so n-grams repeat), n from 0 (off)
    // to 5 (often longer than the sequence), logits all 0 or multiples of 1/4 in [-4, 4] with -inf
    // among them, over 0 to 2 more ids than the alphabet: the expected logits are the library's
    // apply_no_repeat_ngram.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, std::vector<int>, int>> cases;
    for (int i = 0; i < 300; ++i) {
        const int alphabet = drawn::between(rng, 1, 5);
        const size_t V = static_cast<size_t>(alphabet + drawn::between(rng, 0, 2));
        Vec z = drawn::between(rng, 0, 1) ? Vec(xt::zeros<float>({V})) : draw_logits(rng, V);
        std::vector<int> sequence = draw_ids(rng, drawn::between(rng, 0, 12), alphabet);
        cases.emplace_back(z, sequence, drawn::between(rng, 0, 5));
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_apply_no_repeat_ngram", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) {
            Vec z = std::get<0>(c);
            your_apply_no_repeat_ngram(z, std::get<1>(c), std::get<2>(c));
            out.push_back(z);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& z = std::get<0>(cases[i]);
        const std::vector<int>& sequence = std::get<1>(cases[i]);
        const int n = std::get<2>(cases[i]);
        Vec expected = z;
        apply_no_repeat_ngram(expected, sequence, n);
        const bool same = close(found[i], expected);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << show(z) << ", sequence [" << golden::join(sequence)
                                          << "], n = " << n);
        FEEDBACK("expected: " << show(expected) << " (the library's apply_no_repeat_ngram)\nfound:    " << show(found[i]));
        FEEDBACK((same ? std::string() : "hint: " + ngram_diagnosis(sequence, n)));
        REQUIRE(same);
    }
}
