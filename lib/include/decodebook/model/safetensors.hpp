#pragma once
/// @file model/safetensors.hpp
/// @brief Reading and writing the safetensors weight format (chapter 00).
///
/// Format: 8 bytes little-endian header length N, N bytes of JSON header
/// `{"name": {"dtype": "F16", "shape": [a, b], "data_offsets": [begin, end]}, ...,
/// "__metadata__": {...}}`, then the raw little-endian data. Offsets are relative to the
/// first byte after the header; the tensors' byte ranges lie back to back, covering the data
/// exactly (as the format's reference implementation requires).
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "decodebook/model/weights.hpp"

namespace decodebook {

struct ModelConfig;

/// Element types this reader converts to float32 on load. Introduced in chapter 00.
enum class DType { F32, F16, BF16 };

/// All tensors of one file, by name, converted to float32 (in the weights' memory,
/// model/weights.hpp). Introduced in chapter 00.
using TensorMap = std::map<std::string, WeightArray>;

/// One tensor as the header describes it (nothing read yet). Introduced in chapter 00.
struct TensorEntry {
    std::string name;           ///< as in the file, e.g. "transformer.h.0.attn.c_attn.weight"
    std::string dtype;          ///< the file's spelling: "F32", "F16", "BF16", or another (e.g. "U8")
    std::vector<size_t> shape;  ///< dimensions, outermost first
    uint64_t count = 0;         ///< number of elements (product of shape)
    uint64_t begin = 0;         ///< first data byte, relative to the end of the header
    uint64_t end = 0;           ///< one past the last data byte
    /// True when this reader converts the dtype (F32, F16, BF16).
    bool readable() const { return dtype == "F32" || dtype == "F16" || dtype == "BF16"; }
};

/// An open safetensors file: the header is read and checked on opening, the data only when a
/// tensor is read, straight into the caller's float buffer (F32) or through a small fixed
/// chunk (F16, BF16): loading never holds the whole file in memory. Introduced in chapter 00.
class SafetensorsFile {
public:
    /// Open `path` and validate its header: the header length against the file size, the JSON,
    /// every dtype, shape (overflow-safe) and data range, and that the ranges neither overlap
    /// nor leave gaps. Nothing is allocated from an unchecked size.
    /// @throws Error naming the file, the tensor and the problem.
    explicit SafetensorsFile(const std::string& path);

    /// The file's path.
    const std::string& path() const { return path_; }
    /// Every tensor, in the order of its data in the file.
    const std::vector<TensorEntry>& entries() const { return entries_; }
    /// The tensor called `name`, or nullptr.
    const TensorEntry* find(const std::string& name) const;
    /// Convert elements [first, first + n) of one tensor to float32 into `out` (n floats) and
    /// check that every value is finite.
    /// @throws Error on an unsupported dtype, a short read or a NaN/Inf value (tensor and element named).
    void read(const TensorEntry& entry, float* out, uint64_t first, uint64_t n);
    /// One tensor as a new float32 array of its shape (see read()).
    WeightArray read(const TensorEntry& entry);
    /// Elements [first, first + n) of one tensor as binary16 bits into `out` (n values): F16 as
    /// stored, F32 and BF16 rounded to the nearest binary16 (ties to even). Introduced in chapter 07.
    /// @throws Error as read() does, and when a value is beyond binary16's range (tensor and element named).
    void read_halves(const TensorEntry& entry, uint16_t* out, uint64_t first, uint64_t n);

private:
    std::string path_;
    std::ifstream in_;
    uint64_t data_start_ = 0;  // file offset of the first data byte
    std::vector<TensorEntry> entries_;
};

/// Read a safetensors file and convert every tensor to float.
/// Validates as SafetensorsFile does, refuses a dtype other than F32, F16 and BF16, and refuses
/// NaN or Inf values, naming the tensor. Peak memory: the float32 tensors plus a small chunk.
/// Introduced in chapter 00.
/// @throws Error naming the file, the tensor and the problem when the file is malformed.
TensorMap load_safetensors(const std::string& path);

/// Read the tensors of a GPT-2 with this config (gpt2_tensor_schema, names with or without
/// Hugging Face's "transformer." prefix) into float32, keyed by their schema names.
/// Every tensor is checked against config.json's shape before anything is allocated.
/// The rule for the file's other tensors: the causal-mask buffers GPT-2 checkpoints carry
/// (`h.N.attn.bias`, `h.N.attn.masked_bias`, any dtype, e.g. U8 or BOOL) are skipped, and so is
/// `lm_head.weight` once checked equal to `wte.weight` (GPT-2 ties them); each skipped tensor is
/// named on the load notes (set_load_notes, `--verbose`). Any other tensor is an error naming it
/// (a file with more blocks than `n_layer`, or weights of another architecture).
/// Introduced in chapter 00.
/// @throws Error naming the tensor and the problem.
TensorMap load_gpt2_tensors(const std::string& path, const ModelConfig& config);

/// A GPT-2 checkpoint read for the model: the matrices decode streams (TensorSpec::held, wte and
/// each block's four) in one dtype, every other tensor in float32. Introduced in chapter 07.
struct Gpt2Weights {
    /// Every tensor not in `matrices`, float32, by schema name (all of them when dtype is F32).
    TensorMap tensors;
    /// The held matrices in binary16 (dtype F16), by schema name; empty when dtype is F32.
    std::map<std::string, HalfVector> matrices;
    WeightDtype dtype = WeightDtype::F32;  ///< how the held matrices are kept
};

/// load_gpt2_tensors() with the held matrices in `dtype`: F16 keeps an F16 checkpoint's bits as
/// they are (one copy, never widened) and rounds F32 or BF16 values once, chunk by chunk, to the
/// nearest binary16; F32 widens. Without a dtype, the checkpoint's own: F16 when every held
/// matrix is stored F16, else F32 (F32 and BF16 load as f32). Introduced in chapter 07.
/// @throws Error as load_gpt2_tensors does, and when an F32 value does not fit binary16.
Gpt2Weights load_gpt2_weights(const std::string& path, const ModelConfig& config,
                              std::optional<WeightDtype> dtype = std::nullopt);

/// Where the loaders note what they skip (one line each, e.g. "note: skipped tensor ..."):
/// nullptr (the default) for nowhere; the programs' `--verbose` sets it to standard error.
/// Introduced in chapter 00.
void set_load_notes(std::ostream* out);

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
