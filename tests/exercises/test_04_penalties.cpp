// Graded tests for chapter 04's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <cmath>

#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "replay.hpp"

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
