// Chapter 00: reading the weights. See safetensors.hpp for the format.
#include "decodebook/safetensors.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/error.hpp"

namespace decodebook {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // the format's own limit is 100 MB

std::vector<char> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        throw Error("cannot open model weights '" + path + "'",
                    "check the path, or pass --model DIR with a folder holding model.safetensors");
    }
    std::vector<char> bytes(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

size_t dtype_size(const std::string& dtype) {
    if (dtype == "F32") return 4;
    if (dtype == "F16" || dtype == "BF16") return 2;
    return 0;
}

uint16_t load_u16(const char* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

}  // namespace

float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {  // inf or nan
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {  // normal
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {  // zero
        bits = sign;
    } else {  // subnormal: renormalise
        uint32_t e = 113;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float value) {
    const uint32_t f = std::bit_cast<uint32_t>(value);
    const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
    const uint32_t abs = f & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {  // subnormal half (or zero)
        const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
    }
    uint32_t bits = abs - 0x38000000u;  // rebias exponent 127 -> 15
    bits += 0xfffu + ((bits >> 13) & 1u);  // round to nearest even
    return static_cast<uint16_t>(sign | (bits >> 13));
}

float bf16_to_float(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

TensorMap load_safetensors(const std::string& path) {
    const std::vector<char> file = read_file(path);
    const auto bad = [&](const std::string& problem) {
        return Error("'" + path + "' is not a valid safetensors file: " + problem,
                     "re-export the weights (models/training/train_model.py writes this format) "
                     "or point --model at a folder with a good model.safetensors");
    };
    if (file.size() < 8) throw bad("it is shorter than the 8-byte header length");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(file[i]);
    if (header_len > kMaxHeader || header_len > file.size() - 8) {
        throw bad("header length " + std::to_string(header_len) + " is larger than the file (" +
                  std::to_string(file.size()) + " bytes)");
    }
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + static_cast<long>(header_len));
    } catch (const nlohmann::json::exception& e) {
        throw bad(std::string("its header is not JSON (") + e.what() + ")");
    }
    if (!header.is_object()) throw bad("its header is not a JSON object");
    const char* data = file.data() + 8 + header_len;
    const uint64_t data_size = file.size() - 8 - header_len;

    TensorMap tensors;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__") continue;
        const std::string where = "tensor '" + name + "': ";
        if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
            !info.contains("data_offsets")) {
            throw bad(where + "needs dtype, shape and data_offsets");
        }
        if (!info["dtype"].is_string()) throw bad(where + "dtype is not a string");
        const std::string dtype = info["dtype"].get<std::string>();
        const size_t width = dtype_size(dtype);
        if (width == 0) throw bad(where + "dtype " + dtype + " is not supported (only F32, F16, BF16)");
        const auto& shape_json = info["shape"];
        const auto& offsets = info["data_offsets"];
        if (!shape_json.is_array()) throw bad(where + "shape is not an array");
        std::vector<size_t> shape;
        uint64_t count = 1;
        for (const auto& d : shape_json) {
            if (!d.is_number_unsigned()) throw bad(where + "shape has a non-integer or negative dimension");
            const uint64_t dim = d.get<uint64_t>();
            if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / 8 / dim) {
                throw bad(where + "shape is impossibly large");
            }
            count *= dim;
            shape.push_back(static_cast<size_t>(dim));
        }
        if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
            !offsets[1].is_number_unsigned()) {
            throw bad(where + "data_offsets must be two non-negative integers");
        }
        const uint64_t begin = offsets[0].get<uint64_t>();
        const uint64_t end = offsets[1].get<uint64_t>();
        if (begin > end || end > data_size) {
            throw bad(where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "] fall outside the " + std::to_string(data_size) + " data bytes");
        }
        if (end - begin != count * width) {
            throw bad(where + "data_offsets cover " + std::to_string(end - begin) + " bytes but shape and " +
                      dtype + " need " + std::to_string(count * width));
        }
        xt::xarray<float> t = xt::xarray<float>::from_shape(shape);
        float* out = t.data();
        const char* src = data + begin;
        for (uint64_t i = 0; i < count; ++i) {
            if (width == 4) {
                std::memcpy(out + i, src + 4 * i, 4);
            } else if (dtype == "F16") {
                out[i] = half_to_float(load_u16(src + 2 * i));
            } else {
                out[i] = bf16_to_float(load_u16(src + 2 * i));
            }
        }
        tensors.emplace(name, std::move(t));
    }
    return tensors;
}

void save_safetensors(const std::string& path, const TensorMap& tensors, DType dtype) {
    const size_t width = dtype == DType::F32 ? 4 : 2;
    const char* name = dtype == DType::F32 ? "F32" : dtype == DType::F16 ? "F16" : "BF16";
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const auto& [key, t] : tensors) {
        const uint64_t bytes = t.size() * width;
        header[key] = {{"dtype", name},
                       {"shape", std::vector<size_t>(t.shape().begin(), t.shape().end())},
                       {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    header["__metadata__"] = {{"format", "pt"}, {"producer", "decodebook save_safetensors"}};
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error("cannot write '" + path + "'", "check that the folder exists and is writable");
    uint64_t n = text.size();
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xffu);
    out.write(len, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<char> buffer;
    for (const auto& [key, t] : tensors) {
        buffer.resize(t.size() * width);
        for (size_t i = 0; i < t.size(); ++i) {
            const float v = t.data()[i];
            if (width == 4) {
                std::memcpy(buffer.data() + 4 * i, &v, 4);
            } else {
                const uint16_t h = dtype == DType::F16
                                       ? float_to_half(v)
                                       : static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
                std::memcpy(buffer.data() + 2 * i, &h, 2);
            }
        }
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    }
    if (!out) throw Error("writing '" + path + "' failed", "check free disk space");
}

}  // namespace decodebook
