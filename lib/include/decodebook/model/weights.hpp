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

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

namespace decodebook {

/// Allocate `bytes` for weights: from 2 MiB on, a mapping of its own that starts at a 2 MiB
/// boundary, with huge pages asked for; below, operator new. Introduced in chapter 07.
/// @throws std::bad_alloc when the memory is not there.
void* allocate_weights(size_t bytes);

/// Give back what allocate_weights(bytes) returned, with the same `bytes`. Introduced in chapter 07.
void free_weights(void* p, size_t bytes) noexcept;

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

}  // namespace decodebook
