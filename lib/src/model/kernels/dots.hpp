#pragma once
// Chapter 07, private to lib/src/model/kernels/: the body of decode's matvec, written once over how
// a weight is read (float32 as stored: matvec.cpp; binary16 widened in registers: matvec_f16.cpp;
// chapter 13's blocks dequantized in registers: matvec_quant.cpp) and over W, the floats in one
// register of the target (common.hpp). A Read policy says where row r starts (row) and how many
// bytes into a row weight i lies (bytes), and reads sixteen weights of a row from index i as the
// target's Partials (sixteen) and one as a float (one).
//
//   y[b, r] = M[r, :] . x[b, :] + bias[r]   for r in [r0, r1)   x: (B, n), M: (rows, n), y: (B, rows)
//
// M is a weight matrix held (out, in) = (rows, n): a block's four (held transposed, so each
// output's weights are one contiguous row) or the tied lm_head's wte. Every output's sum runs
// in one order, whatever B, r0, r1, the thread count or the target: sixteen partial sums (lane k
// adds the products i = k, k + 16, ... in turn, i < n - n % 16), their total in lane order from
// lane 0, then the last n % 16 products one by one, then the bias. So a row gets the same bits
// alone, in a batch and on any number of threads, and an f16 or quantized matrix the bits of its
// widened or dequantized f32.
#include "common.hpp"

namespace decodebook::kernels_detail {

// How far ahead (bytes) a batch's products ask for the next part of each row they stream, and
// into which cache: a batch does several rows' arithmetic per weight, which on one core takes as
// long as reading the weights, so the read must run that far ahead of the arithmetic to overlap
// with it. Asked into L2 (prefetcht2) 32 KiB ahead, five rows cost 1.2-1.3 one-row passes; asked
// into L1 (prefetcht0) 4 KiB ahead, 2.0: the arithmetic then waited for every line
// (docs/measurements.md). One row asks for nothing: the hardware prefetcher keeps up alone.
inline constexpr size_t kPrefetchBytes = 32 * 1024;

// How one target reads float32 weights: row r of n at M + r n, sixteen from index i as its
// Partials, one as a float.
template <size_t W_>
struct ReadF32 {
    using Weight = float;
    static inline __attribute__((always_inline)) const float* row(const float* M, size_t r, size_t n) {
        return M + r * n;
    }
    static constexpr size_t bytes(size_t i) { return i * sizeof(float); }
    static inline __attribute__((always_inline)) Partials<16, W_> sixteen(const float* m, size_t i) {
        return Partials<16, W_>::load(m + i);
    }
    static inline __attribute__((always_inline)) float one(const float* m, size_t i) { return m[i]; }
};

// One output's sum from its sixteen partial sums: their total, the last n % 16 products, the bias.
template <class Read, size_t W_>
inline __attribute__((always_inline)) float finish_dot(const Partials<16, W_>& acc, const typename Read::Weight* m,
                                                       const float* xb, size_t n16, size_t n, const float* bias,
                                                       size_t r) {
    float sum = acc.total();
    for (size_t i = n16; i < n; ++i) sum += Read::one(m, i) * xb[i];
    if (bias) sum += bias[r];
    return sum;
}

// [ch07:dots]
// R weight rows (rows r and r + apart, ...) against NB rows of x: R x NB dot products at once.
// Each weight is read once for all NB rows of x, every sum in its own register(s): the loops over
// R and NB are unrolled, so the array indices are constants (GCC keeps an array it indexes in a
// loop it does not unroll in memory: a store and a load per product).
//   x: NB rows of n floats (first at xb, n apart), y: NB rows of `rows` floats (first at yb)
template <class Read, size_t W_, size_t R, size_t NB>
inline __attribute__((always_inline)) void dot_block(const float* __restrict xb, const typename Read::Weight* M,
                                                     const float* bias, size_t n, size_t r, size_t apart,
                                                     size_t rows, bool prefetch, float* __restrict yb) {
    using Sums = Partials<16, W_>;
    const size_t n16 = n - n % 16;
    const typename Read::Weight* m[R];
#pragma GCC unroll 4
    for (size_t a = 0; a < R; ++a) m[a] = Read::row(M, r + a * apart, n);
    Sums acc[R][NB];
#pragma GCC unroll 4
    for (size_t a = 0; a < R; ++a)
#pragma GCC unroll 8
        for (size_t b = 0; b < NB; ++b) acc[a][b] = Sums::zero();
    for (size_t i = 0; i < n16; i += 16) {
        Sums w[R];
#pragma GCC unroll 4
        for (size_t a = 0; a < R; ++a) {
            if (prefetch) __builtin_prefetch(reinterpret_cast<const char*>(m[a]) + Read::bytes(i) + kPrefetchBytes, 0, 1);
            w[a] = Read::sixteen(m[a], i);
        }
#pragma GCC unroll 8
        for (size_t b = 0; b < NB; ++b) {
            Sums xi = Sums::load(xb + b * n + i);
            if constexpr (R > 1) xi.pin();
#pragma GCC unroll 4
            for (size_t a = 0; a < R; ++a) acc[a][b].add_product(w[a], xi);
        }
    }
#pragma GCC unroll 4
    for (size_t a = 0; a < R; ++a)
#pragma GCC unroll 8
        for (size_t b = 0; b < NB; ++b)
            yb[b * rows + r + a * apart] = finish_dot<Read, W_>(acc[a][b], m[a], xb + b * n, n16, n, bias, r + a * apart);
}

// [/ch07:dots]

// Rows r, r + apart, ... (R of them) against all B rows of x, in blocks of at most NB rows of x as
// even as B allows (B = 6 on NB = 5: 3 and 3, not 5 and 1: a block of one costs nearly as much as
// a full one). The first block reads the weights from memory (and asks for what follows), the
// others from cache.
template <class Read, size_t W_, size_t R, size_t NB>
inline __attribute__((always_inline)) void dot_rows_blocked(const float* __restrict x, size_t B,
                                                            const typename Read::Weight* M, const float* bias,
                                                            size_t rows, size_t n, size_t r, size_t apart,
                                                            float* __restrict y) {
    const size_t blocks = (B + NB - 1) / NB;
    for (size_t k = 0, b = 0; k < blocks; ++k) {
        const size_t size = (B - b) / (blocks - k);  // the rows left, shared by the blocks left
        const float* xb = x + b * n;
        float* yb = y + b * rows;
        const bool first = k == 0;
        if constexpr (NB >= 5) if (size == 5) dot_block<Read, W_, R, 5>(xb, M, bias, n, r, apart, rows, first, yb);
        if constexpr (NB >= 4) if (size == 4) dot_block<Read, W_, R, 4>(xb, M, bias, n, r, apart, rows, first, yb);
        if constexpr (NB >= 3) if (size == 3) dot_block<Read, W_, R, 3>(xb, M, bias, n, r, apart, rows, first, yb);
        if (size == 2) dot_block<Read, W_, R, 2>(xb, M, bias, n, r, apart, rows, first, yb);
        if (size == 1) dot_block<Read, W_, R, 1>(xb, M, bias, n, r, apart, rows, first, yb);
        b += size;
    }
}

// The level-1 data cache this code plans for: 32 KiB, the smallest of the x86-64 cores it runs on
// (AMD Zen 2 to 5; Intel's since Ice Lake have 48).
inline constexpr size_t kL1Bytes = 32 * 1024;

// Whether one row of x and two weight rows fit in L1 together. One row of x is read again for
// every pass over the weights while the weights pass through once; when x and the two rows
// streamed beside it do not fit (GPT-2's MLP projection in f32: 12 KiB of x, two 12 KiB rows),
// each pass evicts x, which is then read from L2 for the next: that matrix read at 78-85 % of a
// plain read on AVX2 and 85-97 % on AVX-512 where the other three read at 90-107 %
// (docs/measurements.md).
template <class Read>
inline bool x_fits_beside_two_rows(size_t n) {
    return 2 * Read::bytes(n) + n * sizeof(float) <= kL1Bytes;
}

// y[b, r] = M[r, :] . x[b, :] + bias[r] for r in [r0, r1), every b < B.
// Two rows half the range apart side by side (two memory streams: the fastest way measured,
// docs/measurements.md), then an odd range's last row. When x and two rows do not fit in L1, four
// rows a quarter of the range apart (x read once for four rows: 90-92 % of a plain read on AVX2
// where two rows read 78-85 %), then the range's last rows one by one; not on the default target,
// whose sixteen registers do not hold four rows' sums. One row of x asks for nothing ahead (the
// hardware prefetcher keeps up with two streams; asking made it slower); a batch does, and takes
// its rows of x NB at a time (NB: how many rows' sums the target's registers hold beside the
// weights: 5 on v4 with two weight rows, 5 on v3 with one, 2 on the default with one; 5 covers
// chapter 08's k = 4 drafts). Every way computes each output's sum in the one order above.
template <class Read, size_t W_>
inline __attribute__((always_inline)) void dot_rows(const float* __restrict x, size_t B,
                                                    const typename Read::Weight* M, const float* bias, size_t rows,
                                                    size_t n, size_t r0, size_t r1, float* __restrict y) {
    constexpr size_t NB = W_ == 4 ? 2 : 5, R = W_ == 16 ? 2 : 1;
    const size_t half = (r1 - r0) / 2;
    if (B == 1) {
        if constexpr (W_ >= 8) {
            if (!x_fits_beside_two_rows<Read>(n)) {
                const size_t quarter = (r1 - r0) / 4;
                for (size_t r = r0; r < r0 + quarter; ++r) dot_block<Read, W_, 4, 1>(x, M, bias, n, r, quarter, rows, false, y);
                for (size_t r = r0 + 4 * quarter; r < r1; ++r) dot_block<Read, W_, 1, 1>(x, M, bias, n, r, 0, rows, false, y);
                return;
            }
        }
        for (size_t r = r0; r < r0 + half; ++r) dot_block<Read, W_, 2, 1>(x, M, bias, n, r, half, rows, false, y);
        if ((r1 - r0) % 2 == 1) dot_block<Read, W_, 1, 1>(x, M, bias, n, r1 - 1, 0, rows, false, y);
        return;
    }
    if constexpr (R == 2) {
        for (size_t r = r0; r < r0 + half; ++r) dot_rows_blocked<Read, W_, 2, NB>(x, B, M, bias, rows, n, r, half, y);
        if ((r1 - r0) % 2 == 1) dot_rows_blocked<Read, W_, 1, NB>(x, B, M, bias, rows, n, r1 - 1, 0, y);
    } else {
        for (size_t r = r0; r < r1; ++r) dot_rows_blocked<Read, W_, 1, NB>(x, B, M, bias, rows, n, r, 0, y);
    }
}

}  // namespace decodebook::kernels_detail
