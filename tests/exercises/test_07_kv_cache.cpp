// Graded tests for chapter 07's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/exercises.hpp"
#include "golden.hpp"

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

std::string show(const Vec& v) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v(i);
    return out.str() + "]";
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
        INFO(c["name"].get<std::string>() << ", position " << t);
        INFO("your output (first values): " << show(xt::xtensor<float, 1>(xt::view(out, xt::range(0, std::min<size_t>(C, 6))))));
        CHECK(close(out, out_rows[t], 1e-4));
        for (size_t j = 0; j < C; ++j) {  // the new key and value are in the cache now
            REQUIRE(keys(t, j) == static_cast<float>(qkv_rows[t][C + j]));
            REQUIRE(values(t, j) == static_cast<float>(qkv_rows[t][2 * C + j]));
        }
    }
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
    INFO("source " << show(source) << ": row r must hold the old row source[r]; your rows hold the old rows "
                   << show(rows_held(rows)) << " (-1: a row that is no old row)");
    CHECK(rows_held(rows) == source);
}

}  // namespace

// ------------------------------------------------------------------------------ 07.1 attention step

TEST_CASE("ex07.1 position 0 attends to itself alone and returns its value", "[ex07.1]") {
    Mat keys = nan_cache(4, 2), values = nan_cache(4, 2);
    const Vec out = your_cached_attention_step(keys, values, 0, vec({5, -1, 2, 3, 7, -4}), 1);
    INFO("a softmax over one score is 1: the output is the new value [7, -4]; yours " << show(out));
    CHECK(close(out, {7, -4}, 1e-6));
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
    INFO("expected [0.25 x 10 + 0.75 x 20, 0.5 x 2 + 0.5 x 4] = [17.5, 3]; yours " << show(out));
    CHECK(close(out, {17.5, 3}, 1e-5));
    // the same numbers as ONE head of width 2: each score uses both columns (q . k_1 = ln 3, q . k_0 = 0)
    // and the scale is 1/sqrt(2), so both columns share one weight per position
    const Vec one_head = [] {
        Mat k = nan_cache(3, 2), v = nan_cache(3, 2);
        k(0, 0) = 0, k(0, 1) = 5, v(0, 0) = 10, v(0, 1) = 2;
        return your_cached_attention_step(k, v, 1, vec({std::log(3.0), 0, 1, 7, 20, 4}), 1);
    }();
    const double p1 = std::exp(std::log(3.0) / std::sqrt(2.0)), w1 = p1 / (1 + p1);  // weight of position 1
    INFO("with one head of width 2: weights (" << 1 - w1 << ", " << w1 << "); yours " << show(one_head));
    CHECK(close(one_head, {(1 - w1) * 10 + w1 * 20, (1 - w1) * 2 + w1 * 4}, 1e-5));
}

TEST_CASE("ex07.1 scores are divided by sqrt of the head width", "[ex07.1]") {
    // D = 4: q . k_1 = 2 ln 5, divided by sqrt(4) = 2 -> ln 5: weights (1/6, 5/6) over values 1 and 2
    Mat keys = nan_cache(2, 4), values = nan_cache(2, 4);
    for (size_t j = 0; j < 4; ++j) keys(0, j) = 0, values(0, j) = 1;
    const Vec qkv = vec({2, 0, 0, 0, std::log(5.0), 0, 0, 0, 2, 2, 2, 2});
    const Vec out = your_cached_attention_step(keys, values, 1, qkv, 1);
    INFO("expected 1/6 x 1 + 5/6 x 2 = 1.8333 in every column (without the scale: 25/26 x 2 + 1/26 = 1.9615); yours "
         << show(out));
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
    INFO("expected the mean of the values of positions 0..3: [(0 + 10 + 20 + 30) / 4, 1] = [15, 1]; yours "
         << show(out) << " (NaN: a row after the position was read)");
    CHECK(close(out, {15, 1}, 1e-6));
    for (size_t s = 0; s < 8; ++s) {
        for (size_t j = 0; j < 2; ++j) {
            INFO("keys(" << s << ", " << j << ")");
            if (s == 3) {
                CHECK(keys(s, j) == 9.0f);
            } else if (s < 3) {
                CHECK(keys(s, j) == keys_before(s, j));
                CHECK(values(s, j) == values_before(s, j));
            } else {
                CHECK(std::isnan(keys(s, j)));
                CHECK(std::isnan(values(s, j)));
            }
        }
    }
    CHECK(values(3, 0) == 30.0f);
    CHECK(values(3, 1) == 1.0f);
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

// --------------------------------------------------------------------------------- 07.2 KV size

TEST_CASE("ex07.2 GPT-2 124M and a 7B model worked by hand", "[ex07.2]") {
    INFO("2 x 12 layers x 1024 positions x 768 x 4 bytes = 75,497,472");
    CHECK(your_kv_cache_bytes(12, 1024, 768, 4, 1) == 75497472u);
    INFO("2 x 32 layers x 8192 tokens x 4096 x 2 bytes (bf16) = 4,294,967,296 = 4 GiB");
    CHECK(your_kv_cache_bytes(32, 8192, 4096, 2, 1) == 4294967296u);
    INFO("the same for a batch of 3 rows: 3 x 4 GiB");
    CHECK(your_kv_cache_bytes(32, 8192, 4096, 2, 3) == 3u * 4294967296u);
    INFO("a cache with no positions yet holds nothing");
    CHECK(your_kv_cache_bytes(12, 0, 768, 4, 1) == 0u);
    INFO("one layer, one position, 8 floats: a key and a value of 32 bytes each");
    CHECK(your_kv_cache_bytes(1, 1, 8, 4, 1) == 64u);
}

TEST_CASE("ex07.2 published model shapes against the reference", "[ex07.2]") {
    const nlohmann::json data = golden::load("kv_cache.json");
    int checked = 0;
    for (const auto& c : data["sizes"]) {
        if (c["overflow"].get<bool>()) continue;
        INFO(c["name"].get<std::string>());
        CHECK(your_kv_cache_bytes(c["n_layer"].get<int64_t>(), c["positions"].get<int64_t>(), c["width"].get<int64_t>(),
                                  c["bytes_per_value"].get<int64_t>(), c["rows"].get<int64_t>()) ==
              c["bytes"].get<uint64_t>());
        ++checked;
    }
    CHECK(checked >= 8);
}

TEST_CASE("ex07.2 sizes past 2^63 fit and sizes past 2^64 are refused", "[ex07.2]") {
    INFO("2 x 2^20 x 2^20 x 2^20 x 4 = 2^63: too big for int64_t, right for uint64_t");
    CHECK(your_kv_cache_bytes(1 << 20, 1 << 20, 1 << 20, 4, 1) == (uint64_t{1} << 63));
    INFO("the same with rows 2 is 2^64, which wraps to 0 in 64 bits: it must throw decodebook::Error");
    CHECK_THROWS_AS(your_kv_cache_bytes(1 << 20, 1 << 20, 1 << 20, 4, 2), Error);
    const nlohmann::json data = golden::load("kv_cache.json");
    for (const auto& c : data["sizes"]) {
        INFO(c["name"].get<std::string>());
        const auto call = [&] {
            return your_kv_cache_bytes(c["n_layer"].get<int64_t>(), c["positions"].get<int64_t>(),
                                       c["width"].get<int64_t>(), c["bytes_per_value"].get<int64_t>(),
                                       c["rows"].get<int64_t>());
        };
        if (c["overflow"].get<bool>()) CHECK_THROWS_AS(call(), Error);
        else CHECK(call() == c["bytes"].get<uint64_t>());
    }
}

TEST_CASE("ex07.2 a negative count is refused", "[ex07.2]") {
    CHECK_THROWS_AS(your_kv_cache_bytes(-12, 1024, 768, 4, 1), Error);
    CHECK_THROWS_AS(your_kv_cache_bytes(12, -1, 768, 4, 1), Error);
    CHECK_THROWS_AS(your_kv_cache_bytes(12, 1024, 768, 4, -2), Error);
    INFO("two negatives multiply to a positive number: still refused");
    CHECK_THROWS_AS(your_kv_cache_bytes(-12, 1024, -768, 4, 1), Error);
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
        INFO("source " << show(bad) << " for 3 rows");
        CHECK_THROWS_AS(your_reorder_rows(rows, bad), Error);
        CHECK(rows_held(rows) == std::vector<int>{0, 1, 2});
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

TEST_CASE("ex07.4 the embedded model and GPT-2 124M worked by hand", "[ex07.4]") {
    // 124M: wte 50257 x 768 = 38,597,376; one wpe row 768; ln_f 1,536; a block 12 x 768^2 + 13 x 768
    // = 7,087,872, twelve of them 85,054,464: 123,654,144 weights, 494,616,576 bytes in float32
    INFO("GPT-2 124M, float32, at 1 GB/s: 494,616,576 bytes take 494.616576 ms");
    CHECK(your_decode_roofline_ms(shape(50257, 768, 12), 4, 1e9) == Approx(494.616576).epsilon(1e-12));
    INFO("the same in bf16 at 3 TB/s: half the bytes");
    CHECK(your_decode_roofline_ms(shape(50257, 768, 12), 2, 3e12) == Approx(247.308288 / 3000).epsilon(1e-12));
    // the embedded model: 2048 x 192 + 192 + 384 + 4 x (12 x 192^2 + 13 x 192) = 2,173,248 weights
    INFO("the embedded model (V 2048, C 192, 4 layers), float32, at 1 GB/s: 8,692,992 bytes");
    CHECK(your_decode_roofline_ms(shape(2048, 192, 4), 4, 1e9) == Approx(8.692992).epsilon(1e-12));
    INFO("no blocks at all: wte, one position row and ln_f (2 x 3 + 3 + 6 = 15 weights), 1 byte each");
    CHECK(your_decode_roofline_ms(shape(2, 3, 0), 1, 1000.0) == Approx(15.0).epsilon(1e-12));
}

TEST_CASE("ex07.4 GPT-2 small and XL against their published parameter counts", "[ex07.4]") {
    // Hugging Face's gpt2 has 124,439,808 parameters and gpt2-xl 1,557,611,200, each with its whole
    // position table (1024 rows); a decode step reads one row of it
    const double small = 124439808.0 - 1024.0 * 768 + 768, xl = 1557611200.0 - 1024.0 * 1600 + 1600;
    INFO("a step reads the whole model but 1023 of the 1024 position rows; wte once (it is also the lm_head)");
    CHECK(your_decode_roofline_ms(shape(50257, 768, 12), 4, 20e9) == Approx(small * 4 / 20e9 * 1000).epsilon(1e-12));
    CHECK(your_decode_roofline_ms(shape(50257, 1600, 48), 2, 3e12) == Approx(xl * 2 / 3e12 * 1000).epsilon(1e-12));
}

TEST_CASE("ex07.4 the count matches what the embedded model's decode step reads", "[ex07.4]") {
    // Gpt2::decode_weight_bytes adds up the tensors the loaded model really holds
    const double bytes = static_cast<double>(golden::model().decode_weight_bytes());
    CHECK(your_decode_roofline_ms(golden::model().config(), 4, 5e10) == Approx(bytes / 5e10 * 1000).epsilon(1e-12));
}

TEST_CASE("ex07.4 bad arguments are refused", "[ex07.4]") {
    const ModelConfig gpt2 = shape(50257, 768, 12);
    CHECK_THROWS_AS(your_decode_roofline_ms(gpt2, 0, 1e9), Error);
    CHECK_THROWS_AS(your_decode_roofline_ms(gpt2, -4, 1e9), Error);
    CHECK_THROWS_AS(your_decode_roofline_ms(gpt2, 4, 0.0), Error);
    CHECK_THROWS_AS(your_decode_roofline_ms(gpt2, 4, -1e9), Error);
    CHECK_THROWS_AS(your_decode_roofline_ms(gpt2, 4, std::nan("")), Error);
    CHECK_THROWS_AS(your_decode_roofline_ms(gpt2, 4, std::numeric_limits<double>::infinity()), Error);
    CHECK_THROWS_AS(your_decode_roofline_ms(shape(50257, 768, -12), 4, 1e9), Error);
    INFO("two negative sizes multiply to a positive count: still refused");
    CHECK_THROWS_AS(your_decode_roofline_ms(shape(-50257, -768, 12), 4, 1e9), Error);
}
