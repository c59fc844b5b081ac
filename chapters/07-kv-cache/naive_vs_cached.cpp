// Chapter 07, parts 1 and 2: the naive loop against the KV cache, and time to first token (prefill)
// against time per output token (decode).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "chapter07.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/model/safetensors.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter07 {
namespace {

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

// Floating-point operations of a prefill of T tokens after `start` cached positions: 2 per weight
// of the blocks' matrices per token, the attention's scores and weighted sums, and lm_head once.
struct PrefillFlops {
    double matrices = 0;   // the blocks' four matrices: 2 per weight per token
    double attention = 0;  // scores and weighted sums: no weights read
    double lm_head = 0;    // the last position only
    double total() const { return matrices + attention + lm_head; }
};

PrefillFlops prefill_flops(const ModelConfig& m, double T, double start) {
    const double C = m.n_embd, L = m.n_layer;
    const double matrices = L * 12 * C * C;  // W_attn 3C^2, W_proj C^2, W_fc 4C^2, W_proj2 4C^2
    const double attended = T * start + T * (T + 1) / 2;  // positions each new token attends to, summed
    return {2 * matrices * T, 4 * C * L * attended, 2.0 * m.vocab_size * C};
}

// Prefill `prompt` `repeats` times (the fastest counts) and decode `new_tokens` greedy tokens after
// each (the median step counts).
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

// The largest |a - b| over two logits vectors of the same size.
double max_abs_diff(const Vec& a, const Vec& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(a(i)) - b(i)));
    return d;
}

// Greedy on the cache from `cache`'s state: `first` is decoded, then each pick, `steps` tokens in all.
// Returns the tokens picked after `first`; `first_logits` gets the logits of the first decode.
std::vector<int> greedy_on_cache(const Gpt2& model, KvCache& cache, int first, int steps, Vec& first_logits) {
    std::vector<int> picked;
    int token = first;
    for (int s = 0; s < steps; ++s) {
        model.decode({token}, {0}, cache);
        const Vec z = xt::view(cache.logits(), 0, xt::all());
        if (s == 0) first_logits = z;
        token = argmax(z);
        picked.push_back(token);
    }
    return picked;
}

// Position ids: a cached step's position is the cache's length, and GPT-2 adds that row of its
// learned position table (wpe) to the token's embedding. What a loop that fed position 0 instead
// would get: the same prompt in the same cache, the next token decoded by a copy of the model
// whose wpe holds row 0 in every row, so the one input that changes is the position's row.
void position_ids(const Session& session, const CommandLine& opt, const std::vector<int>& cached_ids) {
    const auto& [model, tok, prompt, config] = session;
    const ModelConfig& mc = model.config();
    const int steps = static_cast<int>(std::min<size_t>(12, cached_ids.size() - 1));
    if (steps < 1) return;
    TensorMap tensors = load_gpt2_tensors(opt.model_dir + "/model.safetensors", mc);
    WeightArray& wpe = tensors.at("wpe.weight");  // (n_positions, C)
    for (size_t p = 1; p < wpe.shape(0); ++p) xt::view(wpe, p, xt::all()) = xt::view(wpe, 0, xt::all());
    const Gpt2 at_zero = Gpt2::from_tensors(mc, tensors);

    const size_t capacity = prompt.size() + static_cast<size_t>(steps);
    KvCache right(mc, 1, capacity), wrong(mc, 1, capacity);
    const int first = argmax(model.prefill(prompt, right, 0));  // part 1's first token
    model.prefill(prompt, wrong, 0);                            // the same prompt, the same keys and values
    Vec z_right, z_wrong;
    const std::vector<int> by_length = greedy_on_cache(model, right, first, steps, z_right);
    const std::vector<int> by_zero = greedy_on_cache(at_zero, wrong, first, steps, z_wrong);
    const bool same_as_part1 = std::equal(by_length.begin(), by_length.end(), cached_ids.begin() + 1);
    std::printf("\n  Position ids: the cached step feeds %s at position %zu, the cache's length (GPT-2 adds row %zu of\n"
                "  its position table). The same cache, that token fed at position 0 instead:\n",
                visible_token(tok.token_bytes(first)).c_str(), prompt.size(), prompt.size());
    std::printf("    at position %3zu, greedy goes on %s (part 1's tokens: %s)\n", prompt.size(),
                visible_token(tok.decode(by_length)).c_str(), same_as_part1 ? "yes" : "NO");
    std::printf("    at position   0, greedy goes on %s\n", visible_token(tok.decode(by_zero)).c_str());
    size_t agree = 0;
    while (agree < by_length.size() && by_length[agree] == by_zero[agree]) ++agree;
    std::printf("  the first step's logits differ by up to %.3f; the two greedy paths agree on %zu of %d tokens.\n",
                max_abs_diff(z_right, z_wrong), agree, steps);
}

}  // namespace

// -------------------------------------------------------- part 1: the naive loop against the cache

size_t naive_against_cached(const Session& session, const CommandLine& opt, int threads, CsvRows& csv_rows) {
    const auto& [model, tok, prompt, config] = session;
    const ModelConfig& mc = model.config();
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
    const double speedup = naive.total_ms / cached.total_ms;
    if (measurement_disturbed(speedup, 1, std::numeric_limits<double>::infinity())) {
        // the cache does less work than the naive loop at every step: slower means other work took the cores
        std::printf("  the whole run: naive %.1f ms, cached %.1f ms: the measurement was disturbed (the cached loop\n"
                    "  cannot be slower than the naive one; other work took the cores). Run it again, with --threads 1.\n",
                    naive.total_ms, cached.total_ms);
    } else {
        std::printf("  the whole run: naive %.1f ms, cached %.1f ms: the cache is %.1fx faster\n", naive.total_ms,
                    cached.total_ms, speedup);
    }
    if (opt.show_steps) print_steps(std::cout, cached.generation.steps, tok);
    position_ids(session, opt, cached.generation.ids);
    return prompt.size() + static_cast<size_t>(n_new);
}

// ---------------------------------------------------------------------- part 2: prefill and decode

Phases prefill_against_decode(const Session& session) {
    const Gpt2& model = session.model;
    const Tokenizer& tok = session.tokenizer;
    const std::vector<int>& prompt = session.prompt;
    const ModelConfig& mc = model.config();
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
    const double prompt_ratio = static_cast<double>(long_p.prompt_tokens) / static_cast<double>(short_p.prompt_tokens);
    const double ttft_ratio = long_p.prefill_ms / short_p.prefill_ms;
    std::printf("  %.0fx the prompt costs %.1fx the time to first token (%s than in proportion: prefill tokens/s %s);\n"
                "  the time per output token changes %.2fx.\n",
                prompt_ratio, ttft_ratio, ttft_ratio < prompt_ratio ? "less" : "more",
                ttft_ratio < prompt_ratio ? "rise" : "fall",
                long_p.decode_ms / short_p.decode_ms);
    const PrefillFlops pf = prefill_flops(mc, static_cast<double>(long_p.prompt_tokens), 0);
    const double pf_flops = pf.total();
    const double pf_s = long_p.prefill_ms / 1000, dec_s = short_p.decode_ms / 1000;
    // the cache a decode step reads: the prompt and half the decoded tokens, on average
    const auto kv_read_after = [&](const Phases& p) {
        return static_cast<double>(
            kv_cache_bytes(mc.n_layer, static_cast<int64_t>(p.prompt_tokens) + tpot_tokens / 2, mc.n_embd, 4));
    };
    const double kv_read = kv_read_after(short_p), kv_read_long = kv_read_after(long_p);
    std::printf("\n  prefill of %zu tokens: %.0f MFLOP (attention %.0f of them) in %.2f ms = %.1f GFLOP/s;\n"
                "  the %.2f MB of weights read once: %.1f GB/s\n",
                long_p.prompt_tokens, pf_flops / 1e6, pf.attention / 1e6, long_p.prefill_ms, pf_flops / pf_s / 1e9,
                weight_bytes / 1e6, weight_bytes / pf_s / 1e9);
    std::printf("  decode, one token: 2 flops x %s weights = %.1f MFLOP in %.3f ms = %.1f GFLOP/s; %.2f MB of weights"
                " (+ %.2f MB of cache) read: %.1f GB/s\n",
                with_commas(static_cast<uint64_t>(weights)).c_str(), 2 * weights / 1e6, short_p.decode_ms,
                2 * weights / dec_s / 1e9, weight_bytes / 1e6, kv_read / 1e6, (weight_bytes + kv_read) / dec_s / 1e9);
    const double extra_ms = long_p.decode_ms - short_p.decode_ms;
    std::printf("  after the long prompt a step attends over %zu cached positions instead of %zu: %+.2f MB of cache\n"
                "  and %+.3f ms per token",
                long_p.prompt_tokens + tpot_tokens / 2, short_p.prompt_tokens + tpot_tokens / 2,
                (kv_read_long - kv_read) / 1e6, extra_ms);
    if (extra_ms > 0) {
        std::printf(" (%.1f GB/s for the extra, against %.1f GB/s for the whole short step).\n",
                    (kv_read_long - kv_read) / (extra_ms / 1000) / 1e9, (weight_bytes + kv_read) / dec_s / 1e9);
    } else {
        std::printf(" (no slower: the extra cache hides in the timing's noise).\n");
    }
    std::printf("  flops per byte of weights: prefill %.0f, decode %.1f. Prefill uses each weight for every prompt\n"
                "  token (compute-bound); decode uses it once per token, so it waits on memory (bandwidth-bound).\n",
                pf_flops / weight_bytes, 2 * weights / weight_bytes);
    const double lm_head_weights = static_cast<double>(mc.vocab_size) * mc.n_embd;
    const double matrix_weights = static_cast<double>(mc.n_layer) * 12 * mc.n_embd * mc.n_embd;
    std::printf("  T/2 = %.0f per byte would need every weight to serve all %zu tokens. The blocks' matrices (%.0f%% of"
                " the\n  weights) give %.1f; attention, which reads no weights, %.1f; the lm_head (%.0f%%) serves the last"
                " position\n  only: %.1f. Together %.0f.\n",
                static_cast<double>(long_p.prompt_tokens) / 2, long_p.prompt_tokens, 100 * matrix_weights / weights,
                pf.matrices / weight_bytes, pf.attention / weight_bytes, 100 * lm_head_weights / weights,
                pf.lm_head / weight_bytes, pf_flops / weight_bytes);
    return short_p;
}

}  // namespace chapter07
