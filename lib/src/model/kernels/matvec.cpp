// Chapter 07: decode's products: the matrix-vector product that streams each weight matrix once
// for every row of a batch, and the tied lm_head.
// Shapes are in the comments; every matrix is row-major. See model/kernels.hpp for why two kinds.
#include "decodebook/model/kernels.hpp"

#include <omp.h>

#include <string_view>

#include "common.hpp"

namespace decodebook {

using namespace kernels_detail;

namespace {

// How far ahead (floats, 2 KiB) the products ask for the weights they will read next: with a batch
// (chapter 08's verification) each block takes longer and the hardware prefetcher alone falls behind.
constexpr size_t kPrefetchFloats = 512;

// y[b, j0:j1] += sum_{i0 <= i < i1} x[b, i] W[i, j0:j1] for every row b, one row of W at a time:
// the last in % 4 rows of the products below.   x: (B, in), W: (in, out), y: (B, out)
inline __attribute__((always_inline)) void matvec_rows_one_by_one(const float* __restrict x, size_t B,
                                                                  const float* __restrict W, size_t in, size_t out,
                                                                  size_t i0, size_t i1, size_t j0, size_t j1,
                                                                  float* __restrict y) {
    for (size_t i = i0; i < i1; ++i) {
        const float* w = W + i * out;
        for (size_t b = 0; b < B; ++b) {
            const float xi = x[b * in + i];
            float* yb = y + b * out;
            for (size_t j = j0; j < j1; ++j) yb[j] += xi * w[j];
        }
    }
}

// The plain loop GCC vectorises on its own: what x86-64-v3 and the default ran before issue 24.
inline __attribute__((always_inline)) void matvec_columns_generic(const float* __restrict x, size_t B, const float* __restrict W, size_t in,
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
    matvec_rows_one_by_one(x, B, W, in, out, i, i1, j0, j1, y);
}

// y[j0:j1] += x[i0:i1] W[i0:i1, j0:j1] for one row x (decode).   x: (in), W: (in, out), y: (out)
// Four rows of W at a time, 2W columns per pass in two registers of W floats (W = 16 on AVX-512,
// 8 on AVX2, 4 on SSE2): y (in cache) is read and written once per four rows of W; eight rows
// (eight memory streams) read slower (docs/measurements.md). The order of the sums for one y[j]
// does not depend on B, on j0/j1, on W or on the target: y, then + x[i] W[i, j] for i = i0, i0 + 1,
// ... in turn. (Written so it reads faster than GCC's vectorisation of a plain loop.)
template <size_t W_>
inline __attribute__((always_inline)) void matvec_columns_one(const float* __restrict x, const float* __restrict W,
                                                              size_t in, size_t out, size_t i0, size_t i1, size_t j0,
                                                              size_t j1, float* __restrict y) {
    using Cols = Partials<W_, W_>;  // W_ columns in one register
    constexpr size_t R = 4, step = 2 * W_;
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        const float* xb = x + i;
        const Cols x0 = Cols::splat(xb[0]), x1 = Cols::splat(xb[1]), x2 = Cols::splat(xb[2]), x3 = Cols::splat(xb[3]);
        size_t j = j0;
        for (; j + step <= j1; j += step) {
            for (size_t k = j; k < j + step; k += W_) {
                Cols sum = Cols::load(y + k);
                sum.add_product(x0, Cols::load(w + k));
                sum.add_product(x1, Cols::load(w + out + k));
                sum.add_product(x2, Cols::load(w + 2 * out + k));
                sum.add_product(x3, Cols::load(w + 3 * out + k));
                sum.store(y + k);
            }
        }
        for (; j < j1; ++j) {  // the last (j1 - j0) % 2W columns
            float sum = y[j];
            for (size_t r = 0; r < R; ++r) sum += xb[r] * w[r * out + j];
            y[j] = sum;
        }
    }
    matvec_rows_one_by_one(x, 1, W, in, out, i, i1, j0, j1, y);  // the last (i1 - i0) % 4 rows
}

// The same product for a batch (chapter 08's verification: k + 1 rows): each block of 4 x 2W
// weights is asked for ahead and read into registers once for every row; the same sums in the
// same order as one row.   x: (B, in), y: (B, out)
template <size_t W_>
inline __attribute__((always_inline)) void matvec_columns_batch(const float* __restrict x, size_t B,
                                                                const float* __restrict W, size_t in, size_t out,
                                                                size_t i0, size_t i1, size_t j0, size_t j1,
                                                                float* __restrict y) {
    using Cols = Partials<W_, W_>;
    constexpr size_t R = 4, step = 2 * W_;
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        size_t j = j0;
        for (; j + step <= j1; j += step) {
            // the 4 x 2W weights once into registers, then every row b of the batch uses them
            Cols wr[R][2];
            for (size_t r = 0; r < R; ++r) {
                // 2 KiB ahead in each of the four rows: the hardware prefetcher alone falls behind
                // once a batch's rows make each block take longer (a block past a row's end reaches
                // into the next rows, which come next anyway); one request per 64-byte line
                for (size_t h = 0; h < step; h += 16) __builtin_prefetch(w + r * out + j + kPrefetchFloats + h);
                for (size_t h = 0; h < 2; ++h) wr[r][h] = Cols::load(w + r * out + j + h * W_);
            }
            for (size_t b = 0; b < B; ++b) {
                const float* xb = x + b * in + i;
                const Cols x0 = Cols::splat(xb[0]), x1 = Cols::splat(xb[1]), x2 = Cols::splat(xb[2]),
                           x3 = Cols::splat(xb[3]);
                float* yb = y + b * out + j;
                for (size_t h = 0; h < 2; ++h) {
                    Cols sum = Cols::load(yb + h * W_);
                    sum.add_product(x0, wr[0][h]);
                    sum.add_product(x1, wr[1][h]);
                    sum.add_product(x2, wr[2][h]);
                    sum.add_product(x3, wr[3][h]);
                    sum.store(yb + h * W_);
                }
            }
        }
        for (size_t b = 0; b < B; ++b) {
            const float* xb = x + b * in + i;
            float* yb = y + b * out;
            for (size_t jj = j; jj < j1; ++jj) {  // the last (j1 - j0) % 2W columns
                float sum = yb[jj];
                for (size_t r = 0; r < R; ++r) sum += xb[r] * w[r * out + jj];
                yb[jj] = sum;
            }
        }
    }
    matvec_rows_one_by_one(x, B, W, in, out, i, i1, j0, j1, y);  // the last (i1 - i0) % 4 rows
}

// Rows m0 and m1 against one row xb of x: two dot products, sixteen partial sums each (lane k
// sums the products i = k, k + 16, ...), then each total in lane order and the last n % 16
// products.
template <size_t W_>
inline __attribute__((always_inline)) void two_dots(const float* m0, const float* m1, const float* xb, size_t n16,
                                                    size_t n, float& y0, float& y1) {
    using Sums = Partials<16, W_>;
    Sums a0 = Sums::zero(), a1 = Sums::zero();
    for (size_t i = 0; i < n16; i += 16) {
        const Sums xi = Sums::load(xb + i);
        a0.add_product(Sums::load(m0 + i), xi);
        a1.add_product(Sums::load(m1 + i), xi);
    }
    y0 = a0.total();
    y1 = a1.total();
    for (size_t i = n16; i < n; ++i) y0 += m0[i] * xb[i];
    for (size_t i = n16; i < n; ++i) y1 += m1[i] * xb[i];
}

// The last row of an odd range against every row of x.
template <size_t W_>
inline __attribute__((always_inline)) void last_row_dots(const float* x, size_t B, const float* m, size_t rows,
                                                         size_t n16, size_t n, size_t r, float* y) {
    using Sums = Partials<16, W_>;
    for (size_t b = 0; b < B; ++b) {
        const float* xb = x + b * n;
        Sums acc = Sums::zero();
        for (size_t i = 0; i < n16; i += 16) acc.add_product(Sums::load(m + i), Sums::load(xb + i));
        float sum = acc.total();
        for (size_t i = n16; i < n; ++i) sum += m[i] * xb[i];
        y[b * rows + r] = sum;
    }
}

// y[b, r] = M[r, :] . x[b, :] for r in [r0, r1).   x: (B, n), M: (rows, n), y: (B, rows)
// Sixteen partial sums per dot product (vector lanes), then one total. Two rows half the range
// apart are read side by side: two memory streams, the fastest of the ways measured
// (docs/measurements.md). Each row's sums run in the same order whichever of the two it is, so the
// result does not depend on r0, r1, the threads or the target.
template <size_t W_>
inline __attribute__((always_inline)) void dot_rows_lanes(const float* __restrict x, size_t B,
                                                          const float* __restrict M, size_t rows, size_t n, size_t r0,
                                                          size_t r1, float* __restrict y) {
    const size_t n16 = n - n % 16;
    const size_t half = (r1 - r0) / 2;
    for (size_t r = r0; r < r0 + half; ++r) {
        const float* m0 = M + r * n;
        const float* m1 = m0 + half * n;
        for (size_t b = 0; b < B; ++b)
            two_dots<W_>(m0, m1, x + b * n, n16, n, y[b * rows + r], y[b * rows + r + half]);
    }
    if ((r1 - r0) % 2 == 1) last_row_dots<W_>(x, B, M + (r1 - 1) * n, rows, n16, n, r1 - 1, y);  // an odd range
}

// The same dot products for a batch (B >= 2, chapter 08's verification): two rows of x per pass
// over the two vocabulary rows, four independent sums in flight, the rows after them asked for
// ahead. Each sum runs in the same order as in dot_rows_lanes.
template <size_t W_>
inline __attribute__((always_inline)) void dot_rows_batch_lanes(const float* __restrict x, size_t B,
                                                                const float* __restrict M, size_t rows, size_t n,
                                                                size_t r0, size_t r1, float* __restrict y) {
    using Sums = Partials<16, W_>;
    const size_t n16 = n - n % 16;
    const size_t half = (r1 - r0) / 2;
    const auto finish = [&](const Sums& acc, const float* m, const float* xb) {
        float sum = acc.total();
        for (size_t i = n16; i < n; ++i) sum += m[i] * xb[i];
        return sum;
    };
    for (size_t r = r0; r < r0 + half; ++r) {
        const float* m0 = M + r * n;
        const float* m1 = m0 + half * n;
        size_t b = 0;
        for (; b + 2 <= B; b += 2) {  // two rows of x at once: four independent sums in flight
            const float* xb = x + b * n;
            const float* xc = xb + n;
            Sums a0 = Sums::zero(), a1 = Sums::zero(), c0 = Sums::zero(), c1 = Sums::zero();
            for (size_t i = 0; i < n16; i += 16) {
                if (b == 0) {  // the first pass over the two rows asks for what follows them
                    __builtin_prefetch(m0 + i + kPrefetchFloats);
                    __builtin_prefetch(m1 + i + kPrefetchFloats);
                }
                const Sums mi0 = Sums::load(m0 + i), mi1 = Sums::load(m1 + i);
                const Sums xi = Sums::load(xb + i), xj = Sums::load(xc + i);
                a0.add_product(mi0, xi);
                a1.add_product(mi1, xi);
                c0.add_product(mi0, xj);
                c1.add_product(mi1, xj);
            }
            y[b * rows + r] = finish(a0, m0, xb);
            y[b * rows + r + half] = finish(a1, m1, xb);
            y[(b + 1) * rows + r] = finish(c0, m0, xc);
            y[(b + 1) * rows + r + half] = finish(c1, m1, xc);
        }
        for (; b < B; ++b) two_dots<W_>(m0, m1, x + b * n, n16, n, y[b * rows + r], y[b * rows + r + half]);
    }
    if ((r1 - r0) % 2 == 1) last_row_dots<W_>(x, B, M + (r1 - 1) * n, rows, n16, n, r1 - 1, y);  // an odd range
}

}  // namespace

// Each target's versions of the bodies above (the table of pointers is in blas.cpp).
#define DECODEBOOK_DEFINE_MATVEC(NS, ATTR, W_)                                                                  \
    namespace kernels_detail::NS {                                                                              \
    ATTR void matvec_columns(const float* x, size_t B, const float* W, size_t in, size_t out, size_t i0,        \
                             size_t i1, size_t j0, size_t j1, float* y) {                                      \
        if (std::string_view(#NS) != "v4") return matvec_columns_generic(x, B, W, in, out, i0, i1, j0, j1, y); \
        if (B == 1) return matvec_columns_one<W_>(x, W, in, out, i0, i1, j0, j1, y);                          \
        matvec_columns_batch<W_>(x, B, W, in, out, i0, i1, j0, j1, y);                                          \
    }                                                                                                          \
    ATTR void dot_rows(const float* x, size_t B, const float* M, size_t rows, size_t n, size_t r0, size_t r1,   \
                       float* y) {                                                                             \
        dot_rows_lanes<W_>(x, B, M, rows, n, r0, r1, y);                                                        \
    }                                                                                                          \
    ATTR void dot_rows_batch(const float* x, size_t B, const float* M, size_t rows, size_t n, size_t r0,        \
                             size_t r1, float* y) {                                                            \
        dot_rows_batch_lanes<W_>(x, B, M, rows, n, r0, r1, y);                                                  \
    }                                                                                                          \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_DEFINE_MATVEC)

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
    const KernelTable& k = kernels();  // this processor's best target, or set_kernel_target's
    const int threads = g_threads;
    if (threads == 1) {
        k.matvec_columns(x, B, W, in, out, 0, h, 0, out, y);
        k.matvec_columns(x, B, W, in, out, h, in, 0, out, partial);
    } else {
#pragma omp parallel num_threads(threads)
        {  // two threads: each streams one contiguous half of W; more: each half split by columns
            const int n = omp_get_num_threads(), t = omp_get_thread_num();
            if (n == 1) {
                k.matvec_columns(x, B, W, in, out, 0, h, 0, out, y);
                k.matvec_columns(x, B, W, in, out, h, in, 0, out, partial);
            } else {
                const int half = t % 2;
                const auto [j0, j1] = chunk(out, (n - half + 1) / 2, t / 2);
                if (half == 0) k.matvec_columns(x, B, W, in, out, 0, h, j0, j1, y);
                else k.matvec_columns(x, B, W, in, out, h, in, j0, j1, partial);
            }
        }
    }
    for (size_t e = 0; e < B * out; ++e) y[e] += partial[e];
}
// [/ch07:matvec]

void matvec_transposed(const float* x, size_t B, const float* M, size_t rows, size_t n, float* y) {
    const int threads = g_threads;
    const auto dots = B == 1 ? kernels().dot_rows : kernels().dot_rows_batch;
    if (threads == 1) return dots(x, B, M, rows, n, 0, rows, y);
#pragma omp parallel num_threads(threads)
    {  // each thread owns a block of vocabulary entries
        const auto [r0, r1] = chunk(rows, omp_get_num_threads(), omp_get_thread_num());
        dots(x, B, M, rows, n, r0, r1, y);
    }
}

}  // namespace decodebook
