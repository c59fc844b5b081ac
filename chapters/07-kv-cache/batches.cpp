// Chapter 07, parts 5 and 6: batches, and why temperature 0 stops being deterministic in a batch.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter07.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter07 {
namespace {

// Short prompts from the embedded model's domain (Debian's fortunes): the batches of parts 5 and 6.
const std::vector<std::string> kPrompts{
    "The best way to", "You will",       "Life is",       "A computer is", "Q: What do you call", "Never trust a",
    "The only thing",  "If you can",     "Love is",       "There is no",   "A man who",           "Don't",
    "It is easier to", "Time is",        "Your lucky",    "Always"};

// The rows of parts 5 and 6: kPrompts, encoded.
std::vector<std::vector<int>> encoded_prompts(const Tokenizer& tok) {
    std::vector<std::vector<int>> encoded;
    for (const std::string& p : kPrompts) encoded.push_back(tok.encode(p));
    return encoded;
}

// Greedy's pick and its margin over the runner-up: a step whose margin is smaller than what
// another order of additions changes in the logits can pick another token in a batch.
struct ArgmaxGap {
    int best = 0;    // the argmax
    double gap = 0;  // the best logit minus the second best
};

// argmax over n raw logits (a row of the cache's logits) that also keeps the second best.
ArgmaxGap argmax_with_gap(const float* z, size_t n) {
    size_t best = 0, second = 1;
    if (z[second] > z[best]) std::swap(best, second);
    for (size_t i = 2; i < n; ++i) {
        if (z[i] > z[best]) {
            second = best;
            best = i;
        } else if (z[i] > z[second]) {
            second = i;
        }
    }
    // ties go to the lowest id, as argmax does
    if (z[best] == z[second] && second < best) std::swap(best, second);
    return {static_cast<int>(best), static_cast<double>(z[best]) - z[second]};
}

// `f` rounded to bfloat16 (to nearest, ties to even, as a cast does) and widened back: a float32's
// exponent with 8 significant bits instead of 24. Logits are finite, so no NaN case.
float round_to_bf16(float f) {
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    bits &= 0xFFFF0000u;
    float out = 0;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

// Every prompt's greedy path decoded alone (one row), with the logits of every decode step.
struct AlonePath {
    std::vector<int> prompt;
    std::vector<int> tokens;            // tokens[s]: the token picked at step s (step 0 from prefill)
    std::vector<std::vector<float>> z;  // z[s]: logits after decoding tokens[s - 1], s >= 1
};

AlonePath decode_alone(const Gpt2& model, const std::vector<int>& prompt, int steps) {
    AlonePath path{prompt, {}, {}};
    const size_t V = static_cast<size_t>(model.config().vocab_size);
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(steps));
    const Vec first = model.prefill(prompt, cache, 0);
    path.tokens.push_back(argmax(first));
    path.z.emplace_back();  // step 0 comes from prefill, the same in a batch (prefill is per row)
    for (int s = 1; s < steps; ++s) {
        model.decode({path.tokens.back()}, {0}, cache);
        const float* z = cache.logits().data();
        path.z.emplace_back(z, z + V);
        path.tokens.push_back(argmax_with_gap(z, V).best);
    }
    return path;
}

struct BatchComparison {
    double max_diff = 0;          // largest |logit alone - logit in the batch|
    long steps = 0;               // decode steps compared (rows x steps)
    bool flipped = false;         // greedy picks another token in the batch at some step
    size_t flip_prompt = 0;
    int flip_step = 0, alone_token = 0, batch_token = 0;
    double flip_gap = 0, flip_diff = 0;
    double closest_gap = 1e30;    // the smallest top-2 gap seen (alone), and where
    size_t closest_prompt = 0;
    int closest_step = 0;
    double ms = 0;                // time of the batch's decode calls
};

// Decode every path in one batch, each row fed its own alone-greedy tokens (teacher forcing), and
// compare each row's logits with the same row alone.
BatchComparison compare_in_batch(const Gpt2& model, const std::vector<AlonePath>& paths, int steps, BatchKernels kernels) {
    BatchComparison c;
    const size_t B = paths.size(), V = static_cast<size_t>(model.config().vocab_size);
    size_t longest = 0;
    for (const AlonePath& p : paths) longest = std::max(longest, p.prompt.size());
    KvCache cache(model.config(), B, longest + static_cast<size_t>(steps));
    std::vector<size_t> rows(B);
    for (size_t r = 0; r < B; ++r) {
        rows[r] = r;
        model.prefill(paths[r].prompt, cache, r);
    }
    std::vector<int> tokens(B);
    for (int s = 1; s < steps; ++s) {
        for (size_t r = 0; r < B; ++r) tokens[r] = paths[r].tokens[static_cast<size_t>(s) - 1];
        const Clock::time_point t0 = Clock::now();
        model.decode(tokens, rows, cache, kernels);
        c.ms += ms_between(t0, Clock::now());
        for (size_t r = 0; r < B; ++r) {
            const float* in_batch = cache.logits().data() + r * V;
            const std::vector<float>& alone = paths[r].z[static_cast<size_t>(s)];
            double diff = 0;
            for (size_t i = 0; i < V; ++i) diff = std::max(diff, std::fabs(static_cast<double>(alone[i]) - in_batch[i]));
            c.max_diff = std::max(c.max_diff, diff);
            ++c.steps;
            const ArgmaxGap a = argmax_with_gap(alone.data(), V);
            const ArgmaxGap b = argmax_with_gap(in_batch, V);
            if (a.gap < c.closest_gap) {
                c.closest_gap = a.gap;
                c.closest_prompt = r;
                c.closest_step = s;
            }
            if (a.best != b.best && !c.flipped) {
                c.flipped = true;
                c.flip_prompt = r;
                c.flip_step = s;
                c.alone_token = a.best;
                c.batch_token = b.best;
                c.flip_gap = a.gap;
                c.flip_diff = diff;
            }
        }
    }
    return c;
}

}  // namespace

// --------------------------------------------------------------------------------- part 5: batches

BatchRates batches(const Session& session, CsvRows& csv_rows) {
    const Gpt2& model = session.model;
    const Tokenizer& tok = session.tokenizer;
    const ModelConfig& mc = model.config();
    std::printf("\n== 5. Batches: one read of the weights serves every row ==\n");
    GenerationConfig bc;
    bc.eos_token_id = std::vector<int>{};  // every row runs to the end: the same work for each size
    // new tokens per prompt: at least 64 tokens per run, so a single stalled step weighs little
    const auto tokens_for = [&](size_t B) {
        return std::max(1, std::min(std::max(10, static_cast<int>(64 / B)), mc.n_positions - 24));
    };
    const std::vector<std::vector<int>> encoded = encoded_prompts(tok);
    const std::vector<size_t> sizes{1, 2, 4, 8, 16};
    // best[i][k]: the fastest of three runs of size i with kernels k, the runs interleaved (a busy
    // machine only ever slows a run down, and a slow spell then hits one run of each, not all three)
    std::vector<std::array<BatchStats, 2>> best(sizes.size());
    for (int rep = 0; rep < 3; ++rep) {
        for (size_t i = 0; i < sizes.size(); ++i) {
            const size_t B = sizes[i];
            const std::vector<std::vector<int>> prompts(encoded.begin(), encoded.begin() + static_cast<long>(B));
            const std::vector<Sampler> samplers(B, Sampler(greedy));
            bc.max_new_tokens = tokens_for(B);
            for (int k = 0; k < 2; ++k) {
                BatchStats stats;
                generate_batch(model, nullptr, prompts, bc, samplers, k ? BatchKernels::Gemm : BatchKernels::Invariant,
                               &stats);
                if (rep == 0 || stats.decode_ms < best[i][static_cast<size_t>(k)].decode_ms)
                    best[i][static_cast<size_t>(k)] = stats;
            }
        }
    }
    std::printf("  %5s %11s %16s %10s %16s %10s %12s  %s\n", "batch", "new tokens", "matvec tokens/s", "x batch 1",
                "GEMM tokens/s", "x batch 1", "GEMM/matvec", "Fast takes");
    double mv1 = 0, gemm1 = 0, mv16 = 0, gemm16 = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        const size_t B = sizes[i];
        double rate[2];
        for (size_t k = 0; k < 2; ++k) {
            rate[k] = static_cast<double>(best[i][k].decoded_tokens) / (best[i][k].decode_ms / 1000);
            csv_rows.push_back({k == 0 ? "batch_matvec_tokens_per_s" : "batch_gemm_tokens_per_s",
                                {static_cast<double>(B), rate[k]}});
        }
        if (B == 1) {
            mv1 = rate[0];
            gemm1 = rate[1];
        }
        if (B == 16) {
            mv16 = rate[0];
            gemm16 = rate[1];
        }
        std::printf("  %5zu %11d %16.0f %10.2f %16.0f %10.2f %12.2f  %s\n", B, tokens_for(B), rate[0], rate[0] / mv1,
                    rate[1], rate[1] / gemm1, rate[1] / rate[0], B >= kGemmFromRows ? "GEMM" : "matvec");
    }
    std::printf("  Batch 16 against batch 1: %.2fx the tokens/s with the matvec, %.2fx with GEMM.\n", mv16 / mv1,
                gemm16 / gemm1);
    std::printf("  A step reads the weights once for all its rows. When that read is what a step waits for (weights\n"
                "  from main memory), more rows are nearly free until the arithmetic binds. Weights that stay in the\n"
                "  caches (part 4) are cheaper to read, so a batch has less to share, and what it gains depends on\n"
                "  the kernel: the matvec's work grows with every row, a GEMM call has a fixed cost that more rows\n"
                "  share. BatchKernels::Fast takes the matvec below kGemmFromRows = %zu rows and GEMM from there, the\n"
                "  crossover measured on GPT-2 124M's products and this model's when the library was written;\n"
                "  the last two columns show where it lies on this machine.\n", kGemmFromRows);
    return {mv16, gemm16};
}

// ------------------------------------------------------------------------ part 6: T = 0 in a batch

void temperature_zero_in_batch(const Session& session, const BatchRates& part5) {
    const Gpt2& model = session.model;
    const Tokenizer& tok = session.tokenizer;
    const ModelConfig& mc = model.config();
    const int t0_steps = std::max(2, std::min(17, mc.n_positions - 24));
    std::printf("\n== 6. Temperature 0 in a batch: %zu prompts, %d greedy steps each, alone and all in one batch ==\n",
                kPrompts.size(), t0_steps);
    std::vector<AlonePath> paths;
    for (const std::vector<int>& p : encoded_prompts(tok)) paths.push_back(decode_alone(model, p, t0_steps));
    const BatchComparison fast = compare_in_batch(model, paths, t0_steps, BatchKernels::Fast);
    const BatchComparison inv = compare_in_batch(model, paths, t0_steps, BatchKernels::Invariant);
    std::printf("  alone each row goes through the streaming matvec; in a batch of %zu, BatchKernels::Fast\n"
                "  multiplies all rows with the BLAS's GEMM, which adds the same products in another order.\n",
                kPrompts.size());
    std::printf("  largest logit difference, alone against in the batch, over %ld steps: %.3g (Fast)\n", fast.steps,
                fast.max_diff);
    if (fast.flipped) {
        std::printf("  a flip: \"%s\" step %d: alone greedy picks %s, in the batch %s; the top-2 gap alone is %.3g,\n"
                    "  smaller than that step's difference %.3g. From there the two texts differ.\n",
                    kPrompts[fast.flip_prompt].c_str(), fast.flip_step,
                    visible_token(tok.token_bytes(fast.alone_token)).c_str(),
                    visible_token(tok.token_bytes(fast.batch_token)).c_str(), fast.flip_gap, fast.flip_diff);
    } else {
        std::printf("  no flip in this search: the smallest top-2 gap of the %ld steps was %.3g (\"%s\", step %d),\n"
                    "  %.0fx the largest difference. A step whose two best logits are closer than the difference\n"
                    "  flips; this run's budget met none, but the difference is not zero, so nothing rules one out.\n",
                    fast.steps, fast.closest_gap, kPrompts[fast.closest_prompt].c_str(), fast.closest_step,
                    fast.closest_gap / std::max(fast.max_diff, 1e-30));
    }
    // bf16: round only the alone logits of the same steps, as an engine that keeps them in bf16 does
    long bf16_flips = 0, bf16_steps = 0;
    double bf16_moved = 0;
    const size_t V = static_cast<size_t>(mc.vocab_size);
    std::vector<float> rounded(V);
    for (const AlonePath& p : paths) {
        for (size_t st = 1; st < p.z.size(); ++st) {
            for (size_t i = 0; i < V; ++i) {
                rounded[i] = round_to_bf16(p.z[st][i]);
                bf16_moved = std::max(bf16_moved, std::fabs(static_cast<double>(rounded[i]) - p.z[st][i]));
            }
            ++bf16_steps;
            bf16_flips += argmax_with_gap(rounded.data(), V).best != p.tokens[st];
        }
    }
    std::printf("  In bf16 (8 significant bits of float32's 24): rounding only these logits to bfloat16 moves them\n"
                "  by up to %.3g, %.0fx Fast's difference, and changes greedy's pick at %ld of the %ld steps (a tie\n"
                "  in bf16 goes to the lower id).\n",
                bf16_moved, bf16_moved / std::max(fast.max_diff, 1e-30), bf16_flips, bf16_steps);
    std::printf("  BatchKernels::Invariant keeps every batch size on the matvec: largest difference %.3g, %s.\n",
                inv.max_diff, inv.max_diff == 0 && !inv.flipped ? "every logit identical to the row alone" : "NOT identical");
    const double ratio = part5.matvec16 / part5.gemm16;
    std::printf("  Its price, from part 5: batch 16 decodes at %.0f tokens/s on the matvec against %.0f with GEMM (%.2fx):\n"
                "  %s.\n",
                part5.matvec16, part5.gemm16, ratio,
                ratio >= 1 ? "on this machine and this model the invariant kernel costs nothing"
                           : "on this machine and this model the invariant kernel is the slower one");
}

}  // namespace chapter07
