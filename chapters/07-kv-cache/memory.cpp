// Chapter 07, parts 3 and 4: how big the cache is, and the roofline: decode must read every weight once.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter07.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"

using namespace decodebook;

namespace chapter07 {

// ------------------------------------------------------------------------ part 3: the cache's size

void cache_sizes(const ModelConfig& mc, size_t part1_positions) {
    std::printf("\n== 3. How big the cache is: 2 (K and V) x layers x positions x width x bytes per value ==\n");
    struct Shape {
        std::string name;
        int64_t layers, positions, width, bytes;
        const char* dtype;
    };
    const std::vector<Shape> shapes{
        {"this model, float32", mc.n_layer, mc.n_positions, mc.n_embd, 4, "float32"},
        {"GPT-2 124M, float32", 12, 1024, 768, 4, "float32"},
        {"a 7B model, 8,192 tokens", 32, 8192, 4096, 2, "bf16"},
    };
    for (const Shape& s : shapes) {
        const uint64_t total = kv_cache_bytes(s.layers, s.positions, s.width, s.bytes);
        const uint64_t per_token = kv_cache_bytes(s.layers, 1, s.width, s.bytes);
        char formula[96];
        std::snprintf(formula, sizeof formula, "2 x %" PRId64 " x %" PRId64 " x %" PRId64 " x %" PRId64 " (%s)",
                      s.layers, s.positions, s.width, s.bytes, s.dtype);
        std::printf("  %-26s %-34s = %15s bytes = %10s (%s bytes per token)\n", s.name.c_str(), formula,
                    with_commas(total).c_str(), human_bytes(static_cast<double>(total)).c_str(),
                    with_commas(per_token).c_str());
    }
    std::printf("  a batch of 16 such 7B sequences: %s (the model's weights in bf16: 7e9 x 2 = %.0f GB).\n"
                "  The cache of part 1 holds %zu positions: %s bytes.\n",
                human_bytes(static_cast<double>(kv_cache_bytes(32, 8192, 4096, 2, 16))).c_str(), 7e9 * 2 / 1e9,
                part1_positions, with_commas(KvCache(mc, 1, part1_positions).bytes()).c_str());
}

// ---------------------------------------------------------------------------- part 4: the roofline

void roofline(const Gpt2& model, const Phases& short_p, int threads) {
    const double weight_bytes = static_cast<double>(model.decode_weight_bytes());
    std::printf("\n== 4. The roofline: a decode step must read every weight once ==\n");
    const double bw_memory = measure_read_bandwidth(size_t{128} << 20, threads, 3);
    const double bw_weights = measure_read_bandwidth(static_cast<size_t>(weight_bytes), threads, 5);
    std::printf("  this machine reads %.1f GB/s from a 128 MiB buffer (main memory) and %.1f GB/s from a buffer\n"
                "  the size of the weights (%.2f MB), read again and again as decode does, on %d thread%s.\n",
                bw_memory / 1e9, bw_weights / 1e9, weight_bytes / 1e6, threads, threads == 1 ? "" : "s");
    const double floor_memory = weight_bytes / bw_memory * 1000, floor_weights = weight_bytes / bw_weights * 1000;
    std::printf("  lowest possible time per token = weight bytes / bandwidth: %s / %.1f GB/s = %.3f ms (main memory),\n"
                "  %.3f ms at the weight-sized buffer's rate.\n",
                with_commas(static_cast<uint64_t>(weight_bytes)).c_str(), bw_memory / 1e9, floor_memory,
                floor_weights);
    std::printf("  measured decode (part 2, short prompt): %.3f ms per token, %.0f tokens/s.\n", short_p.decode_ms,
                1000 / short_p.decode_ms);
    if (measurement_disturbed(floor_weights / short_p.decode_ms, 0, 1)) {
        // no decode reads its weights faster than the fastest read of a buffer their size
        std::printf("  The measurement was disturbed: decode cannot read its weights faster than the fastest read of a\n"
                    "  buffer their size (other work took the cores while the reads or the decode were timed).\n"
                    "  Run it again, with --threads 1.\n");
    } else if (short_p.decode_ms < floor_memory) {
        std::printf("  That beats the main-memory bound (%.2fx its time): the weight-sized buffer reads %.1fx faster than\n"
                    "  main memory because it fits in the processor's caches, and so do these weights from one step\n"
                    "  to the next. Against that rate, decode runs at %.0f%% of its roofline.\n",
                    short_p.decode_ms / floor_memory, bw_weights / bw_memory, 100 * floor_weights / short_p.decode_ms);
    } else {
        std::printf("  That is %.0f%% of the main-memory roofline (%.0f%% of the weight-sized rate's).\n",
                    100 * floor_memory / short_p.decode_ms, 100 * floor_weights / short_p.decode_ms);
    }
    const ModelConfig gpt2 = gpt2_small_config();
    const double gpt2_ms = decode_roofline_ms(gpt2, 4, bw_memory);
    std::printf("  GPT-2 124M reads %s bytes per token (float32): no cache holds them, so at this machine's\n"
                "  main-memory rate a token takes at least %.1f ms, at most %.1f tokens/s on %d thread%s.\n",
                with_commas(gpt2_decode_bytes(gpt2, 4)).c_str(), gpt2_ms, 1000 / gpt2_ms, threads,
                threads == 1 ? "" : "s");
    const double bytes_70b = 70e9 * 2, bytes_7b = 7e9 * 2, gpu = 3e12;
    std::printf("  The same arithmetic on a 3 TB/s GPU, weights in bf16: a 70B model, 70e9 x 2 = %.0f GB / 3e12 bytes/s"
                " =\n  %.1f ms per token, at most %.1f tokens/s for one sequence, however fast its arithmetic; a 7B"
                " model,\n  7e9 x 2 = %.0f GB: %.1f ms, at most %.0f tokens/s.\n",
                bytes_70b / 1e9, bytes_70b / gpu * 1000, gpu / bytes_70b, bytes_7b / 1e9, bytes_7b / gpu * 1000,
                gpu / bytes_7b);
    // a GPT-2 the size of Llama 2 7B: its 32 layers, its width 4096 and its 32,000-token vocabulary
    ModelConfig seven_b = gpt2;
    seven_b.n_layer = 32;
    seven_b.n_embd = 4096;
    seven_b.n_head = 32;
    seven_b.vocab_size = 32000;
    std::printf("  decode_roofline_ms for a GPT-2 of that size (32 layers, width 4096, 32000 tokens): %s bytes\n"
                "  in bf16, %.2f ms at 3 TB/s.\n",
                with_commas(gpt2_decode_bytes(seven_b, 2)).c_str(), decode_roofline_ms(seven_b, 2, gpu));
}

}  // namespace chapter07
