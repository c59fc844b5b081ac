// Graded tests for chapter 02's exercises (see exercises/manifest.json).
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

#include <xtensor/xview.hpp>

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

namespace {

// Logits as the drawn cases use them: V in [1, 10], multiples of 1/4 in [-8, 8] (so ties happen),
// about one in eight -inf (never all of them), shifted by `offset`.
Vec draw_logits(Rng& rng, float offset) {
    Vec z = Vec::from_shape({static_cast<size_t>(drawn::between(rng, 1, 10))});
    for (float& x : z)
        x = drawn::between(rng, 0, 7) == 0 ? -INFINITY : offset + static_cast<float>(drawn::between(rng, -32, 32)) / 4;
    z(static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(z.size()) - 1))) =
        offset + static_cast<float>(drawn::between(rng, -32, 32)) / 4;
    return z;
}

// The chapter's rule for floats: -inf and inf exactly, the rest within Approx's margin 1e-6.
bool close(const Vec& found, const Vec& expected) {
    if (found.shape() != expected.shape()) return false;
    for (size_t i = 0; i < found.size(); ++i) {
        if (std::isinf(expected(i)) ? found(i) != expected(i) : !(found(i) == Approx(expected(i)).margin(1e-6))) return false;
    }
    return true;
}

// What a wrong softmax says about the rule that was missed.
std::string softmax_diagnosis(const Vec& z, const Vec& found) {
    if (found.size() != z.size()) return "one probability per logit: " + std::to_string(z.size()) + " values";
    double sum = 0;
    for (size_t i = 0; i < found.size(); ++i) {
        if (!std::isfinite(found(i)))
            return "exp overflowed (or 0 / 0): subtract the largest logit m first, exp(z - m) <= 1; exp(-inf - m) is 0";
        if (std::isinf(z(i)) && found(i) != 0) return "a logit of -inf (id " + std::to_string(i) + ") has probability exactly 0";
        sum += found(i);
    }
    if (std::abs(sum - 1) > 1e-5)
        return "the probabilities add up to " + feedback::num(sum) + ": divide each exp by the sum of all of them";
    return "p_i = exp(z_i - m) / sum_j exp(z_j - m), m the largest logit, the sum in double";
}

}  // namespace

TEST_CASE("ex02.1 on cases drawn when the test runs", "[ex02.1]") {
    // 300 vectors of 1 to 10 logits, multiples of 1/4 in [-8, 8] with about one in eight -inf
    // (never all), half of them shifted by -3000, -1000, 1000 or 3000 (exp overflows without the
    // max trick): the expected probabilities are the library's softmax.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const float offsets[] = {0.0f, 0.0f, 0.0f, 0.0f, -3000.0f, -1000.0f, 1000.0f, 3000.0f};
    std::vector<Vec> cases;
    for (int i = 0; i < 300; ++i) cases.push_back(draw_logits(rng, offsets[drawn::between(rng, 0, 7)]));
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_softmax", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Vec& z : cases) out.push_back(your_softmax(z));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec expected = decodebook::softmax(cases[i]);
        const bool same = close(found[i], expected);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << feedback::list(cases[i], 10, 7));
        FEEDBACK("expected: " << feedback::list(expected, 10, 7) << " (the library's softmax)\nfound:    "
                              << feedback::list(found[i], 10, 7));
        FEEDBACK((same ? std::string() : "hint: " + softmax_diagnosis(cases[i], found[i])));
        REQUIRE(same);
    }
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

namespace {

// What a wrong temperature says about the rule that was missed.
std::string temperature_diagnosis(const Vec& z, float t, const Vec& expected, const Vec& found) {
    if (found.size() != z.size()) return "one logit per token, changed in place: " + std::to_string(z.size()) + " values";
    for (size_t i = 0; i < z.size(); ++i) {
        if (close(Vec{found(i)}, Vec{expected(i)})) continue;
        if (std::isinf(z(i))) return "a removed token (-inf) stays -inf";
        if (found(i) == z(i)) return "logit " + std::to_string(i) + " is unchanged: divide the tensor you were given, in place";
        if (found(i) == z(i) * t) return "logit " + std::to_string(i) + " was multiplied by T: divide by it (z / T)";
        return "logit " + std::to_string(i) + ": " + feedback::num(z(i), 7) + " / " + feedback::num(t, 7) + " = " +
               feedback::num(expected(i), 7);
    }
    return "z / T for every logit";
}

}  // namespace

TEST_CASE("ex02.2 on cases drawn when the test runs", "[ex02.2]") {
    // 300 vectors of 1 to 10 logits, multiples of 1/4 in [-8, 8] with about one in eight -inf, at
    // a temperature that is a multiple of 1/4 in [0.25, 4] or any value in [0.05, 4): the
    // expected logits are the library's apply_temperature.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, float>> cases;
    for (int i = 0; i < 300; ++i) {
        const float t = drawn::between(rng, 0, 1) ? static_cast<float>(drawn::between(rng, 1, 16)) / 4
                                                  : static_cast<float>(drawn::uniform(rng, 0.05, 4));
        cases.emplace_back(draw_logits(rng, 0), t);
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_apply_temperature", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) {
            Vec z = std::get<0>(c);
            your_apply_temperature(z, std::get<1>(c));
            out.push_back(z);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& z = std::get<0>(cases[i]);
        const float t = std::get<1>(cases[i]);
        Vec expected = z;
        apply_temperature(expected, t);
        const bool same = close(found[i], expected);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << feedback::list(z, 10, 7) << " at T = " << feedback::num(t, 9));
        FEEDBACK("expected: " << feedback::list(expected, 10, 7) << " (the library's apply_temperature)\nfound:    "
                              << feedback::list(found[i], 10, 7));
        FEEDBACK((same ? std::string() : "hint: " + temperature_diagnosis(z, t, expected, found[i])));
        REQUIRE(same);
    }
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

namespace {

// Where a coin falls: the candidates in order, their running sums and the total, as the rule
// walks them; and where the answer found sits.
std::string cdf_diagnosis(const Vec& probs, double coin, int found) {
    const std::vector<int> order = candidate_order(probs);
    double total = 0;
    for (int id : order) total += probs(static_cast<size_t>(id));
    std::string ids, sums;
    double running = 0;
    for (int id : order) {
        running += probs(static_cast<size_t>(id));
        ids += (ids.empty() ? "" : ", ") + std::to_string(id);
        sums += (sums.empty() ? "" : ", ") + feedback::num(running, 9);
    }
    std::string where = "id " + std::to_string(found) + " is not a candidate (probability 0, or no id at all)";
    for (size_t r = 0; r < order.size(); ++r)
        if (order[r] == found) where = "id " + std::to_string(found) + " is candidate " + std::to_string(r) + " in that order";
    return "the candidates (probability desc, id asc) are [" + ids + "], running sums [" + sums + "] of total " +
           feedback::num(total, 9) + "; coin x total = " + feedback::num(coin * total, 9) +
           ": the answer is the first candidate whose running sum is strictly larger (a coin on a boundary goes to the next "
           "one; past the end, the last one). " + where;
}

}  // namespace

TEST_CASE("ex02.3 on cases drawn when the test runs", "[ex02.3]") {
    // 300 draws from 1 to 10 probabilities: multiples of 1/4, 1/8 or 1/16 up to 1 (ties and zeros,
    // a total that is not 1), any floats in [0, 1) with zeros, or the softmax of small integers.
    // The coin is any value in [0, 1), one on a boundary between two candidates (the mass before
    // a candidate over the total), a multiple of 1/16, or the largest double below 1. The expected
    // token is the library's sample_inverse_cdf.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, double>> cases;
    for (int i = 0; i < 300; ++i) {
        Vec p = Vec::from_shape({static_cast<size_t>(drawn::between(rng, 1, 10))});
        const int kind = drawn::between(rng, 0, 3);
        const float unit = 1.0f / static_cast<float>(4 << drawn::between(rng, 0, 2));
        for (float& x : p) {
            if (kind <= 1) x = static_cast<float>(drawn::between(rng, 0, 4)) * unit;
            else if (kind == 2) x = drawn::between(rng, 0, 3) == 0 ? 0.0f : static_cast<float>(drawn::uniform(rng, 0, 1));
            else x = static_cast<float>(drawn::between(rng, -3, 3));
        }
        if (kind == 3) p = decodebook::softmax(p);
        p(static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(p.size()) - 1))) = kind <= 1 ? unit : std::max(p(0), 0.25f);
        const std::vector<int> order = candidate_order(p);
        double total = 0;
        for (int id : order) total += p(static_cast<size_t>(id));
        double coin = drawn::uniform(rng, 0, 1);
        switch (drawn::between(rng, 0, 4)) {
        case 0: break;
        case 1:
        case 2: {  // on the boundary before a candidate
            double before = 0;
            const int r = drawn::between(rng, 0, static_cast<int>(order.size()) - 1);
            for (int k = 0; k < r; ++k) before += p(static_cast<size_t>(order[static_cast<size_t>(k)]));
            coin = before / total;
            break;
        }
        case 3: coin = drawn::between(rng, 0, 15) / 16.0; break;
        default: coin = std::nextafter(1.0, 0.0);
        }
        cases.emplace_back(p, coin);
    }
    const std::vector<int> found = sandbox::run<std::vector<int>>("your_sample_inverse_cdf", [&] {
        std::vector<int> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) out.push_back(your_sample_inverse_cdf(std::get<0>(c), std::get<1>(c)));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& p = std::get<0>(cases[i]);
        const double coin = std::get<1>(cases[i]);
        const int expected = decodebook::sample_inverse_cdf(p, coin);
        FEEDBACK("a case drawn with seed " << seed << ": probs " << feedback::list(p, 10, 9) << ", coin " << feedback::num(coin, 17));
        FEEDBACK("expected: " << expected << " (the library's sample_inverse_cdf)\nfound:    " << found[i]);
        FEEDBACK((found[i] == expected ? std::string() : "hint: " + cdf_diagnosis(p, coin, found[i])));
        REQUIRE(found[i] == expected);
    }
}
