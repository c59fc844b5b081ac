// Graded tests for chapter 07's exercises (see exercises/manifest.json).
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's cached_attention_step,
// kv_cache_bytes, reorder_rows and decode_roofline_ms in this test program, which never runs the
// student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;
using Mat = xt::xtensor<float, 2>;
using Rows = xt::xtensor<float, 3>;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A (capacity, C) cache whose every value is NaN: a row read before it is written poisons the result.
Mat nan_cache(size_t capacity, size_t C) {
    Mat m = Mat::from_shape({capacity, C});
    m.fill(kNaN);
    return m;
}

Vec vec(std::initializer_list<double> values) {
    Vec v = xt::zeros<float>({values.size()});
    size_t i = 0;
    for (double x : values) v(i++) = static_cast<float>(x);
    return v;
}

std::string show(const Vec& v, size_t max = 8) { return feedback::list(v, max); }

std::string show(const std::vector<double>& v, size_t max = 8) {
    std::string s = "[";
    for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + feedback::num(v[i]);
    return s + (v.size() > max ? ", ... (" + std::to_string(v.size()) + " values)]" : "]");
}

// Every value within `tol` (relative to max(1, |expected|)); NaN never passes.
bool close(const Vec& found, const std::vector<double>& expected, double tol) {
    if (found.size() != expected.size()) return false;
    for (size_t i = 0; i < expected.size(); ++i) {
        const double f = found(i);
        if (!(std::fabs(f - expected[i]) <= tol * std::max(1.0, std::fabs(expected[i])))) return false;
    }
    return true;
}

// Feed a golden case's [q | k | v] rows one position at a time into your step, on a cache with
// room to spare (its unused rows NaN), and compare every output with the reference.
void check_sequence(const nlohmann::json& c) {
    const auto qkv_rows = c["qkv"].get<std::vector<std::vector<double>>>();
    const auto out_rows = c["out"].get<std::vector<std::vector<double>>>();
    const int n_head = c["n_head"].get<int>();
    const size_t T = qkv_rows.size(), C = qkv_rows[0].size() / 3;
    Mat keys = nan_cache(T + 3, C), values = nan_cache(T + 3, C);
    for (size_t t = 0; t < T; ++t) {
        Vec qkv = xt::zeros<float>({3 * C});
        for (size_t j = 0; j < 3 * C; ++j) qkv(j) = static_cast<float>(qkv_rows[t][j]);
        const Vec out = your_cached_attention_step(keys, values, t, qkv, n_head);
        FEEDBACK("input: " << c["name"].get<std::string>() << ", position " << t << " (head size D "
                           << C / static_cast<size_t>(n_head) << ")");
        FEEDBACK("expected (first values): " << show(out_rows[t], 6));
        FEEDBACK("found (first values):    " << show(out, 6));
        CHECK(close(out, out_rows[t], 1e-4));
        for (size_t j = 0; j < C; ++j) {  // the new key and value are in the cache now
            FEEDBACK("keys(" << t << ", " << j << ") and values(" << t << ", " << j << ") must hold the new key and value: "
                         << "expected " << feedback::num(qkv_rows[t][C + j]) << " and " << feedback::num(qkv_rows[t][2 * C + j])
                         << "; found " << feedback::num(keys(t, j)) << " and " << feedback::num(values(t, j)));
            REQUIRE(keys(t, j) == static_cast<float>(qkv_rows[t][C + j]));
            REQUIRE(values(t, j) == static_cast<float>(qkv_rows[t][2 * C + j]));
        }
    }
    FEEDBACK("keys(" << T << ", ...), past the last position " << T - 1 << ": expected NaN (never written); found "
                 << show(Vec(xt::view(keys, T, xt::all()))));
    for (size_t j = 0; j < C; ++j) CHECK(std::isnan(keys(T, j)));  // nothing written past the last position
}

// Rows r = 0..R-1 of P positions and C values, value 100 r + 10 p + c: each row recognisable.
Rows numbered_rows(size_t R, size_t P, size_t C) {
    Rows rows = Rows::from_shape({R, P, C});
    for (size_t r = 0; r < R; ++r)
        for (size_t p = 0; p < P; ++p)
            for (size_t c = 0; c < C; ++c) rows(r, p, c) = static_cast<float>(100 * r + 10 * p + c);
    return rows;
}

// Which old row each row now holds (-1: none, the values were mixed or changed).
std::vector<int> rows_held(const Rows& rows) {
    std::vector<int> held;
    for (size_t r = 0; r < rows.shape(0); ++r) {
        const int from = static_cast<int>(rows(r, 0, 0)) / 100;
        bool whole = true;
        for (size_t p = 0; p < rows.shape(1); ++p)
            for (size_t c = 0; c < rows.shape(2); ++c)
                whole = whole && rows(r, p, c) == static_cast<float>(100 * from + 10 * p + c);
        held.push_back(whole ? from : -1);
    }
    return held;
}

std::string show(const std::vector<int>& ids) {
    std::string out = "{";
    out += golden::join(ids);
    out += "}";
    return out;
}

void check_reorder(size_t R, const std::vector<int>& source) {
    Rows rows = numbered_rows(R, 3, 4);
    your_reorder_rows(rows, source);
    FEEDBACK("input: " << R << " rows, source " << show(source) << " (row r must hold the old row source[r])");
    FEEDBACK("expected: the old rows " << show(source));
    FEEDBACK("found:    the old rows " << show(rows_held(rows)) << " (-1: a row that is no old row)");
    CHECK(rows_held(rows) == source);
}

}  // namespace

// ------------------------------------------------------------------------------ 07.1 attention step

namespace {

// The weight of position 1 when position 0 scores 0 and position 1 scores `score`.
double weight_1(double score) { return std::exp(score) / (1 + std::exp(score)); }

std::string times(double w, const std::vector<double>& v) {
    std::vector<double> out;
    for (double x : v) out.push_back(w * x);
    return show(out);
}

}  // namespace

TEST_CASE("ex07.1 scores are divided by sqrt of the head size D and not of C", "[ex07.1]") {
    // C 4, 2 heads: D = 2. Position 0's key and value are 0; the new token's q . k per head is
    // sqrt(2) ln 3, so divided by sqrt(D) it is ln 3: weights (1/4, 3/4)
    const double q = std::sqrt(2.0) * std::log(3.0);
    const std::vector<double> v1{4, 4, 8, 8};
    Mat keys = nan_cache(3, 4), values = nan_cache(3, 4);
    for (size_t j = 0; j < 4; ++j) keys(0, j) = 0, values(0, j) = 0;
    const Vec out = your_cached_attention_step(keys, values, 1, vec({q, 0, q, 0, 1, 0, 1, 0, 4, 4, 8, 8}), 2);
    FEEDBACK("input: C 4, n_head 2, so the head size D is 4 / 2 = 2; position 1");
    FEEDBACK("  position 0: key [0, 0, 0, 0], value [0, 0, 0, 0]");
    FEEDBACK("  new token: q [" << feedback::num(q) << ", 0, " << feedback::num(q) << ", 0], k [1, 0, 1, 0], v [4, 4, 8, 8]");
    FEEDBACK("each head: score of position 0 is 0; of position 1, q . k = " << feedback::num(q));
    FEEDBACK("  / sqrt(D) = / " << feedback::num(std::sqrt(2.0)) << ": " << feedback::num(std::log(3.0))
                            << ", weights (0.25, 0.75), out 0.75 x v");
    FEEDBACK("  / sqrt(C) = / 2 instead: " << feedback::num(q / 2) << ", weights (" << feedback::num(1 - weight_1(q / 2), 4)
                                       << ", " << feedback::num(weight_1(q / 2), 4) << "), out " << times(weight_1(q / 2), v1));
    FEEDBACK("  not divided: weight " << feedback::num(weight_1(q), 4) << ", out " << times(weight_1(q), v1));
    FEEDBACK("expected: [3, 3, 6, 6]");
    FEEDBACK("found:    " << show(out));
    CHECK(close(out, {3, 3, 6, 6}, 1e-5));
}

TEST_CASE("ex07.1 position 0 attends to itself alone and returns its value", "[ex07.1]") {
    Mat keys = nan_cache(4, 2), values = nan_cache(4, 2);
    const Vec out = your_cached_attention_step(keys, values, 0, vec({5, -1, 2, 3, 7, -4}), 1);
    FEEDBACK("input: C 2, 1 head, position 0, empty cache, q [5, -1], k [2, 3], v [7, -4]");
    FEEDBACK("a softmax over one score is 1: the output is the new value");
    FEEDBACK("expected: [7, -4]");
    FEEDBACK("found:    " << show(out));
    CHECK(close(out, {7, -4}, 1e-6));
    FEEDBACK("the cache's row 0 must hold the new key [2, 3] and value [7, -4]; found key [" << feedback::num(keys(0, 0))
         << ", " << feedback::num(keys(0, 1)) << "], value [" << feedback::num(values(0, 0)) << ", "
         << feedback::num(values(0, 1)) << "]");
    CHECK(keys(0, 0) == 2.0f);
    CHECK(keys(0, 1) == 3.0f);
    CHECK(values(0, 0) == 7.0f);
    CHECK(values(0, 1) == -4.0f);
}

TEST_CASE("ex07.1 two heads attend on their own columns", "[ex07.1]") {
    // D = 1 (scale 1). head 0: scores 0 and ln 3 -> p (1/4, 3/4); head 1: q = 0 -> (1/2, 1/2)
    Mat keys = nan_cache(3, 2), values = nan_cache(3, 2);
    keys(0, 0) = 0, keys(0, 1) = 5, values(0, 0) = 10, values(0, 1) = 2;
    const Vec out = your_cached_attention_step(keys, values, 1, vec({std::log(3.0), 0, 1, 7, 20, 4}), 2);
    {
        FEEDBACK("input: C 2, 2 heads (D 1, so the scale is 1), position 1");
        FEEDBACK("  position 0: key [0, 5], value [10, 2]; new: q [ln 3, 0], k [1, 7], v [20, 4]");
        FEEDBACK("head 0 (column 0): scores 0 and ln 3, weights (1/4, 3/4): 0.25 x 10 + 0.75 x 20");
        FEEDBACK("head 1 (column 1): q 0, scores 0 and 0, weights (1/2, 1/2): 0.5 x 2 + 0.5 x 4");
        FEEDBACK("expected: [17.5, 3]");
        FEEDBACK("found:    " << show(out));
        CHECK(close(out, {17.5, 3}, 1e-5));
    }
    // the same numbers as ONE head of width 2: each score uses both columns (q . k_1 = ln 3, q . k_0 = 0)
    // and the scale is 1/sqrt(2), so both columns share one weight per position
    const Vec one_head = [] {
        Mat k = nan_cache(3, 2), v = nan_cache(3, 2);
        k(0, 0) = 0, k(0, 1) = 5, v(0, 0) = 10, v(0, 1) = 2;
        return your_cached_attention_step(k, v, 1, vec({std::log(3.0), 0, 1, 7, 20, 4}), 1);
    }();
    const double w1 = weight_1(std::log(3.0) / std::sqrt(2.0));  // weight of position 1
    FEEDBACK("input: the same numbers with n_head 1: one head of size D 2, scale 1 / sqrt(2)");
    FEEDBACK("  weights (" << feedback::num(1 - w1, 4) << ", " << feedback::num(w1, 4) << ") for both columns");
    FEEDBACK("expected: " << show(std::vector<double>{(1 - w1) * 10 + w1 * 20, (1 - w1) * 2 + w1 * 4}));
    FEEDBACK("found:    " << show(one_head));
    CHECK(close(one_head, {(1 - w1) * 10 + w1 * 20, (1 - w1) * 2 + w1 * 4}, 1e-5));
}

TEST_CASE("ex07.1 one head of size 4 is scaled by 1 over sqrt 4", "[ex07.1]") {
    // D = 4: q . k_1 = 2 ln 5, divided by sqrt(4) = 2 -> ln 5: weights (1/6, 5/6) over values 1 and 2
    Mat keys = nan_cache(2, 4), values = nan_cache(2, 4);
    for (size_t j = 0; j < 4; ++j) keys(0, j) = 0, values(0, j) = 1;
    const Vec qkv = vec({2, 0, 0, 0, std::log(5.0), 0, 0, 0, 2, 2, 2, 2});
    const Vec out = your_cached_attention_step(keys, values, 1, qkv, 1);
    FEEDBACK("input: C 4, 1 head (D 4), position 1; position 0: key 0, value [1, 1, 1, 1]");
    FEEDBACK("  new: q [2, 0, 0, 0], k [ln 5, 0, 0, 0], v [2, 2, 2, 2]");
    FEEDBACK("score of position 1: q . k / sqrt(4) = 2 ln 5 / 2 = ln 5, weights (1/6, 5/6)");
    FEEDBACK("expected: 1/6 x 1 + 5/6 x 2 = " << feedback::num(11.0 / 6) << " in every column");
    FEEDBACK("  (not divided: " << feedback::num(1 + weight_1(2 * std::log(5.0))) << ")");
    FEEDBACK("found:    " << show(out));
    CHECK(close(out, {11.0 / 6, 11.0 / 6, 11.0 / 6, 11.0 / 6}, 1e-5));
}

TEST_CASE("ex07.1 only row position is written and rows after it are never read", "[ex07.1]") {
    // three filled positions, the new token at 3, rows 4..7 NaN
    Mat keys = nan_cache(8, 2), values = nan_cache(8, 2);
    for (size_t s = 0; s < 3; ++s) {
        keys(s, 0) = static_cast<float>(s), keys(s, 1) = -static_cast<float>(s);
        values(s, 0) = static_cast<float>(10 * s), values(s, 1) = 1;
    }
    const Mat keys_before = keys, values_before = values;
    // q = 0: every score 0, so the output is the plain mean of the values at 0..3
    const Vec out = your_cached_attention_step(keys, values, 3, vec({0, 0, 9, 9, 30, 1}), 1);
    {
        FEEDBACK("input: C 2, 1 head, position 3; values of positions 0..2: [0, 1], [10, 1], [20, 1]; rows 4..7 NaN");
        FEEDBACK("  new: q [0, 0] (every score 0), k [9, 9], v [30, 1]");
        FEEDBACK("expected: the mean of the values of positions 0..3: [(0 + 10 + 20 + 30) / 4, 1] = [15, 1]");
        FEEDBACK("found:    " << show(out) << " (NaN: a row after the position was read)");
        CHECK(close(out, {15, 1}, 1e-6));
    }
    for (size_t s = 0; s < 8; ++s) {
        for (size_t j = 0; j < 2; ++j) {
            const std::string expected = s == 3 ? (j == 0 ? "9 and 30" : "9 and 1")
                                         : s < 3 ? feedback::num(keys_before(s, j)) + " and " + feedback::num(values_before(s, j)) +
                                                       " (unchanged)"
                                                 : "NaN and NaN (never written)";
            FEEDBACK("keys(" << s << ", " << j << ") and values(" << s << ", " << j << "): expected " << expected << "; found "
                         << feedback::num(keys(s, j)) << " and " << feedback::num(values(s, j)));
            if (s == 3) {
                CHECK(keys(s, j) == 9.0f);
                CHECK(values(s, j) == (j == 0 ? 30.0f : 1.0f));
            } else if (s < 3) {
                CHECK(keys(s, j) == keys_before(s, j));
                CHECK(values(s, j) == values_before(s, j));
            } else {
                CHECK(std::isnan(keys(s, j)));
                CHECK(std::isnan(values(s, j)));
            }
        }
    }
}

TEST_CASE("ex07.1 step by step equals causal attention computed at once by the reference", "[ex07.1]") {
    const nlohmann::json data = golden::load("kv_cache.json");
    int random_cases = 0;
    for (const auto& c : data["attention"]) {
        if (c.contains("prompt")) continue;
        check_sequence(c);
        ++random_cases;
    }
    CHECK(random_cases >= 3);
}

TEST_CASE("ex07.1 the embedded model's layer 0 one position at a time", "[ex07.1]") {
    const nlohmann::json data = golden::load("kv_cache.json");
    int model_cases = 0;
    for (const auto& c : data["attention"]) {
        if (!c.contains("prompt")) continue;
        REQUIRE(c["n_head"].get<int>() == golden::model().config().n_head);
        check_sequence(c);
        ++model_cases;
    }
    CHECK(model_cases == 1);
}

TEST_CASE("ex07.1 on cases drawn when the test runs", "[ex07.1]") {
    // 100 steps: 1 to 4 heads of size D 1 to 4, the new token at position 0 to 7 of a cache with
    // 0 to 3 rows to spare (NaN, never to be read); earlier keys, values and the new [q | k | v]
    // uniform in [-3, 3], and one case in 5 with one head per column and scores up to about 110
    // (a softmax that overflows unless the largest score is subtracted first). The expected output
    // and cache are the library's cached_attention_step on a copy of the same cache.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Mat keys = {}, values = {};
        size_t position = 0;
        Vec qkv = {};
        int n_head = 1;
        bool large = false;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 100; ++i) {
        Case c;
        c.large = drawn::between(rng, 0, 4) == 0;
        c.n_head = drawn::between(rng, 1, 4);
        const size_t D = c.large ? 1 : static_cast<size_t>(drawn::between(rng, 1, 4)), C = D * static_cast<size_t>(c.n_head);
        c.position = static_cast<size_t>(drawn::between(rng, 0, 7));
        const size_t capacity = c.position + 1 + static_cast<size_t>(drawn::between(rng, 0, 3));
        c.keys = nan_cache(capacity, C);
        c.values = nan_cache(capacity, C);
        const double range = c.large ? 10.5 : 3.0;
        for (size_t s = 0; s < c.position; ++s)
            for (size_t j = 0; j < C; ++j) {
                c.keys(s, j) = static_cast<float>(drawn::uniform(rng, -range, range));
                c.values(s, j) = static_cast<float>(drawn::uniform(rng, -3, 3));
            }
        c.qkv = xt::zeros<float>({3 * C});
        for (size_t j = 0; j < 3 * C; ++j) c.qkv(j) = static_cast<float>(drawn::uniform(rng, -3, 3));
        if (c.large)  // |q| from 8 to 10.5 against keys up to 10.5: scores up to about 110
            for (size_t j = 0; j < 2 * C; ++j)
                c.qkv(j) = static_cast<float>((drawn::between(rng, 0, 1) ? 1 : -1) *
                                              drawn::uniform(rng, j < C ? 8.0 : 0.0, 10.5));
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<Vec, Mat, Mat>>;  // (the output, the keys and values after)
    const Found found = sandbox::run<Found>("your_cached_attention_step", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) {
            Mat keys = c.keys, values = c.values;
            Vec y = your_cached_attention_step(keys, values, c.position, c.qkv, c.n_head);
            out.emplace_back(y, keys, values);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    // equal value by value, NaN where NaN is expected (rows never written)
    const auto same_cache = [](const Mat& a, const Mat& b) {
        if (a.shape() != b.shape()) return false;
        for (size_t k = 0; k < a.size(); ++k)
            if (!(a.data()[k] == b.data()[k] || (std::isnan(a.data()[k]) && std::isnan(b.data()[k])))) return false;
        return true;
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        Mat keys = c.keys, values = c.values;
        const Vec expected = cached_attention_step(keys, values, c.position, c.qkv, c.n_head);
        const size_t C = c.keys.shape(1), D = C / static_cast<size_t>(c.n_head);
        const Vec& out = std::get<0>(found[i]);
        std::string earlier;
        for (size_t s = 0; s < c.position; ++s)
            earlier += "\n  position " + std::to_string(s) + ": key " + show(Vec(xt::view(c.keys, s, xt::all())), 16) +
                       ", value " + show(Vec(xt::view(c.values, s, xt::all())), 16);
        FEEDBACK("a case drawn with seed " << seed << ": C " << C << ", n_head " << c.n_head << " (head size D " << D
                                          << "), position " << c.position << ", capacity " << c.keys.shape(0)
                                          << " (rows after the position NaN)" << earlier << "\n  new: q | k | v "
                                          << show(c.qkv, 48));
        FEEDBACK("expected: " << show(expected, 16) << " (the library's cached_attention_step)\nfound:    " << show(out, 16));
        const bool cache_ok = same_cache(std::get<1>(found[i]), keys) && same_cache(std::get<2>(found[i]), values);
        std::vector<double> want(expected.begin(), expected.end());
        const bool out_ok = close(out, want, 1e-4);
        bool nan = false;
        for (float x : out) nan = nan || !std::isfinite(x);
        FEEDBACK((cache_ok ? std::string()
                           : "hint: afterwards row " + std::to_string(c.position) +
                                 " of keys holds k and of values v; no other row changes (the rows after it stay NaN)"));
        FEEDBACK((!cache_ok || out_ok ? std::string()
                  : nan ? "hint: a value that is not finite: a row after the position was read, or the softmax "
                          "overflowed (subtract the largest score first)"
                        : "hint: score_s = q_h . k_s,h / sqrt(D) with D = C / n_head = " + std::to_string(D) +
                              " for s = 0.." + std::to_string(c.position) +
                              " (the new token included); p = softmax(score); out_h = sum_s p_s v_s,h"));
        REQUIRE(cache_ok);
        REQUIRE(out_ok);
    }
}

// --------------------------------------------------------------------------------- 07.2 KV size

namespace {

std::string kv_input(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value, int64_t rows) {
    return "input: n_layer " + std::to_string(n_layer) + ", positions " + std::to_string(positions) + ", width " +
           std::to_string(width) + ", bytes_per_value " + std::to_string(bytes_per_value) + ", rows " +
           std::to_string(rows);
}

void check_kv(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value, int64_t rows,
              uint64_t expected, const std::string& why) {
    FEEDBACK(kv_input(n_layer, positions, width, bytes_per_value, rows));
    FEEDBACK(why);
    const uint64_t found = your_kv_cache_bytes(n_layer, positions, width, bytes_per_value, rows);
    FEEDBACK("expected: " << expected << " bytes");
    FEEDBACK("found:    " << found << " bytes");
    CHECK(found == expected);
}

void check_kv_refused(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value, int64_t rows,
                      const std::string& why) {
    FEEDBACK(kv_input(n_layer, positions, width, bytes_per_value, rows));
    FEEDBACK(why);
    const std::string found = feedback::refusal(
        [&] { return your_kv_cache_bytes(n_layer, positions, width, bytes_per_value, rows); });
    FEEDBACK("expected: decodebook::Error thrown");
    FEEDBACK("found:    " << found);
    CHECK(found == "decodebook::Error");
}

}  // namespace

TEST_CASE("ex07.2 GPT-2 124M and a 7B model worked by hand", "[ex07.2]") {
    check_kv(12, 1024, 768, 4, 1, 75497472u, "2 x 12 layers x 1024 positions x 768 x 4 bytes = 75,497,472");
    check_kv(32, 8192, 4096, 2, 1, 4294967296u, "2 x 32 layers x 8192 tokens x 4096 x 2 bytes (bf16) = 4,294,967,296 = 4 GiB");
    check_kv(32, 8192, 4096, 2, 3, 3u * 4294967296u, "the same for a batch of 3 rows: 3 x 4 GiB");
    check_kv(12, 0, 768, 4, 1, 0u, "a cache with no positions yet holds nothing");
    check_kv(1, 1, 8, 4, 1, 64u, "one layer, one position, 8 floats: a key and a value of 32 bytes each");
}

TEST_CASE("ex07.2 published model shapes against the reference", "[ex07.2]") {
    const nlohmann::json data = golden::load("kv_cache.json");
    int checked = 0;
    for (const auto& c : data["sizes"]) {
        if (c["overflow"].get<bool>()) continue;
        check_kv(c["n_layer"].get<int64_t>(), c["positions"].get<int64_t>(), c["width"].get<int64_t>(),
                 c["bytes_per_value"].get<int64_t>(), c["rows"].get<int64_t>(), c["bytes"].get<uint64_t>(),
                 c["name"].get<std::string>() + " (tests/data/kv_cache.json)");
        ++checked;
    }
    CHECK(checked >= 8);
}

TEST_CASE("ex07.2 sizes past 2^63 fit and sizes past 2^64 are refused", "[ex07.2]") {
    check_kv(1 << 20, 1 << 20, 1 << 20, 4, 1, uint64_t{1} << 63,
             "2 x 2^20 x 2^20 x 2^20 x 4 = 2^63: too big for int64_t, right for uint64_t");
    check_kv_refused(1 << 20, 1 << 20, 1 << 20, 4, 2,
                     "the same with rows 2 is 2^64, which wraps to 0 in 64 bits: it must throw decodebook::Error");
    const nlohmann::json data = golden::load("kv_cache.json");
    for (const auto& c : data["sizes"]) {
        const int64_t n_layer = c["n_layer"].get<int64_t>(), positions = c["positions"].get<int64_t>(),
                      width = c["width"].get<int64_t>(), bytes = c["bytes_per_value"].get<int64_t>(),
                      rows = c["rows"].get<int64_t>();
        const std::string name = c["name"].get<std::string>() + " (tests/data/kv_cache.json)";
        if (c["overflow"].get<bool>()) check_kv_refused(n_layer, positions, width, bytes, rows, name + ": past 2^64");
        else check_kv(n_layer, positions, width, bytes, rows, c["bytes"].get<uint64_t>(), name);
    }
}

TEST_CASE("ex07.2 a negative count is refused", "[ex07.2]") {
    check_kv_refused(-12, 1024, 768, 4, 1, "a negative n_layer");
    check_kv_refused(12, -1, 768, 4, 1, "negative positions");
    check_kv_refused(12, 1024, 768, 4, -2, "negative rows");
    check_kv_refused(-12, 1024, -768, 4, 1, "two negatives multiply to a positive number: still refused");
    check_kv_refused(12, 0, -768, 4, 1, "a negative width after 0 positions: refused, wherever it stands");
}

TEST_CASE("ex07.2 a count of 0 gives 0 even when the others overflow", "[ex07.2]") {
    check_kv(int64_t{1} << 40, int64_t{1} << 40, 0, 8, 1, 0u,
             "2 x 2^40 x 2^40 would not fit, but width 0 makes the size 0, which fits: nothing to store");
    check_kv(int64_t{1} << 40, int64_t{1} << 40, 768, 8, 0, 0u, "no rows: 0 bytes, however large the rest");
}

TEST_CASE("ex07.2 on cases drawn when the test runs", "[ex07.2]") {
    // 300 sizes: five counts whose bits add up to 30 to 70 (so the exact size falls below, near and
    // past 2^64), each a power of two one time in three, else any number of its bits; one case in 6
    // all powers of two with a size of exactly 2^62 to 2^65 (2^63 fits, 2^64 does not); one case in
    // 12 with a count 0 (the size is 0 however large the rest), one in 12 with a negative count.
    // The expected answer is the library's kv_cache_bytes, or its refusal (decodebook::Error).
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    using Counts = std::array<int64_t, 5>;  // n_layer, positions, width, bytes_per_value, rows
    std::vector<Counts> cases;
    for (int i = 0; i < 300; ++i) {
        Counts c{};
        const int edge = drawn::between(rng, 0, 11);          // 0: a count 0, 1: a negative count
        const bool powers = edge != 0 && drawn::between(rng, 0, 5) == 0;  // every count a power of two: 2^62 .. 2^65
        // with a count 0 the others multiply to less than 2^64 (a 0 after counts whose product is past
        // 2^64: the library says 0, the worked solution refuses; the exercise's cases never meet it)
        int bits_left = (powers ? drawn::between(rng, 62, 65) : drawn::between(rng, 30, edge == 0 ? 58 : 70)) - 1;
        for (size_t k = 0; k < c.size(); ++k) {
            const int bits = k + 1 == c.size() ? std::clamp(bits_left, 0, 40)
                                               : std::clamp(drawn::between(rng, 0, std::max(0, bits_left)), 0, 40);
            bits_left -= bits;
            const int64_t low = int64_t{1} << bits;
            c[k] = powers || drawn::between(rng, 0, 2) == 0
                       ? low
                       : low + static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(low));
        }
        for (int k = 4; k > 0; --k)  // shuffled: the first counts drew the most bits
            std::swap(c[static_cast<size_t>(k)], c[static_cast<size_t>(drawn::between(rng, 0, k))]);
        if (edge == 0) c[static_cast<size_t>(drawn::between(rng, 0, 4))] = 0;
        if (edge == 1) c[static_cast<size_t>(drawn::between(rng, 0, 4))] *= -1;
        cases.push_back(c);
    }
    using Found = std::vector<std::optional<uint64_t>>;  // no value: refused with decodebook::Error
    const Found found = sandbox::run<Found>("your_kv_cache_bytes", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Counts& c : cases) {
            try {
                out.push_back(your_kv_cache_bytes(c[0], c[1], c[2], c[3], c[4]));
            } catch (const Error&) {
                out.push_back(std::nullopt);
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    const auto show_bytes = [](const std::optional<uint64_t>& b) {
        return b ? std::to_string(*b) + " bytes" : std::string("decodebook::Error thrown");
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Counts& c = cases[i];
        std::optional<uint64_t> expected;
        try {
            expected = kv_cache_bytes(c[0], c[1], c[2], c[3], c[4]);
        } catch (const Error&) {
        }
        long double exact = 2;  // the size without wrapping (64 bits of mantissa), for the message
        for (int64_t f : c) exact *= static_cast<long double>(f);
        FEEDBACK("a case drawn with seed " << seed << ": " << kv_input(c[0], c[1], c[2], c[3], c[4]).substr(7)
                                          << " (exactly about " << feedback::num(static_cast<double>(exact), 8) << " bytes)");
        FEEDBACK("expected: " << show_bytes(expected) << " (the library's kv_cache_bytes)\nfound:    " << show_bytes(found[i]));
        const bool negative = std::any_of(c.begin(), c.end(), [](int64_t f) { return f < 0; });
        FEEDBACK((found[i] == expected ? std::string()
                  : negative           ? "hint: a negative count is refused with decodebook::Error, even when another is 0 or "
                                         "two negatives multiply to a positive size"
                  : expected && *expected == 0
                      ? std::string("hint: a count of 0 makes the size 0, however large the others are")
                  : expected ? "hint: the exact product 2 x n_layer x positions x width x bytes_per_value x rows fits in 64 "
                               "unsigned bits (up to 2^64 - 1): return it"
                             : "hint: the exact product is 2^64 or more: refuse it with decodebook::Error before it wraps "
                               "(check each multiplication against the largest uint64_t divided by the factor)"));
        REQUIRE(found[i] == expected);
    }
}

// ---------------------------------------------------------------------------------- 07.3 reorder

TEST_CASE("ex07.3 a swap reads each row before it is overwritten", "[ex07.3]") {
    check_reorder(2, {1, 0});
    check_reorder(3, {1, 0, 2});
    check_reorder(4, {3, 2, 1, 0});
}

TEST_CASE("ex07.3 a row copied to several rows and chains like 0 0 1", "[ex07.3]") {
    check_reorder(3, {0, 0, 1});  // in place: row 2 would copy the new row 1, a copy of row 0
    check_reorder(3, {2, 0, 1});  // a cycle
    check_reorder(3, {1, 2, 0});
    check_reorder(2, {1, 1});
    check_reorder(4, {2, 2, 2, 2});
    check_reorder(4, {0, 0, 0, 3});
}

TEST_CASE("ex07.3 the identity changes nothing", "[ex07.3]") {
    check_reorder(1, {0});
    check_reorder(4, {0, 1, 2, 3});
}

TEST_CASE("ex07.3 every source order of three rows", "[ex07.3]") {
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            for (int c = 0; c < 3; ++c) check_reorder(3, {a, b, c});
}

TEST_CASE("ex07.3 a bad source is refused and leaves the rows as they were", "[ex07.3]") {
    for (const std::vector<int>& bad : {std::vector<int>{0, 1}, std::vector<int>{0, 1, 2, 0}, std::vector<int>{0, 3, 1},
                                        std::vector<int>{-1, 0, 1}, std::vector<int>{}}) {
        Rows rows = numbered_rows(3, 2, 2);
        FEEDBACK("input: source " << show(bad) << " for 3 rows (it must have 3 indices, each 0..2)");
        const std::string found = feedback::refusal([&] { your_reorder_rows(rows, bad); });
        FEEDBACK("expected: decodebook::Error thrown, the rows left as the old rows {0, 1, 2}");
        FEEDBACK("found:    " << found << ", the rows hold the old rows " << show(rows_held(rows)));
        CHECK(found == "decodebook::Error");
        CHECK(rows_held(rows) == std::vector<int>{0, 1, 2});
    }
}

TEST_CASE("ex07.3 on cases drawn when the test runs", "[ex07.3]") {
    // 200 reorders of 1 to 6 rows of 1 to 3 positions and 1 to 4 values (row r, position p, value
    // c holds 100 r + 10 p + c): sources with repeats, permutations (swaps, cycles, the identity),
    // and one in 8 a bad source (a size off by one, or an index -1 or R) that must be refused
    // before any row changes. The expected rows are the library's reorder_rows on a copy.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Rows rows = {};
        std::vector<int> source = {};
    };
    std::vector<Case> cases;
    for (int i = 0; i < 200; ++i) {
        const int R = drawn::between(rng, 1, 6);
        Case c{numbered_rows(static_cast<size_t>(R), static_cast<size_t>(drawn::between(rng, 1, 3)),
                             static_cast<size_t>(drawn::between(rng, 1, 4))),
               {}};
        const int kind = drawn::between(rng, 0, 7);
        if (kind < 3) {  // a permutation
            for (int r = 0; r < R; ++r) c.source.push_back(r);
            for (int k = R - 1; k > 0; --k)
                std::swap(c.source[static_cast<size_t>(k)], c.source[static_cast<size_t>(drawn::between(rng, 0, k))]);
        } else {  // any rows, repeats allowed
            for (int r = 0; r < R; ++r) c.source.push_back(drawn::between(rng, 0, R - 1));
        }
        if (kind == 7) {  // a bad source
            const int bad = drawn::between(rng, 0, 2);
            if (bad == 0) c.source.push_back(drawn::between(rng, 0, R - 1));
            else if (bad == 1) c.source.pop_back();
            else c.source[static_cast<size_t>(drawn::between(rng, 0, R - 1))] = drawn::between(rng, 0, 1) ? R : -1;
        }
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<bool, Rows>>;  // (refused with decodebook::Error, the rows after)
    const Found found = sandbox::run<Found>("your_reorder_rows", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) {
            Rows rows = c.rows;
            bool refused = false;
            try {
                your_reorder_rows(rows, c.source);
            } catch (const Error&) {
                refused = true;
            }
            out.emplace_back(refused, rows);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        Rows expected = c.rows;
        bool refused = false;
        try {
            reorder_rows(expected, c.source);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const Rows& rows = std::get<1>(found[i]);
        const size_t R = c.rows.shape(0);
        FEEDBACK("a case drawn with seed " << seed << ": " << R << " rows of " << c.rows.shape(1) << " positions and "
                                          << c.rows.shape(2) << " values (row r, position p, value c holds 100 r + 10 p + c), source "
                                          << show(c.source));
        FEEDBACK("expected: " << (refused ? "decodebook::Error thrown, the rows left as the old rows "
                                          : "the old rows ")
                              << show(rows_held(expected)) << " (the library's reorder_rows)");
        FEEDBACK("found:    " << (found_refused ? "decodebook::Error thrown, " : "no exception, ") << "the old rows "
                              << show(rows_held(rows)) << " (-1: a row that is no old row)");
        const bool same = found_refused == refused && rows.shape() == expected.shape() && rows == expected;
        FEEDBACK((same ? std::string()
                  : refused ? "hint: the source must hold one index per row (" + std::to_string(R) +
                                  "), each in 0.." + std::to_string(R - 1) +
                                  ": check them all before writing, so a refused call leaves the rows as they were"
                            : std::string("hint: row r becomes the old row source[r], for every r at once: read from a copy "
                                          "of the old rows, never from rows already overwritten")));
        REQUIRE(same);
    }
}

// ------------------------------------------------------------------------------ 07.4 the roofline

namespace {

ModelConfig shape(int vocab, int width, int layers) {
    ModelConfig c;
    c.vocab_size = vocab, c.n_embd = width, c.n_layer = layers, c.n_positions = 1024, c.n_head = 1;
    return c;
}

}  // namespace

namespace {

std::string show(const ModelConfig& c) {
    return "V " + std::to_string(c.vocab_size) + ", C " + std::to_string(c.n_embd) + ", " + std::to_string(c.n_layer) +
           " layers";
}

void check_roofline(const ModelConfig& c, int bytes_per_weight, double bandwidth, double expected, const std::string& why) {
    FEEDBACK("input: " << show(c) << ", bytes_per_weight " << bytes_per_weight << ", bandwidth " << feedback::num(bandwidth)
                   << " bytes/s");
    FEEDBACK(why);
    const double found = your_decode_roofline_ms(c, bytes_per_weight, bandwidth);
    FEEDBACK("expected: " << feedback::num(expected, 12) << " ms (" << feedback::num(expected * bandwidth / 1000 / bytes_per_weight, 12)
                      << " weights)");
    FEEDBACK("found:    " << feedback::num(found, 12) << " ms (" << feedback::num(found * bandwidth / 1000 / bytes_per_weight, 12)
                      << " weights)");
    CHECK(found == Approx(expected).epsilon(1e-12));
}

void check_roofline_refused(const ModelConfig& c, int bytes_per_weight, double bandwidth, const std::string& why) {
    FEEDBACK("input: " << show(c) << ", bytes_per_weight " << bytes_per_weight << ", bandwidth " << feedback::num(bandwidth));
    FEEDBACK(why);
    const std::string found = feedback::refusal([&] { return your_decode_roofline_ms(c, bytes_per_weight, bandwidth); });
    FEEDBACK("expected: decodebook::Error thrown");
    FEEDBACK("found:    " << found);
    CHECK(found == "decodebook::Error");
}

}  // namespace

TEST_CASE("ex07.4 the embedded model and GPT-2 124M worked by hand", "[ex07.4]") {
    // 124M: wte 50257 x 768 = 38,597,376; one wpe row 768; ln_f 1,536; a block 12 x 768^2 + 13 x 768
    // = 7,087,872, twelve of them 85,054,464: 123,654,144 weights, 494,616,576 bytes in float32
    check_roofline(shape(50257, 768, 12), 4, 1e9, 494.616576,
                   "GPT-2 124M, float32, at 1 GB/s: 494,616,576 bytes take 494.616576 ms");
    check_roofline(shape(50257, 768, 12), 2, 3e12, 247.308288 / 3000, "the same in bf16 at 3 TB/s: half the bytes");
    // the embedded model: 2048 x 192 + 192 + 384 + 4 x (12 x 192^2 + 13 x 192) = 2,173,248 weights
    check_roofline(shape(2048, 192, 4), 4, 1e9, 8.692992,
                   "the embedded model (V 2048, C 192, 4 layers), float32, at 1 GB/s: 8,692,992 bytes");
    check_roofline(shape(2, 3, 0), 1, 1000.0, 15.0,
                   "no blocks at all: wte, one position row and ln_f (2 x 3 + 3 + 6 = 15 weights), 1 byte each");
}

TEST_CASE("ex07.4 GPT-2 small and XL against their published parameter counts", "[ex07.4]") {
    // Hugging Face's gpt2 has 124,439,808 parameters and gpt2-xl 1,557,611,200, each with its whole
    // position table (1024 rows); a decode step reads one row of it
    const double small = 124439808.0 - 1024.0 * 768 + 768, xl = 1557611200.0 - 1024.0 * 1600 + 1600;
    const std::string why = "a step reads the whole model but 1023 of the 1024 position rows; wte once (it is also the lm_head)";
    check_roofline(shape(50257, 768, 12), 4, 20e9, small * 4 / 20e9 * 1000, "gpt2, 124,439,808 parameters: " + why);
    check_roofline(shape(50257, 1600, 48), 2, 3e12, xl * 2 / 3e12 * 1000, "gpt2-xl, 1,557,611,200 parameters: " + why);
}

TEST_CASE("ex07.4 a 7B-sized model worked by hand", "[ex07.4]") {
    // not a GPT-2 anyone published: Llama 2 7B's size (32 layers, width 4096, a 32,000-token
    // vocabulary) in GPT-2's layout, in bf16 at 3 TB/s (chapter 07 part 4 prints it). By hand:
    // wte 32,000 x 4,096 = 131,072,000; one wpe row + ln_f = 3 x 4,096 = 12,288; a block
    // 12 x 4,096^2 + 13 x 4,096 = 201,326,592 + 53,248 = 201,379,840, 32 of them 6,444,154,880:
    // 6,575,239,168 weights, 13,150,478,336 bytes, / 3e12 bytes/s = 4.383492778667 ms
    const ModelConfig seven_b = shape(32000, 4096, 32);
    const double expected = 13150478336.0 / 3e12 * 1000;
    CHECK(decode_roofline_ms(seven_b, 2, 3e12) == Approx(expected).epsilon(1e-12));  // the library agrees with the hand count
    check_roofline(seven_b, 2, 3e12, expected,
                   "a GPT-2 the size of a 7B model (V 32,000, C 4,096, 32 layers), bf16, at 3 TB/s: 13,150,478,336 bytes");
}

TEST_CASE("ex07.4 the count matches what the embedded model's decode step reads", "[ex07.4]") {
    // Gpt2::decode_weight_bytes adds up the tensors the loaded model really holds, here held in
    // float32 (the checkpoint is float16 and stays so by default: 2 bytes per matrix weight)
    static const Gpt2 f32 = Gpt2::load(golden::model_dir(), WeightDtype::F32);
    const double bytes = static_cast<double>(f32.decode_weight_bytes());
    check_roofline(golden::model().config(), 4, 5e10, bytes / 5e10 * 1000,
                   "the embedded model, float32, at 50 GB/s: the tensors it holds add up to " + feedback::num(bytes, 12) +
                       " bytes");
}

TEST_CASE("ex07.4 bad arguments are refused", "[ex07.4]") {
    const ModelConfig gpt2 = shape(50257, 768, 12);
    check_roofline_refused(gpt2, 0, 1e9, "bytes_per_weight 0");
    check_roofline_refused(gpt2, -4, 1e9, "a negative bytes_per_weight");
    check_roofline_refused(gpt2, 4, 0.0, "bandwidth 0");
    check_roofline_refused(gpt2, 4, -1e9, "a negative bandwidth");
    check_roofline_refused(gpt2, 4, std::nan(""), "a bandwidth that is not a number");
    check_roofline_refused(gpt2, 4, std::numeric_limits<double>::infinity(), "an infinite bandwidth");
    check_roofline_refused(shape(50257, 768, -12), 4, 1e9, "a negative n_layer");
    check_roofline_refused(shape(-50257, -768, 12), 4, 1e9, "two negative sizes multiply to a positive count: still refused");
}

TEST_CASE("ex07.4 on cases drawn when the test runs", "[ex07.4]") {
    // 200 shapes: vocabularies of 1 to 100,000, widths 1 to 8,192, 1 to 96 layers (one in 4 tiny: 0 to 4,
    // zeros included), 1 to 8 bytes per
    // weight and bandwidths from 10^8 to 10^13 bytes/s; one case in 8 with a bad argument (bytes per
    // weight 0 or negative; a bandwidth 0, negative, infinite or NaN; a negative size) to refuse.
    // The expected answer is the library's decode_roofline_ms, or its refusal (decodebook::Error).
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        ModelConfig config = {};
        int bytes_per_weight = 4;
        double bandwidth = 1e9;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 200; ++i) {
        Case c;
        const bool tiny = drawn::between(rng, 0, 3) == 0;  // one case in 4: tiny shapes, zeros included
        c.config = tiny ? shape(drawn::between(rng, 0, 4), drawn::between(rng, 0, 4), drawn::between(rng, 0, 3))
                        : shape(drawn::between(rng, 1, 100000), drawn::between(rng, 1, 8192), drawn::between(rng, 1, 96));
        const int widths[] = {1, 2, 4, 8, 3};
        c.bytes_per_weight = widths[drawn::between(rng, 0, 4)];
        c.bandwidth = std::pow(10.0, drawn::uniform(rng, 8, 13));
        if (drawn::between(rng, 0, 7) == 0) {
            switch (drawn::between(rng, 0, 7)) {
                case 0: c.bytes_per_weight = 0; break;
                case 1: c.bytes_per_weight = -drawn::between(rng, 1, 4); break;
                case 2: c.bandwidth = 0; break;
                case 3: c.bandwidth = -c.bandwidth; break;
                case 4: c.bandwidth = std::numeric_limits<double>::infinity(); break;
                case 5: c.bandwidth = std::numeric_limits<double>::quiet_NaN(); break;
                case 6: c.config.n_layer = -drawn::between(rng, 1, 48); break;
                default: (drawn::between(rng, 0, 1) ? c.config.vocab_size : c.config.n_embd) *= -1; break;
            }
        }
        cases.push_back(c);
    }
    using Found = std::vector<std::optional<double>>;  // no value: refused with decodebook::Error
    const Found found = sandbox::run<Found>("your_decode_roofline_ms", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) {
            try {
                out.push_back(your_decode_roofline_ms(c.config, c.bytes_per_weight, c.bandwidth));
            } catch (const Error&) {
                out.push_back(std::nullopt);
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    const auto show_ms = [](const std::optional<double>& ms) {
        return ms ? feedback::num(*ms, 12) + " ms" : std::string("decodebook::Error thrown");
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        std::optional<double> expected;
        try {
            expected = decode_roofline_ms(c.config, c.bytes_per_weight, c.bandwidth);
        } catch (const Error&) {
        }
        FEEDBACK("a case drawn with seed " << seed << ": " << show(c.config) << ", bytes_per_weight " << c.bytes_per_weight
                                          << ", bandwidth " << feedback::num(c.bandwidth, 17) << " bytes/s");
        FEEDBACK("expected: " << show_ms(expected) << " (the library's decode_roofline_ms)\nfound:    " << show_ms(found[i]));
        const bool same = expected ? found[i] && *found[i] == Approx(*expected).epsilon(1e-12) : !found[i];
        FEEDBACK((same ? std::string()
                  : !expected ? "hint: refuse with decodebook::Error a bytes_per_weight below 1, a bandwidth that is not a "
                                "positive finite number, and a negative vocab_size, n_embd or n_layer"
                  : !found[i] ? "hint: every argument is valid here (sizes of 0 are fine): return the time"
                              : "hint: one step reads V C (wte, also the lm_head) + C (one wpe row) + 2 C (ln_f) + n_layer (12 "
                                "C^2 + 13 C) weights, each bytes_per_weight bytes; time = bytes / bandwidth x 1000 ms"));
        REQUIRE(same);
    }
}
