// Chapter 07: the decode roofline: the weight bytes a step reads, over the bandwidth this
// machine reads memory at.
#include "decodebook/model/roofline.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/model/weights.hpp"
#include "kernels/common.hpp"

namespace decodebook {

using namespace kernels_detail;

// [ch07:decode-roofline]
uint64_t gpt2_decode_bytes(const ModelConfig& config, int bytes_per_weight) {
    if (bytes_per_weight < 1)
        throw Error("bytes per weight must be at least 1 (got " + std::to_string(bytes_per_weight) + ")",
                    "pass 4 for float32, 2 for bf16 or float16, 1 for 8-bit weights");
    if (config.vocab_size < 0 || config.n_embd < 0 || config.n_layer < 0)
        throw Error("a model shape needs sizes >= 0", "check vocab_size, n_embd and n_layer");
    const uint64_t V = static_cast<uint64_t>(config.vocab_size), C = static_cast<uint64_t>(config.n_embd),
                   layers = static_cast<uint64_t>(config.n_layer);
    // wte (also the lm_head) + one row of wpe + ln_f + per block: 12 C^2 weights in four
    // matrices, 9C of biases and 4C of LayerNorm gains and biases
    const uint64_t weights = V * C + C + 2 * C + layers * (12 * C * C + 13 * C);
    // the same count in double: no int-sized shape overflows it, so a wrapped uint64_t shows
    const double estimate = (static_cast<double>(V) * C + 3.0 * C + layers * (12.0 * C * C + 13.0 * C)) * bytes_per_weight;
    if (estimate >= 0x1p64) throw Error("the model's weights do not fit in 64 bits of bytes", "check n_embd, n_layer and vocab_size");
    return weights * static_cast<uint64_t>(bytes_per_weight);
}

double decode_roofline_ms(const ModelConfig& config, int bytes_per_weight, double bytes_per_second) {
    if (!(bytes_per_second > 0) || !std::isfinite(bytes_per_second))
        throw Error("the bandwidth must be a positive number of bytes per second", "pass e.g. 20e9 for 20 GB/s");
    return static_cast<double>(gpt2_decode_bytes(config, bytes_per_weight)) / bytes_per_second * 1000;
}
// [/ch07:decode-roofline]

namespace {

// The read below is written in four-float lanes (Vec<4>: one SSE2 register, half an AVX2 one, a
// quarter of an AVX-512 one), not in the kernels' Partials, so it cannot share the kernels' code
// generation fate: in a 64-byte vector on AVX2, GCC 12 kept the sums in memory (a store per load),
// and the roofline measured with it fell with the kernels it judges (docs/measurements.md, "The
// roofline's own read"). Four-float loads are no limit on a read of memory: two
// or more a cycle are over 100 GB/s at 4 GHz. It is compiled for each target like the kernels
// (the table's sum_floats), so each target is held against its own plain read.

// The sum of n floats read as S streams n / S floats apart: a pure read of memory. One processor
// reads fastest with one stream, another with several in flight (the kernels read several), so
// the bandwidth measurement tries S = 1, 2 and 4. Eight independent four-float accumulators in
// all (8 / S per stream), so no addition waits for the one before it; GCC keeps all eight in
// registers on every target (checked in the assembly of the x86-64-v4, v3 and default versions).
template <size_t S>
inline __attribute__((always_inline)) float sum_floats(const float* __restrict p, size_t n) {
    constexpr size_t A = 8 / S;       // accumulators per stream
    constexpr size_t L = 4 * A;       // floats a stream reads per step
    const size_t q = n / S / L * L;   // floats per stream
    Vec<4> acc[S][A] = {};
    for (size_t i = 0; i < q; i += L)
#pragma GCC unroll 4
        for (size_t k = 0; k < S; ++k)
#pragma GCC unroll 8
            for (size_t a = 0; a < A; ++a) acc[k][a] += load_lanes<Vec<4>>(p + k * q + i + 4 * a);
    float sum = 0;
    for (size_t k = 0; k < S; ++k)
        for (size_t a = 0; a < A; ++a)
            for (size_t l = 0; l < 4; ++l) sum += acc[k][a][l];
    for (size_t i = S * q; i < n; ++i) sum += p[i];
    return sum;
}

}  // namespace

// Each target's versions of the read (the table of pointers is in kernels/blas.cpp).
#define DECODEBOOK_DEFINE_SUM_FLOATS(NS, ATTR, W_)                                    \
    namespace kernels_detail::NS {                                                    \
    ATTR float sum_floats_1(const float* p, size_t n) { return sum_floats<1>(p, n); } \
    ATTR float sum_floats_2(const float* p, size_t n) { return sum_floats<2>(p, n); } \
    ATTR float sum_floats_4(const float* p, size_t n) { return sum_floats<4>(p, n); } \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_DEFINE_SUM_FLOATS)

// Both buffers written once, so every page is really there before a read is timed.
ReadBandwidthMeter::ReadBandwidthMeter(size_t bytes)
    : pages_(bytes / sizeof(float), 1.0f), weight_pages_(bytes / sizeof(float), 1.0f) {}

double ReadBandwidthMeter::measure(int threads, int repeats) const {
    if (threads < 1 || repeats < 1) throw Error("measure_read_bandwidth needs threads >= 1 and repeats >= 1", "pass positive counts");
    const size_t n = pages_.size();
    double best = 1e30;
    volatile float sink = 0;
    const auto& read = kernels().sum_floats;  // the target in use (set_kernel_target), 1, 2 and 4 streams
    // in 4 KiB pages and in the weights' memory (2 MiB pages where the kernel gives them), each
    // read as one, two and four streams: the fastest way of reading counts
    for (const float* buffer : {pages_.data(), weight_pages_.data()}) {
        for (int r = 0; r < repeats; ++r) {
            for (const int streams : {1, 2, 4}) {
                const auto start = std::chrono::steady_clock::now();
                float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
                {
                    const auto [b, e] = chunk(n, omp_get_num_threads(), omp_get_thread_num());
                    const float* part = buffer + b;
                    total += read[streams == 1 ? 0 : streams == 2 ? 1 : 2](part, e - b);
                }
                sink = sink + total;
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            }
        }
    }
    return static_cast<double>(n * sizeof(float)) / best;
}

double measure_read_bandwidth(size_t bytes, int threads, int repeats) {
    if (threads < 1 || repeats < 1) throw Error("measure_read_bandwidth needs threads >= 1 and repeats >= 1", "pass positive counts");
    return ReadBandwidthMeter(bytes).measure(threads, repeats);
}

bool measurement_disturbed(double ratio, double lowest, double highest) {
    constexpr double kNoise = 1.1;  // timers and caches move a quiet measurement by a few per cent
    return !std::isfinite(ratio) || ratio < lowest / kNoise || ratio > highest * kNoise;
}

}  // namespace decodebook
