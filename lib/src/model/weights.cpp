// Chapter 07: the weights' memory: each large tensor on a 2 MiB boundary, in huge pages.
#include "decodebook/model/weights.hpp"

#include <sys/mman.h>  // 2 MiB aligned mappings with huge pages

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>

#include "decodebook/base/error.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/safetensors.hpp"  // float_to_half
#include "kernels/common.hpp"

namespace decodebook {

using kernels_detail::kAsan;

namespace {
constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's transparent huge page
constexpr size_t kPage = 4096;
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A mapping of `bytes` (rounded up to 4 KiB) that starts on a 2 MiB boundary, huge pages asked for.
void* map_huge(size_t bytes) {
    // Map 2 MiB more than needed, then unmap the part before the first 2 MiB boundary and the part
    // after the tensor: what stays starts on a huge page and is as long as the tensor (in 4 KiB).
    const size_t length = round_up(bytes, kPage);
    void* mapped = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t first = reinterpret_cast<uintptr_t>(mapped), start = round_up(first, kHugePage),
                    last = first + length + kHugePage;
    if (start > first) munmap(mapped, start - first);
    if (last > start + length) munmap(reinterpret_cast<void*>(start + length), last - start - length);
    // A hint: the whole 2 MiB pieces get huge pages when the kernel has them, the tail 4 KiB ones.
    madvise(reinterpret_cast<void*>(start), length, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(start);
}

}  // namespace

// A WeightArena's mapping: its room [start, end), the next free byte, how many matrices live in it.
// It is unmapped when the arena is gone and its last matrix freed, whichever comes last.
struct WeightArena::Mapping {
    uintptr_t start = 0, end = 0, next = 0;
    size_t length = 0;  // bytes mapped from start
    size_t pieces = 0;
    bool open = true;  // the arena still exists
};

namespace {

// Every mapping with an arena or a matrix alive, for free_weights to find a piece's mapping.
std::mutex g_arenas_lock;
std::vector<WeightArena::Mapping*>& arenas() {
    static std::vector<WeightArena::Mapping*> all;
    return all;
}

// The arena WeightMatrix::transposed and quantized fill on this thread (set only while they allocate).
thread_local WeightArena::Mapping* t_filling = nullptr;

// For one scope, the weights allocated on this thread come from `m`'s mapping (when not null).
struct FillingFrom {
    WeightArena::Mapping* before = t_filling;
    explicit FillingFrom(WeightArena::Mapping* m) { if (m) t_filling = m; }
    ~FillingFrom() { t_filling = before; }
    FillingFrom(const FillingFrom&) = delete;
    FillingFrom& operator=(const FillingFrom&) = delete;
};

// Unmaps a mapping nothing uses any more (the lock held).
void release_if_unused(WeightArena::Mapping* m) {
    if (m->open || m->pieces > 0) return;
    munmap(reinterpret_cast<void*>(m->start), m->length);
    std::erase(arenas(), m);
    delete m;
}

}  // namespace

void* allocate_weights(size_t bytes) {
    if (kAsan) return ::operator new(bytes);
    if (WeightArena::Mapping* m = t_filling) {  // the next bytes of the arena, 64-byte aligned
        const std::lock_guard<std::mutex> lock(g_arenas_lock);
        const uintptr_t at = round_up(m->next, 64);
        if (bytes <= m->end - std::min(m->end, at)) {
            m->next = at + bytes;
            ++m->pieces;
            return reinterpret_cast<void*>(at);
        }
    }
    if (bytes < kHugePage) return ::operator new(bytes);
    return map_huge(bytes);
}

void free_weights(void* p, size_t bytes) noexcept {
    if (kAsan) return ::operator delete(p);
    {
        const std::lock_guard<std::mutex> lock(g_arenas_lock);
        const uintptr_t at = reinterpret_cast<uintptr_t>(p);
        for (WeightArena::Mapping* m : arenas()) {
            if (at >= m->start && at < m->start + m->length) {
                --m->pieces;
                release_if_unused(m);
                return;
            }
        }
    }
    if (bytes < kHugePage) return ::operator delete(p);
    munmap(p, round_up(bytes, kPage));
}

WeightArena::WeightArena(size_t bytes) {
    if (kAsan || bytes == 0) return;
    // room for `bytes`, mapped to the next 2 MiB so the last piece is in a huge page too
    const size_t length = round_up(bytes, kHugePage);
    const uintptr_t start = reinterpret_cast<uintptr_t>(map_huge(length));
    mapping_ = new Mapping{start, start + bytes, start, length, 0, true};
    const std::lock_guard<std::mutex> lock(g_arenas_lock);
    arenas().push_back(mapping_);
}

WeightArena::~WeightArena() {
    if (!mapping_) return;
    const std::lock_guard<std::mutex> lock(g_arenas_lock);
    mapping_->open = false;
    release_if_unused(mapping_);
}

std::string to_string(WeightDtype dtype) {
    switch (dtype) {
        case WeightDtype::F32: return "f32";
        case WeightDtype::F16: return "f16";
        case WeightDtype::Q8_0: return "q8_0";
        case WeightDtype::Q4_0: return "q4_0";
    }
    return "?";
}

WeightDtype parse_weight_dtype(const std::string& text) {
    for (const WeightDtype d : {WeightDtype::F32, WeightDtype::F16, WeightDtype::Q8_0, WeightDtype::Q4_0})
        if (text == to_string(d)) return d;
    throw Error("--dtype " + text + " is not a weight dtype decodebook holds",
                "pass --dtype f32 (4 bytes per weight), --dtype f16 (2 bytes, IEEE binary16), --dtype q8_0 (8.5 "
                "bits) or --dtype q4_0 (4.5 bits: ggml's blocks); without --dtype the model keeps its checkpoint's "
                "own (F16 stays f16, F32 and BF16 load as f32)");
}

uint64_t WeightMatrix::bytes() const {
    switch (dtype_) {
        case WeightDtype::F32: return uint64_t{size()} * 4;
        case WeightDtype::F16: return uint64_t{size()} * 2;
        default: return blocks_.size();
    }
}

const BlockQ8_0* WeightMatrix::q8_0() const {
    return dtype_ == WeightDtype::Q8_0 ? reinterpret_cast<const BlockQ8_0*>(blocks_.data()) : nullptr;
}

const BlockQ4_0* WeightMatrix::q4_0() const {
    return dtype_ == WeightDtype::Q4_0 ? reinterpret_cast<const BlockQ4_0*>(blocks_.data()) : nullptr;
}

WeightMatrix::WeightMatrix(WeightDtype dtype, size_t rows, size_t cols, BlockVector blocks)
    : dtype_(dtype), rows_(rows), cols_(cols), blocks_(std::move(blocks)) {}

WeightMatrix::WeightMatrix(WeightTensor<2> values)
    : dtype_(WeightDtype::F32), rows_(values.shape(0)), cols_(values.shape(1)), f32_(std::move(values)) {}

WeightMatrix::WeightMatrix(size_t rows, size_t cols, HalfVector bits)
    : dtype_(WeightDtype::F16), rows_(rows), cols_(cols), f16_(std::move(bits)) {
    if (f16_.size() != rows * cols) throw std::invalid_argument("WeightMatrix: bits.size() != rows * cols");
}

// [ch07:round-to-f16]
WeightMatrix WeightMatrix::hold(WeightTensor<2> values, WeightDtype dtype, const std::string& name) {
    if (dtype == WeightDtype::F32) return WeightMatrix(std::move(values));
    if (is_quantized(dtype)) return WeightMatrix(std::move(values)).quantized(dtype, name);
    const size_t rows = values.shape(0), cols = values.shape(1);
    HalfVector bits(rows * cols);
    const float* v = values.data();
    for (size_t i = 0; i < bits.size(); ++i) {
        bits[i] = float_to_half(v[i]);  // round to nearest, ties to even
        if ((bits[i] & 0x7c00u) == 0x7c00u) {  // infinity or NaN: the value does not fit binary16
            throw Error("tensor '" + name + "' holds " + std::to_string(v[i]) + " at element " + std::to_string(i) +
                            ", which float16 cannot hold (its largest value is 65504)",
                        "hold the weights in float32: --dtype f32");
        }
    }
    values = WeightTensor<2>();  // one copy: the float32 values go before the model is used
    return WeightMatrix(rows, cols, std::move(bits));
}
// [/ch07:round-to-f16]

namespace {
// out (cols, rows) = in (rows, cols)^T, in tiles of 32 x 32 so both sides stay in cache.
template <class T>
void transpose_into(const T* in, size_t rows, size_t cols, T* out) {
    constexpr size_t kTile = 32;
    for (size_t i0 = 0; i0 < rows; i0 += kTile)
        for (size_t j0 = 0; j0 < cols; j0 += kTile)
            for (size_t i = i0; i < std::min(rows, i0 + kTile); ++i)
                for (size_t j = j0; j < std::min(cols, j0 + kTile); ++j) out[j * rows + i] = in[i * cols + j];
}
}  // namespace

WeightMatrix WeightMatrix::transposed(WeightArena* arena) const {
    // the allocations below come from the arena's mapping (allocate_weights), the copy from here
    const FillingFrom filling(arena ? arena->mapping_ : nullptr);
    if (is_quantized(dtype_)) throw std::logic_error("WeightMatrix::transposed: blocks lie along rows; quantize after turning");
    if (dtype_ == WeightDtype::F16) {
        HalfVector bits(f16_.size());
        transpose_into(f16_.data(), rows_, cols_, bits.data());
        return WeightMatrix(cols_, rows_, std::move(bits));
    }
    WeightTensor<2> values = WeightTensor<2>::from_shape({cols_, rows_});
    transpose_into(f32_.data(), rows_, cols_, values.data());
    return WeightMatrix(std::move(values));
}

WeightMatrix WeightMatrix::quantized(WeightDtype dtype, const std::string& name, WeightArena* arena) const {
    if (dtype_ != WeightDtype::F32 || !is_quantized(dtype))
        throw std::logic_error("WeightMatrix::quantized: float32 values into q8_0 or q4_0 blocks");
    const FillingFrom filling(arena ? arena->mapping_ : nullptr);  // the blocks from the arena's mapping
    const size_t per_row = cols_ / kQuantBlock;  // blocks a row (quantize_* refuses a ragged row)
    const size_t block_bytes = dtype == WeightDtype::Q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
    BlockVector blocks(rows_ * per_row * block_bytes);
    for (size_t r = 0; r < rows_; ++r) {  // row by row: a block never spans two rows
        const float* row = f32_.data() + r * cols_;
        uint8_t* out = blocks.data() + r * per_row * block_bytes;
        if (dtype == WeightDtype::Q8_0) quantize_q8_0(row, cols_, reinterpret_cast<BlockQ8_0*>(out), name);
        else quantize_q4_0(row, cols_, reinterpret_cast<BlockQ4_0*>(out), name);
    }
    return WeightMatrix(dtype, rows_, cols_, std::move(blocks));
}

void WeightMatrix::widen_rows(size_t r0, size_t n, float* out) const {
    if (r0 > rows_ || n > rows_ - r0) throw std::out_of_range("WeightMatrix::widen_rows past the matrix");
    const size_t per_row = cols_ / kQuantBlock;
    switch (dtype_) {
        case WeightDtype::F32: std::memcpy(out, f32_.data() + r0 * cols_, n * cols_ * sizeof(float)); break;
        case WeightDtype::F16: widen_halves(f16_.data() + r0 * cols_, n * cols_, out); break;
        case WeightDtype::Q8_0: dequantize_q8_0(q8_0() + r0 * per_row, n * cols_, out); break;
        case WeightDtype::Q4_0: dequantize_q4_0(q4_0() + r0 * per_row, n * cols_, out); break;
    }
}

void WeightMatrix::matvec(const float* x, size_t B, const float* bias, float* y) const {
    switch (dtype_) {
        case WeightDtype::F32: return decodebook::matvec(x, B, f32(), bias, rows_, cols_, y);
        case WeightDtype::F16: return matvec_f16(x, B, f16(), bias, rows_, cols_, y);
        case WeightDtype::Q8_0: return matvec_q8_0(x, B, q8_0(), bias, rows_, cols_, y);
        case WeightDtype::Q4_0: return matvec_q4_0(x, B, q4_0(), bias, rows_, cols_, y);
    }
}

}  // namespace decodebook
