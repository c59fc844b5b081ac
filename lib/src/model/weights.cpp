// Chapter 07: the weights' memory: each large tensor on a 2 MiB boundary, in huge pages.
#include "decodebook/model/weights.hpp"

#include <sys/mman.h>  // 2 MiB aligned mappings with huge pages

#include <cstdint>
#include <new>

#include "kernels/common.hpp"

namespace decodebook {

using kernels_detail::kAsan;

namespace {
constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's transparent huge page
constexpr size_t kPage = 4096;
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

void* allocate_weights(size_t bytes) {
    if (bytes < kHugePage || kAsan) return ::operator new(bytes);
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

void free_weights(void* p, size_t bytes) noexcept {
    if (bytes < kHugePage || kAsan) return ::operator delete(p);
    munmap(p, round_up(bytes, kPage));
}

}  // namespace decodebook
