// Chapter 07: weights held in f16 (WeightDtype::F16, issue 24). The rounding and widening on
// hand-computed values; the f16 kernels against the float32 kernels on the widened weights, bit
// for bit, on odd shapes; the embedded F16 checkpoint held as f16 and as f32, bit for bit, in
// forward, prefill and decode and on every golden prompt; the bytes a step reads.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/model/safetensors.hpp"
#include "decodebook/model/weights.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::KernelTarget;
using golden::Threads;
using golden::tokenizer;

namespace {

// The same bits (NaN-safe, and +0 differs from -0): what "bit-identical" means below.
bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// The embedded model (stored F16) held both ways, loaded once.
const Gpt2& held_f16() {
    static const Gpt2 m = Gpt2::load(golden::model_dir(), WeightDtype::F16);
    return m;
}
const Gpt2& held_f32() {
    static const Gpt2 m = Gpt2::load(golden::model_dir(), WeightDtype::F32);
    return m;
}

// n finite binary16 values from the RNG, subnormals and both zeros included (exponent 0..30).
std::vector<uint16_t> random_halves(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint16_t> h(n);
    for (uint16_t& v : h) {
        do v = static_cast<uint16_t>(rng.next_u64());
        while ((v & 0x7c00u) == 0x7c00u);  // not infinity or NaN: the loader refuses those
    }
    return h;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> x(n);
    for (float& v : x) v = static_cast<float>(2.0 * rng.coin() - 1.0);
    return x;
}

std::vector<float> widened(const std::vector<uint16_t>& h) {
    std::vector<float> f(h.size());
    for (size_t i = 0; i < h.size(); ++i) f[i] = half_to_float(h[i]);  // chapter 00's widening
    return f;
}

}  // namespace

TEST_CASE("float_to_half rounds to nearest even on hand-computed values", "[f16]") {
    // binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; values worked by hand
    CHECK(float_to_half(1.0f) == 0x3c00);
    CHECK(float_to_half(-2.0f) == 0xc000);
    CHECK(float_to_half(65504.0f) == 0x7bff);                    // the largest half: 2^15 x (2 - 2^-10)
    CHECK(float_to_half(std::bit_cast<float>(0x477fefffu)) == 0x7bff);  // just below 65520: down to 65504
    CHECK(float_to_half(65520.0f) == 0x7c00);  // halfway to 65536, 65504's last bit odd: up, to infinity
    CHECK(float_to_half(1e6f) == 0x7c00);      // overflow: infinity
    CHECK(float_to_half(-std::numeric_limits<float>::infinity()) == 0xfc00);
    CHECK((float_to_half(std::nanf("")) & 0x7c00) == 0x7c00);  // NaN stays NaN (mantissa not 0)
    CHECK((float_to_half(std::nanf("")) & 0x03ff) != 0);
    CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);         // halfway between 1 and 1 + 2^-10: even (1)
    CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);     // halfway between 0x3c01 and 0x3c02: even
    CHECK(float_to_half(0x1p-14f) == 0x0400);                // the smallest normal half
    CHECK(float_to_half(0x1p-24f) == 0x0001);                // the smallest subnormal
    CHECK(float_to_half(0x1p-25f) == 0x0000);                // halfway between 0 and 2^-24: even (0)
    CHECK(float_to_half(3 * 0x1p-25f) == 0x0002);            // halfway between 1 and 2 x 2^-24: even (2)
    CHECK(float_to_half(-0.0f) == 0x8000);
}

TEST_CASE("widen_halves widens all 65536 halves exactly as half_to_float and by hand", "[f16][kernels]") {
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> out(all.size());
    for (const std::string& target : kernel_targets_supported()) {  // F16C on v3 and v4, integers on the default
        KernelTarget use(target);
        widen_halves(all.data(), all.size(), out.data());
        size_t differ = 0;
        for (size_t i = 0; i < all.size(); ++i) {
            const float want = half_to_float(all[i]);
            if (std::isnan(want) ? !std::isnan(out[i]) : std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(out[i]))
                ++differ;
        }
        INFO("target " << target);
        CHECK(differ == 0);
    }
    // by hand: 2^-24, 1023 x 2^-24, 2^-14, 1, 65504, infinities, -0
    CHECK(out[0x0001] == 0x1p-24f);
    CHECK(out[0x03ff] == 1023 * 0x1p-24f);
    CHECK(out[0x0400] == 0x1p-14f);
    CHECK(out[0x3c00] == 1.0f);
    CHECK(out[0x7bff] == 65504.0f);
    CHECK(out[0x7c00] == std::numeric_limits<float>::infinity());
    CHECK(out[0xfc00] == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(out[0x7e00]));
    CHECK((out[0x8000] == 0.0f && std::signbit(out[0x8000])));
}

TEST_CASE("WeightMatrix rounds once and refuses what float16 cannot hold", "[f16]") {
    WeightTensor<2> v = WeightTensor<2>::from_shape({2, 3});
    const float values[] = {1.0f, 1.0f + 0x1p-11f, -0x1p-24f, 65504.0f, 0.1f, -0.0f};
    std::copy(values, values + 6, v.data());
    const WeightMatrix m = WeightMatrix::hold(v, WeightDtype::F16, "t");
    REQUIRE(m.dtype() == WeightDtype::F16);
    CHECK(m.bytes() == 12u);  // 6 weights x 2 bytes
    CHECK(m.f32() == nullptr);
    // 0.1 = 0x3dcccccd in float32; its nearest half is 0x2e66 (0.0999755859375)
    const uint16_t want[] = {0x3c00, 0x3c00, 0x8001, 0x7bff, 0x2e66, 0x8000};
    CHECK(std::memcmp(m.f16(), want, sizeof want) == 0);
    float row[3];
    m.widen_rows(1, 1, row);
    CHECK(row[0] == 65504.0f);
    CHECK(row[1] == 0.0999755859375f);
    CHECK_THROWS_AS(m.widen_rows(2, 1, row), std::out_of_range);
    const WeightMatrix kept = WeightMatrix::hold(v, WeightDtype::F32, "t");
    CHECK(kept.bytes() == 24u);
    CHECK(same_bits(kept.f32(), values, 6));
    v(1, 0) = 65520.0f;  // rounds to infinity
    REQUIRE_THROWS_WITH(WeightMatrix::hold(v, WeightDtype::F16, "h.0.mlp.c_fc.weight"),
                        Catch::Contains("'h.0.mlp.c_fc.weight' holds 65520") && Catch::Contains("element 3") &&
                            Catch::Contains("--dtype f32"));
    v(1, 0) = std::nanf("");
    CHECK_THROWS_AS(WeightMatrix::hold(v, WeightDtype::F16, "t"), Error);
}

TEST_CASE("parse_weight_dtype takes f32 and f16 and names the fix for anything else", "[f16][errors]") {
    CHECK(parse_weight_dtype("f32") == WeightDtype::F32);
    CHECK(parse_weight_dtype("f16") == WeightDtype::F16);
    CHECK(to_string(WeightDtype::F16) == "f16");
    REQUIRE_THROWS_WITH(parse_weight_dtype("bf16"),
                        Catch::Contains("--dtype bf16") && Catch::Contains("--dtype f32") && Catch::Contains("--dtype f16"));
    CHECK_THROWS_AS(parse_weight_dtype("F16"), Error);
}

TEST_CASE("the f16 matvec equals the float32 matvec on the widened weights bit for bit on odd shapes on every target", "[f16][kernels]") {
    // W held (out, in). in: below 16, 16, one past, odd, not a multiple of 16, and 4099 (one row
    // of x then reads four weight rows at a time on AVX2 and AVX-512: x and two rows of halves no
    // longer fit in L1, kernels/dots.hpp); out: 1, odd, even (odd row ranges on two threads); 1, 2,
    // 5 and 9 rows (the blocks of rows and their remainders); 1 and 2 threads; with a bias (the
    // blocks) and without (the lm_head)
    uint64_t seed = 1;
    for (const std::string& target : kernel_targets_supported())
    for (size_t in : {1, 3, 15, 16, 17, 50, 77, 192, 4099})
        for (size_t out : {1, 5, 17, 33, 64, 101})
            for (size_t B : {1, 2, 5, 9})
                for (int threads : {1, 2}) {
                    const std::vector<uint16_t> W = random_halves(out * in, seed++);
                    const std::vector<float> Wf = widened(W), x = random_floats(B * in, seed++),
                                             bias = random_floats(out, seed++);
                    std::vector<float> y16(B * out), y32(B * out);
                    Threads t(threads);
                    KernelTarget use(target);
                    matvec_f16(x.data(), B, W.data(), bias.data(), out, in, y16.data());
                    matvec(x.data(), B, Wf.data(), bias.data(), out, in, y32.data());
                    INFO("target " << target << " out " << out << " in " << in << " B " << B << " threads " << threads);
                    CHECK(same_bits(y16.data(), y32.data(), y16.size()));
                    matvec_f16(x.data(), B, W.data(), nullptr, out, in, y16.data());
                    matvec(x.data(), B, Wf.data(), nullptr, out, in, y32.data());
                    CHECK(same_bits(y16.data(), y32.data(), y16.size()));
                }
}

TEST_CASE("the embedded F16 checkpoint loads as f16 by default and as f32 when asked", "[f16][model]") {
    CHECK(golden::model().weight_dtype() == WeightDtype::F16);  // the checkpoint's own
    CHECK(held_f16().weight_dtype() == WeightDtype::F16);
    CHECK(held_f32().weight_dtype() == WeightDtype::F32);
    // V = 2048, C = 192, 4 layers: matrices V C + 4 x 12 C^2 = 2,162,688 weights; float32 vectors
    // one wpe row, ln_f and 4 x 13 C = 3 C + 52 C = 10,560 floats
    CHECK(held_f16().decode_weight_bytes() == 2162688u * 2 + 10560u * 4);
    CHECK(held_f32().decode_weight_bytes() == 2162688u * 4 + 10560u * 4);
    CHECK(held_f32().decode_weight_bytes() == gpt2_decode_bytes(held_f32().config(), 4));
}

TEST_CASE("f16 and f32 holding of the F16 checkpoint give bit-identical forward and prefill logits", "[f16][model]") {
    const std::vector<int> ids = tokenizer().encode("The cat sat on the mat, and then it asked for a fortune.");
    const xt::xtensor<float, 2> a = held_f16().forward(ids), b = held_f32().forward(ids);
    REQUIRE(a.size() == b.size());
    CHECK(same_bits(a.data(), b.data(), a.size()));
    for (int threads : {1, 2}) {
        Threads t(threads);
        KvCache ca(held_f16().config(), 1, 64), cb(held_f32().config(), 1, 64);
        const xt::xtensor<float, 1> pa = held_f16().prefill(ids, ca), pb = held_f32().prefill(ids, cb);
        INFO("threads " << threads);
        CHECK(same_bits(pa.data(), pb.data(), pa.size()));
        // the last layer's keys of the prompt's positions (the cache's other positions are unwritten)
        CHECK(same_bits(ca.keys(3).data(), cb.keys(3).data(), ids.size() * static_cast<size_t>(held_f16().config().n_embd)));
    }
}

TEST_CASE("f16 and f32 holding give bit-identical decode logits on every target on 1 and 2 threads in batches of 1 and 5", "[f16][model][batch]") {
    const ModelConfig& mc = held_f16().config();
    const size_t V = static_cast<size_t>(mc.vocab_size);
    const std::vector<std::string> texts = {"The cat", "A fortune:", "You will", "Q: why", "Once upon a time"};
    for (const std::string& target : kernel_targets_supported())
    for (BatchKernels kernels : {BatchKernels::Invariant, BatchKernels::Gemm})
        for (size_t B : {1, 5})
            for (int threads : {1, 2}) {
                Threads t(threads);
                KernelTarget use(target);
                KvCache ca(mc, B, 32), cb(mc, B, 32);
                std::vector<size_t> rows;
                for (size_t i = 0; i < B; ++i) {
                    held_f16().prefill(tokenizer().encode(texts[i]), ca, i);
                    held_f32().prefill(tokenizer().encode(texts[i]), cb, i);
                    rows.push_back(i);
                }
                std::vector<int> tokens(B);
                for (int step = 0; step < 4; ++step) {
                    for (size_t i = 0; i < B; ++i) tokens[i] = static_cast<int>((step * 131 + i * 977) % V);
                    held_f16().decode(tokens, rows, ca, kernels);
                    held_f32().decode(tokens, rows, cb, kernels);
                    INFO("target " << target << " kernels " << (kernels == BatchKernels::Gemm ? "gemm" : "invariant") << " B " << B
                                    << " threads " << threads << " step " << step);
                    CHECK(same_bits(ca.logits().data(), cb.logits().data(), B * V));
                }
            }
}

TEST_CASE("f16 and f32 holding give the same greedy tokens on every golden prompt", "[f16][model]") {
    const nlohmann::json g = golden::load("greedy.json");
    REQUIRE(g["cases"].size() >= 10);
    for (const auto& c : g["cases"]) {
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        GenerationConfig config;
        config.max_new_tokens = c["max_new_tokens"].get<int>();
        const Generation a = generate_cached(held_f16(), tokenizer(), prompt, config, greedy);
        const Generation b = generate_cached(held_f32(), tokenizer(), prompt, config, greedy);
        INFO("case '" << c["name"].get<std::string>() << "' (tests/data/greedy.json)");
        CHECK(a.ids == expected);
        CHECK(b.ids == expected);
    }
}

TEST_CASE("an F32 checkpoint loads as f32 and rounds once to f16 when asked", "[f16][model]") {
    ModelConfig c = held_f16().config();
    c.n_layer = 1, c.vocab_size = 300, c.n_positions = 32, c.eos_token_id = 299;
    golden::TempDir dir;
    write_random_gpt2(dir.path.string(), c, 11, DType::F32);
    const Gpt2 f32 = Gpt2::load(dir.path.string());
    const Gpt2 f16 = Gpt2::load(dir.path.string(), WeightDtype::F16);
    CHECK(f32.weight_dtype() == WeightDtype::F32);
    CHECK(f16.weight_dtype() == WeightDtype::F16);
    // the same model rounded in memory (from_tensors) holds the same bits as rounded by the loader
    const Gpt2 rounded = Gpt2::from_tensors(c, load_gpt2_tensors(dir.file("model.safetensors"), c), WeightDtype::F16);
    const std::vector<int> ids = {1, 2, 3, 4, 5, 6, 7};
    const xt::xtensor<float, 2> a = f16.forward(ids), b = rounded.forward(ids), exact = f32.forward(ids);
    CHECK(same_bits(a.data(), b.data(), a.size()));
    // rounding changes the logits, a little (random weights of 0.02: each off by at most 2^-11 of itself)
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a.data()[i] - exact.data()[i]));
    CHECK(worst > 0.0f);
    CHECK(worst < 1e-2f);
    // compare_greedy_logits (chapter 07's part 7): the model against itself, then the two holdings
    const LogitAgreement self = compare_greedy_logits(f32, f32, ids, 5);
    CHECK((self.steps == 5 && self.max_diff == 0 && self.differ == 0));
    const LogitAgreement both = compare_greedy_logits(f32, f16, ids, 5);
    CHECK(both.steps == 5);
    CHECK(both.max_diff > 0);
    CHECK_THROWS_AS(compare_greedy_logits(f32, f16, ids, 0), Error);
    // a BF16 checkpoint loads as f32
    write_random_gpt2(dir.path.string(), c, 11, DType::BF16);
    CHECK(Gpt2::load(dir.path.string()).weight_dtype() == WeightDtype::F32);
}
