// Chapter 07: decode's product over weights held in f16 (WeightDtype::F16: IEEE binary16 bits).
// Each weight is widened to float32 in registers (exactly: every binary16 value is a float32
// value) and the sums run in the float32 kernel's order (the one body, kernels/dots.hpp), so an f16
// checkpoint gives the same logits, bit for bit, held as f16 or as f32, from half the bytes.
// Shapes are in the comments; every matrix is row-major.
#include <omp.h>

#include <bit>
#include <cstdint>
#include <string_view>

#include "common.hpp"
#include "dots.hpp"
#include "decodebook/model/kernels.hpp"

namespace decodebook {

using namespace kernels_detail;

namespace {

typedef float F4 __attribute__((vector_size(16)));   // one SSE2 register
typedef float F8 __attribute__((vector_size(32)));   // one AVX2 register
typedef float F16 __attribute__((vector_size(64)));  // one AVX-512 register
typedef uint32_t U4 __attribute__((vector_size(16)));

// How each version reads weights: V is its register of floats (no wider than the target's
// registers), load() widens V's worth of binary16 values (one value: widen_one, common.hpp).
struct SoftWiden {  // the default target (SSE2): the integer widening above, four at a time
    using V = F4;
    static inline __attribute__((always_inline)) V load(const uint16_t* p) {
        const U4 h = {p[0], p[1], p[2], p[3]};
        const U4 em = (h & 0x7fffu) << 13, sign = (h & 0x8000u) << 16;
        F4 f;
        std::memcpy(&f, &em, sizeof f);
        f *= 0x1p112f;
        U4 bits;
        std::memcpy(&bits, &f, sizeof bits);
        const U4 special = em >= 0x0f800000u;  // all ones where infinity or NaN
        bits = (bits & ~special) | ((em | 0x7f800000u) & special);
        bits |= sign;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
};
#if DECODEBOOK_MULTI_TARGET
// F16C's vcvtph2ps: eight (AVX2) or sixteen (AVX-512) binary16 values from memory, widened into
// one register. Written as one instruction of inline assembly: GCC 12 widens a vector of _Float16
// one value at a time, and its intrinsics cannot be inlined into the kernels' bodies, which are
// compiled for each target only once inlined into that target's function.
struct F16cWiden {  // x86-64-v3 (AVX2, FMA, F16C): eight at a time
    using V = F8;
    static inline __attribute__((always_inline)) V load(const uint16_t* p) {
        V v;
        asm("vcvtph2ps %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const char(*)[16]>(p)));
        return v;
    }
};
struct Avx512Widen {  // x86-64-v4 (AVX-512): sixteen at a time
    using V = F16;
    static inline __attribute__((always_inline)) V load(const uint16_t* p) {
        V v;
        asm("vcvtph2ps %1, %0" : "=v"(v) : "m"(*reinterpret_cast<const char(*)[32]>(p)));
        return v;
    }
};
#endif

template <class V>
inline __attribute__((always_inline)) void store_lanes(float* p, V v) {
    std::memcpy(p, &v, sizeof v);
}

// [ch07:matvec-f16]
// How a target reads binary16 weights for the one body of the products (kernels/dots.hpp):
// sixteen at p, widened by P into the target's Partials (16 / W registers of W floats), and one.
template <class P>
struct ReadF16 {
    using Weight = uint16_t;
    static constexpr size_t W = sizeof(typename P::V) / sizeof(float);
    static inline __attribute__((always_inline)) const uint16_t* row(const uint16_t* M, size_t r, size_t n) {
        return M + r * n;
    }
    static constexpr size_t bytes(size_t i) { return i * sizeof(uint16_t); }
    static inline __attribute__((always_inline)) Partials<16, W> sixteen(const uint16_t* m, size_t i) {
        Partials<16, W> r;
#pragma GCC unroll 4
        for (size_t k = 0; k < Partials<16, W>::kParts; ++k) r.part[k] = P::load(m + i + k * W);
        return r;
    }
    static inline __attribute__((always_inline)) float one(const uint16_t* m, size_t i) { return widen_one(m[i]); }
};
// [/ch07:matvec-f16]

// n binary16 values as float32 (exact).
template <class P>
inline __attribute__((always_inline)) void widen_f16(const uint16_t* __restrict h, size_t n, float* __restrict out) {
    using V = typename P::V;
    constexpr size_t L = sizeof(V) / sizeof(float);
    size_t i = 0;
    for (; i + L <= n; i += L) store_lanes(out + i, P::load(h + i));
    for (; i < n; ++i) out[i] = widen_one(h[i]);
}

// One version of each kernel per target: the bodies above, compiled for it.
using DotsFn = void (*)(const float*, size_t, const uint16_t*, const float*, size_t, size_t, size_t, size_t, float*);
using WidenFn = void (*)(const uint16_t*, size_t, float*);
struct F16Kernels {
    DotsFn dots;
    WidenFn widen;
};

#define DECODEBOOK_F16_VERSION(NAME, TARGET, POLICY)                                                            \
    TARGET void NAME##_dots(const float* x, size_t B, const uint16_t* M, const float* bias, size_t rows,        \
                            size_t n, size_t r0, size_t r1, float* y) {                                         \
        dot_rows<ReadF16<POLICY>, ReadF16<POLICY>::W>(x, B, M, bias, rows, n, r0, r1, y);                       \
    }                                                                                                           \
    TARGET void NAME##_widen(const uint16_t* h, size_t n, float* out) { widen_f16<POLICY>(h, n, out); }        \
    constexpr F16Kernels NAME{NAME##_dots, NAME##_widen};

// One version per target, as the float32 kernels (common.hpp): SSE2's registers of four floats
// widened by the integer trick, AVX2's of eight and AVX-512's of sixteen by F16C.
DECODEBOOK_F16_VERSION(kDefault, , SoftWiden)
#if DECODEBOOK_MULTI_TARGET
DECODEBOOK_F16_VERSION(kV3, DECODEBOOK_V3, F16cWiden)
DECODEBOOK_F16_VERSION(kV4, DECODEBOOK_V4, Avx512Widen)
#endif

// The version of the target whose float32 kernels run (kernels(): the best this processor runs,
// or the one set_kernel_target chose), so tests and the bench switch both dtypes at once.
const F16Kernels& f16_kernels() {
#if DECODEBOOK_MULTI_TARGET
    const std::string_view target = kernels().name;
    if (target == "x86-64-v4") return kV4;
    if (target == "x86-64-v3") return kV3;
#endif
    return kDefault;
}

}  // namespace

void matvec_f16(const float* x, size_t B, const uint16_t* W, const float* bias, size_t out, size_t in, float* y) {
    // matvec's plan exactly (kernels/matvec.cpp): one thread reads all of W, more share the outputs
    const DotsFn dots = f16_kernels().dots;
    const int threads = g_threads;
    if (threads == 1) return dots(x, B, W, bias, out, in, 0, out, y);
#pragma omp parallel num_threads(threads)
    {
        const auto [r0, r1] = chunk(out, omp_get_num_threads(), omp_get_thread_num());
        dots(x, B, W, bias, out, in, r0, r1, y);
    }
}

void widen_halves(const uint16_t* h, size_t n, float* out) { f16_kernels().widen(h, n, out); }

}  // namespace decodebook
