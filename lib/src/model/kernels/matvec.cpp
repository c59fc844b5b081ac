// Chapter 07: decode's products: the matrix-vector product that streams each weight matrix once
// for every row of a batch, and the tied lm_head.
// Shapes are in the comments; every matrix is row-major. See model/kernels.hpp for why two kinds.
#include "decodebook/model/kernels.hpp"

#include <omp.h>

#include "common.hpp"

namespace decodebook {

using namespace kernels_detail;

namespace {

// How far ahead (floats, 2 KiB) the products ask for the weights they will read next: with a batch
// (chapter 08's verification) each block takes longer and the hardware prefetcher alone falls behind.
constexpr size_t kPrefetchFloats = 512;

// y[b, j0:j1] += sum_{i0 <= i < i1} x[b, i] W[i, j0:j1] for every row b.
//   x: (B, in), W: (in, out), y: (B, out)
// Four rows of W at a time: each weight is read from memory once for all B rows (and, a block
// of four rows by 32 or 64 columns at a time, into registers or L1 once for all of them, so a call
// of k + 1 rows costs little more than one row: chapter 08's verification), and y (in cache) is
// read and written once per four rows of W; eight rows (eight memory streams) read slower
// (docs/measurements.md).
// The order of the sums for one y[b, j] does not depend on B, on j0/j1 or on the version:
// y, then + x[b, i] W[i, j] for i = i0, i0 + 1, ... in turn.
DECODEBOOK_CLONES
void matvec_columns_generic(const float* __restrict x, size_t B, const float* __restrict W, size_t in,
                            size_t out, size_t i0, size_t i1, size_t j0, size_t j1, float* __restrict y) {
    constexpr size_t R = 4, J = 64;  // J columns of four rows (1 KiB of W) stay in L1 for every row b
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        for (size_t jb = j0; jb < j1; jb += J) {
            const size_t je = std::min(jb + J, j1);
            for (size_t b = 0; b < B; ++b) {
                float xr[R];
                for (size_t r = 0; r < R; ++r) xr[r] = x[b * in + i + r];
                float* yb = y + b * out;
                for (size_t j = jb; j < je; ++j) {
                    float sum = yb[j];
                    for (size_t r = 0; r < R; ++r) sum += xr[r] * w[r * out + j];
                    yb[j] = sum;
                }
            }
        }
    }
    for (; i < i1; ++i) {
        const float* w = W + i * out;
        for (size_t b = 0; b < B; ++b) {
            const float xi = x[b * in + i];
            float* yb = y + b * out;
            for (size_t j = j0; j < j1; ++j) yb[j] += xi * w[j];
        }
    }
}

#if !defined(__clang__)
// The same product written out for AVX-512: 32 columns of the four rows per pass, in two
// sixteen-float registers each; it reads faster than GCC's vectorisation of the loop above, and
// slower written so for AVX2 (docs/measurements.md). Same sums in the same order as the loop above.
__attribute__((target("arch=x86-64-v4")))
void matvec_columns_avx512_one(const float* __restrict x, const float* __restrict W, size_t in, size_t out, size_t i0,
                               size_t i1, size_t j0, size_t j1, float* __restrict y) {
    constexpr size_t R = 4, L = 16, step = 2 * L;
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        const float* xb = x + i;
        const Lanes x0 = Lanes{} + xb[0], x1 = Lanes{} + xb[1], x2 = Lanes{} + xb[2], x3 = Lanes{} + xb[3];
        size_t j = j0;
        for (; j + step <= j1; j += step) {
            for (size_t k = j; k < j + step; k += L) {
                Lanes sum = load_lanes<Lanes>(y + k);
                sum += x0 * load_lanes<Lanes>(w + k);
                sum += x1 * load_lanes<Lanes>(w + out + k);
                sum += x2 * load_lanes<Lanes>(w + 2 * out + k);
                sum += x3 * load_lanes<Lanes>(w + 3 * out + k);
                std::memcpy(y + k, &sum, sizeof sum);
            }
        }
        for (; j < j1; ++j) {  // the last (j1 - j0) % 32 columns
            float sum = y[j];
            for (size_t r = 0; r < R; ++r) sum += xb[r] * w[r * out + j];
            y[j] = sum;
        }
    }
    if (i < i1) matvec_columns_generic(x, 1, W, in, out, i, i1, j0, j1, y);  // the last in % 4 rows
}

// A batch (chapter 08's verification: k + 1 rows): each block of 4 x 32 weights is asked for
// ahead and read into registers once for every row; the same sums in the same order as one row.
__attribute__((target("arch=x86-64-v4")))
void matvec_columns_avx512_batch(const float* __restrict x, size_t B, const float* __restrict W, size_t in, size_t out,
                           size_t i0, size_t i1, size_t j0, size_t j1, float* __restrict y) {
    constexpr size_t R = 4, L = 16, step = 2 * L;
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        size_t j = j0;
        for (; j + step <= j1; j += step) {
            // the 4 x 32 weights once into registers, then every row b of the batch uses them
            // (chapter 08's verification: k + 1 rows read W once)
            Lanes wr[R][2];
            for (size_t r = 0; r < R; ++r) {
                // 2 KiB ahead in each of the four rows: the hardware prefetcher alone falls behind
                // once a batch's rows make each block take longer (a block past a row's end reaches
                // into the next rows, which come next anyway)
                __builtin_prefetch(w + r * out + j + kPrefetchFloats);
                __builtin_prefetch(w + r * out + j + kPrefetchFloats + L);
                for (size_t h = 0; h < 2; ++h) wr[r][h] = load_lanes<Lanes>(w + r * out + j + h * L);
            }
            for (size_t b = 0; b < B; ++b) {
                const float* xb = x + b * in + i;
                const Lanes x0 = Lanes{} + xb[0], x1 = Lanes{} + xb[1], x2 = Lanes{} + xb[2], x3 = Lanes{} + xb[3];
                float* yb = y + b * out + j;
                for (size_t h = 0; h < 2; ++h) {
                    Lanes sum = load_lanes<Lanes>(yb + h * L);
                    sum += x0 * wr[0][h];
                    sum += x1 * wr[1][h];
                    sum += x2 * wr[2][h];
                    sum += x3 * wr[3][h];
                    std::memcpy(yb + h * L, &sum, sizeof sum);
                }
            }
        }
        for (size_t b = 0; b < B; ++b) {
            const float* xb = x + b * in + i;
            float* yb = y + b * out;
            for (size_t jj = j; jj < j1; ++jj) {  // the last (j1 - j0) % 32 columns
                float sum = yb[jj];
                for (size_t r = 0; r < R; ++r) sum += xb[r] * w[r * out + jj];
                yb[jj] = sum;
            }
        }
    }
    if (i < i1) matvec_columns_generic(x, B, W, in, out, i, i1, j0, j1, y);  // the last in % 4 rows
}
#endif

// The AVX-512 version where the processor has it, else the clones of the generic one.
void matvec_columns(const float* x, size_t B, const float* W, size_t in, size_t out, size_t i0, size_t i1,
                    size_t j0, size_t j1, float* y) {
#if !defined(__clang__)
    if (runs_x86_64_v4()) {
        if (B == 1) return matvec_columns_avx512_one(x, W, in, out, i0, i1, j0, j1, y);
        return matvec_columns_avx512_batch(x, B, W, in, out, i0, i1, j0, j1, y);
    }
#endif
    matvec_columns_generic(x, B, W, in, out, i0, i1, j0, j1, y);
}

// One dot product's total: its sixteen partial sums in lane order, then the last n % 16 products.
inline __attribute__((always_inline)) float dot_total(Lanes acc, const float* m, const float* xb, size_t n16,
                                                      size_t n) {
    float sum = 0;
    for (int k = 0; k < 16; ++k) sum += acc[k];
    for (size_t i = n16; i < n; ++i) sum += m[i] * xb[i];
    return sum;
}

// Rows m0 and m1 against one row xb of x: two dot products, sixteen partial sums each.
inline __attribute__((always_inline)) void two_dots(const float* m0, const float* m1, const float* xb, size_t n16,
                                                    size_t n, float& y0, float& y1) {
    constexpr size_t L = 16;
    Lanes a0 = {}, a1 = {};
    for (size_t i = 0; i < n16; i += L) {
        const Lanes xi = load_lanes<Lanes>(xb + i);
        a0 += load_lanes<Lanes>(m0 + i) * xi;
        a1 += load_lanes<Lanes>(m1 + i) * xi;
    }
    y0 = dot_total(a0, m0, xb, n16, n);
    y1 = dot_total(a1, m1, xb, n16, n);
}

// The last row of an odd range against every row of x.
inline __attribute__((always_inline)) void last_row_dots(const float* x, size_t B, const float* m, size_t rows,
                                                         size_t n16, size_t n, size_t r, float* y) {
    constexpr size_t L = 16;
    for (size_t b = 0; b < B; ++b) {
        const float* xb = x + b * n;
        Lanes acc = {};
        for (size_t i = 0; i < n16; i += L) acc += load_lanes<Lanes>(m + i) * load_lanes<Lanes>(xb + i);
        y[b * rows + r] = dot_total(acc, m, xb, n16, n);
    }
}

// y[b, r] = M[r, :] . x[b, :] for r in [r0, r1).   x: (B, n), M: (rows, n), y: (B, rows)
// Sixteen partial sums per dot product (vector lanes), then one total. Two rows half the range
// apart are read side by side: two memory streams, the fastest of the ways measured (docs/measurements.md). Each row's sums run in the same order whichever of the two it is, so the result does
// not depend on r0, r1 or the threads.
DECODEBOOK_CLONES
void dot_rows(const float* __restrict x, size_t B, const float* __restrict M, size_t rows, size_t n, size_t r0,
              size_t r1, float* __restrict y) {
    constexpr size_t L = 16;
    const size_t n16 = n - n % L;
    const size_t half = (r1 - r0) / 2;
    for (size_t r = r0; r < r0 + half; ++r) {
        const float* m0 = M + r * n;
        const float* m1 = m0 + half * n;
        for (size_t b = 0; b < B; ++b) two_dots(m0, m1, x + b * n, n16, n, y[b * rows + r], y[b * rows + r + half]);
    }
    if ((r1 - r0) % 2 == 1) last_row_dots(x, B, M + (r1 - 1) * n, rows, n16, n, r1 - 1, y);  // an odd range
}

// The same dot products for a batch (B >= 2, chapter 08's verification): two rows of x per pass
// over the two vocabulary rows, four independent sums in flight, the rows after them asked for
// ahead. Each sum runs in the same order as in dot_rows.
DECODEBOOK_CLONES
void dot_rows_batch(const float* __restrict x, size_t B, const float* __restrict M, size_t rows, size_t n, size_t r0,
              size_t r1, float* __restrict y) {
    constexpr size_t L = 16;
    const size_t n16 = n - n % L;
    const size_t half = (r1 - r0) / 2;
    for (size_t r = r0; r < r0 + half; ++r) {
        const float* m0 = M + r * n;
        const float* m1 = m0 + half * n;
        size_t b = 0;
        for (; b + 2 <= B; b += 2) {  // two rows of x at once: four independent sums in flight
            const float* xb = x + b * n;
            const float* xc = xb + n;
            Lanes a0 = {}, a1 = {}, c0 = {}, c1 = {};
            for (size_t i = 0; i < n16; i += L) {
                if (b == 0) {  // the first pass over the two rows asks for what follows them
                    __builtin_prefetch(m0 + i + kPrefetchFloats);
                    __builtin_prefetch(m1 + i + kPrefetchFloats);
                }
                const Lanes mi0 = load_lanes<Lanes>(m0 + i), mi1 = load_lanes<Lanes>(m1 + i);
                const Lanes xi = load_lanes<Lanes>(xb + i), xj = load_lanes<Lanes>(xc + i);
                a0 += mi0 * xi;
                a1 += mi1 * xi;
                c0 += mi0 * xj;
                c1 += mi1 * xj;
            }
            y[b * rows + r] = dot_total(a0, m0, xb, n16, n);
            y[b * rows + r + half] = dot_total(a1, m1, xb, n16, n);
            y[(b + 1) * rows + r] = dot_total(c0, m0, xc, n16, n);
            y[(b + 1) * rows + r + half] = dot_total(c1, m1, xc, n16, n);
        }
        for (; b < B; ++b) two_dots(m0, m1, x + b * n, n16, n, y[b * rows + r], y[b * rows + r + half]);
    }
    if ((r1 - r0) % 2 == 1) last_row_dots(x, B, M + (r1 - 1) * n, rows, n16, n, r1 - 1, y);  // an odd range
}

}  // namespace

// [ch07:matvec]
void matvec(const float* x, size_t B, const float* W, const float* bias, size_t in, size_t out, float* y,
            float* partial) {
    // y (B, out) = x (B, in) W (in, out) + bias, W's rows in two fixed halves: y starts as the bias
    // and gains rows [0, h); partial (B, out) gains rows [h, in); then y += partial. Every sum runs
    // in the same order for any B and any number of threads.
    const size_t h = in / 2 / 8 * 8;
    for (size_t b = 0; b < B; ++b) {
        if (bias) std::memcpy(y + b * out, bias, out * sizeof(float));
        else std::fill(y + b * out, y + (b + 1) * out, 0.0f);
    }
    std::fill(partial, partial + B * out, 0.0f);
    const int threads = g_threads;
    if (threads == 1) {
        matvec_columns(x, B, W, in, out, 0, h, 0, out, y);
        matvec_columns(x, B, W, in, out, h, in, 0, out, partial);
    } else {
#pragma omp parallel num_threads(threads)
        {  // two threads: each streams one contiguous half of W; more: each half split by columns
            const int n = omp_get_num_threads(), t = omp_get_thread_num();
            if (n == 1) {
                matvec_columns(x, B, W, in, out, 0, h, 0, out, y);
                matvec_columns(x, B, W, in, out, h, in, 0, out, partial);
            } else {
                const int half = t % 2;
                const auto [j0, j1] = chunk(out, (n - half + 1) / 2, t / 2);
                if (half == 0) matvec_columns(x, B, W, in, out, 0, h, j0, j1, y);
                else matvec_columns(x, B, W, in, out, h, in, j0, j1, partial);
            }
        }
    }
    for (size_t k = 0; k < B * out; ++k) y[k] += partial[k];
}
// [/ch07:matvec]

void matvec_transposed(const float* x, size_t B, const float* M, size_t rows, size_t n, float* y) {
    const int threads = g_threads;
    const auto dots = B == 1 ? dot_rows : dot_rows_batch;
    if (threads == 1) return dots(x, B, M, rows, n, 0, rows, y);
#pragma omp parallel num_threads(threads)
    {  // each thread owns a block of vocabulary entries
        const auto [r0, r1] = chunk(rows, omp_get_num_threads(), omp_get_thread_num());
        dots(x, B, M, rows, n, r0, r1, y);
    }
}

}  // namespace decodebook
