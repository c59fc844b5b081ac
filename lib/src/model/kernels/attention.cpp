// Chapter 07: attention over the cache: one query per row (decode) and T causal queries (prefill).
// Shapes are in the comments; every matrix is row-major. See model/kernels.hpp for why two kinds.
#include "decodebook/model/kernels.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common.hpp"

namespace decodebook {

using namespace kernels_detail;

namespace {

// scores[s] = q . k_s * scale for s < length.   q: (D), k_s: D floats at keys + s * stride
// Each dot product keeps eight partial sums (vector lanes; lane k sums the products d = k, k + 8,
// ...) when D allows: as an array of eight, the sums made GCC shuffle sixteen-wide registers into
// eight lanes. Four positions at a time, each with its own sums: one position's chain of adds
// waited on the previous add, four fill the pipeline. A position's sum runs in the same order
// whichever of the four it is and on every target (W: floats per register, 8 lanes are one
// register on AVX2 and AVX-512, two on SSE2).
template <size_t W_>
inline __attribute__((always_inline)) void head_scores_lanes(const float* __restrict q, const float* __restrict keys,
                                                             size_t length, size_t stride, size_t D, float scale,
                                                             float* __restrict scores) {
    using Sums = Partials<8, W_>;
    if (D % 8 != 0) {
        for (size_t s = 0; s < length; ++s) {
            const float* k = keys + s * stride;
            float sum = 0;
            for (size_t d = 0; d < D; ++d) sum += q[d] * k[d];
            scores[s] = sum * scale;
        }
        return;
    }
    size_t s = 0;
    for (; s + 4 <= length; s += 4) {
        const float* k0 = keys + s * stride;
        const float *k1 = k0 + stride, *k2 = k1 + stride, *k3 = k2 + stride;
        Sums a0 = Sums::zero(), a1 = Sums::zero(), a2 = Sums::zero(), a3 = Sums::zero();
        for (size_t d = 0; d < D; d += 8) {
            const Sums qd = Sums::load(q + d);
            a0.add_product(qd, Sums::load(k0 + d));
            a1.add_product(qd, Sums::load(k1 + d));
            a2.add_product(qd, Sums::load(k2 + d));
            a3.add_product(qd, Sums::load(k3 + d));
        }
        scores[s] = a0.total() * scale;
        scores[s + 1] = a1.total() * scale;
        scores[s + 2] = a2.total() * scale;
        scores[s + 3] = a3.total() * scale;
    }
    for (; s < length; ++s) {
        const float* k = keys + s * stride;
        Sums acc = Sums::zero();
        for (size_t d = 0; d < D; d += 8) acc.add_product(Sums::load(q + d), Sums::load(k + d));
        scores[s] = acc.total() * scale;
    }
}

// out_h (D) = sum_s w[s] v_s,h for one head.   v rows `stride` apart
// 4W outputs at a time (64 on AVX-512, 32 on AVX2, 16 on SSE2: four registers) stay in registers
// over every s (a loop that adds into out[] loads and stores it once per position); each out[d]
// still adds w[0] v_0[d], w[1] v_1[d], ... in order, from 0, on every target.
template <size_t W_>
inline __attribute__((always_inline)) void weighted_sum_lanes(const float* __restrict w, const float* __restrict v,
                                                              size_t length, size_t stride, size_t D,
                                                              float* __restrict out) {
    using Outs = Partials<4 * W_, W_>;
    constexpr size_t block = 4 * W_;
    size_t d0 = 0;
    for (; d0 + block <= D; d0 += block) {
        Outs acc = Outs::zero();
        for (size_t s = 0; s < length; ++s) acc.add_product(Outs::splat(w[s]), Outs::load(v + s * stride + d0));
        acc.store(out + d0);
    }
    std::fill(out + d0, out + D, 0.0f);  // the last D % 4W outputs, one float at a time
    for (size_t s = 0; s < length; ++s) {
        const float ws = w[s];
        const float* vs = v + s * stride;
        for (size_t d = d0; d < D; ++d) out[d] += ws * vs[d];
    }
}

// Decode's attention reads each row's cache position by position: a position's keys (and values)
// for every head are one contiguous row of C floats, where head by head each position gives only
// D floats a whole row apart (docs/measurements.md, "Attention", has the two read rates).
// Each (head, position) is computed exactly as head_scores_lanes and weighted_sum_lanes do it,
// so both orders give the same bits (tests/test_kv_cache.cpp).

// scores[h * scores_stride + s] = q_h . k_s,h * scale for heads [h0, h1) and s < length.
//   q: (C) with head h at q + h * D; k_s: C floats at keys + s * stride
template <size_t W_>
inline __attribute__((always_inline)) void heads_scores_lanes(const float* __restrict q, const float* __restrict keys,
                                                              size_t length, size_t stride, size_t D, size_t h0,
                                                              size_t h1, float scale, float* __restrict scores,
                                                              size_t scores_stride) {
    using Sums = Partials<8, W_>;
    for (size_t s = 0; s < length; ++s) {
        const float* k = keys + s * stride;
        for (size_t h = h0; h < h1; ++h) {
            const float *qh = q + h * D, *kh = k + h * D;
            float sum = 0;
            if (D % 8 != 0) {
                for (size_t d = 0; d < D; ++d) sum += qh[d] * kh[d];
            } else {
                Sums acc = Sums::zero();
                for (size_t d = 0; d < D; d += 8) acc.add_product(Sums::load(qh + d), Sums::load(kh + d));
                sum = acc.total();
            }
            scores[h * scores_stride + s] = sum * scale;
        }
    }
}

// out_h (D) += sum_s w[h * w_stride + s] v_s,h for heads [h0, h1), s in order from 0: four
// positions per pass over out (in cache), so out is read and written once per four positions.
// It adds to out (the caller zeroes it), so positions cut into blocks add up as one run: each
// out[d] still adds w_0 v_0[d], w_1 v_1[d], ... in order, the four-position step and the tail alike.
template <size_t W_>
inline __attribute__((always_inline)) void heads_weighted_sum_lanes(const float* __restrict w, size_t w_stride,
                                                                    const float* __restrict v, size_t length,
                                                                    size_t stride, size_t D, size_t h0, size_t h1,
                                                                    float* __restrict out) {
    using V = Vec<W_>;
    size_t s = 0;
    for (; s + 4 <= length; s += 4) {
        const float* v0 = v + s * stride;
        for (size_t h = h0; h < h1; ++h) {
            const float* wh = w + h * w_stride + s;
            const V w0 = V{} + wh[0], w1 = V{} + wh[1], w2 = V{} + wh[2], w3 = V{} + wh[3];
            const float* vh = v0 + h * D;
            float* o = out + h * D;
            size_t d = 0;
            for (; d + W_ <= D; d += W_) {
                V acc = load_lanes<V>(o + d);
                acc += w0 * load_lanes<V>(vh + d);
                acc += w1 * load_lanes<V>(vh + stride + d);
                acc += w2 * load_lanes<V>(vh + 2 * stride + d);
                acc += w3 * load_lanes<V>(vh + 3 * stride + d);
                std::memcpy(o + d, &acc, sizeof acc);
            }
            for (; d < D; ++d) {
                float acc = o[d];
                for (size_t p = 0; p < 4; ++p) acc += wh[p] * vh[p * stride + d];
                o[d] = acc;
            }
        }
    }
    for (; s < length; ++s) {  // the last length % 4 positions
        const float* vs = v + s * stride;
        for (size_t h = h0; h < h1; ++h) {
            const float ws = w[h * w_stride + s];
            const float* vh = vs + h * D;
            float* o = out + h * D;
            for (size_t d = 0; d < D; ++d) o[d] += ws * vh[d];
        }
    }
}

// x[0:n] = softmax(x[0:n]) in place, the maximum subtracted first (never overflows)
void softmax_in_place(float* x, size_t n) {
    const float max = *std::max_element(x, x + n);
    float sum = 0;
    for (size_t s = 0; s < n; ++s) {
        x[s] = std::exp(x[s] - max);
        sum += x[s];
    }
    for (size_t s = 0; s < n; ++s) x[s] /= sum;
}

}  // namespace

// Each target's versions of the bodies above (the table of pointers is in blas.cpp).
#define DECODEBOOK_DEFINE_ATTENTION(NS, ATTR, W_)                                                               \
    namespace kernels_detail::NS {                                                                              \
    ATTR void head_scores(const float* q, const float* keys, size_t length, size_t stride, size_t D, float scale, \
                          float* scores) {                                                                     \
        head_scores_lanes<W_>(q, keys, length, stride, D, scale, scores);                                       \
    }                                                                                                          \
    ATTR void weighted_sum(const float* w, const float* v, size_t length, size_t stride, size_t D, float* out) { \
        weighted_sum_lanes<W_>(w, v, length, stride, D, out);                                                   \
    }                                                                                                          \
    ATTR void heads_scores(const float* q, const float* keys, size_t length, size_t stride, size_t D, size_t h0, \
                           size_t h1, float scale, float* scores, size_t scores_stride) {                      \
        heads_scores_lanes<W_>(q, keys, length, stride, D, h0, h1, scale, scores, scores_stride);               \
    }                                                                                                          \
    ATTR void heads_weighted_sum(const float* w, size_t w_stride, const float* v, size_t length, size_t stride, \
                                 size_t D, size_t h0, size_t h1, float* out) {                                 \
        heads_weighted_sum_lanes<W_>(w, w_stride, v, length, stride, D, h0, h1, out);                           \
    }                                                                                                          \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_DEFINE_ATTENTION)

// [ch07:attend]
// One head h of one query: out_h (D) = softmax(q_h . k_s,h / sqrt(D)) . v_s,h over s < length
namespace {
void attend_head(const float* q, const float* keys, const float* values, size_t length, size_t stride, size_t D,
                 size_t h, float* scores, float* out) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    // scores_s = q_h . k_s,h / sqrt(D) for every cached position s (all are in the past)
    const KernelTable& k = kernels();  // this processor's best target, or set_kernel_target's
    k.head_scores(q + h * D, keys + h * D, length, stride, D, scale, scores);
    softmax_in_place(scores, length);
    // out_h = sum_s softmax(scores)_s v_s,h
    k.weighted_sum(scores, values + h * D, length, stride, D, out + h * D);
}
}  // namespace

void attend(const float* q, const float* keys, const float* values, size_t length, size_t stride, size_t C,
            int n_head, float* scores, float* out) {
    const size_t H = static_cast<size_t>(n_head);
    for (size_t h = 0; h < H; ++h) attend_head(q, keys, values, length, stride, C / H, h, scores, out);
}
// [/ch07:attend]

void attend_rows(const float* q, size_t q_stride, size_t B, const float* const* keys, const float* const* values,
                 const int* const* tables, size_t block_size, const size_t* lengths, size_t C, int n_head,
                 float* scores, size_t scores_stride, float* out) {
    // each row's cache read position by position (every head of a position at once). The scores
    // first: each row's positions in as many contiguous parts as there are threads, every part
    // whole cached rows (each score is its own dot product, so the split changes no bits). Then
    // each row's heads in as many groups as there are threads, each group its softmaxes and its
    // weighted sums over all positions (a sum over positions keeps one order on any number of
    // threads). Split by heads, two threads' scores each read half of every cached row, and the
    // two together read the keys no faster than one thread (docs/measurements.md).
    // Either loop walks a part block by block: position s of row b is slot s % block_size of the
    // block tables[b][s / block_size], C floats a slot, from keys[b] (values[b]).
    const size_t H = static_cast<size_t>(n_head), D = C / H;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const int threads = g_threads;
    const size_t parts = static_cast<size_t>(threads), groups = std::min(H, parts);
    const long score_tasks = static_cast<long>(B * parts), sum_tasks = static_cast<long>(B * groups);
    const KernelTable& k = kernels();  // this processor's best target, or set_kernel_target's
    // calls f(first position, positions, offset of the first one's slot in floats) for each block
    // piece of positions [s0, s1) of row b
    const auto by_block = [&](size_t b, size_t s0, size_t s1, const auto& f) {
        for (size_t s = s0; s < s1;) {
            const size_t block = s / block_size, end = std::min(s1, (block + 1) * block_size);
            f(s, end - s, (static_cast<size_t>(tables[b][block]) * block_size + s % block_size) * C);
            s = end;
        }
    };
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
#pragma omp for schedule(static)
        for (long t = 0; t < score_tasks; ++t) {
            const size_t b = static_cast<size_t>(t) / parts, p = static_cast<size_t>(t) % parts;
            float* row_scores = scores + b * H * scores_stride;  // (H, scores_stride): row b's heads
            by_block(b, lengths[b] * p / parts, lengths[b] * (p + 1) / parts, [&](size_t s, size_t n, size_t at) {
                k.heads_scores(q + b * q_stride, keys[b] + at, n, C, D, 0, H, scale, row_scores + s, scores_stride);
            });
        }
#pragma omp for schedule(static)
        for (long t = 0; t < sum_tasks; ++t) {
            const size_t b = static_cast<size_t>(t) / groups, g = static_cast<size_t>(t) % groups;
            // heads [h0, h1): plain variables, since clang 14 (the fuzzing build) refuses a lambda
            // that captures a structured binding
            const size_t h0 = H * g / groups, h1 = H * (g + 1) / groups;
            float* row_scores = scores + b * H * scores_stride;
            for (size_t h = h0; h < h1; ++h) softmax_in_place(row_scores + h * scores_stride, lengths[b]);
            std::fill(out + b * C + h0 * D, out + b * C + h1 * D, 0.0f);
            by_block(b, 0, lengths[b], [&](size_t s, size_t n, size_t at) {
                k.heads_weighted_sum(row_scores + s, scores_stride, values[b] + at, n, C, D, h0, h1, out + b * C);
            });
        }
    }
}

void attend_rows(const float* q, size_t q_stride, size_t B, const float* const* keys, const float* const* values,
                 const size_t* lengths, size_t C, int n_head, float* scores, size_t scores_stride, float* out) {
    // each row one block from its own pointer: block 0, as long as the longest row
    static constexpr int kFirstBlock[] = {0};
    thread_local std::vector<const int*> tables;  // grown once: no allocation per call after the first
    tables.assign(B, kFirstBlock);
    const size_t longest = B == 0 ? 1 : std::max<size_t>(1, *std::max_element(lengths, lengths + B));
    attend_rows(q, q_stride, B, keys, values, tables.data(), longest, lengths, C, n_head, scores, scores_stride, out);
}

void attend_causal(const float* q, size_t q_stride, size_t T, const float* keys, const float* values, size_t L0,
                   size_t C, int n_head, float* scores_all, float* out) {
    const size_t H = static_cast<size_t>(n_head), D = C / H, L = L0 + T;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const auto n = [](size_t v) { return static_cast<int>(v); };
    const int threads = g_threads;
    // heads are independent: threads share them, each with its own (T, L) block of scores
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (size_t h = 0; h < H; ++h) {
        float* scores = scores_all + static_cast<size_t>(omp_get_thread_num()) * T * L;
        // scores (T, L) = Q_h (T, D) K_h^T (D, L) / sqrt(D)
        g_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n(T), n(L), n(D), scale, q + h * D, n(q_stride),
                    keys + h * D, n(C), 0.0f, scores, n(L));
        // softmax of each row over the positions it may see (0..L0+t); the rest weigh 0
        for (size_t t = 0; t < T; ++t) {
            float* row = scores + t * L;
            const size_t seen = L0 + t + 1;
            softmax_in_place(row, seen);
            std::fill(row + seen, row + L, 0.0f);
        }
        // out_h (T, D) = softmax(scores) (T, L) V_h (L, D)
        g_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n(T), n(D), n(L), 1.0f, scores, n(L), values + h * D,
                    n(C), 0.0f, out + h * D, n(C));
    }
}

}  // namespace decodebook
