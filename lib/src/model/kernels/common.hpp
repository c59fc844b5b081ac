#pragma once
// Chapter 07, private to the kernels (lib/src/model/kernels/ and the model's weights and
// roofline): the thread count, the BLAS in use, the CPU-target clones and the vector lanes every
// kernel shares. Not a public header: nothing outside lib/src/model/ includes it.
#include <cblas.h>  // OpenBLAS's: sgemm, openblas_set_num_threads, openblas_get_corename

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace decodebook::kernels_detail {

// Threads for the kernels (set_num_threads): one pool, OpenMP's.
extern std::atomic<int> g_threads;

// The BLAS behind gemm: the linked OpenBLAS unless use_blas loaded another CBLAS library.
struct Blas {
    decltype(&cblas_sgemm) sgemm = &cblas_sgemm;
    void (*set_threads)(int64_t) = nullptr;  // BLIS's bli_thread_set_num_threads (dim_t is 64-bit)
    std::string description;                 // empty: the linked OpenBLAS (blas_description asks it)
};
extern Blas g_blas;

// Whether this build runs under AddressSanitizer, which refuses dlopen's RTLD_DEEPBIND.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// Each kernel is compiled three times, for x86-64-v4 (AVX-512), x86-64-v3 (AVX2, FMA) and plain
// x86-64 (SSE2), and the dynamic loader picks the version the processor runs, once (GCC's
// target_clones + ifunc). The build needs no -march, and a binary built here runs on any x86-64.
// Every sum is written out in order (partial sums as lanes), so no version reorders a sum.
// (The fuzzing build uses clang, which knows no arch= clones: it gets the plain version.)
#if defined(__clang__)
#define DECODEBOOK_CLONES
#else
#define DECODEBOOK_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

// Sixteen floats as one value (GCC's vector extension): one AVX-512 register, two AVX2 ones or
// four SSE2 ones. Partial sums live in lanes, in registers, not in an array on the stack (a load
// and a store per multiply-add); lane k holds partial sum k.
typedef float Lanes __attribute__((vector_size(64)));
typedef float Lanes8 __attribute__((vector_size(32)));  // eight: attention's dot over a head
// GCC warns that passing a 64-byte vector differs between processors' calling conventions; the
// two helpers below are always inlined, so no call passes one.
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V>
inline __attribute__((always_inline)) V load_lanes(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);  // an unaligned load
    return v;
}

// Whether this processor runs x86-64-v4 (AVX-512): the test target_clones' resolver makes too.
bool runs_x86_64_v4();

// Split [0, n) into `parts` chunks aligned to 16 floats: chunk k is [begin, end).
inline std::pair<size_t, size_t> chunk(size_t n, int parts, int k) {
    const size_t size = (n / static_cast<size_t>(parts) + 15) / 16 * 16;
    const size_t begin = std::min(n, size * static_cast<size_t>(k));
    return {begin, k == parts - 1 ? n : std::min(n, begin + size)};
}

}  // namespace decodebook::kernels_detail
