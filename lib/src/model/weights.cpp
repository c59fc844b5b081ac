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

// The arena WeightMatrix::transposed fills on this thread (set only while it allocates).
thread_local WeightArena::Mapping* t_filling = nullptr;

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

std::string to_string(WeightDtype dtype) { return dtype == WeightDtype::F32 ? "f32" : "f16"; }

WeightDtype parse_weight_dtype(const std::string& text) {
    if (text == "f32") return WeightDtype::F32;
    if (text == "f16") return WeightDtype::F16;
    throw Error("--dtype " + text + " is not a weight dtype decodebook holds",
                "pass --dtype f32 (4 bytes per weight) or --dtype f16 (2 bytes, IEEE binary16); without --dtype "
                "the model keeps its checkpoint's own (F16 stays f16, F32 and BF16 load as f32)");
}

WeightMatrix::WeightMatrix(WeightTensor<2> values)
    : dtype_(WeightDtype::F32), rows_(values.shape(0)), cols_(values.shape(1)), f32_(std::move(values)) {}

WeightMatrix::WeightMatrix(size_t rows, size_t cols, HalfVector bits)
    : dtype_(WeightDtype::F16), rows_(rows), cols_(cols), f16_(std::move(bits)) {
    if (f16_.size() != rows * cols) throw std::invalid_argument("WeightMatrix: bits.size() != rows * cols");
}

// [ch07:round-to-f16]
WeightMatrix WeightMatrix::hold(WeightTensor<2> values, WeightDtype dtype, const std::string& name) {
    if (dtype == WeightDtype::F32) return WeightMatrix(std::move(values));
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
    struct Filling {
        WeightArena::Mapping* before = t_filling;
        explicit Filling(WeightArena* a) { if (a) t_filling = a->mapping_; }
        ~Filling() { t_filling = before; }
    } filling(arena);
    if (dtype_ == WeightDtype::F16) {
        HalfVector bits(f16_.size());
        transpose_into(f16_.data(), rows_, cols_, bits.data());
        return WeightMatrix(cols_, rows_, std::move(bits));
    }
    WeightTensor<2> values = WeightTensor<2>::from_shape({cols_, rows_});
    transpose_into(f32_.data(), rows_, cols_, values.data());
    return WeightMatrix(std::move(values));
}

void WeightMatrix::widen_rows(size_t r0, size_t n, float* out) const {
    if (r0 > rows_ || n > rows_ - r0) throw std::out_of_range("WeightMatrix::widen_rows past the matrix");
    if (dtype_ == WeightDtype::F32) std::memcpy(out, f32_.data() + r0 * cols_, n * cols_ * sizeof(float));
    else widen_halves(f16_.data() + r0 * cols_, n * cols_, out);
}

}  // namespace decodebook
