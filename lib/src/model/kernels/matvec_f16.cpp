// Chapter 07: decode's products over weights held in f16 (WeightDtype::F16: IEEE binary16 bits).
// Each weight is widened to float32 in registers (exactly: every binary16 value is a float32
// value) and the sums run in the order of the float32 kernels in matvec.cpp, so an f16 checkpoint
// gives the same logits, bit for bit, held as f16 or as f32, from half the bytes.
// Shapes are in the comments; every matrix is row-major.
#include <omp.h>

#include <bit>
#include <cstdint>
#include <string_view>

#include "common.hpp"
#include "decodebook/model/kernels.hpp"

namespace decodebook {

using namespace kernels_detail;

namespace {

typedef float F4 __attribute__((vector_size(16)));   // one SSE2 register
typedef float F8 __attribute__((vector_size(32)));   // one AVX2 register
typedef float F16 __attribute__((vector_size(64)));  // one AVX-512 register
typedef uint32_t U4 __attribute__((vector_size(16)));

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

// How each version reads weights: V is its register of floats (no wider than the target's
// registers), load() widens V's worth of binary16 values, loadf() reads floats.
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

// How far ahead (binary16 values, 2 KiB) decode's one-row product asks for each row's weights.
constexpr size_t kPrefetchHalves = 1024;

template <class V>
inline __attribute__((always_inline)) void store_lanes(float* p, V v) {
    std::memcpy(p, &v, sizeof v);
}

// [ch07:matvec-f16]
// y[b, j0:j1] += sum_{i0 <= i < i1} x[b, i] W[i, j0:j1] for every row b.
//   x: (B, in), W: (in, out) binary16, y: (B, out)
// matvec.cpp's matvec_columns with each weight widened: four rows of W at a time, 2 V's worth of
// columns per pass, read once for every row b. The order of the sums for one y[b, j] is the
// float32 kernels': y, then + x[b, i] W[i, j] for i = i0, i0 + 1, ... in turn (four at a time,
// then the last in % 4 one by one).
template <class P>
inline __attribute__((always_inline)) void columns_f16(const float* __restrict x, size_t B,
                                                       const uint16_t* __restrict W, size_t in, size_t out,
                                                       size_t i0, size_t i1, size_t j0, size_t j1,
                                                       float* __restrict y) {
    using V = typename P::V;
    constexpr size_t R = 4, L = sizeof(V) / sizeof(float), step = 2 * L;
    size_t i = i0;
    if (B == 1)  // decode's one row: eight rows of W per pass, so y goes through L1 half as often
        for (; i + 2 * R <= i1; i += 2 * R) {
            const uint16_t* w = W + i * out;  // rows i..i+7, out values apart
            V xr[2 * R];
            for (size_t r = 0; r < 2 * R; ++r) xr[r] = V{} + x[i + r];
            size_t j = j0;
            for (; j + L <= j1; j += L) {
                V sum = load_lanes<V>(y + j);
                for (size_t r = 0; r < 2 * R; ++r) sum += xr[r] * P::load(w + r * out + j);
                store_lanes(y + j, sum);
            }
            for (; j < j1; ++j) {  // the last (j1 - j0) % L columns
                float sum = y[j];
                for (size_t r = 0; r < 2 * R; ++r) sum += x[i + r] * widen_one(w[r * out + j]);
                y[j] = sum;
            }
        }
    for (; i + R <= i1; i += R) {
        const uint16_t* w = W + i * out;  // rows i..i+3, out values apart
        size_t j = j0;
        if (B == 1) {  // decode's one row: x's four values broadcast once for the whole pass
            const V x0 = V{} + x[i], x1 = V{} + x[i + 1], x2 = V{} + x[i + 2], x3 = V{} + x[i + 3];
            for (; j + step <= j1; j += step) {
                // each row's next lines asked for ahead (kPrefetchHalves): four strided streams of
                // half float32's bytes per column leave the hardware prefetcher behind
                for (size_t r = 0; r < R; ++r) __builtin_prefetch(w + r * out + j + kPrefetchHalves);
                for (size_t h = 0; h < 2; ++h) {
                    const size_t k = j + h * L;
                    V sum = load_lanes<V>(y + k);
                    sum += x0 * P::load(w + k);
                    sum += x1 * P::load(w + out + k);
                    sum += x2 * P::load(w + 2 * out + k);
                    sum += x3 * P::load(w + 3 * out + k);
                    store_lanes(y + k, sum);
                }
            }
        }
        for (; j + step <= j1; j += step) {
            V wr[R][2];  // the 4 x 2L weights, widened once for every row b
            for (size_t r = 0; r < R; ++r)
                for (size_t h = 0; h < 2; ++h) wr[r][h] = P::load(w + r * out + j + h * L);
            for (size_t b = 0; b < B; ++b) {
                const float* xb = x + b * in + i;
                const V x0 = V{} + xb[0], x1 = V{} + xb[1], x2 = V{} + xb[2], x3 = V{} + xb[3];
                float* yb = y + b * out + j;
                for (size_t h = 0; h < 2; ++h) {
                    V sum = load_lanes<V>(yb + h * L);
                    sum += x0 * wr[0][h];
                    sum += x1 * wr[1][h];
                    sum += x2 * wr[2][h];
                    sum += x3 * wr[3][h];
                    store_lanes(yb + h * L, sum);
                }
            }
        }
        for (; j < j1; ++j) {  // the last (j1 - j0) % 2L columns
            float wj[R];
            for (size_t r = 0; r < R; ++r) wj[r] = widen_one(w[r * out + j]);
            for (size_t b = 0; b < B; ++b) {
                const float* xb = x + b * in + i;
                float sum = y[b * out + j];
                for (size_t r = 0; r < R; ++r) sum += xb[r] * wj[r];
                y[b * out + j] = sum;
            }
        }
    }
    for (; i < i1; ++i) {  // the last in % 4 rows, one at a time
        const uint16_t* w = W + i * out;
        for (size_t j = j0; j < j1; ++j) {
            const float wj = widen_one(w[j]);
            for (size_t b = 0; b < B; ++b) y[b * out + j] += x[b * in + i] * wj;
        }
    }
}
// [/ch07:matvec-f16]

// One dot product M[r, :] . x[b, :] of n values, in the float32 lm_head's order (matvec.cpp's
// dot_rows): sixteen partial sums, sum k over the elements i with i % 16 == k (i < n - n % 16),
// held as 16 / L registers of L lanes; then their total in lane order; then the last n % 16
// products one by one.
template <class P>
inline __attribute__((always_inline)) float dot_f16(const uint16_t* __restrict m, const float* __restrict xb,
                                                    size_t n) {
    using V = typename P::V;
    constexpr size_t L = sizeof(V) / sizeof(float), A = 16 / L;
    const size_t n16 = n - n % 16;
    V acc[A] = {};
    for (size_t i = 0; i < n16; i += 16)
#pragma GCC unroll 4
        for (size_t a = 0; a < A; ++a) acc[a] += P::load(m + i + a * L) * load_lanes<V>(xb + i + a * L);
    float sum = 0;
    for (size_t a = 0; a < A; ++a)
        for (size_t k = 0; k < L; ++k) sum += acc[a][k];
    for (size_t i = n16; i < n; ++i) sum += widen_one(m[i]) * xb[i];
    return sum;
}

// y[b, r] = M[r, :] . x[b, :] for r in [r0, r1).   x: (B, n), M: (rows, n) binary16, y: (B, rows)
// Two rows half the range apart side by side (two memory streams), as the float32 lm_head; each
// row's sum is dot_f16's whichever of the two it is, so the result depends on neither r0, r1 nor
// the threads.
template <class P>
inline __attribute__((always_inline)) void dots_f16(const float* __restrict x, size_t B,
                                                    const uint16_t* __restrict M, size_t rows, size_t n, size_t r0,
                                                    size_t r1, float* __restrict y) {
    const size_t half = (r1 - r0) / 2;
    for (size_t r = r0; r < r0 + half; ++r) {
        const uint16_t* m0 = M + r * n;
        const uint16_t* m1 = m0 + half * n;
        for (size_t b = 0; b < B; ++b) {
            y[b * rows + r] = dot_f16<P>(m0, x + b * n, n);
            y[b * rows + r + half] = dot_f16<P>(m1, x + b * n, n);
        }
    }
    if ((r1 - r0) % 2 == 1)  // an odd range: its last row
        for (size_t b = 0; b < B; ++b) y[b * rows + r1 - 1] = dot_f16<P>(M + (r1 - 1) * n, x + b * n, n);
}

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
using ColumnsFn = void (*)(const float*, size_t, const uint16_t*, size_t, size_t, size_t, size_t, size_t, size_t,
                           float*);
using DotsFn = void (*)(const float*, size_t, const uint16_t*, size_t, size_t, size_t, size_t, float*);
using WidenFn = void (*)(const uint16_t*, size_t, float*);
struct F16Kernels {
    ColumnsFn columns;
    DotsFn dots;
    WidenFn widen;
};

#define DECODEBOOK_F16_VERSION(NAME, TARGET, POLICY)                                                            \
    TARGET void NAME##_columns(const float* x, size_t B, const uint16_t* W, size_t in, size_t out, size_t i0,   \
                               size_t i1, size_t j0, size_t j1, float* y) {                                     \
        columns_f16<POLICY>(x, B, W, in, out, i0, i1, j0, j1, y);                                              \
    }                                                                                                           \
    TARGET void NAME##_dots(const float* x, size_t B, const uint16_t* M, size_t rows, size_t n, size_t r0,      \
                            size_t r1, float* y) {                                                              \
        dots_f16<POLICY>(x, B, M, rows, n, r0, r1, y);                                                         \
    }                                                                                                           \
    TARGET void NAME##_widen(const uint16_t* h, size_t n, float* out) { widen_f16<POLICY>(h, n, out); }        \
    constexpr F16Kernels NAME{NAME##_columns, NAME##_dots, NAME##_widen};

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

void matvec_f16(const float* x, size_t B, const uint16_t* W, const float* bias, size_t in, size_t out, float* y,
                float* partial) {
    // matvec's plan exactly (kernels/matvec.cpp): y starts as the bias and gains W's rows [0, h),
    // partial gains rows [h, in), then y += partial; one thread per half, more split by columns.
    const ColumnsFn columns = f16_kernels().columns;
    const size_t h = in / 2 / 8 * 8;
    for (size_t b = 0; b < B; ++b) {
        if (bias) std::memcpy(y + b * out, bias, out * sizeof(float));
        else std::fill(y + b * out, y + (b + 1) * out, 0.0f);
    }
    std::fill(partial, partial + B * out, 0.0f);
    const int threads = g_threads;
    if (threads == 1) {
        columns(x, B, W, in, out, 0, h, 0, out, y);
        columns(x, B, W, in, out, h, in, 0, out, partial);
    } else {
#pragma omp parallel num_threads(threads)
        {
            const int n = omp_get_num_threads(), t = omp_get_thread_num();
            if (n == 1) {
                columns(x, B, W, in, out, 0, h, 0, out, y);
                columns(x, B, W, in, out, h, in, 0, out, partial);
            } else {
                const int half = t % 2;
                const auto [j0, j1] = chunk(out, (n - half + 1) / 2, t / 2);
                if (half == 0) columns(x, B, W, in, out, 0, h, j0, j1, y);
                else columns(x, B, W, in, out, h, in, j0, j1, partial);
            }
        }
    }
    for (size_t k = 0; k < B * out; ++k) y[k] += partial[k];
}

void matvec_transposed_f16(const float* x, size_t B, const uint16_t* M, size_t rows, size_t n, float* y) {
    const DotsFn dots = f16_kernels().dots;
    const int threads = g_threads;
    if (threads == 1) return dots(x, B, M, rows, n, 0, rows, y);
#pragma omp parallel num_threads(threads)
    {  // each thread owns a block of vocabulary entries
        const auto [r0, r1] = chunk(rows, omp_get_num_threads(), omp_get_thread_num());
        dots(x, B, M, rows, n, r0, r1, y);
    }
}

void widen_halves(const uint16_t* h, size_t n, float* out) { f16_kernels().widen(h, n, out); }

}  // namespace decodebook
