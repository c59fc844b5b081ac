// Chapter 07, part 8: fewer bytes per weight. Part 4 showed decode reading every weight once per
// token; "you cannot go faster without quantizing the weights" is the sentence that follows. Here
// the same model is held in float32 and in float16 (WeightDtype, `--dtype`): decode against the
// roofline of each, and what rounding an f32 model to f16 changes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "chapter07.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/model/safetensors.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter07 {
namespace {

// Milliseconds per greedy decode step after `prompt`, the best of `repeats` runs of `steps` steps.
double decode_ms_per_token(const Gpt2& model, const std::vector<int>& prompt, int steps, int repeats) {
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(steps));
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        cache.clear(0);
        int token = argmax(model.prefill(prompt, cache, 0));
        const auto start = Clock::now();
        for (int i = 0; i < steps; ++i) {
            model.decode({token}, {0}, cache);
            const float* row = cache.logits().data();
            token = static_cast<int>(std::max_element(row, row + model.config().vocab_size) - row);
        }
        best = std::min(best, ms_between(start, Clock::now()) / steps);
    }
    return best;
}

}  // namespace

void bytes_per_weight(const Session& session, const CommandLine& opt, int threads) {
    std::printf("\n== 8. Fewer bytes per weight: the same model held in float32 and in float16 ==\n");
    const std::string& dir = opt.model_dir;
    const Gpt2 f32 = Gpt2::load(dir, WeightDtype::F32), f16 = Gpt2::load(dir, WeightDtype::F16);
    const std::vector<int>& prompt = session.prompt;
    const int steps = std::max(2, std::min(32, session.model.config().n_positions - static_cast<int>(prompt.size()) - 1));
    // 1. the embedded checkpoint is stored in float16: widened to f32 exactly, so both give the same logits
    const LogitAgreement same = compare_greedy_logits(f32, f16, prompt, steps);
    std::printf("  the embedded checkpoint is stored in float16, and every float16 value is a float32 value: held\n"
                "  as f16 and widened in registers, it gives %s logits (largest difference over %d steps: %g).\n",
                same.max_diff == 0 ? "the same" : "OTHER", same.steps, same.max_diff);
    // 2. decode speed, each against its roofline: the bytes it reads over the bandwidth of a buffer that size
    std::printf("  decode on %d thread%s, best of 3 runs of %d steps; roofline = bytes per token / the read rate of a\n"
                "  buffer of that size (the weights of a model this small stay in the processor's caches):\n",
                threads, threads == 1 ? "" : "s", steps);
    double ms[2] = {0, 0};
    const Gpt2* held[2] = {&f32, &f16};
    for (int k = 0; k < 2; ++k) {
        const Gpt2& m = *held[k];
        const double bytes = static_cast<double>(m.decode_weight_bytes());
        const double bw = measure_read_bandwidth(static_cast<size_t>(bytes), threads, 3);
        ms[k] = decode_ms_per_token(m, prompt, steps, 3);
        const double floor_ms = bytes / bw * 1000;
        std::printf("    %-4s %s bytes per token, read at %5.1f GB/s: roofline %.3f ms; decode %.3f ms (%4.0f%% of it)\n",
                    to_string(m.weight_dtype()).c_str(), with_commas(static_cast<uint64_t>(bytes)).c_str(), bw / 1e9,
                    floor_ms, ms[k], 100 * floor_ms / ms[k]);
    }
    // GPT-2 124M's bytes per token held in f16: its matrices at 2 bytes, its 3C + 13C per block of
    // vectors (biases, LayerNorms, one row of wpe) kept in float32
    const ModelConfig gpt2 = gpt2_small_config();
    const uint64_t gpt2_f32 = gpt2_decode_bytes(gpt2, 4),
                   vectors = static_cast<uint64_t>(gpt2.n_embd) * (3 + 13 * static_cast<uint64_t>(gpt2.n_layer)),
                   gpt2_f16 = (gpt2_f32 / 4 - vectors) * 2 + vectors * 4;
    const double speedup = ms[0] / ms[1],
                 fewer = static_cast<double>(f32.decode_weight_bytes()) / static_cast<double>(f16.decode_weight_bytes());
    std::printf("  f16 against f32: %.2fx the tokens per second for %.2fx fewer bytes%s\n", speedup, fewer,
                speedup < 0.8 * fewer ? "." : ": the time follows the bytes.");
    if (speedup < 0.8 * fewer)
        std::printf("  The embedded model is small enough to stay in cache, where arithmetic, not memory, sets much\n"
                    "  of a step's time (and other work on the machine moves timings this short).\n");
    std::printf("  GPT-2 124M (%s in f32, %s in f16) reads from main memory: decodebook-bench\n  measures it there.\n",
                human_bytes(static_cast<double>(gpt2_f32)).c_str(), human_bytes(static_cast<double>(gpt2_f16)).c_str());
    std::printf("  So the seed book's \"you cannot go faster without quantizing the weights\": with every weight read\n"
                "  once per token, halving the bytes per weight halves the time the memory needs, at the same logits.\n");
    // 3. an f32 model rounded to f16: random weights (no trained f32 model ships with the course)
    const ModelConfig& mc = f32.config();
    const TensorMap random = random_gpt2_tensors(mc, 7);
    const Gpt2 exact = Gpt2::from_tensors(mc, random, WeightDtype::F32);
    const Gpt2 rounded = Gpt2::from_tensors(mc, random, WeightDtype::F16);
    LogitAgreement total;
    int whole = 0;
    const std::vector<std::string> texts = {"The best way to", "You will", "Life is", "Never trust a"};
    for (const std::string& text : texts) {
        const LogitAgreement g = compare_greedy_logits(exact, rounded, session.tokenizer.encode(text), steps);
        total.max_diff = std::max(total.max_diff, g.max_diff);
        total.steps += g.steps, total.differ += g.differ;
        whole += g.differ == 0;
    }
    std::printf("  A model whose weights are float32 (the embedded model's shape with random weights, seed 7) loses\n"
                "  up to half a float16 step per weight when rounded (2^-11 of the weight, to nearest even). Fed the\n"
                "  f32 model's greedy tokens on %zu prompts, %d steps: largest logit difference %.3g; greedy picks\n"
                "  the same token at %d of %d steps, and %d of %zu prompts keep their whole greedy continuation.\n",
                texts.size(), total.steps, total.max_diff, total.steps - total.differ, total.steps, whole, texts.size());
    std::printf("  A weight beyond float16's largest finite value, %.0f, cannot be rounded: loading refuses it,\n"
                "  naming the tensor, and --dtype f32 keeps it.\n",
                static_cast<double>(half_to_float(0x7bff)));
}

}  // namespace chapter07
