#pragma once
/// @file model/kernels.hpp
/// @brief The products behind the cached model (chapter 07); how fast this machine can feed them
/// is model/roofline.hpp.
///
/// Decoding one token reads every weight once and does two flops with each: its speed is set by
/// memory bandwidth, not arithmetic. So the decode path uses its own matrix-vector product, which
/// streams each weight matrix (held (out, in)) once for all rows of a batch (compiled for AVX-512, for AVX2+FMA and
/// for plain x86-64, and picked when the program starts), while the prompt's prefill, where each
/// weight is used by every prompt token, goes to the BLAS's matrix-matrix product (GEMM).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "decodebook/model/quant.hpp"

namespace decodebook {

/// Threads for the kernels (OpenMP): decode's products and attention, and prefill's, whose
/// GEMM each thread runs on its own block of columns with the BLAS on one thread (so the BLAS's
/// own threads never spin beside OpenMP's). Chapter 00's forward (xtensor-blas) stays on one
/// BLAS thread. Default 1: a second thread helps only when the second core is idle (on a busy
/// machine it makes every step wait).
/// Introduced in chapter 07.
/// @throws Error when n < 1.
void set_num_threads(int n);
/// The number set by set_num_threads (1 unless changed). Introduced in chapter 07.
int num_threads();

/// y (B, out) = x (B, in) W^T + bias (out) for W held (out, in), row-major: output j is the dot
/// product of row j of W with x, plus bias[j]. Decode's product, for the blocks' four matrices
/// (Hugging Face's GPT-2 stores Conv1D's (in, out), the loader turns it once; PyTorch's
/// nn.Linear and llama.cpp hold (out, in)) and the tied lm_head (wte, (V, C)).
/// W is streamed once for all B rows, two of its rows side by side (two memory streams); threads
/// share the outputs. Every output's sum runs in one order (sixteen partial sums, lane k adding
/// the products i = k, k + 16, ...; their total in lane order; the last in % 16 products; the
/// bias), so a row gets the same bits alone, inside a batch and on any number of threads.
/// Introduced in chapter 07.
/// @param x (B, in) the input rows
/// @param B how many rows
/// @param W (out, in) the weights
/// @param bias (out), or null for none
/// @param out the output width (W's rows)
/// @param in the input width (W's columns)
/// @param y (B, out) the result, overwritten
void matvec(const float* x, size_t B, const float* W, const float* bias, size_t out, size_t in, float* y);

/// matvec() over weights held in f16 (WeightDtype::F16): W is (out, in) IEEE binary16 bits,
/// each widened to float32 in registers (F16C's vcvtph2ps on x86-64-v3 and v4, an exact integer
/// widening on plain x86-64) and summed in float32 in matvec's order, so the result equals, bit
/// for bit, matvec() on the widened W, from half the bytes. Introduced in chapter 07.
/// @param x (B, in) the input rows
/// @param B how many rows
/// @param W (out, in) the weights' binary16 bits
/// @param bias (out), or null for none
/// @param out the output width (W's rows)
/// @param in the input width (W's columns)
/// @param y (B, out) the result, overwritten
void matvec_f16(const float* x, size_t B, const uint16_t* W, const float* bias, size_t out, size_t in, float* y);

/// matvec() over weights held in ggml's q8_0 blocks (WeightDtype::Q8_0): W is (out, in / 32)
/// blocks, each weight dequantized in registers (q d, exactly a float32 value) and summed in
/// float32 in matvec's order, so the result equals, bit for bit, matvec() on the dequantized W,
/// from 8.5 bits a weight. Introduced in chapter 13.
/// @param x (B, in) the input rows
/// @param B how many rows
/// @param W (out, in / 32) the blocks, a row of W in / 32 of them (in a multiple of 32)
/// @param bias (out), or null for none
/// @param out the output width (W's rows)
/// @param in the input width (W's weights a row)
/// @param y (B, out) the result, overwritten
void matvec_q8_0(const float* x, size_t B, const BlockQ8_0* W, const float* bias, size_t out, size_t in, float* y);

/// matvec_q8_0() over q4_0 blocks ((q - 8) d, exactly a float32 value), from 4.5 bits a weight.
/// Introduced in chapter 13.
void matvec_q4_0(const float* x, size_t B, const BlockQ4_0* W, const float* bias, size_t out, size_t in, float* y);

/// n binary16 values widened to float32 into `out` (exact: every binary16 value is a float32
/// one): an embedding row, or a whole matrix for prefill's GEMM. Introduced in chapter 07.
void widen_halves(const uint16_t* h, size_t n, float* out);

/// y (T, out) = x (T, in) W^T + bias for W held (out, in), through the BLAS's sgemm (prefill,
/// batches; `CblasTrans`), each of num_threads() threads on its own block of outputs (rows of W).
/// Introduced in chapter 07.
void gemm(const float* x, size_t T, const float* W, const float* bias, size_t out, size_t in, float* y);

/// Attention of one query over `length` cached positions, head by head: for each head h,
/// scores_s = q_h . k_s / sqrt(D), softmax over s < length, out_h = sum_s p_s v_s.
/// @param q (C) the query
/// @param keys position 0 of the cached keys, rows `stride` floats apart (the cache's
///        (capacity, C) block of one layer and sequence, so stride = C)
/// @param values position 0 of the cached values, laid out as the keys
/// @param length how many positions to attend over
/// @param stride floats from one position's row to the next
/// @param C the width: n_head heads of C / n_head
/// @param n_head the number of heads
/// @param scores scratch of `length` floats
/// @param out (C) the result, overwritten
/// Introduced in chapter 07.
void attend(const float* q, const float* keys, const float* values, size_t length, size_t stride, size_t C,
            int n_head, float* scores, float* out);

/// attend() for B rows at once, decode's attention. Each row's cache is read position by position,
/// every head of a position at once (a position's keys for all heads are one contiguous row of C
/// floats; head by head each position gives D floats a row apart, which read at a third of the
/// memory's speed); a row's heads are split among the threads. Each (head, position) is computed
/// as attend computes it, so the result is attend's, bit for bit, whatever B and the thread count.
/// Introduced in chapter 07.
/// @param q (B, q_stride) rows whose first C floats are the queries
/// @param q_stride floats from one query row to the next (3C inside the fused projection)
/// @param B how many rows
/// @param keys B pointers: each row's position 0 of its cached keys, rows C floats apart
/// @param values B pointers, laid out as the keys
/// @param lengths B counts: how many positions each row attends over
/// @param C the width: n_head heads of C / n_head
/// @param n_head the number of heads
/// @param scores scratch of B x n_head x scores_stride floats
/// @param scores_stride at least the longest length
/// @param out (B, C) the result, overwritten
void attend_rows(const float* q, size_t q_stride, size_t B, const float* const* keys, const float* const* values,
                 const size_t* lengths, size_t C, int n_head, float* scores, size_t scores_stride, float* out);

/// attend_rows() over caches cut into blocks (the paged cache, chapter 12): position s of row b is
/// slot s % block_size of block tables[b][s / block_size], each block block_size slots of C floats
/// from keys[b] (and values[b]). Each score is its own dot product and each output adds the
/// positions in order from 0, however they are cut into blocks, so a row gives the bits of the
/// same positions held in one block (the call above is this one with tables {0}).
/// Introduced in chapter 12.
/// @param q (B, q_stride) rows whose first C floats are the queries
/// @param q_stride floats from one query row to the next
/// @param B how many rows
/// @param keys B pointers: each row's block 0 of the keys (for the paged cache, the layer's pool)
/// @param values B pointers, laid out as the keys
/// @param tables B block tables: row b's blocks in position order, at least
///        ceil(lengths[b] / block_size) ids
/// @param block_size positions per block, >= 1
/// @param lengths B counts: how many positions each row attends over
/// @param C the width: n_head heads of C / n_head
/// @param n_head the number of heads
/// @param scores scratch of B x n_head x scores_stride floats
/// @param scores_stride at least the longest length
/// @param out (B, C) the result, overwritten
void attend_rows(const float* q, size_t q_stride, size_t B, const float* const* keys, const float* const* values,
                 const int* const* tables, size_t block_size, const size_t* lengths, size_t C, int n_head,
                 float* scores, size_t scores_stride, float* out);

/// Causal attention of T new queries at positions L0..L0+T-1 over the cache's positions
/// 0..L0+T-1, each query seeing only positions up to its own, as two GEMMs per head
/// (scores = Q K^T, out = softmax(scores) V): prefill's attention. Introduced in chapter 07.
/// @param q (T, q_stride) rows whose first C floats are the queries
/// @param q_stride floats from one query row to the next (3C inside the fused projection)
/// @param T how many new queries
/// @param keys position 0 of the cached keys, (L0 + T, C) rows C floats apart, the new ones included
/// @param values position 0 of the cached values, laid out as the keys
/// @param L0 positions cached before the new ones
/// @param C the width: n_head heads of C / n_head
/// @param n_head the number of heads
/// @param scores scratch of num_threads() x T x (L0 + T) floats (the heads are shared among the
///        threads, each with its own block)
/// @param out (T, C) the result, overwritten
void attend_causal(const float* q, size_t q_stride, size_t T, const float* keys, const float* values, size_t L0,
                   size_t C, int n_head, float* scores, float* out);

/// LayerNorm of T rows of C (mean and variance in double, as chapter 00's forward): y may be x.
/// Introduced in chapter 07.
void layer_norm_rows(const float* x, size_t T, size_t C, const float* gain, const float* bias, float eps, float* y);

/// GPT-2's tanh GELU in place on n floats (chapter 00's formula). Introduced in chapter 07.
void gelu_in_place(float* x, size_t n);

/// Which compiled version of the kernels runs: "x86-64-v4 (AVX-512)", "x86-64-v3 (AVX2, FMA)" or
/// "x86-64 (SSE2)". Each kernel is compiled once per target from one body, every target adding the
/// same products in the same order (the same bits); the best target this processor runs is chosen
/// when the program starts, unless set_kernel_target chose another. Introduced in chapter 07.
std::string kernel_target();
/// The targets this processor runs, best first, by the names set_kernel_target takes: some of
/// "x86-64-v4", "x86-64-v3", "x86-64" (under clang, the fuzzing build, only "x86-64").
/// Introduced in chapter 07.
std::vector<std::string> kernel_targets_supported();
/// Run every kernel's version for the target `name` from now on, in every thread (for tests and
/// decodebook-bench, which run and measure each target on one machine; programs keep the best).
/// Not while kernels run. Introduced in chapter 07.
/// @param name one of kernel_targets_supported()
/// @return kernel_target() of the target now in use
/// @throws Error when `name` is unknown or this processor does not run it, naming the ones it runs.
std::string set_kernel_target(const std::string& name);
/// The BLAS and the kernels it picked, e.g. "OpenBLAS 0.3.21 (core Zen)". Introduced in chapter 07.
std::string blas_description();

/// Choose the BLAS library behind gemm (prefill's products), at run time: "openblas" is the one
/// the build links (the default), "blis" loads Debian's BLIS (libblis.so.4), and a value with a '/'
/// is the path of any shared library with the CBLAS interface. decodebook-bench measures each;
/// every program takes it as `--blas`. Decode's matvec does not use a BLAS. Introduced in chapter 07.
/// @param name openblas, blis, or a library's path
/// @return blas_description() of the library now in use
/// @throws Error when the library is unknown, cannot be loaded or has no cblas_sgemm, naming the
/// package to install.
std::string use_blas(const std::string& name);

}  // namespace decodebook
