// Chapter 13: q8_0 and q4_0 blocks against ggml's own test (llama.cpp tests/test-quantize-fns.cpp:
// its data, its error metric and thresholds, and the figures docs' field notes computed with ggml's
// reference algorithms) and against the blocks an independent numpy quantizer wrote
// (tests/reference/quant.py -> tests/data/quant.json: regenerate with
// /usr/bin/python3 tests/reference/quant.py).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/quant.hpp"
#include "decodebook/model/safetensors.hpp"
#include "decodebook/model/weights.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

// test-quantize-fns.cpp's generate_data: 0.1 (a double) + amplitude * cosf(i + offset) (float32),
// stored as float32.
std::vector<float> ggml_data(float offset, size_t n, float amplitude = 2.0f) {
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(0.1 + amplitude * std::cos(static_cast<float>(i) + offset));
    return out;
}

// test-quantize-fns.cpp's array_rmse: float differences squared and summed in double, sqrtf, / n.
float ggml_rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double diff = a[i] - b[i];
        sum += diff * diff;
    }
    return std::sqrt(static_cast<float>(sum)) / static_cast<float>(a.size());
}

// test-quantize-fns.cpp's dot_product: float products summed in double, returned as float.
float ggml_dot(const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
    return static_cast<float>(sum);
}

template <class Block>
std::string bytes_of(const std::vector<Block>& blocks) {
    std::string out(blocks.size() * sizeof(Block), '\0');
    std::memcpy(out.data(), blocks.data(), out.size());  // little-endian d, then the quants: ggml's layout
    return out;
}

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string fnv1a64(const std::string& bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

std::vector<BlockQ8_0> q8(const std::vector<float>& x) {
    std::vector<BlockQ8_0> out(x.size() / kQuantBlock);
    quantize_q8_0(x.data(), x.size(), out.data());
    return out;
}

std::vector<BlockQ4_0> q4(const std::vector<float>& x) {
    std::vector<BlockQ4_0> out(x.size() / kQuantBlock);
    quantize_q4_0(x.data(), x.size(), out.data());
    return out;
}

template <class Block>
std::vector<float> dequantized(const std::vector<Block>& blocks) {
    std::vector<float> out(blocks.size() * kQuantBlock);
    if constexpr (std::is_same_v<Block, BlockQ8_0>) dequantize_q8_0(blocks.data(), out.size(), out.data());
    else dequantize_q4_0(blocks.data(), out.size(), out.data());
    return out;
}

}  // namespace

TEST_CASE("q8_0 and q4_0 pass ggml's test-quantize-fns with its figures", "[quant]") {
    // llama.cpp tests/test-quantize-fns.cpp: 32 x 128 values; total error < 0.002
    // (MAX_QUANTIZATION_TOTAL_ERROR), dot-product error < 0.02 (MAX_DOT_PRODUCT_ERROR) against
    // offset-1 data quantized to q8_0 (the vec_dot type). The field notes' figures, computed with
    // ggml's reference algorithms: 7.44e-5 and 1.12e-3 total, 9.2e-5 and 1.14e-3 dot.
    const std::vector<float> x = ggml_data(0.0f, 32 * 128), y = ggml_data(1.0f, 32 * 128);
    const float dot_ref = ggml_dot(x, y);
    const std::vector<BlockQ8_0> y8 = q8(y);

    const std::vector<BlockQ8_0> x8 = q8(x);
    const float total8 = ggml_rmse(x, dequantized(x8));
    const float dot8 = std::fabs(dot_q8_0(x8.data(), y8.data(), x.size()) - dot_ref) / static_cast<float>(x.size());
    CHECK(total8 < 0.002f);
    CHECK(dot8 < 0.02f);
    CHECK(std::fabs(total8 - 7.44e-5f) < 0.005e-5f);
    CHECK(std::fabs(dot8 - 9.2e-5f) < 0.05e-5f);

    const std::vector<BlockQ4_0> x4 = q4(x);
    const float total4 = ggml_rmse(x, dequantized(x4));
    const float dot4 = std::fabs(dot_q4_0_q8_0(x4.data(), y8.data(), x.size()) - dot_ref) / static_cast<float>(x.size());
    CHECK(total4 < 0.002f);
    CHECK(dot4 < 0.02f);
    CHECK(std::fabs(total4 - 1.12e-3f) < 0.005e-3f);
    CHECK(std::fabs(dot4 - 1.14e-3f) < 0.005e-3f);
    CHECK(total4 > 10 * total8);  // 4 bits lose more than 8
}

TEST_CASE("q8_0 and q4_0 blocks are the independent reference's on ggml's data", "[quant]") {
    for (const auto& c : golden::load("quant.json")["ggml"]) {
        const std::vector<float> x = ggml_data(c["offset"].get<float>(), c["n"].get<size_t>(), c["amplitude"].get<float>());
        INFO("offset " << c["offset"] << " amplitude " << c["amplitude"]);
        const std::string b8 = bytes_of(q8(x)), b4 = bytes_of(q4(x));
        const std::string first8 = c["q8_0"]["first_blocks"], first4 = c["q4_0"]["first_blocks"];
        CHECK(hex(b8.substr(0, first8.size() / 2)) == first8);
        CHECK(hex(b4.substr(0, first4.size() / 2)) == first4);
        CHECK(fnv1a64(b8) == c["q8_0"]["fnv1a64"]);
        CHECK(fnv1a64(b4) == c["q4_0"]["fnv1a64"]);
        // the reference's error figures, to float32's last bit
        CHECK(ggml_rmse(x, dequantized(q8(x))) == c["q8_0"]["total_error"].get<float>());
        CHECK(ggml_rmse(x, dequantized(q4(x))) == c["q4_0"]["total_error"].get<float>());
    }
}

TEST_CASE("q8_0 and q4_0 blocks at the rules' edges are the independent reference's", "[quant]") {
    // zeros (q4_0's scale is -0: 0 / -8), ties of magnitude (the first wins), halves (roundf
    // rounds them away from zero), q4_0's cap at 15, a binary16 subnormal scale, the largest scales
    for (const auto& c : golden::load("quant.json")["hand"]) {
        const std::vector<float> x = c["values"].get<std::vector<float>>();
        INFO(c["name"].get<std::string>());
        CHECK(hex(bytes_of(q8(x))) == c["q8_0"]);
        CHECK(hex(bytes_of(q4(x))) == c["q4_0"]);
    }
}

TEST_CASE("q8_0 and q4_0 blocks of both embedded models are the independent reference's", "[quant]") {
    const auto models = golden::load("quant.json")["models"];
    for (const std::string model : {"fortunes-gpt2", "fortunes-draft"}) {
        const auto dir = std::filesystem::path(golden::model_dir()).parent_path() / model;
        const TensorMap tensors = load_safetensors((dir / "model.safetensors").string());
        for (const auto& e : models[model]) {
            const std::string name = e["name"];
            INFO(model << " " << name);
            const WeightArray& w = tensors.at(name);
            const size_t rows = e["rows"], cols = e["cols"];
            std::vector<float> held(rows * cols);  // (out, in): Conv1D's (in, out) turned, wte as it is
            for (size_t r = 0; r < rows; ++r)
                for (size_t k = 0; k < cols; ++k) held[r * cols + k] = name == "wte.weight" ? w(r, k) : w(k, r);
            std::vector<BlockQ8_0> b8(held.size() / kQuantBlock);
            std::vector<BlockQ4_0> b4(held.size() / kQuantBlock);
            quantize_q8_0(held.data(), held.size(), b8.data(), name);
            quantize_q4_0(held.data(), held.size(), b4.data(), name);
            CHECK(fnv1a64(bytes_of(b8)) == e["q8_0"]);
            CHECK(fnv1a64(bytes_of(b4)) == e["q4_0"]);
        }
    }
}

TEST_CASE("quantizing refuses what has no block and says what to do", "[quant]") {
    std::vector<float> x(64, 1.0f);
    std::vector<BlockQ8_0> b8(2);
    std::vector<BlockQ4_0> b4(2);
    SECTION("a length that is not a multiple of 32") {
        REQUIRE_THROWS_WITH(quantize_q8_0(x.data(), 48, b8.data(), "h.0.mlp.c_fc.weight"),
                            Catch::Contains("h.0.mlp.c_fc.weight has 48 values a row, not a multiple of 32"));
        REQUIRE_THROWS_AS(quantize_q4_0(x.data(), 33, b4.data()), Error);
    }
    SECTION("a value that is not finite") {
        x[37] = std::nanf("");
        REQUIRE_THROWS_WITH(quantize_q8_0(x.data(), 64, b8.data(), "wte.weight"),
                            Catch::Contains("wte.weight holds nan at element 37"));
        x[37] = -INFINITY;
        REQUIRE_THROWS_WITH(quantize_q4_0(x.data(), 64, b4.data(), "wte.weight"), Catch::Contains("element 37"));
    }
    SECTION("a scale beyond binary16") {
        x[40] = 65504.0f * 127.0f * 1.01f;  // q8_0: d = amax / 127 overflows; q4_0: max / -8 too
        REQUIRE_THROWS_WITH(quantize_q8_0(x.data(), 64, b8.data(), "wte.weight"),
                            Catch::Contains("the block at element 32") && Catch::Contains("--dtype f32"));
        REQUIRE_THROWS_WITH(quantize_q4_0(x.data(), 64, b4.data(), "wte.weight"), Catch::Contains("q4_0 scale overflows"));
        x[40] = 65504.0f * 8.0f;  // the largest q4_0 scale that fits
        REQUIRE_NOTHROW(quantize_q4_0(x.data(), 64, b4.data()));
        CHECK(half_to_float(b4[1].d) == -65504.0f);
    }
}

namespace {

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

std::vector<float> random_floats(size_t n, uint64_t seed, double scale = 1.0) {
    Rng rng(seed);
    std::vector<float> x(n);
    for (float& v : x) v = static_cast<float>(scale * (2.0 * rng.coin() - 1.0));
    return x;
}

// The checkpoint's tensors with every held matrix quantized and dequantized along its (out, in)
// rows, as the model holds it: the float32 values a q8_0 or q4_0 model stands for.
TensorMap dequantized_tensors(const TensorMap& tensors, const ModelConfig& mc, WeightDtype dtype) {
    TensorMap out = tensors;
    for (const TensorSpec& spec : gpt2_tensor_schema(mc)) {
        if (!spec.held) continue;
        WeightArray& w = out.at(spec.name);
        const bool turned = spec.name != "wte.weight";  // Conv1D's (in, out) is held (out, in)
        const size_t rows = turned ? w.shape(1) : w.shape(0), cols = turned ? w.shape(0) : w.shape(1);
        std::vector<float> held(rows * cols);
        for (size_t r = 0; r < rows; ++r)
            for (size_t k = 0; k < cols; ++k) held[r * cols + k] = turned ? w(k, r) : w(r, k);
        std::vector<float> back(held.size());
        if (dtype == WeightDtype::Q8_0) back = dequantized(q8(held));
        else back = dequantized(q4(held));
        for (size_t r = 0; r < rows; ++r)
            for (size_t k = 0; k < cols; ++k) (turned ? w(k, r) : w(r, k)) = back[r * cols + k];
    }
    return out;
}

}  // namespace

TEST_CASE("parse_weight_dtype takes q8_0 and q4_0", "[quant][errors]") {
    CHECK(parse_weight_dtype("q8_0") == WeightDtype::Q8_0);
    CHECK(parse_weight_dtype("q4_0") == WeightDtype::Q4_0);
    CHECK(to_string(WeightDtype::Q4_0) == "q4_0");
    CHECK(is_quantized(WeightDtype::Q8_0));
    CHECK_FALSE(is_quantized(WeightDtype::F16));
    REQUIRE_THROWS_WITH(parse_weight_dtype("q4_k"), Catch::Contains("--dtype q4_k") && Catch::Contains("--dtype q8_0"));
}

TEST_CASE("the q8_0 and q4_0 matvecs equal the float32 matvec on the dequantized weights bit for bit on every target", "[quant][kernels]") {
    // in: one block, two, three, GPT-2 124M's 768 and 3072, and 6432 (x and two rows no longer fit
    // in L1: four rows at a time on AVX2 and AVX-512, kernels/dots.hpp); out odd and even; 1, 2, 5
    // and 9 rows of x; 1 and 2 threads; with a bias and without
    uint64_t seed = 1;
    for (const std::string& target : kernel_targets_supported())
        for (size_t in : {32, 64, 96, 768, 3072, 6432})
            for (size_t out : {1, 5, 17, 34})
                for (size_t B : {1, 2, 5, 9})
                    for (int threads : {1, 2}) {
                        const std::vector<float> W = random_floats(out * in, seed++, 0.3), x = random_floats(B * in, seed++),
                                                 bias = random_floats(out, seed++);
                        const std::vector<BlockQ8_0> W8 = q8(W);
                        const std::vector<BlockQ4_0> W4 = q4(W);
                        const std::vector<float> D8 = dequantized(W8), D4 = dequantized(W4);
                        std::vector<float> yq(B * out), yf(B * out);
                        golden::Threads t(threads);
                        golden::KernelTarget use(target);
                        INFO("target " << target << " out " << out << " in " << in << " B " << B << " threads " << threads);
                        for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
                            matvec_q8_0(x.data(), B, W8.data(), b, out, in, yq.data());
                            matvec(x.data(), B, D8.data(), b, out, in, yf.data());
                            CHECK(same_bits(yq.data(), yf.data(), yq.size()));
                            matvec_q4_0(x.data(), B, W4.data(), b, out, in, yq.data());
                            matvec(x.data(), B, D4.data(), b, out, in, yf.data());
                            CHECK(same_bits(yq.data(), yf.data(), yq.size()));
                        }
                    }
}

TEST_CASE("a model held in q8_0 or q4_0 gives the bits of its dequantized weights held in f32", "[quant][model]") {
    const ModelConfig& mc = golden::model().config();
    const TensorMap tensors = load_gpt2_tensors(golden::model_dir() + "/model.safetensors", mc);
    const size_t V = static_cast<size_t>(mc.vocab_size), C = static_cast<size_t>(mc.n_embd);
    const std::vector<std::string> texts = {"The cat", "A fortune:", "You will", "Q: why", "Once upon a time"};
    for (const WeightDtype dtype : {WeightDtype::Q8_0, WeightDtype::Q4_0}) {
        const Gpt2 quant = Gpt2::from_tensors(mc, tensors, dtype);
        const Gpt2 plain = Gpt2::from_tensors(mc, dequantized_tensors(tensors, mc, dtype), WeightDtype::F32);
        INFO(to_string(dtype));
        CHECK(quant.weight_dtype() == dtype);
        // 2,162,688 matrix weights in blocks of 34 or 18 bytes, and 10,560 float32 vector values
        CHECK(quant.decode_weight_bytes() == 2162688u / 32 * (dtype == WeightDtype::Q8_0 ? 34 : 18) + 10560u * 4);
        const std::vector<int> ids = golden::tokenizer().encode("The cat sat on the mat, and then it asked for a fortune.");
        const xt::xtensor<float, 2> fa = quant.forward(ids), fb = plain.forward(ids);
        CHECK(same_bits(fa.data(), fb.data(), fa.size()));
        for (const std::string& target : kernel_targets_supported())
            for (size_t B : {1, 5})
                for (int threads : {1, 2}) {
                    golden::Threads t(threads);
                    golden::KernelTarget use(target);
                    KvCache ca(mc, B, 32), cb(mc, B, 32);
                    std::vector<size_t> rows;
                    for (size_t i = 0; i < B; ++i) {
                        const xt::xtensor<float, 1> pa = quant.prefill(golden::tokenizer().encode(texts[i]), ca, i),
                                                    pb = plain.prefill(golden::tokenizer().encode(texts[i]), cb, i);
                        CHECK(same_bits(pa.data(), pb.data(), V));
                        rows.push_back(i);
                    }
                    std::vector<int> tokens(B);
                    for (int step = 0; step < 3; ++step) {
                        for (size_t i = 0; i < B; ++i) tokens[i] = static_cast<int>((step * 131 + i * 977) % V);
                        quant.decode(tokens, rows, ca);
                        plain.decode(tokens, rows, cb);
                        INFO("target " << target << " B " << B << " threads " << threads << " step " << step);
                        CHECK(same_bits(ca.logits().data(), cb.logits().data(), B * V));
                        CHECK(same_bits(ca.keys(3).data(), cb.keys(3).data(), C));
                    }
                }
    }
}

TEST_CASE("a held matrix whose rows are not whole blocks is refused with the fix", "[quant][errors]") {
    WeightTensor<2> v = WeightTensor<2>::from_shape({2, 48});
    v.fill(0.5f);
    REQUIRE_THROWS_WITH(WeightMatrix::hold(v, WeightDtype::Q4_0, "h.1.attn.c_proj.weight"),
                        Catch::Contains("h.1.attn.c_proj.weight has 48 values a row") && Catch::Contains("--dtype f16"));
    WeightTensor<2> ok = WeightTensor<2>::from_shape({3, 64});
    ok.fill(0.25f);
    const WeightMatrix m = WeightMatrix::hold(std::move(ok), WeightDtype::Q8_0, "t");
    CHECK(m.bytes() == 3 * 2 * 34);
    CHECK(m.q8_0() != nullptr);
    CHECK(m.q4_0() == nullptr);
    CHECK(m.f32() == nullptr);
    CHECK_THROWS_AS(m.transposed(), std::logic_error);
}
