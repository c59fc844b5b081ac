#pragma once
/// @file kernels.hpp
/// @brief The products behind the cached model, and how fast this machine can feed them (chapter 07).
///
/// Decoding one token reads every weight once and does two flops with each: its speed is set by
/// memory bandwidth, not arithmetic. So the decode path uses its own matrix-vector product, which
/// streams each weight matrix once for all rows of a batch (compiled twice, for AVX2+FMA and for
/// plain x86-64, and picked when the program starts), while the prompt's prefill, where each
/// weight is used by every prompt token, goes to the BLAS's matrix-matrix product (GEMM).
#include <cstddef>
#include <string>

namespace decodebook {

/// Threads for the decode kernels (OpenMP) and for the BLAS. Default 1: a second thread helps
/// only when the second core is idle (on a busy machine it makes every step wait).
/// Introduced in chapter 07.
/// @throws Error when n < 1.
void set_num_threads(int n);
/// The number set by set_num_threads (1 unless changed). Introduced in chapter 07.
int num_threads();

/// y (B, out) = x (B, in) W (in, out) + bias (out), rows of x and y contiguous; W in HF Conv1D
/// orientation, streamed once for all B rows. Each row's sums run in the same order whatever
/// B is, so a row gets the same bits alone and inside a batch. bias may be null.
/// Introduced in chapter 07.
void matvec(const float* x, size_t B, const float* W, const float* bias, size_t in, size_t out, float* y);

/// y (B, rows) = x (B, n) M^T for a row-major M (rows, n): the tied lm_head (M = wte), one dot
/// product per vocabulary entry, streamed once for all B rows. Introduced in chapter 07.
void matvec_transposed(const float* x, size_t B, const float* M, size_t rows, size_t n, float* y);

/// y (T, out) = x (T, in) W (in, out) + bias through the BLAS's sgemm (prefill, batches).
/// Introduced in chapter 07.
void gemm(const float* x, size_t T, const float* W, const float* bias, size_t in, size_t out, float* y);

/// Which compiled version of the decode kernels this processor runs: "x86-64-v3 (AVX2, FMA)"
/// or "x86-64 (SSE2)". Introduced in chapter 07.
std::string kernel_target();
/// The BLAS and the kernels it picked, e.g. "OpenBLAS 0.3.21 (core Zen)". Introduced in chapter 07.
std::string blas_description();

/// This machine's memory read bandwidth in bytes per second: the best of `repeats` sums over a
/// buffer of `bytes` (far larger than the caches), on `threads` threads.
/// Introduced in chapter 07.
double measure_read_bandwidth(size_t bytes, int threads, int repeats = 5);

}  // namespace decodebook
