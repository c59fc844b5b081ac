// Graded tests for chapter 02's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <cmath>

#include <xtensor/xview.hpp>

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
    for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", " : "") + feedback::num(v(i), 7);
    return s + (v.size() > 8 ? ", ...]" : "]");
}

void check_softmax(const Vec& logits, const Vec& expected, const std::string& what) {
    const Vec found = your_softmax(logits);
    FEEDBACK("input: " << what);
    FEEDBACK("expected: " << show(expected));
    FEEDBACK("found:    " << show(found));
    REQUIRE(found.size() == expected.size());
    for (size_t i = 0; i < found.size(); ++i) CHECK(found(i) == Approx(expected(i)).margin(1e-6));
}

}  // namespace

TEST_CASE("ex02.1 softmax of small vectors", "[ex02.1]") {
    check_softmax({0.0f, std::log(3.0f)}, {0.25f, 0.75f}, "logits [0, ln 3]");
    check_softmax({1.0f, 1.0f, 1.0f, 1.0f}, {0.25f, 0.25f, 0.25f, 0.25f}, "logits [1, 1, 1, 1]");
    check_softmax({-3.0f}, {1.0f}, "logits [-3] (one token)");
}

TEST_CASE("ex02.1 softmax does not overflow", "[ex02.1]") {
    const float e = std::exp(1.0f);
    check_softmax({1000.0f, 1001.0f}, {1 / (1 + e), e / (1 + e)}, "logits [1000, 1001]: subtract the max first");
    check_softmax({-1000.0f, -1001.0f}, {e / (1 + e), 1 / (1 + e)}, "logits [-1000, -1001]");
}

TEST_CASE("ex02.1 softmax gives removed tokens zero", "[ex02.1]") {
    check_softmax({2.0f, -INFINITY, 2.0f}, {0.5f, 0.0f, 0.5f}, "logits [2, -inf, 2]");
}

TEST_CASE("ex02.1 softmax matches the library on the model", "[ex02.1]") {
    const xt::xtensor<float, 2> all = replay::model().forward({464, 1266, 835});
    const Vec z = xt::view(all, 2, xt::all());
    check_softmax(z, decodebook::softmax(z), "the model's next-token logits after 3 tokens");
}

TEST_CASE("ex02.2 apply_temperature divides the logits", "[ex02.2]") {
    {
        Vec z{2.0f, -4.0f, 0.0f, -INFINITY};
        your_apply_temperature(z, 2.0f);
        FEEDBACK("input: logits [2, -4, 0, -inf] at T = 2\nexpected: [1, -2, 0, -inf]\nfound:    " << show(z));
        CHECK(z(0) == 1.0f);
        CHECK(z(1) == -2.0f);
        CHECK(z(2) == 0.0f);
        CHECK(z(3) == -INFINITY);
    }
    Vec w{1.0f, 3.0f};
    your_apply_temperature(w, 0.5f);
    FEEDBACK("input: logits [1, 3] at T = 0.5\nexpected: [2, 6]\nfound:    " << show(w));
    CHECK((w(0) == 2.0f && w(1) == 6.0f));
}

TEST_CASE("ex02.3 sample_inverse_cdf walks candidates by probability then id", "[ex02.3]") {
    const Vec p{0.25f, 0.5f, 0.25f, 0.0f};  // order 1, 0, 2; running sums 0.5, 0.75, 1.0
    const std::pair<double, int> cases[] = {{0.0, 1}, {0.3, 1}, {0.5, 0}, {0.74, 0}, {0.75, 2}, {0.99, 2}};
    for (const auto& [coin, expected] : cases) {
        const int found = your_sample_inverse_cdf(p, coin);
        FEEDBACK("input: probs [0.25, 0.5, 0.25, 0], coin " << coin << "\nexpected: " << expected << "\nfound:    " << found);
        CHECK(found == expected);
    }
    const int unnormalised = your_sample_inverse_cdf(Vec{0.5f, 1.5f}, 0.3);
    FEEDBACK("input: probs [0.5, 1.5] (total 2, not 1), coin 0.3: 0.3 x 2 = 0.6 falls in id 1's share\n"
             "expected: 1\nfound:    " << unnormalised);
    CHECK(unnormalised == 1);
}

TEST_CASE("ex02.3 sample_inverse_cdf reproduces the reference's seeded draws", "[ex02.3]") {
    const auto cases = replay::cases_with_chain("sampling.json", {"sample", "temperature(0.7) -> sample",
                                                                  "temperature(1.5) -> sample"});
    REQUIRE(cases.size() >= 3);
    for (const auto& c : cases) {
        const LogitsChain chain(replay::config(c));
        const std::vector<int> found = replay::generate(c, [&](const Vec& z, const std::vector<int>& prompt,
                                                               const std::vector<int>& generated, double coin) {
            return your_sample_inverse_cdf(decodebook::softmax(chain.apply(z, {prompt, generated})), coin);
        });
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        FEEDBACK("case " << c["name"] << " (" << c["chain"] << ", seed " << c["seed"] << ")");
        FEEDBACK("expected: " << golden::join(expected));
        FEEDBACK("found:    " << golden::join(found));
        CHECK(found == expected);
    }
}
