#pragma once
/// @file model/weights.hpp
/// @brief Where the model's weights live: memory the decode kernels read fastest (chapter 07).
///
/// Decoding a token reads every weight once. With the usual 4 KiB pages, GPT-2 small's 495 MB are
/// some 120,000 pages whose addresses the processor translates again at every token, and its
/// hardware prefetcher stops at every page boundary. WeightAllocator puts each tensor of 2 MiB or
/// more at a 2 MiB boundary and asks Linux for transparent huge pages there (`madvise`), so the
/// same weights sit in about 240 pages. It is a hint: where the kernel gives no huge pages the
/// memory is ordinary (decodebook-bench's decode figures, README "Speed", show what it changes).
/// Smaller tensors, and every tensor in a sanitizer build (so that AddressSanitizer
/// still checks them), come from `operator new`.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "decodebook/model/quant.hpp"

namespace decodebook {

/// Allocate `bytes` for weights: from 2 MiB on, a mapping of its own that starts at a 2 MiB
/// boundary, with huge pages asked for; below, operator new. Introduced in chapter 07.
/// @throws std::bad_alloc when the memory is not there.
void* allocate_weights(size_t bytes);

/// Give back what allocate_weights(bytes) returned, with the same `bytes`. Introduced in chapter 07.
void free_weights(void* p, size_t bytes) noexcept;

/// One mapping that the matrices transposed into it fill one after another (WeightMatrix::
/// transposed(arena)): Gpt2::build puts the 48 block matrices there in the order decode reads them,
/// so decode streams them as one run of 2 MiB pages. A matrix in a mapping of its own ends in a
/// tail of 4 KiB pages, where the hardware prefetcher stops at every page: GPT-2 124M's products
/// read at 90.8 % of a plain read that way and at 97.1 % from one mapping (docs/measurements.md).
/// The mapping lives until the arena and every matrix in it are gone; a matrix that does not fit,
/// and every matrix in a sanitizer build, is allocated as allocate_weights does.
/// Introduced in chapter 07.
class WeightArena {
public:
    /// Reserves `bytes` of address space (pages are only made when written).
    /// @throws std::bad_alloc when the mapping cannot be made.
    explicit WeightArena(size_t bytes);
    ~WeightArena();
    WeightArena(const WeightArena&) = delete;
    WeightArena& operator=(const WeightArena&) = delete;
    /// The mapping's bookkeeping, private to weights.cpp.
    struct Mapping;

private:
    friend class WeightMatrix;
    Mapping* mapping_ = nullptr;  // null in a sanitizer build, or for 0 bytes
};

/// A standard allocator over allocate_weights: the model's tensors use it, so the loader reads
/// each one straight into its final memory. Introduced in chapter 07.
template <class T>
struct WeightAllocator {
    using value_type = T;  ///< what it allocates
    WeightAllocator() noexcept = default;
    /// Allocators of every type are interchangeable (there is no state).
    template <class U>
    WeightAllocator(const WeightAllocator<U>&) noexcept {}
    /// Memory for n values. @param n how many
    T* allocate(size_t n) { return static_cast<T*>(allocate_weights(n * sizeof(T))); }
    /// Give back what allocate(n) returned. @param p the memory @param n the same n
    void deallocate(T* p, size_t n) noexcept { free_weights(p, n * sizeof(T)); }
    /// Always equal: memory from one can be freed by another.
    template <class U>
    bool operator==(const WeightAllocator<U>&) const noexcept {
        return true;
    }
};

/// A weight tensor of any rank (the loader's): float32 in WeightAllocator's memory.
/// Introduced in chapter 00; its memory in chapter 07.
using WeightArray = xt::xarray<float, xt::layout_type::row_major, WeightAllocator<float>>;

/// A weight tensor of rank N (the model's), in the same memory as WeightArray, so the loader's
/// tensors move into the model without a copy. Introduced in chapter 00; its memory in chapter 07.
template <size_t N>
using WeightTensor = xt::xtensor<float, N, xt::layout_type::row_major, WeightAllocator<float>>;

/// How the model holds its large matrices (the four of each block and wte): float32, or IEEE
/// binary16 ("f16", "half") bits that decode's kernels widen in registers. GPT-2 checkpoints are
/// often stored in f16; widening f16 to f32 is exact, so an f16 checkpoint held as f16 gives the
/// same logits, bit for bit, as held as f32, from half the bytes. Introduced in chapter 07.
/// Chapter 13 adds ggml's block formats (model/quant.hpp): each row of 32k weights as k blocks of
/// 32 small integers and one binary16 scale, quantized once at load; decode dequantizes them in
/// registers (exactly: q d is a float32 value) and sums in float32 in the f32 kernels' order.
enum class WeightDtype {
    F32,   ///< 4 bytes per weight
    F16,   ///< 2 bytes per weight: binary16 bits, widened exactly when read
    Q8_0,  ///< 34 bytes per 32 weights (8.5 bits): ggml's q8_0 blocks. Introduced in chapter 13.
    Q4_0,  ///< 18 bytes per 32 weights (4.5 bits): ggml's q4_0 blocks. Introduced in chapter 13.
};

/// "f32", "f16", "q8_0" or "q4_0" (the spelling of `--dtype`). Introduced in chapter 07.
std::string to_string(WeightDtype dtype);

/// Whether `dtype` is one of ggml's block formats (q8_0, q4_0). Introduced in chapter 13.
inline bool is_quantized(WeightDtype dtype) { return dtype == WeightDtype::Q8_0 || dtype == WeightDtype::Q4_0; }

/// `--dtype`'s value: "f32", "f16", "q8_0" or "q4_0". Introduced in chapter 07.
/// @throws Error naming the value and the ones that are accepted.
WeightDtype parse_weight_dtype(const std::string& text);

/// binary16 bits in the weights' memory. Introduced in chapter 07.
using HalfVector = std::vector<uint16_t, WeightAllocator<uint16_t>>;

/// Quantized blocks (BlockQ8_0 or BlockQ4_0, ggml's layout) as bytes in the weights' memory.
/// Introduced in chapter 13.
using BlockVector = std::vector<uint8_t, WeightAllocator<uint8_t>>;

/// One weight matrix (rows, cols), row-major, held in one dtype: float32 (a WeightTensor<2>) or
/// binary16 bits (a HalfVector), never both: one copy of the weights. Introduced in chapter 07.
class WeightMatrix {
public:
    WeightMatrix() = default;
    /// Hold float32 values as they are. @param values (rows, cols)
    explicit WeightMatrix(WeightTensor<2> values);
    /// Hold binary16 bits (row-major, rows x cols of them).
    /// @throws std::invalid_argument when bits.size() != rows * cols.
    WeightMatrix(size_t rows, size_t cols, HalfVector bits);
    /// Hold float32 values in `dtype`: as they are, rounded once to the nearest binary16 (ties
    /// to even), or quantized row by row (quantized(); chapter 13). Introduced in chapter 07.
    /// @param values (rows, cols)
    /// @param dtype how to hold them
    /// @param name the tensor's name, for the error
    /// @throws Error when a value is beyond binary16's range (65504 rounds to infinity there) or
    /// not finite, naming the tensor and the element.
    static WeightMatrix hold(WeightTensor<2> values, WeightDtype dtype, const std::string& name);

    WeightDtype dtype() const { return dtype_; }  ///< how the values are held
    size_t rows() const { return rows_; }          ///< the first dimension
    size_t cols() const { return cols_; }          ///< the second dimension
    size_t size() const { return rows_ * cols_; }  ///< rows x cols
    /// Bytes of memory the values take: 4 or 2 per weight, 34 or 18 per block of 32.
    uint64_t bytes() const;
    /// The float32 values (rows, cols), or nullptr when held otherwise.
    const float* f32() const { return dtype_ == WeightDtype::F32 ? f32_.data() : nullptr; }
    /// The binary16 bits (rows, cols), or nullptr when held otherwise.
    const uint16_t* f16() const { return dtype_ == WeightDtype::F16 ? f16_.data() : nullptr; }
    /// The q8_0 blocks (rows, cols / 32), or nullptr when held otherwise. Introduced in chapter 13.
    const BlockQ8_0* q8_0() const;
    /// The q4_0 blocks (rows, cols / 32), or nullptr when held otherwise. Introduced in chapter 13.
    const BlockQ4_0* q4_0() const;
    /// The same values held (cols, rows), in the same dtype: how the loader turns Hugging Face's
    /// Conv1D matrices (in, out) into the (out, in) that decode's kernels read as dot products.
    /// @param arena where to put them (the next bytes of its mapping), or null for a mapping of
    /// their own. Introduced in chapter 07.
    /// @throws std::logic_error when held in blocks (a block's 32 weights lie along a row).
    WeightMatrix transposed(WeightArena* arena = nullptr) const;
    /// float32 values quantized row by row into ggml's blocks: each row of cols weights becomes
    /// cols / 32 blocks (model/quant.hpp). Introduced in chapter 13.
    /// @param dtype the blocks: WeightDtype::Q8_0 or WeightDtype::Q4_0
    /// @param name the tensor's name, for the error
    /// @param arena where to put the blocks, or null for a mapping of their own
    /// @throws Error naming `name` when cols is not a multiple of 32 or a value has no block
    /// (not finite, or a scale beyond binary16); std::logic_error unless held as F32.
    WeightMatrix quantized(WeightDtype dtype, const std::string& name, WeightArena* arena = nullptr) const;
    /// Rows [r0, r0 + n) as float32 into `out` (n x cols floats): copied, widened or dequantized,
    /// exactly. @throws std::out_of_range when the rows are not all in the matrix.
    void widen_rows(size_t r0, size_t n, float* out) const;
    /// y (B, rows) = x (B, cols) W^T + bias by decode's streaming product for this dtype (matvec,
    /// matvec_f16, matvec_q8_0, matvec_q4_0 in model/kernels.hpp): every dtype gives the float32
    /// kernel's bits on the values it stands for. Introduced in chapter 13.
    /// @param x (B, cols) the input rows
    /// @param B how many rows
    /// @param bias (rows), or null for none
    /// @param y (B, rows) the result, overwritten
    void matvec(const float* x, size_t B, const float* bias, float* y) const;

private:
    WeightMatrix(WeightDtype dtype, size_t rows, size_t cols, BlockVector blocks);
    WeightDtype dtype_ = WeightDtype::F32;
    size_t rows_ = 0, cols_ = 0;
    WeightTensor<2> f32_;
    HalfVector f16_;
    BlockVector blocks_;
};

}  // namespace decodebook
