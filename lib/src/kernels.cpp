// Chapter 07: the products behind prefill and decode, and how fast this machine reads memory.
// Shapes are in the comments; every matrix is row-major. See kernels.hpp for why two kinds.
#include "decodebook/kernels.hpp"

#include <cblas.h>  // OpenBLAS's: sgemm, openblas_set_num_threads, openblas_get_corename
#include <dlfcn.h>  // use_blas: another CBLAS library, loaded at run time
#include <omp.h>
#include <sys/mman.h>  // allocate_weights: 2 MiB aligned mappings with huge pages

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "decodebook/error.hpp"
#include "decodebook/weight_allocator.hpp"

namespace decodebook {
namespace {

std::atomic<int> g_threads{1};

// The BLAS behind gemm: the linked OpenBLAS unless use_blas loaded another CBLAS library.
struct Blas {
    decltype(&cblas_sgemm) sgemm = &cblas_sgemm;
    void (*set_threads)(int64_t) = nullptr;  // BLIS's bli_thread_set_num_threads (dim_t is 64-bit)
    std::string description;                 // empty: the linked OpenBLAS (blas_description asks it)
};
Blas g_blas;

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

// Each kernel is compiled three times, for x86-64-v4 (AVX-512), x86-64-v3 (AVX2, FMA) and plain
// x86-64 (SSE2), and the dynamic loader picks the version the processor runs, once (GCC's
// target_clones + ifunc). The build needs no -march, and a binary built here runs on any x86-64.
// Every sum is written out in order (partial sums as lanes), so no version reorders a sum.
// (The fuzzing build uses clang, which knows no arch= clones: it gets the plain version.)
#if defined(__clang__)
#define DECODEBOOK_CLONES
#else
#define DECODEBOOK_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

// Sixteen floats as one value (GCC's vector extension): one AVX-512 register, two AVX2 ones or
// four SSE2 ones. An array of sixteen partial sums lived on the stack in dot_rows (a load and a
// store per multiply-add); in registers the lm_head read GPT-2 small's embedding about 10 % faster
// in a one-off comparison (AMD Zen 5, 1 thread). Lane k holds the same sum as array element k did.
typedef float Lanes __attribute__((vector_size(64)));
typedef float Lanes8 __attribute__((vector_size(32)));  // eight: attention's dot over a head
// GCC warns that passing a 64-byte vector differs between processors' calling conventions; the
// two helpers below are always inlined, so no call passes one.
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V>
inline __attribute__((always_inline)) V load_lanes(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof v);  // an unaligned load
    return v;
}

// y[b, j0:j1] += sum_{i0 <= i < i1} x[b, i] W[i, j0:j1] for every row b.
//   x: (B, in), W: (in, out), y: (B, out)
// Four rows of W at a time: each weight is read from memory once for all B rows, and y (in
// cache) is read and written once per four rows of W. Four rows are four memory streams; in a
// one-off comparison on GPT-2 small's 48 matrices followed by the lm_head, as in a decode step
// (AMD Zen 5, 1 thread, 2 MiB pages), four rows read at 43 GB/s (AVX-512) and 40 (AVX2) against
// 41.5 and 38.6 with eight, and a plain two-stream sum of the same memory at 44.4.
// The order of the sums for one y[b, j] does not depend on B, on j0/j1 or on the version:
// y, then + x[b, i] W[i, j] for i = i0, i0 + 1, ... in turn.
DECODEBOOK_CLONES
void matvec_columns_generic(const float* __restrict x, size_t B, const float* __restrict W, size_t in,
                            size_t out, size_t i0, size_t i1, size_t j0, size_t j1, float* __restrict y) {
    constexpr size_t R = 4;
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        for (size_t b = 0; b < B; ++b) {
            float xr[R];
            for (size_t r = 0; r < R; ++r) xr[r] = x[b * in + i + r];
            float* yb = y + b * out;
            for (size_t j = j0; j < j1; ++j) {
                float sum = yb[j];
                for (size_t r = 0; r < R; ++r) sum += xr[r] * w[r * out + j];
                yb[j] = sum;
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
// sixteen-float registers each. GCC's own vectorisation of the loop above, with its B and j0/j1,
// read GPT-2 small's 48 matrices at 92 % of a plain sum of the same memory; this reads at 96-97 %
// (a one-off comparison, AMD Zen 5, 1 thread). Written this way for AVX2, the same loop ran at
// 59 %, so the AVX2 and plain versions keep the loop above. Same sums in the same order.
__attribute__((target("arch=x86-64-v4")))
void matvec_columns_avx512(const float* __restrict x, size_t B, const float* __restrict W, size_t in, size_t out,
                           size_t i0, size_t i1, size_t j0, size_t j1, float* __restrict y) {
    constexpr size_t R = 4, L = 16, step = 2 * L;
    size_t i = i0;
    for (; i + R <= i1; i += R) {
        const float* w = W + i * out;  // rows i..i+3, out floats apart
        for (size_t b = 0; b < B; ++b) {
            const float* xb = x + b * in + i;
            const Lanes x0 = Lanes{} + xb[0], x1 = Lanes{} + xb[1], x2 = Lanes{} + xb[2], x3 = Lanes{} + xb[3];
            float* yb = y + b * out;
            size_t j = j0;
            for (; j + step <= j1; j += step) {
                for (size_t k = j; k < j + step; k += L) {
                    Lanes sum = load_lanes<Lanes>(yb + k);
                    sum += x0 * load_lanes<Lanes>(w + k);
                    sum += x1 * load_lanes<Lanes>(w + out + k);
                    sum += x2 * load_lanes<Lanes>(w + 2 * out + k);
                    sum += x3 * load_lanes<Lanes>(w + 3 * out + k);
                    std::memcpy(yb + k, &sum, sizeof sum);
                }
            }
            for (; j < j1; ++j) {  // the last (j1 - j0) % 32 columns
                float sum = yb[j];
                for (size_t r = 0; r < R; ++r) sum += xb[r] * w[r * out + j];
                yb[j] = sum;
            }
        }
    }
    if (i < i1) matvec_columns_generic(x, B, W, in, out, i, i1, j0, j1, y);  // the last in % 4 rows
}
#endif

// Whether this processor runs x86-64-v4 (AVX-512): the test target_clones' resolver makes too.
bool runs_x86_64_v4() {
#if defined(__clang__)
    return false;  // no clones under clang (the fuzzing build)
#else
    static const bool v4 = (__builtin_cpu_init(), __builtin_cpu_supports("x86-64-v4"));
    return v4;
#endif
}

// The AVX-512 version where the processor has it, else the clones of the generic one.
void matvec_columns(const float* x, size_t B, const float* W, size_t in, size_t out, size_t i0, size_t i1,
                    size_t j0, size_t j1, float* y) {
#if !defined(__clang__)
    if (runs_x86_64_v4()) return matvec_columns_avx512(x, B, W, in, out, i0, i1, j0, j1, y);
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

// y[b, r] = M[r, :] . x[b, :] for r in [r0, r1).   x: (B, n), M: (rows, n), y: (B, rows)
// Sixteen partial sums per dot product (vector lanes), then one total. Two rows half the range
// apart are read side by side: two memory streams. In a one-off comparison on GPT-2 small's
// embedding (AMD Zen 5, 1 thread, after 340 MB of other reads, as in a decode step), two streams
// read at 98-100 % of a plain sum of the same memory, four a quarter apart at 88-93 %, and four
// neighbouring rows at 79 %. Each row's sums run in the same order whichever of the two it is, so
// the result does not depend on r0, r1 or the threads.
DECODEBOOK_CLONES
void dot_rows(const float* __restrict x, size_t B, const float* __restrict M, size_t rows, size_t n, size_t r0,
              size_t r1, float* __restrict y) {
    constexpr size_t L = 16;
    const size_t n16 = n - n % L;
    const size_t half = (r1 - r0) / 2;
    for (size_t r = r0; r < r0 + half; ++r) {
        const float* m0 = M + r * n;
        const float* m1 = m0 + half * n;
        for (size_t b = 0; b < B; ++b) {
            const float* xb = x + b * n;
            Lanes a0 = {}, a1 = {};
            for (size_t i = 0; i < n16; i += L) {
                const Lanes xi = load_lanes<Lanes>(xb + i);
                a0 += load_lanes<Lanes>(m0 + i) * xi;
                a1 += load_lanes<Lanes>(m1 + i) * xi;
            }
            y[b * rows + r] = dot_total(a0, m0, xb, n16, n);
            y[b * rows + r + half] = dot_total(a1, m1, xb, n16, n);
        }
    }
    if ((r1 - r0) % 2 == 1) {  // the last row of an odd range
        const size_t r = r1 - 1;
        const float* m = M + r * n;
        for (size_t b = 0; b < B; ++b) {
            const float* xb = x + b * n;
            Lanes acc = {};
            for (size_t i = 0; i < n16; i += L) acc += load_lanes<Lanes>(m + i) * load_lanes<Lanes>(xb + i);
            y[b * rows + r] = dot_total(acc, m, xb, n16, n);
        }
    }
}

// The sum of n floats read as S streams n / S floats apart, each into its own sixteen lanes (in
// registers: as arrays on the stack, GCC added a store per load and the read measured slower):
// a pure read of memory. One processor reads fastest with one stream, another with several in
// flight (the kernels read several), so the bandwidth measurement tries S = 1, 2 and 4.
template <size_t S>
DECODEBOOK_CLONES float sum_floats(const float* __restrict p, size_t n) {
    constexpr size_t L = 16;
    const size_t q = n / S / L * L;  // floats per stream
    Lanes acc[S] = {};
    for (size_t i = 0; i < q; i += L)
        for (size_t k = 0; k < S; ++k) acc[k] += load_lanes<Lanes>(p + k * q + i);
    float sum = 0;
    for (size_t k = 0; k < S; ++k)
        for (size_t l = 0; l < L; ++l) sum += acc[k][l];
    for (size_t i = S * q; i < n; ++i) sum += p[i];
    return sum;
}

// One dot product's eight partial sums (vector lanes) added in lane order.
inline __attribute__((always_inline)) float lane_total(Lanes8 acc) {
    float sum = 0;
    for (int k = 0; k < 8; ++k) sum += acc[k];
    return sum;
}

// scores[s] = q . k_s * scale for s < length.   q: (D), k_s: D floats at keys + s * stride
// Each dot product keeps eight partial sums (vector lanes) when D allows: as an array of eight,
// the sums made GCC shuffle sixteen-wide registers into eight lanes. Four positions at a time,
// each with its own sums: one position's chain of adds waited on the previous add, four fill the
// pipeline. A position's sum runs in the same order whichever of the four it is.
DECODEBOOK_CLONES
void head_scores(const float* __restrict q, const float* __restrict keys, size_t length, size_t stride, size_t D,
                 float scale, float* __restrict scores) {
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
        Lanes8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
        for (size_t d = 0; d < D; d += 8) {
            const Lanes8 qd = load_lanes<Lanes8>(q + d);
            a0 += qd * load_lanes<Lanes8>(k0 + d);
            a1 += qd * load_lanes<Lanes8>(k1 + d);
            a2 += qd * load_lanes<Lanes8>(k2 + d);
            a3 += qd * load_lanes<Lanes8>(k3 + d);
        }
        scores[s] = lane_total(a0) * scale;
        scores[s + 1] = lane_total(a1) * scale;
        scores[s + 2] = lane_total(a2) * scale;
        scores[s + 3] = lane_total(a3) * scale;
    }
    for (; s < length; ++s) {
        const float* k = keys + s * stride;
        Lanes8 acc = {};
        for (size_t d = 0; d < D; d += 8) acc += load_lanes<Lanes8>(q + d) * load_lanes<Lanes8>(k + d);
        scores[s] = lane_total(acc) * scale;
    }
}

// out_h (D) = sum_s w[s] v_s,h for one head.   v rows `stride` apart
// Sixty-four outputs at a time stay in registers over every s (a loop that adds into out[] loads
// and stores it once per position); each out[d] still adds w[0] v_0[d], w[1] v_1[d], ... in order.
DECODEBOOK_CLONES
void weighted_sum(const float* __restrict w, const float* __restrict v, size_t length, size_t stride, size_t D,
                  float* __restrict out) {
    constexpr size_t L = 16;
    size_t d0 = 0;
    for (; d0 + 4 * L <= D; d0 += 4 * L) {
        Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
        for (size_t s = 0; s < length; ++s) {
            const Lanes ws = Lanes{} + w[s];
            const float* vs = v + s * stride + d0;
            a0 += ws * load_lanes<Lanes>(vs);
            a1 += ws * load_lanes<Lanes>(vs + L);
            a2 += ws * load_lanes<Lanes>(vs + 2 * L);
            a3 += ws * load_lanes<Lanes>(vs + 3 * L);
        }
        std::memcpy(out + d0, &a0, sizeof a0);
        std::memcpy(out + d0 + L, &a1, sizeof a1);
        std::memcpy(out + d0 + 2 * L, &a2, sizeof a2);
        std::memcpy(out + d0 + 3 * L, &a3, sizeof a3);
    }
    std::fill(out + d0, out + D, 0.0f);  // the last D % 64 outputs, one float at a time
    for (size_t s = 0; s < length; ++s) {
        const float ws = w[s];
        const float* vs = v + s * stride;
        for (size_t d = d0; d < D; ++d) out[d] += ws * vs[d];
    }
}

// The version of target_clones this processor runs (the ifunc resolver's own test).
const char* clone_target() {
    if (runs_x86_64_v4()) return "x86-64-v4 (AVX-512)";
#if !defined(__clang__)
    if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3 (AVX2, FMA)";
#endif
    return "x86-64 (SSE2)";
}

// Split [0, n) into `parts` chunks aligned to 16 floats: chunk k is [begin, end).
std::pair<size_t, size_t> chunk(size_t n, int parts, int k) {
    const size_t size = (n / static_cast<size_t>(parts) + 15) / 16 * 16;
    const size_t begin = std::min(n, size * static_cast<size_t>(k));
    return {begin, k == parts - 1 ? n : std::min(n, begin + size)};
}

}  // namespace

void set_num_threads(int n) {
    if (n < 1) throw Error("--threads must be at least 1 (got " + std::to_string(n) + ")", "pass --threads 1 or 2");
    g_threads = n;
    // One pool of threads, OpenMP's: the BLAS runs on one thread and gemm splits its columns over
    // OpenMP's threads. OpenBLAS's own worker threads keep spinning (sched_yield) for about 0.1 s
    // after each call; behind a prefill they took a core from the decode steps that followed.
    openblas_set_num_threads(1);
    if (g_blas.set_threads) g_blas.set_threads(1);
}

std::string use_blas(const std::string& name) {
    const std::string fix = "pass --blas openblas (the linked one), --blas blis (Debian's BLIS: apt-get install "
                            "libblis4-openmp), or the path of a shared library with the CBLAS interface";
    if (name == "openblas") {
        g_blas = Blas{};
        return blas_description();
    }
    if (name != "blis" && name.find('/') == std::string::npos) throw Error("unknown BLAS '" + name + "'", fix);
    const std::string file = name == "blis" ? "libblis.so.4" : name;
    // RTLD_DEEPBIND: the library's own symbols first, so its cblas_sgemm calls its own sgemm_, not
    // the linked OpenBLAS's of the same name (AddressSanitizer builds cannot, and measure OpenBLAS there)
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | (kAsan ? 0 : RTLD_DEEPBIND));
    if (!lib) throw Error("cannot load the BLAS '" + name + "': " + dlerror(), fix);
    Blas blas;
    blas.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm"));
    if (!blas.sgemm) throw Error("'" + file + "' has no cblas_sgemm: it is not a CBLAS library", fix);
    blas.set_threads = reinterpret_cast<void (*)(int64_t)>(dlsym(lib, "bli_thread_set_num_threads"));
    const auto version = reinterpret_cast<const char* (*)()>(dlsym(lib, "bli_info_get_version_str"));
    const auto arch_id = reinterpret_cast<int (*)()>(dlsym(lib, "bli_arch_query_id"));
    const auto arch_name = reinterpret_cast<const char* (*)(int)>(dlsym(lib, "bli_arch_string"));
    if (version && arch_id && arch_name) {
        blas.description = std::string("BLIS ") + version() + " (kernels " + arch_name(arch_id()) + ")";
    } else {
        Dl_info where{};
        blas.description = "cblas_sgemm of " + std::string(dladdr(reinterpret_cast<void*>(blas.sgemm), &where) &&
                                                                       where.dli_fname ? where.dli_fname : file.c_str());
    }
    g_blas = blas;
    if (g_blas.set_threads) g_blas.set_threads(1);  // gemm splits the work over OpenMP's threads
    return g_blas.description;
}

int num_threads() { return g_threads; }

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
    if (threads == 1) return dot_rows(x, B, M, rows, n, 0, rows, y);
#pragma omp parallel num_threads(threads)
    {  // each thread owns a block of vocabulary entries
        const auto [r0, r1] = chunk(rows, omp_get_num_threads(), omp_get_thread_num());
        dot_rows(x, B, M, rows, n, r0, r1, y);
    }
}

// y[:, j0:j1] (T, j1 - j0) = x (T, in) W[:, j0:j1] (in, j1 - j0) + bias[j0:j1], on one BLAS thread
static void gemm_columns(const float* x, size_t T, const float* W, const float* bias, size_t in, size_t out,
                         size_t j0, size_t j1, float* y) {
    if (j1 <= j0) return;
    const auto n = [](size_t v) { return static_cast<int>(v); };
    g_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n(T), n(j1 - j0), n(in), 1.0f, x, n(in), W + j0, n(out),
                 0.0f, y + j0, n(out));
    if (!bias) return;
    for (size_t t = 0; t < T; ++t)
        for (size_t j = j0; j < j1; ++j) y[t * out + j] += bias[j];
}

void gemm(const float* x, size_t T, const float* W, const float* bias, size_t in, size_t out, float* y) {
    // y (T, out) = x (T, in) W (in, out) + bias: each thread its own block of columns
    const int threads = g_threads;
    if (threads == 1) return gemm_columns(x, T, W, bias, in, out, 0, out, y);
#pragma omp parallel num_threads(threads)
    {
        const auto [j0, j1] = chunk(out, omp_get_num_threads(), omp_get_thread_num());
        gemm_columns(x, T, W, bias, in, out, j0, j1, y);
    }
}

// [ch07:attend]
// One head h of one query: out_h (D) = softmax(q_h . k_s,h / sqrt(D)) . v_s,h over s < length
static void attend_head(const float* q, const float* keys, const float* values, size_t length, size_t stride, size_t D,
                 size_t h, float* scores, float* out) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    // scores_s = q_h . k_s,h / sqrt(D) for every cached position s (all are in the past)
    head_scores(q + h * D, keys + h * D, length, stride, D, scale, scores);
    const float max = *std::max_element(scores, scores + length);
    float sum = 0;
    for (size_t s = 0; s < length; ++s) {
        scores[s] = std::exp(scores[s] - max);
        sum += scores[s];
    }
    for (size_t s = 0; s < length; ++s) scores[s] /= sum;
    // out_h = sum_s softmax(scores)_s v_s,h
    weighted_sum(scores, values + h * D, length, stride, D, out + h * D);
}

void attend(const float* q, const float* keys, const float* values, size_t length, size_t stride, size_t C,
            int n_head, float* scores, float* out) {
    const size_t H = static_cast<size_t>(n_head);
    for (size_t h = 0; h < H; ++h) attend_head(q, keys, values, length, stride, C / H, h, scores, out);
}
// [/ch07:attend]

void attend_rows(const float* q, size_t q_stride, size_t B, const float* const* keys, const float* const* values,
                 const size_t* lengths, size_t C, int n_head, float* scores, size_t scores_stride, float* out) {
    // every (row, head) pair is independent: threads share them, each with its own scores
    const long pairs = static_cast<long>(B) * n_head;
    const size_t H = static_cast<size_t>(n_head);
    const int threads = g_threads;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && pairs > 1)
    for (long p = 0; p < pairs; ++p) {
        const size_t b = static_cast<size_t>(p) / H, h = static_cast<size_t>(p) % H;
        attend_head(q + b * q_stride, keys[b], values[b], lengths[b], C, C / H, h,
                    scores + static_cast<size_t>(p) * scores_stride, out + b * C);
    }
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
            const float max = *std::max_element(row, row + seen);
            float sum = 0;
            for (size_t s = 0; s < seen; ++s) {
                row[s] = std::exp(row[s] - max);
                sum += row[s];
            }
            for (size_t s = 0; s < seen; ++s) row[s] /= sum;
            std::fill(row + seen, row + L, 0.0f);
        }
        // out_h (T, D) = softmax(scores) (T, L) V_h (L, D)
        g_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n(T), n(D), n(L), 1.0f, scores, n(L), values + h * D,
                    n(C), 0.0f, out + h * D, n(C));
    }
}

void layer_norm_rows(const float* x, size_t T, size_t C, const float* g, const float* b, float eps, float* y) {
    for (size_t t = 0; t < T; ++t) {
        const float* px = x + t * C;
        float* py = y + t * C;
        double mean = 0, var = 0;
        for (size_t j = 0; j < C; ++j) mean += px[j];
        mean /= static_cast<double>(C);
        for (size_t j = 0; j < C; ++j) var += (px[j] - mean) * (px[j] - mean);
        var /= static_cast<double>(C);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
        for (size_t j = 0; j < C; ++j) py[j] = (px[j] - static_cast<float>(mean)) * inv * g[j] + b[j];
    }
}

// e^-a for 0 <= a <= 100, to about 2 ulp, in plain arithmetic the compiler puts in vector lanes
// (glibc's expf is one call per element): e^-a = 2^n e^r with n = round(-a / ln 2) and
// r = -a - n ln 2 (ln 2 in two parts, so r is exact), e^r by its Taylor series to r^7; below
// 2^-126 the result stays a tiny positive number instead of going to 0.
inline float exp_minus(float a) {
    const float x = -a;
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
    const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t exponent = static_cast<int32_t>(n);
    exponent = exponent < -126 ? -126 : exponent;
    const int32_t bits = (exponent + 127) << 23;  // 2^n as a float's bits
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// min(a, 100) for a >= 0, on the float's bits (for non-negative floats their order is the
// integers' order): an integer min, which vectorises where a float min would need -ffast-math.
inline float at_most_100(float a) {
    int32_t bits, cap;
    const float hundred = 100.0f;
    std::memcpy(&bits, &a, sizeof bits);
    std::memcpy(&cap, &hundred, sizeof cap);
    bits = bits < cap ? bits : cap;
    std::memcpy(&a, &bits, sizeof a);
    return a;
}

// gelu(v) = 0.5 v (1 + tanh(u)). With e = e^-2|u| (never overflows), 1 + tanh(u) is 2 / (1 + e)
// for u >= 0 and 2e / (1 + e) for u < 0, so gelu(v) = v s / (1 + e) with s = 1 or e: no
// cancellation for negative v, and the loop runs in vector lanes. (With glibc's expf this loop
// was a tenth of chapter 07's prefill.)
DECODEBOOK_CLONES
void gelu_in_place(float* x, size_t n) {
    constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
    for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float u = k * (v + 0.044715f * v * v * v);
        const float e = exp_minus(at_most_100(2.0f * std::fabs(u)));  // e^-2|u|
        // s = e when u < 0, else 1: picked bit by bit with u's sign as the mask
        int32_t u_bits, e_bits, s_bits;
        const float one = 1.0f;
        int32_t one_bits;
        std::memcpy(&u_bits, &u, sizeof u_bits);
        std::memcpy(&e_bits, &e, sizeof e_bits);
        std::memcpy(&one_bits, &one, sizeof one_bits);
        const int32_t negative = u_bits >> 31;  // all ones when u < 0, else 0
        s_bits = (e_bits & negative) | (one_bits & ~negative);
        float s;
        std::memcpy(&s, &s_bits, sizeof s);
        x[i] = v * s / (1.0f + e);
    }
}

std::string kernel_target() { return clone_target(); }

std::string blas_description() {
    if (!g_blas.description.empty()) return g_blas.description;
    std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
    const size_t space = config.find(' ', config.find(' ') + 1);
    return config.substr(0, space) + " (core " + openblas_get_corename() + ")";
}

namespace {
constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's transparent huge page
constexpr size_t kPage = 4096;
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

void* allocate_weights(size_t bytes) {
    if (bytes < kHugePage || kAsan) return ::operator new(bytes);
    // Map 2 MiB more than needed, then unmap the part before the first 2 MiB boundary and the part
    // after the tensor: what stays starts on a huge page and is as long as the tensor (in 4 KiB).
    const size_t length = round_up(bytes, kPage);
    void* mapped = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t first = reinterpret_cast<uintptr_t>(mapped), start = round_up(first, kHugePage),
                    last = first + length + kHugePage;
    if (start > first) munmap(mapped, start - first);
    if (last > start + length) munmap(reinterpret_cast<void*>(start + length), last - start - length);
    // A hint: the whole 2 MiB pieces get huge pages when the kernel has them, the tail 4 KiB ones.
    madvise(reinterpret_cast<void*>(start), length, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(start);
}

void free_weights(void* p, size_t bytes) noexcept {
    if (bytes < kHugePage || kAsan) return ::operator delete(p);
    munmap(p, round_up(bytes, kPage));
}

double measure_read_bandwidth(size_t bytes, int threads, int repeats) {
    if (threads < 1 || repeats < 1) throw Error("measure_read_bandwidth needs threads >= 1 and repeats >= 1", "pass positive counts");
    const size_t n = bytes / sizeof(float);
    double best = 1e30;
    volatile float sink = 0;
    // in 4 KiB pages and in the weights' memory (2 MiB pages where the kernel gives them), each
    // read as one, two and four streams: the fastest way of reading counts
    const auto rounds = [&](const float* buffer) {
        for (int r = 0; r < repeats; ++r) {
            for (const int streams : {1, 2, 4}) {
                const auto start = std::chrono::steady_clock::now();
                float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
                {
                    const auto [b, e] = chunk(n, omp_get_num_threads(), omp_get_thread_num());
                    const float* part = buffer + b;
                    total += streams == 1 ? sum_floats<1>(part, e - b)
                             : streams == 2 ? sum_floats<2>(part, e - b)
                                            : sum_floats<4>(part, e - b);
                }
                sink = sink + total;
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            }
        }
    };
    rounds(std::vector<float>(n, 1.0f).data());  // written once, so every page is really there
    rounds(std::vector<float, WeightAllocator<float>>(n, 1.0f).data());
    return static_cast<double>(n * sizeof(float)) / best;
}

}  // namespace decodebook
