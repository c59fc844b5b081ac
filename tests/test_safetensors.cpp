// The safetensors reader (chapter 00): conversions, round trips and every malformed-file error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "decodebook/error.hpp"
#include "decodebook/safetensors.hpp"
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
