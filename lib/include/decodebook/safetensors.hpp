#pragma once
/// @file safetensors.hpp
/// @brief Reading and writing the safetensors weight format (chapter 00).
///
/// Format: 8 bytes little-endian header length N, N bytes of JSON header
/// `{"name": {"dtype": "F16", "shape": [a, b], "data_offsets": [begin, end]}, ...,
/// "__metadata__": {...}}`, then the raw little-endian data. Offsets are relative to the
/// first byte after the header.
#include <map>
#include <string>

#include <xtensor/xarray.hpp>

namespace decodebook {

/// Element types this reader accepts; all are converted to float on load.
enum class DType { F32, F16, BF16 };

/// All tensors of one file, by name, converted to float32.
using TensorMap = std::map<std::string, xt::xarray<float>>;

/// Read a safetensors file and convert every tensor to float.
/// Validates the header length, the JSON, each dtype, shape and data offset against the file size.
/// Introduced in chapter 00.
/// @throws Error naming the file, the tensor and the problem when the file is malformed.
TensorMap load_safetensors(const std::string& path);

/// Write tensors to a safetensors file in the given dtype (tests and tools/ use it to make models).
/// Introduced in chapter 00.
void save_safetensors(const std::string& path, const TensorMap& tensors, DType dtype = DType::F32);

/// IEEE half (binary16) bits to float. Introduced in chapter 00.
float half_to_float(uint16_t bits);
/// Float to IEEE half bits, rounding to nearest even. Introduced in chapter 00.
uint16_t float_to_half(float value);
/// bfloat16 bits to float. Introduced in chapter 00.
float bf16_to_float(uint16_t bits);

}  // namespace decodebook
