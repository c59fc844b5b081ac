// Chapter 07 - The KV cache: prefill and decode, and why decoding is bound by memory.
//
// The naive loop of chapter 00 runs the whole sequence through the model at every step, although
// the keys and values of the earlier positions never change. The KV cache keeps them: the prompt
// goes through once (prefill, matrix-matrix products), then each new token costs one position
// (decode, matrix-vector products that read every weight once). This program measures all of it
// in the run: the naive loop against the cached one, time to first token against time per output
// token, the cache's size, this machine's read bandwidth and the lowest time per token it allows,
// batches, and why temperature 0 stops being deterministic once prompts share a batch.
//
// Library code this chapter introduces: KvCache, kv_cache_bytes, reorder_rows,
// cached_attention_step (kv_cache.hpp); Gpt2::prefill, Gpt2::decode, Gpt2::decode_weight_bytes
// (gpt2.hpp); matvec, attend, gemm (kernels.hpp); gpt2_decode_bytes, decode_roofline_ms,
// measure_read_bandwidth (roofline.hpp); cached_logits, generate_cached, generate_batch
// (cached_loops.hpp); the loop's NextLogits seam (generate.hpp); with_commas, human_bytes
// (terminal.hpp).
#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace {

using Clock = std::chrono::steady_clock;
using Vec = xt::xtensor<float, 1>;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// Short prompts from the embedded model's domain (Debian's fortunes): the batches of parts 5 and 6.
const std::vector<std::string> kPrompts{
    "The best way to", "You will",       "Life is",       "A computer is", "Q: What do you call", "Never trust a",
    "The only thing",  "If you can",     "Love is",       "There is no",   "A man who",           "Don't",
    "It is easier to", "Time is",        "Your lucky",    "Always"};

// Text for the long prompt of part 2 (repeated until it is long enough).
const char* const kLongText =
    "Q: How many programmers does it take to change a light bulb?\n"
    "A: None, that is a hardware problem.\n\n"
    "You will be given a chance to take a long trip.  Take it, and do not look back.\n\n"
    "The man who has never made a mistake has never made anything at all.\n\n"
    "A day without sunshine is like night.\n\n";

// Least-squares slope of y against x (ms per position).
double slope(const std::vector<double>& x, const std::vector<double>& y) {
    const double n = static_cast<double>(x.size());
    double mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        mx += x[i] / n;
        my += y[i] / n;
    }
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
    }
    return sxx > 0 ? sxy / sxx : 0.0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// One timed generation: the time of every step as the caller sees it (between step callbacks).
struct TimedRun {
    Generation generation;
    std::vector<double> step_ms;
    double total_ms = 0;
};

template <typename Run>
TimedRun timed(Run&& run) {
    TimedRun out;
    Clock::time_point last = Clock::now();
    const Clock::time_point start = last;
    const StepObserver observe = [&](const StepRecord&) {
        const Clock::time_point now = Clock::now();
        out.step_ms.push_back(ms_between(last, now));
        last = now;
        return StepAction::Continue;
    };
    out.generation = run(observe);
    out.total_ms = ms_between(start, Clock::now());
    return out;
}

// ------------------------------------------------------------------- part 2: prefill and decode

// Floating-point operations of a prefill of T tokens after `start` cached positions: 2 per weight
// of the blocks' matrices per token, the attention's scores and weighted sums, and lm_head once.
double prefill_flops(const ModelConfig& m, double T, double start) {
    const double C = m.n_embd, L = m.n_layer;
    const double matrices = L * 12 * C * C;  // W_attn 3C^2, W_proj C^2, W_fc 4C^2, W_proj2 4C^2
    const double attended = T * start + T * (T + 1) / 2;  // positions each new token attends to, summed
    return 2 * matrices * T + 4 * C * L * attended + 2.0 * m.vocab_size * C;
}

// One prompt timed in its two phases: prefill (time to first token), decode (time per output token).
struct Phases {
    size_t prompt_tokens = 0;
    double prefill_ms = 0;  // best of the repeats: time to first token
    double decode_ms = 0;   // median time per output token
    int decoded = 0;
};

Phases measure_phases(const Gpt2& model, const std::vector<int>& prompt, int new_tokens, int repeats) {
    Phases p;
    p.prompt_tokens = prompt.size();
    p.decoded = new_tokens;
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(new_tokens));
    p.prefill_ms = 1e30;
    std::vector<double> steps;
    for (int r = 0; r < repeats; ++r) {
        cache.clear(0);
        const Clock::time_point t0 = Clock::now();
        Vec logits = model.prefill(prompt, cache, 0);
        int token = argmax(logits);
        p.prefill_ms = std::min(p.prefill_ms, ms_between(t0, Clock::now()));
        for (int i = 0; i < new_tokens; ++i) {
            const Clock::time_point t = Clock::now();
            model.decode({token}, {0}, cache);
            token = argmax(Vec(xt::view(cache.logits(), 0, xt::all())));
            steps.push_back(ms_between(t, Clock::now()));
        }
    }
    p.decode_ms = median(steps);
    return p;
}

// ---------------------------------------------------------------------- part 6: T = 0 in a batch

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

// ---------------------------------------------------------------------------- the exercises

void report_exercises() {
    // 07.1: a cache of 5 positions (C 4, two heads), positions 0 and 1 filled, the new token at 2
    xt::xtensor<float, 2> keys = xt::zeros<float>({5, 4}), values = xt::zeros<float>({5, 4});
    for (size_t s = 0; s < 2; ++s)
        for (size_t j = 0; j < 4; ++j) {
            keys(s, j) = static_cast<float>(std::sin(1.0 + s * 4 + j));
            values(s, j) = static_cast<float>(std::cos(2.0 + s * 4 + j));
        }
    Vec qkv = xt::zeros<float>({12});
    for (size_t j = 0; j < 12; ++j) qkv(j) = static_cast<float>(std::sin(0.5 * j) * 2);
    auto k_lib = keys, v_lib = values, k_yours = keys, v_yours = values;
    const Vec lib = cached_attention_step(k_lib, v_lib, 2, qkv, 2);
    Vec yours;
    const ExerciseAttempt a = try_exercise([&] { yours = your_cached_attention_step(k_yours, v_yours, 2, qkv, 2); });
    bool same = yours.size() == lib.size() && k_yours == k_lib && v_yours == v_lib;
    for (size_t j = 0; same && j < lib.size(); ++j) same = std::fabs(yours(j) - lib(j)) <= 1e-5f;
    const auto show = [](const Vec& v) {
        std::string s = "[";
        char buf[32];
        for (size_t j = 0; j < v.size(); ++j) {
            std::snprintf(buf, sizeof buf, "%s%.4f", j ? ", " : "", v(j));
            s += buf;
        }
        return s + "]";
    };
    print_exercise_status(course_exercise("your_cached_attention_step"), a, same,
                          show(yours) + (k_yours == k_lib && v_yours == v_lib ? "" : ", cache rows differ"), show(lib));

    // 07.2: the 7B example of part 3
    uint64_t bytes_yours = 0;
    const ExerciseAttempt b = try_exercise([&] { bytes_yours = your_kv_cache_bytes(32, 8192, 4096, 2, 1); });
    const uint64_t bytes_lib = kv_cache_bytes(32, 8192, 4096, 2, 1);
    print_exercise_status(course_exercise("your_kv_cache_bytes"), b, bytes_yours == bytes_lib,
                          with_commas(bytes_yours) + " bytes", with_commas(bytes_lib) + " bytes");

    // 07.3: rows A B C with source {1, 0, 0}: the in-place copy gives B B B
    xt::xtensor<float, 3> rows = xt::zeros<float>({3, 2, 2});
    for (size_t r = 0; r < 3; ++r) xt::view(rows, r, xt::all(), xt::all()) = static_cast<float>(r);
    auto rows_lib = rows, rows_yours = rows;
    reorder_rows(rows_lib, {1, 0, 0});
    const ExerciseAttempt c = try_exercise([&] { your_reorder_rows(rows_yours, {1, 0, 0}); });
    const auto letters = [](const xt::xtensor<float, 3>& t) {
        std::string s;
        for (size_t r = 0; r < t.shape(0); ++r) {
            const float v = t(r, 0, 0);
            bool whole = v == 0.0f || v == 1.0f || v == 2.0f;
            for (size_t i = 0; i < 2; ++i)
                for (size_t j = 0; j < 2; ++j) whole = whole && t(r, i, j) == v;
            s += std::string(r ? " " : "") + (whole ? std::string(1, static_cast<char>('A' + static_cast<int>(v))) : "?");
        }
        return std::string("A B C -> ") + s;
    };
    print_exercise_status(course_exercise("your_reorder_rows"), c, rows_yours == rows_lib, letters(rows_yours),
                          letters(rows_lib));

    // 07.4: GPT-2 124M in float32 at 20 GB/s
    double ms_yours = 0;
    const ExerciseAttempt d = try_exercise([&] { ms_yours = your_decode_roofline_ms(gpt2_small_config(), 4, 20e9); });
    const double ms_lib = decode_roofline_ms(gpt2_small_config(), 4, 20e9);
    const auto ms_text = [](double ms) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6f ms per token", ms);
        return std::string(buf);
    };
    print_exercise_status(course_exercise("your_decode_roofline_ms"), d, std::fabs(ms_yours - ms_lib) <= 1e-9 * ms_lib,
                          ms_text(ms_yours), ms_text(ms_lib));
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-07", "The KV cache: prefill, decode, batches, and the memory bound.",
                                        "The best way to");
    info.defaults.do_sample = false;  // the subject is speed: greedy, so the two loops must agree token for token
    info.defaults.max_new_tokens = 80;  // the naive loop is quadratic: 80 keep the whole chapter within ~3 s
    info.csv_columns = "series,x,y";
    const CommandLine opt = parse_command_line(argc, argv, info);  // --threads N sets num_threads()
    const int threads = num_threads();
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const ModelConfig& mc = model.config();
        std::vector<std::pair<std::string, std::pair<double, double>>> csv_rows;  // series, (x, y)

        // ------------------------------------------------------------------------------ part 1
        GenerationConfig run = config;
        run.eos_token_id = std::vector<int>{};  // no EOS: both loops make exactly max_new_tokens tokens
        const int n_new = run.max_new_tokens;
        if (threads == 1) {
            std::printf("== 1. The naive loop against the KV cache (%d new tokens, EOS ignored, 1 thread) ==\n", n_new);
        } else {  // chapter 00's forward multiplies through xtensor-blas, on one BLAS thread
            std::printf("== 1. The naive loop against the KV cache (%d new tokens, EOS ignored; the cached loop on %d "
                        "threads, the naive loop's products on 1) ==\n", n_new, threads);
        }
        const TimedRun naive = timed([&](const StepObserver& observe) {
            return generate(naive_logits(model), mc, tok, prompt, run, make_sampler(run, run.seed), observe);
        });
        const TimedRun cached = timed([&](const StepObserver& observe) {
            return generate_cached(model, tok, prompt, run, make_sampler(run, run.seed), observe);
        });
        std::string shown = one_line(cached.generation.text);
        if (shown.size() > 150) {
            size_t cut = 150;
            while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;  // a whole character
            shown = shown.substr(0, cut) + " ...";
        }
        std::printf("  %s%s\n", one_line(opt.prompt).c_str(), shown.c_str());
        std::printf("  the same %zu tokens from both loops: %s\n", cached.generation.ids.size(),
                    naive.generation.ids == cached.generation.ids ? "yes" : "NO");
        const size_t n_steps = std::min(naive.step_ms.size(), cached.step_ms.size());
        // a busy machine stalls single steps: after step 0 each row shows the median of 9 steps around it
        const auto around = [&](const std::vector<double>& ms, size_t s) {
            if (s == 0) return ms[0];
            const size_t lo = s > 4 ? s - 4 : 1, hi = std::min(ms.size(), s + 5);
            return median(std::vector<double>(ms.begin() + static_cast<long>(lo), ms.begin() + static_cast<long>(hi)));
        };
        std::printf("\n  %-24s %12s %12s   (after step 0: the median of the 9 steps around it)\n",
                    "step (tokens before it)", "naive ms", "cached ms");
        const size_t rows_shown = std::min<size_t>(8, n_steps);
        for (size_t k = 0; k < rows_shown; ++k) {
            const size_t s = rows_shown == 1 ? 0 : k * (n_steps - 1) / (rows_shown - 1);
            std::printf("  %4zu (%4zu)               %12.3f %12.3f%s\n", s, prompt.size() + s, around(naive.step_ms, s),
                        around(cached.step_ms, s), s == 0 ? "   step 0 of the cache is the prefill" : "");
        }
        std::vector<double> pos, naive_ms, cached_ms;
        for (size_t s = 0; s < n_steps; ++s) {
            pos.push_back(static_cast<double>(prompt.size() + s));
            naive_ms.push_back(naive.step_ms[s]);
            cached_ms.push_back(cached.step_ms[s]);
            csv_rows.push_back({"naive_ms", {pos.back(), naive_ms.back()}});
            csv_rows.push_back({"cached_ms", {pos.back(), cached_ms.back()}});
        }
        // step 0 of the cached loop is the prefill: fit the decode steps only
        const std::vector<double> pos_d(pos.begin() + (n_steps > 1), pos.end());
        const std::vector<double> cached_d(cached_ms.begin() + (n_steps > 1), cached_ms.end());
        std::printf("  each step costs more with every position: naive %+.4f ms, cached %+.4f ms per position\n",
                    slope(pos, naive_ms), slope(pos_d, cached_d));
        std::printf("  the whole run: naive %.1f ms, cached %.1f ms: the cache is %.1fx faster\n", naive.total_ms,
                    cached.total_ms, naive.total_ms / cached.total_ms);
        if (opt.show_steps) print_steps(std::cout, cached.generation.steps, tok);

        // ------------------------------------------------------------------------------ part 2
        std::printf("\n== 2. Time to first token (prefill) against time per output token (decode) ==\n");
        const int tpot_tokens = std::max(1, std::min(32, mc.n_positions - 2));
        std::vector<int> long_prompt;
        const std::vector<int> long_piece = tok.encode(kLongText);
        const size_t long_len = static_cast<size_t>(std::max(1, std::min(192, mc.n_positions - tpot_tokens)));
        while (long_prompt.size() < long_len) long_prompt.insert(long_prompt.end(), long_piece.begin(), long_piece.end());
        long_prompt.resize(long_len);
        std::vector<int> short_prompt(prompt.begin(), prompt.begin() + static_cast<long>(
                                                                         std::min(prompt.size(), long_len)));
        const Phases short_p = measure_phases(model, short_prompt, tpot_tokens, 3);
        const Phases long_p = measure_phases(model, long_prompt, tpot_tokens, 3);
        const double weight_bytes = static_cast<double>(model.decode_weight_bytes());
        const double weights = weight_bytes / sizeof(float);
        std::printf("  %-14s %7s %16s %16s %18s\n", "prompt", "tokens", "first token ms", "per token ms",
                    "prefill tokens/s");
        for (const Phases* p : {&short_p, &long_p})
            std::printf("  %-14s %7zu %16.3f %16.3f %18.0f\n", p == &short_p ? "short" : "long", p->prompt_tokens,
                        p->prefill_ms, p->decode_ms, static_cast<double>(p->prompt_tokens) / (p->prefill_ms / 1000));
        std::printf("  %.0fx the prompt costs %.1fx the time to first token; the time per output token changes %.2fx.\n",
                    static_cast<double>(long_p.prompt_tokens) / static_cast<double>(short_p.prompt_tokens),
                    long_p.prefill_ms / short_p.prefill_ms, long_p.decode_ms / short_p.decode_ms);
        const double pf_flops = prefill_flops(mc, static_cast<double>(long_p.prompt_tokens), 0);
        const double pf_s = long_p.prefill_ms / 1000, dec_s = short_p.decode_ms / 1000;
        const double kv_read = static_cast<double>(
            kv_cache_bytes(mc.n_layer, static_cast<int64_t>(short_p.prompt_tokens) + tpot_tokens / 2, mc.n_embd, 4));
        std::printf("\n  prefill of %zu tokens: %.0f MFLOP in %.2f ms = %.1f GFLOP/s; the %.2f MB of weights read once:"
                    " %.1f GB/s\n",
                    long_p.prompt_tokens, pf_flops / 1e6, long_p.prefill_ms, pf_flops / pf_s / 1e9, weight_bytes / 1e6,
                    weight_bytes / pf_s / 1e9);
        std::printf("  decode, one token: 2 flops x %s weights = %.1f MFLOP in %.3f ms = %.1f GFLOP/s; %.2f MB of weights"
                    " (+ %.2f MB of cache) read: %.1f GB/s\n",
                    with_commas(static_cast<uint64_t>(weights)).c_str(), 2 * weights / 1e6, short_p.decode_ms,
                    2 * weights / dec_s / 1e9, weight_bytes / 1e6, kv_read / 1e6, (weight_bytes + kv_read) / dec_s / 1e9);
        std::printf("  flops per byte of weights: prefill %.0f, decode %.1f. Prefill uses each weight for every prompt\n"
                    "  token (compute-bound); decode uses it once per token, so it waits on memory (bandwidth-bound).\n",
                    pf_flops / weight_bytes, 2 * weights / weight_bytes);

        // ------------------------------------------------------------------------------ part 3
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
                    prompt.size() + static_cast<size_t>(n_new),
                    with_commas(KvCache(mc, 1, prompt.size() + static_cast<size_t>(n_new)).bytes()).c_str());

        // ------------------------------------------------------------------------------ part 4
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
        if (short_p.decode_ms < floor_memory) {
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
        const double bytes_70b = 70e9 * 2, gpu = 3e12;
        std::printf("  The same arithmetic for a 70B model in bf16 on a 3 TB/s GPU: 70e9 x 2 bytes / 3e12 bytes/s ="
                    " %.1f ms\n  per token, at most %.1f tokens/s for one sequence, however fast its arithmetic.\n",
                    bytes_70b / gpu * 1000, gpu / bytes_70b);

        // ------------------------------------------------------------------------------ part 5
        std::printf("\n== 5. Batches: one read of the weights serves every row ==\n");
        GenerationConfig bc;
        bc.eos_token_id = std::vector<int>{};  // every row runs to the end: the same work for each size
        // new tokens per prompt: at least 64 tokens per run, so a single stalled step weighs little
        const auto tokens_for = [&](size_t B) {
            return std::max(1, std::min(std::max(10, static_cast<int>(64 / B)), mc.n_positions - 24));
        };
        std::vector<std::vector<int>> encoded;
        for (const std::string& p : kPrompts) encoded.push_back(tok.encode(p));
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

        // ------------------------------------------------------------------------------ part 6
        const int t0_steps = std::max(2, std::min(17, mc.n_positions - 24));
        std::printf("\n== 6. Temperature 0 in a batch: %zu prompts, %d greedy steps each, alone and all in one batch ==\n",
                    kPrompts.size(), t0_steps);
        std::vector<AlonePath> paths;
        for (const std::vector<int>& p : encoded) paths.push_back(decode_alone(model, p, t0_steps));
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
        std::printf("  BatchKernels::Invariant keeps every batch size on the matvec: largest difference %.3g, %s.\n",
                    inv.max_diff, inv.max_diff == 0 && !inv.flipped ? "every logit identical to the row alone" : "NOT identical");
        std::printf("  Its cost, from part 5: batch 16 decodes at %.0f tokens/s against %.0f with GEMM (%.2fx).\n", mv16,
                    gemm16, mv16 / gemm16);

        if (!opt.csv.empty()) {
            CsvFile csv(opt.csv, info.csv_columns);
            for (const auto& [series, xy] : csv_rows) csv.out() << series << ',' << xy.first << ',' << xy.second << '\n';
            csv.close();
            std::printf("\n(wrote the step times of part 1 and the batch rates of part 5 to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 07 grades them):\n");
        report_exercises();
        return 0;
    });
}
