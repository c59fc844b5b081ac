// Chapter 07: decode's product, y = x W^T + bias over a weight matrix held (out, in): the blocks'
// four matrices and the tied lm_head, each streamed once for every row of a batch.
// Shapes are in the comments; every matrix is row-major. See model/kernels.hpp for why two kinds.
#include "decodebook/model/kernels.hpp"

#include <omp.h>

#include "common.hpp"
#include "dots.hpp"

namespace decodebook {

using namespace kernels_detail;

// Each target's version of the one body (kernels/dots.hpp; the table of pointers is in blas.cpp).
#define DECODEBOOK_DEFINE_MATVEC(NS, ATTR, W_)                                                                  \
    namespace kernels_detail::NS {                                                                              \
    ATTR void dots(const float* x, size_t B, const float* M, const float* bias, size_t rows, size_t n, size_t r0, \
                   size_t r1, float* y) {                                                                      \
        dot_rows<ReadF32<W_>, W_>(x, B, M, bias, rows, n, r0, r1, y);                                           \
    }                                                                                                          \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_DEFINE_MATVEC)

// [ch07:matvec]
void matvec(const float* x, size_t B, const float* W, const float* bias, size_t out, size_t in, float* y) {
    // y (B, out) = x (B, in) W^T + bias, W held (out, in): output j is row j of W . x + bias[j].
    // One thread reads all of W; more share the outputs, each streaming its own contiguous block of
    // rows. Each output's sum runs in one order (kernels/dots.hpp), so the bits do not depend on B
    // or on the number of threads.
    const auto dots = kernels().dots;  // this processor's best target, or set_kernel_target's
    const int threads = g_threads;
    if (threads == 1) return dots(x, B, W, bias, out, in, 0, out, y);
#pragma omp parallel num_threads(threads)
    {
        const auto [r0, r1] = chunk(out, omp_get_num_threads(), omp_get_thread_num());
        dots(x, B, W, bias, out, in, r0, r1, y);
    }
}
// [/ch07:matvec]

}  // namespace decodebook
