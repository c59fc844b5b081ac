#pragma once
// Chapter 07, private to the kernels (lib/src/model/kernels/ and the model's weights and
// roofline): the thread count, the BLAS in use, the table of each CPU target's kernels and the
// vector lanes every kernel shares. Not a public header: nothing outside lib/src/model/ includes it.
#include <cblas.h>  // OpenBLAS's: sgemm, openblas_set_num_threads, openblas_get_corename

#include <algorithm>
#include <atomic>
#include <bit>
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

// Each kernel's body is written once, as an always-inline template over W, the floats in one of
// its target's vector registers, and compiled into one function per target:
//   v4      target("arch=x86-64-v4"): AVX-512, W = 16
//   v3      target("arch=x86-64-v3"): AVX2, FMA, F16C, W = 8
//   x86_64  the default, plain x86-64 (SSE2), W = 4
// Every target's functions sit in a table of pointers (KernelTable); the best table the processor
// runs is chosen once, and set_kernel_target switches to another, so tests and the bench run every
// target on one machine. The build needs no -march, and a binary built here runs on any x86-64.
// Every sum is written out in order (partial sums as lanes), and these files are compiled with
// -ffp-contract=off (lib/CMakeLists.txt): GCC would otherwise fuse a * b + c into one fused
// multiply-add on v3 and v4 but not on the default. So every target gives the same bits.
// (The fuzzing build uses clang: it compiles only the default target.)
#if defined(__clang__)
#define DECODEBOOK_MULTI_TARGET 0
#else
#define DECODEBOOK_MULTI_TARGET 1
#define DECODEBOOK_V4 __attribute__((target("arch=x86-64-v4")))
#define DECODEBOOK_V3 __attribute__((target("arch=x86-64-v3")))
#endif

// Calls DEFINE(namespace, target attribute, W) once per target this build compiles: each kernel
// file defines its per-target functions through it, each a call of the one body.
#if DECODEBOOK_MULTI_TARGET
#define DECODEBOOK_FOR_EACH_TARGET(DEFINE) DEFINE(v4, DECODEBOOK_V4, 16) DEFINE(v3, DECODEBOOK_V3, 8) DEFINE(x86_64, , 4)
#else
#define DECODEBOOK_FOR_EACH_TARGET(DEFINE) DEFINE(x86_64, , 4)
#endif

// W floats as one value (GCC's vector extension), W = 4, 8 or 16: one register of the target
// whose width it is (SSE2, AVX2, AVX-512), never wider.
template <size_t W>
struct VectorOf;
template <>
struct VectorOf<4> {
    typedef float type __attribute__((vector_size(16)));
};
template <>
struct VectorOf<8> {
    typedef float type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<16> {
    typedef float type __attribute__((vector_size(64)));
};
template <size_t W>
using Vec = typename VectorOf<W>::type;

// GCC warns that passing a 64-byte vector differs between processors' calling conventions; every
// helper below is always inlined, so no call passes one.
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V>
inline __attribute__((always_inline)) V load_lanes(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);  // an unaligned load
    return v;
}

// N partial sums (N = 8, 16, 64 ...) held in registers of W floats: N / W vectors when W < N
// (sixteen sums on AVX2 are two eight-float halves), one narrower vector when N < W. Lane k is
// partial sum k on every target, so a kernel written with Partials adds the same products in the
// same order whatever W is. (A 64-byte vector on AVX2 is what GCC 12 kept in memory, a store per
// load: never a vector wider than the target's registers; docs/measurements.md has the cost.)
template <size_t N, size_t W>
struct Partials {
    static constexpr size_t kWidth = N < W ? N : W;  // floats per vector
    static constexpr size_t kParts = N / kWidth;     // vectors
    using V = Vec<kWidth>;
    V part[kParts];

    static inline __attribute__((always_inline)) Partials zero() {
        Partials p;
        for (size_t k = 0; k < kParts; ++k) p.part[k] = V{};
        return p;
    }
    static inline __attribute__((always_inline)) Partials load(const float* p) {
        Partials r;
        for (size_t k = 0; k < kParts; ++k) r.part[k] = load_lanes<V>(p + k * kWidth);
        return r;
    }
    static inline __attribute__((always_inline)) Partials splat(float x) {
        Partials r;
        for (size_t k = 0; k < kParts; ++k) r.part[k] = V{} + x;
        return r;
    }
    inline __attribute__((always_inline)) void store(float* p) const {
        for (size_t k = 0; k < kParts; ++k) std::memcpy(p + k * kWidth, &part[k], sizeof(V));
    }
    // Keep these values in registers: the next uses read them there (GCC otherwise folds the load
    // into each use as a memory operand, one load per use: a batch's kernel then loads twice as
    // much as it multiplies). An empty asm that "changes" each register; no instruction.
    inline __attribute__((always_inline)) void pin() {
        for (size_t k = 0; k < kParts; ++k) asm("" : "+v"(part[k]));
    }
    // *this += a * b, lane by lane (a product, then a sum: no fused multiply-add)
    inline __attribute__((always_inline)) void add_product(const Partials& a, const Partials& b) {
        for (size_t k = 0; k < kParts; ++k) part[k] += a.part[k] * b.part[k];
    }
    // the N partial sums added in lane order, from 0
    inline __attribute__((always_inline)) float total() const {
        float sum = 0;
        for (size_t k = 0; k < kParts; ++k)
            for (size_t l = 0; l < kWidth; ++l) sum += part[k][l];
        return sum;
    }
};

// [ch07:widen-f16]
// One binary16 value as float32, exactly. The five exponent bits and ten mantissa bits, moved to
// float32's positions, read as a float32 2^112 too small (the exponent biases are 15 and 127):
// multiplying by 2^112 is exact for normal and subnormal halves alike. An all-ones exponent
// (infinity, NaN) keeps all-ones. No table, no branch: the default target's widening.
inline __attribute__((always_inline)) float widen_one(uint16_t h) {
    const uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13, sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t bits = std::bit_cast<uint32_t>(std::bit_cast<float>(em) * 0x1p112f);
    if (em >= 0x0f800000u) bits = em | 0x7f800000u;  // infinity or NaN
    return std::bit_cast<float>(bits | sign);
}
// [/ch07:widen-f16]

// One target's kernels: what the rest of lib/src/model calls through the table in use.
struct KernelTable {
    const char* name;         // "x86-64-v4": what set_kernel_target takes
    const char* description;  // "x86-64-v4 (AVX-512)": what kernel_target() says
    // y[b, r] = M[r, :] . x[b, :] + bias[r] for r in [r0, r1): decode's matvec (kernels/dots.hpp)
    //   x: (B, n), M: (rows, n) a weight matrix held (out, in), bias: (rows) or null, y: (B, rows)
    void (*dots)(const float* x, size_t B, const float* M, const float* bias, size_t rows, size_t n, size_t r0,
                 size_t r1, float* y);
    // scores[s] = q . k_s * scale for s < length, k_s at keys + s * stride   q: (D)
    void (*head_scores)(const float* q, const float* keys, size_t length, size_t stride, size_t D, float scale,
                        float* scores);
    // out (D) = sum_s w[s] v_s, v_s at v + s * stride
    void (*weighted_sum)(const float* w, const float* v, size_t length, size_t stride, size_t D, float* out);
    // decode's attention over one row's cache, position by position, heads [h0, h1) at once:
    // scores[h * scores_stride + s] = q_h . k_s,h * scale; out_h = sum_s w[h * w_stride + s] v_s,h
    void (*heads_scores)(const float* q, const float* keys, size_t length, size_t stride, size_t D, size_t h0,
                         size_t h1, float scale, float* scores, size_t scores_stride);
    void (*heads_weighted_sum)(const float* w, size_t w_stride, const float* v, size_t length, size_t stride,
                               size_t D, size_t h0, size_t h1, float* out);
    void (*gelu_in_place)(float* x, size_t n);
    // the roofline's plain read: the sum of n floats read as 1, 2 and 4 streams
    float (*sum_floats[3])(const float* p, size_t n);
};

// The declarations of one target's functions (defined in matvec.cpp, attention.cpp,
// elementwise.cpp and roofline.cpp); blas.cpp puts them in the tables.
#define DECODEBOOK_DECLARE_KERNELS(NS, ATTR, W)                                                                    \
    namespace NS {                                                                                                 \
    ATTR void dots(const float* x, size_t B, const float* M, const float* bias, size_t rows, size_t n, size_t r0,  \
                   size_t r1, float* y);                                                                          \
    ATTR void head_scores(const float* q, const float* keys, size_t length, size_t stride, size_t D, float scale,  \
                          float* scores);                                                                         \
    ATTR void weighted_sum(const float* w, const float* v, size_t length, size_t stride, size_t D, float* out);    \
    ATTR void heads_scores(const float* q, const float* keys, size_t length, size_t stride, size_t D, size_t h0,   \
                           size_t h1, float scale, float* scores, size_t scores_stride);                           \
    ATTR void heads_weighted_sum(const float* w, size_t w_stride, const float* v, size_t length, size_t stride,    \
                                 size_t D, size_t h0, size_t h1, float* out);                                     \
    ATTR void gelu_in_place(float* x, size_t n);                                                                  \
    ATTR float sum_floats_1(const float* p, size_t n);                                                             \
    ATTR float sum_floats_2(const float* p, size_t n);                                                             \
    ATTR float sum_floats_4(const float* p, size_t n);                                                             \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_DECLARE_KERNELS)

// The table in use: the best target the processor runs unless set_kernel_target chose another.
const KernelTable& kernels();

// Split [0, n) into `parts` chunks aligned to 16 floats: chunk k is [begin, end).
inline std::pair<size_t, size_t> chunk(size_t n, int parts, int k) {
    const size_t size = (n / static_cast<size_t>(parts) + 15) / 16 * 16;
    const size_t begin = std::min(n, size * static_cast<size_t>(k));
    return {begin, k == parts - 1 ? n : std::min(n, begin + size)};
}

}  // namespace decodebook::kernels_detail
