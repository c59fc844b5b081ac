#pragma once
/// @file model/roofline.hpp
/// @brief The decode roofline (chapter 07): a decode step reads every weight once, so it can take
/// no less than the weight bytes over the memory's read bandwidth.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "decodebook/model/config.hpp"
#include "decodebook/model/weights.hpp"

namespace decodebook {

/// Bytes of weights one decode step of a GPT-2 with this shape reads: the token embedding wte
/// (V, C) (it is also the lm_head), one row of the position table (C), per block two LayerNorms
/// (2C each), c_attn (C x 3C + 3C), attn.c_proj (C x C + C), mlp.c_fc (C x 4C + 4C) and
/// mlp.c_proj (4C x C + C), and ln_f (2C): V C + C + 2C + n_layer (12 C^2 + 13 C) weights.
/// GPT-2 124M in float32 reads 494,616,576 bytes (Gpt2::decode_weight_bytes counts the same for a
/// loaded model). Introduced in chapter 07.
/// @param config the model's shape (vocab_size, n_embd, n_layer)
/// @param bytes_per_weight 4 for float32, 2 for bf16 or float16, 1 for 8-bit weights
/// @throws Error when bytes_per_weight < 1 or a dimension is negative.
uint64_t gpt2_decode_bytes(const ModelConfig& config, int bytes_per_weight);

/// The decode roofline of a GPT-2 shape: the fewest milliseconds one decode step can take when it
/// must read every weight once, gpt2_decode_bytes / bandwidth. Introduced in chapter 07.
/// @param config the model's shape (vocab_size, n_embd, n_layer)
/// @param bytes_per_weight 4 for float32, 2 for bf16 or float16, 1 for 8-bit weights
/// @param bytes_per_second the memory's read bandwidth, e.g. measure_read_bandwidth()
/// @throws Error when bytes_per_weight < 1, the bandwidth is not a positive finite number, or a
/// dimension is negative.
double decode_roofline_ms(const ModelConfig& config, int bytes_per_weight, double bytes_per_second);

/// This machine's memory read bandwidth in bytes per second: the best of `repeats` rounds, each
/// summing a buffer of `bytes` (far larger than the caches) on `threads` threads, read as one
/// stream and as two and four streams evenly apart (some processors need several streams in
/// flight to reach their bandwidth), once in ordinary 4 KiB pages and once in the weights' own memory
/// (model/weights.hpp: 2 MiB pages where Linux gives them). The fastest way counts, so a
/// roofline built on it is not flattered by a slow way of reading.
/// Introduced in chapter 07.
/// measure_read_bandwidth makes and frees its buffers in each call: to time something else right
/// after, hold a ReadBandwidthMeter instead.
double measure_read_bandwidth(size_t bytes, int threads, int repeats = 5);

/// measure_read_bandwidth's buffers, made once and kept, so a reading can sit right beside what it
/// judges. Freeing a GiB slows what follows on a virtual machine: decode's products, timed just
/// after measure_read_bandwidth returned, read at 9.2 to 31.4 GB/s (median 81 % of the plain read)
/// where the same loop after a read of a kept buffer read at 23.2 to 29.2 (median 95 %) (GPT-2
/// 124M's 49 matrices, 1 thread, 15 rounds each, AMD EPYC Zen 4 under KVM, 26 Nov 2026:
/// docs/measurements.md). `decodebook-bench` measures with one.
/// Introduced in chapter 07.
class ReadBandwidthMeter {
public:
    /// Makes and writes the two buffers of `bytes` each (4 KiB pages; the weights' memory).
    explicit ReadBandwidthMeter(size_t bytes);
    /// The read bandwidth in bytes per second, as measure_read_bandwidth reads it.
    /// @throws Error when threads < 1 or repeats < 1.
    double measure(int threads, int repeats = 5) const;

private:
    std::vector<float> pages_;                                 // ordinary 4 KiB pages
    std::vector<float, WeightAllocator<float>> weight_pages_;  // the weights' memory (2 MiB pages)
};

/// Whether a ratio of timings is one a quiet machine can give, or the measurement was disturbed
/// by other work (a job on the other core, a second thread that lost its core: `--threads 2` on a
/// busy machine printed "the cache is 0.1x faster" and "2675 % of its roofline"). A ratio is
/// disturbed when it is not a finite number or lies outside [lowest, highest] by more than 10 %
/// (timer noise): a decode's share of its roofline above 110 % (lowest 0, highest 1), a cached
/// loop's speed-up over the naive loop below 1 / 1.1 (lowest 1, highest infinity). A chapter then
/// says the measurement was disturbed and suggests `--threads 1` instead of printing the number.
/// Introduced in chapter 07.
bool measurement_disturbed(double ratio, double lowest, double highest);

}  // namespace decodebook
