// The safetensors reader (chapter 00): conversions, round trips and every malformed-file error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "decodebook/base/error.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/model/config.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/safetensors.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

// A file made by hand: 8-byte length, the header text as given, then `data`.
std::string raw_file(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string load_error(const std::string& bytes) {
    golden::TempDir dir;
    golden::write_file(dir.file("m.safetensors"), bytes);
    try {
        load_safetensors(dir.file("m.safetensors"));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// The file's bytes of `tensors` as save_safetensors writes them.
std::string saved_bytes(const TensorMap& tensors, DType dtype = DType::F32) {
    golden::TempDir dir;
    save_safetensors(dir.file("t.safetensors"), tensors, dtype);
    std::ifstream in(dir.file("t.safetensors"), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The error load_gpt2_tensors gives for these tensors under this config, or "(no error)".
std::string gpt2_error(const ModelConfig& c, const TensorMap& tensors) {
    golden::TempDir dir;
    save_safetensors(dir.file("m.safetensors"), tensors);
    try {
        load_gpt2_tensors(dir.file("m.safetensors"), c);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

ModelConfig tiny_config(int n_layer = 2) {
    ModelConfig c;
    c.vocab_size = 10; c.n_positions = 8; c.n_embd = 4; c.n_layer = n_layer; c.n_head = 2; c.eos_token_id = 9;
    return c;
}

std::string config_error(const std::string& json) {
    golden::TempDir dir;
    golden::write_file(dir.file("config.json"), json);
    try {
        load_config(dir.file("config.json"));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("half floats convert exactly", "[safetensors]") {
    CHECK(half_to_float(0x3C00) == 1.0f);
    CHECK(half_to_float(0xC000) == -2.0f);
    CHECK(half_to_float(0x7BFF) == 65504.0f);
    CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
    CHECK(half_to_float(0x8000) == 0.0f);
    CHECK(std::signbit(half_to_float(0x8000)));
    CHECK(std::isinf(half_to_float(0x7C00)));
    CHECK(std::isnan(half_to_float(0x7E00)));
    CHECK(bf16_to_float(0x3F80) == 1.0f);
    CHECK(bf16_to_float(0xC040) == -3.0f);
    CHECK(float_to_half(1.0f / 3.0f) == 0x3555);  // rounds to nearest
    CHECK(float_to_half(1e6f) == 0x7C00);         // overflow to inf
}

TEST_CASE("every finite half survives a round trip through float", "[safetensors]") {
    int mismatches = 0;
    for (uint32_t h = 0; h < 0x10000; ++h) {
        if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0) continue;  // NaN payloads
        if (float_to_half(half_to_float(static_cast<uint16_t>(h))) != h) ++mismatches;
    }
    CHECK(mismatches == 0);
}

TEST_CASE("tensors round-trip through F32 F16 and BF16 files", "[safetensors]") {
    golden::TempDir dir;
    TensorMap in;
    in.emplace("a.weight", xt::xarray<float>{{1.0f, -2.5f, 0.125f}, {3.0f, 0.0f, -0.5f}});
    in.emplace("b", xt::xarray<float>{7.0f});
    for (DType d : {DType::F32, DType::F16, DType::BF16}) {
        save_safetensors(dir.file("t.safetensors"), in, d);
        const TensorMap out = load_safetensors(dir.file("t.safetensors"));
        REQUIRE(out.size() == 2);
        CHECK(out.at("a.weight").shape() == in.at("a.weight").shape());
        CHECK((out.at("a.weight") == in.at("a.weight")));  // all values are exact in every dtype
        CHECK(out.at("b")(0) == 7.0f);
    }
}

TEST_CASE("a missing weights file names the path and the fix", "[safetensors][errors]") {
    REQUIRE_THROWS_WITH(load_safetensors("/nonexistent/model.safetensors"),
                        Catch::Contains("cannot open model weights") && Catch::Contains("--model"));
}

TEST_CASE("malformed safetensors files give clear errors", "[safetensors][errors]") {
    const std::string four_floats(16, '\0');
    const std::string good = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
    CHECK(load_error(raw_file(good, four_floats)) == "(no error)");
    CHECK_THAT(load_error("abc"), Catch::Contains("shorter than the 8-byte header"));
    CHECK_THAT(load_error(raw_file(good, four_floats).substr(0, 20)), Catch::Contains("larger than the file"));
    CHECK_THAT(load_error(raw_file("{not json", "")), Catch::Contains("not JSON"));
    CHECK_THAT(load_error(raw_file("[1, 2]", "")), Catch::Contains("not a JSON object"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", four_floats)),
               Catch::Contains("needs dtype, shape and data_offsets"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", four_floats)),
               Catch::Contains("dtype I64 is not supported"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four_floats)),
               Catch::Contains("negative dimension"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", four_floats)),
               Catch::Contains("fall outside the 16 data bytes"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", four_floats)),
               Catch::Contains("need 12"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", four_floats)),
               Catch::Contains("fall outside"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", four_floats)),
               Catch::Contains("two non-negative integers"));
    CHECK_THAT(load_error(std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}"),
               Catch::Contains("larger than the file"));
}

TEST_CASE("absurd sizes in a safetensors header are refused before any allocation", "[safetensors][errors]") {
    // A zero-element tensor with a 2^63 dimension (it used to overflow inside xtensor) ...
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[0,9223372036854775808],"data_offsets":[0,0]}})", "")),
               Catch::Contains("tensor 'w': shape [0,9223372036854775808] is impossibly large"));
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})", "")),
               Catch::Contains("impossibly large"));
    // ... while an ordinary empty tensor is fine.
    CHECK(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[0,768],"data_offsets":[0,0]}})", "")) == "(no error)");
    // A header length of 2^63 (it used to reach an allocation of that size).
    CHECK_THAT(load_error(std::string("\0\0\0\0\0\0\0\x80", 8) + "{}"),
               Catch::Contains("header length 9223372036854775808 is larger than the file (10 bytes)"));
}

TEST_CASE("tensors whose data overlap or leave gaps are refused", "[safetensors][errors]") {
    const std::string eight_floats(32, '\0');
    CHECK_THAT(load_error(raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                   R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", eight_floats.substr(0, 24))),
               Catch::Contains("tensors 'a' and 'b' overlap (data bytes [0, 16) and [8, 24))"));
    CHECK_THAT(load_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})", eight_floats.substr(0, 24))),
               Catch::Contains("data bytes [8, 16) belong to no tensor"));
    CHECK_THAT(load_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight_floats)),
               Catch::Contains("the last 24 of its 32 data bytes belong to no tensor"));
    CHECK(load_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[6],"data_offsets":[8,32]}})", eight_floats)) == "(no error)");
}

TEST_CASE("dtypes this reader does not convert are named", "[safetensors][errors]") {
    CHECK_THAT(load_error(raw_file(R"({"m":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", "abcd")),
               Catch::Contains("tensor 'm': dtype U8 is not supported (only F32, F16, BF16)"));
    CHECK_THAT(load_error(raw_file(R"({"m":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}})", "abcd")),
               Catch::Contains("tensor 'm': dtype Q4 is not a safetensors dtype"));
}

TEST_CASE("NaN and infinite weights are named with their tensor and element", "[safetensors][errors]") {
    for (DType d : {DType::F32, DType::F16, DType::BF16}) {
        TensorMap t;
        t.emplace("fine", xt::xarray<float>{1.0f, 2.0f});
        t.emplace("h.1.mlp.c_fc.weight", xt::xarray<float>{{0.5f, 0.25f}, {std::nanf(""), 1.0f}});
        t.emplace("z", xt::xarray<float>{0.0f, -std::numeric_limits<float>::infinity()});
        const std::string bytes = saved_bytes(t, d);
        CHECK_THAT(load_error(bytes), Catch::Contains("tensor 'h.1.mlp.c_fc.weight' holds NaN at element 2 (of 4)") &&
                                          Catch::Contains("fix: "));
        t.erase("h.1.mlp.c_fc.weight");
        CHECK_THAT(load_error(saved_bytes(t, d)), Catch::Contains("tensor 'z' holds an infinity at element 1 (of 2)"));
    }
}

TEST_CASE("a folder or a device given as the weights file is refused without reading it", "[safetensors][errors]") {
    golden::TempDir dir;
    std::filesystem::create_directory(dir.file("model.safetensors"));
    CHECK_THROWS_WITH(load_safetensors(dir.file("model.safetensors")), Catch::Contains("is a folder, not a file"));
    CHECK_THROWS_WITH(load_safetensors("/dev/zero"), Catch::Contains("'/dev/zero' is not a regular file"));
    std::filesystem::create_symlink("loop", dir.file("loop"));
    CHECK_THROWS_WITH(load_safetensors(dir.file("loop")), Catch::Contains("cannot open model weights") &&
                                                               Catch::Contains("symbolic links"));
}

TEST_CASE("F16 and BF16 tensors longer than the conversion chunk load exactly", "[safetensors]") {
    // 100,003 values: three full chunks of 32,768 and a partial one; every value (7 significant bits)
    // is exact in half and in bfloat16.
    xt::xarray<float> big = xt::xarray<float>::from_shape({100003});
    for (size_t i = 0; i < big.size(); ++i) big(i) = static_cast<float>(static_cast<int>(i % 255) - 127) / 2.0f;
    TensorMap in;
    in.emplace("big", big);
    for (DType d : {DType::F16, DType::BF16}) {
        golden::TempDir dir;
        save_safetensors(dir.file("t.safetensors"), in, d);
        const TensorMap out = load_safetensors(dir.file("t.safetensors"));
        CHECK((out.at("big") == big));
    }
    // A range read starts and ends mid-chunk.
    golden::TempDir dir;
    save_safetensors(dir.file("t.safetensors"), in, DType::F16);
    SafetensorsFile file(dir.file("t.safetensors"));
    std::vector<float> part(40000);
    file.read(*file.find("big"), part.data(), 50000, part.size());
    CHECK(part.front() == big(50000));
    CHECK(part.back() == big(89999));
}

TEST_CASE("load_gpt2_tensors reads the schema's tensors with or without the transformer prefix", "[safetensors][gpt2]") {
    const ModelConfig c = tiny_config();
    const TensorMap t = random_gpt2_tensors(c, 5);
    TensorMap prefixed;
    for (const auto& [name, value] : t) prefixed.emplace("transformer." + name, value);
    golden::TempDir dir;
    save_safetensors(dir.file("m.safetensors"), prefixed);
    const TensorMap out = load_gpt2_tensors(dir.file("m.safetensors"), c);
    REQUIRE(out.size() == t.size());
    for (const auto& [name, value] : t) CHECK((out.at(name) == value));
}

TEST_CASE("a file with more blocks than n_layer is refused with both counts", "[safetensors][gpt2][errors]") {
    const TensorMap four = random_gpt2_tensors(tiny_config(4), 5);
    CHECK_THAT(gpt2_error(tiny_config(2), four),
               Catch::Contains("holds blocks h.0 to h.3 (4 layers) but config.json says n_layer 2") &&
                   Catch::Contains("set n_layer to 4"));
    CHECK_THAT(gpt2_error(tiny_config(4), random_gpt2_tensors(tiny_config(2), 5)),
               Catch::Contains("no tensor 'h.2.ln_1.weight'"));
}

TEST_CASE("tensors a GPT-2 does not use are named", "[safetensors][gpt2][errors]") {
    TensorMap t = random_gpt2_tensors(tiny_config(), 5);
    t.emplace("h.0.attn.rotary.inv_freq", xt::xarray<float>{1.0f, 2.0f});
    t.emplace("score.weight", xt::xarray<float>{1.0f});
    CHECK_THAT(gpt2_error(tiny_config(), t),
               Catch::Contains("holds 2 tensors a GPT-2 does not use: 'h.0.attn.rotary.inv_freq', 'score.weight'"));
}

TEST_CASE("causal-mask buffers in any dtype and a tied lm_head are skipped and noted", "[safetensors][gpt2]") {
    const ModelConfig c = tiny_config();
    TensorMap t = random_gpt2_tensors(c, 5);
    t.emplace("lm_head.weight", t.at("wte.weight"));
    golden::TempDir dir;
    // Splice a U8 "h.0.attn.bias" (as older HF checkpoints store the mask) and a BOOL masked_bias
    // into the header; their bytes go at the end of the data.
    std::string bytes = saved_bytes(t);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
    nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
    uint64_t end = 0;
    for (const auto& [name, info] : header.items())
        if (name != "__metadata__") end = std::max(end, info["data_offsets"][1].get<uint64_t>());
    header["h.0.attn.bias"] = {{"dtype", "U8"}, {"shape", {1, 1, 8, 8}}, {"data_offsets", {end, end + 64}}};
    header["h.1.attn.masked_bias"] = {{"dtype", "BOOL"}, {"shape", {1}}, {"data_offsets", {end + 64, end + 65}}};
    golden::write_file(dir.file("m.safetensors"),
                       raw_file(header.dump(), bytes.substr(8 + n) + std::string(65, '\1')));
    std::ostringstream notes;
    set_load_notes(&notes);
    const TensorMap out = load_gpt2_tensors(dir.file("m.safetensors"), c);
    set_load_notes(nullptr);
    CHECK(out.count("lm_head.weight") == 0);
    CHECK(out.count("h.0.attn.bias") == 0);
    CHECK((out.at("h.1.mlp.c_fc.weight") == t.at("h.1.mlp.c_fc.weight")));
    CHECK_THAT(notes.str(), Catch::StartsWith("note: ") && Catch::Contains("skipped 3 tensors") &&
                                Catch::Contains("h.0.attn.bias (U8 (1, 1, 8, 8), a causal mask)") &&
                                Catch::Contains("h.1.attn.masked_bias (BOOL (1), a causal mask)") &&
                                Catch::Contains("lm_head.weight (checked equal to wte.weight"));
    // Without notes asked for, nothing is written anywhere (and loading still works).
    CHECK_NOTHROW(load_gpt2_tensors(dir.file("m.safetensors"), c));
    // An untied lm_head is not a GPT-2's: refused rather than silently replaced by wte.
    t["lm_head.weight"](3, 1) += 1.0f;
    CHECK_THAT(gpt2_error(c, t), Catch::Contains("lm_head.weight differs from wte.weight"));
}

TEST_CASE("a needed tensor in an unsupported dtype or the wrong shape is named", "[safetensors][gpt2][errors]") {
    const ModelConfig c = tiny_config();
    TensorMap t = random_gpt2_tensors(c, 5);
    t["h.0.attn.c_attn.weight"] = xt::zeros<float>({12, 4});
    CHECK_THAT(gpt2_error(c, t), Catch::Contains("tensor 'h.0.attn.c_attn.weight' has shape (12, 4) but config.json implies (4, 12)"));
}

TEST_CASE("config.json values are checked as the model stores them", "[config][errors]") {
    const std::string base = R"("vocab_size": 10, "n_positions": 8, "n_embd": 4, "n_layer": 1, "n_head": 2)";
    CHECK(config_error("{" + base + "}") == "(no error)");
    CHECK(config_error("{" + base + R"(, "n_inner": null, "eos_token_id": 9, "layer_norm_epsilon": 1e-5})") == "(no error)");
    CHECK_THAT(config_error("[1, 2]"), Catch::Contains("is not a JSON object"));
    CHECK_THAT(config_error("{" + base + R"(, "n_inner": 100})"), Catch::Contains("n_inner 100 is not supported"));
    CHECK(config_error("{" + base + R"(, "n_inner": 16})") == "(no error)");
    CHECK_THAT(config_error("{" + base + R"(, "layer_norm_epsilon": 1e-50})"),
               Catch::Contains("layer_norm_epsilon 1e-50 must be a number in [1.2e-38, 1]"));
    CHECK_THAT(config_error("{" + base + R"(, "layer_norm_epsilon": 1e300})"), Catch::Contains("layer_norm_epsilon 1e+300"));
    CHECK_THAT(config_error("{" + base + R"(, "eos_token_id": "9"})"),
               Catch::Contains("eos_token_id \"9\" must be a whole number in [0, 9]"));
    CHECK_THAT(config_error("{" + base + R"(, "eos_token_id": 10})"), Catch::Contains("eos_token_id 10 must be"));
    CHECK_THAT(config_error(R"({"vocab_size": 10, "n_positions": 8, "n_embd": 4, "n_layer": 5000, "n_head": 2})"),
               Catch::Contains("'n_layer' is 5000 but must be a whole number in [1, 1024]"));
    CHECK_THAT(config_error(R"({"vocab_size": 18446744073709551615, "n_positions": 8, "n_embd": 4, "n_layer": 1, "n_head": 2})"),
               Catch::Contains("'vocab_size' is 18446744073709551615"));
    CHECK_THAT(config_error("{" + base + R"(, "tie_word_embeddings": false})"), Catch::Contains("tie_word_embeddings false is not supported"));
    CHECK_THAT(config_error("{" + base + R"(, "n_ctx": 16})"), Catch::Contains("n_ctx 16 differs from n_positions 8"));
    golden::TempDir dir;
    std::filesystem::create_directory(dir.file("config.json"));
    CHECK_THROWS_WITH(load_config(dir.file("config.json")), Catch::Contains("is a folder, not a file"));
}

TEST_CASE("deeply nested JSON in a header or config.json gives an error and no stack overflow", "[safetensors][config][errors]") {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    CHECK_THAT(load_error(raw_file(R"({"w":{"dtype":"F32","shape":[1,)" + deep + R"(],"data_offsets":[0,4]}})", "abcd")),
               Catch::Contains("shape has a non-integer or negative dimension"));
    const std::string base = R"("vocab_size": 10, "n_positions": 8, "n_embd": 4, "n_head": 2)";
    CHECK_THAT(config_error("{" + base + R"(, "n_layer": )" + deep + "}"),
               Catch::Contains("'n_layer' is an array but must be a whole number in [1, 1024]"));
    CHECK_THAT(config_error("{" + base + R"(, "n_layer": 1, "n_ctx": )" + deep + "}"),
               Catch::Contains("n_ctx an array differs from n_positions 8"));
    CHECK_THAT(config_error("{" + base + R"(, "n_layer": 1, "activation_function": ")" + std::string(5000, 'x') + "\"}"),
               Catch::Contains("activation_function \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... is not supported"));
}
