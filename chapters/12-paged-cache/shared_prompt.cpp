// Chapter 12, parts 3 and 4: requests that share a system prompt, served on chapter 07's rows and
// on the pool (cold, with prefix caching, as n samples), measured in one run on this machine; then
// a hot cache's rerun against the cold run, on the invariant kernels and on the fast ones.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter12.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter12 {

const std::string kPreamble =
    "You are a fortune cookie. Answer every question with one short fortune, wise or funny.\nQ: ";
const std::vector<std::string> kMoreQuestions{"Why is the sky blue? A:", "What do you call a fish with no eyes? A:"};

double percentile(std::vector<double> values, double p) {
    std::sort(values.begin(), values.end());
    const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::max<size_t>(rank, 1) - 1];
}

ServeClock CostClock::clock() {
    return {[this] { return t += 4 + static_cast<double>(std::exchange(pending, 0)); },
            [this](double until) { t = until; }, [this](size_t tokens) { pending += tokens; }};
}

namespace {

constexpr int kSamples = 4;        // samples of each question
constexpr size_t kRunning = 4;     // requests running at once, on rows and on the pool alike

// The same prompts as requests of n = kSamples.
std::vector<ServeRequest> as_samples(const std::vector<ServeRequest>& requests) {
    std::vector<ServeRequest> out;
    for (size_t i = 0; i < requests.size(); i += kSamples) {
        out.push_back(requests[i]);
        out.back().n = kSamples;
    }
    return out;
}

struct Row {
    std::string name;
    long prompt_tokens = 0, computed = 0;
    double hit_rate = -1;  // -1: no prefix cache
    double ttft_median = 0, ttft_p90 = 0, tpot_median = 0, tpot_p90 = 0, tokens_per_s = 0;
    double kv_peak = 0, kv_reserved = 0;  // bytes
    std::vector<std::vector<int>> ids;
    std::vector<std::string> texts;
};

Row summarize(const std::string& name, const std::vector<ServedRequest>& served) {
    Row row;
    row.name = name;
    std::vector<double> ttft, tpot;
    long tokens = 0;
    double last = 0;
    for (const ServedRequest& r : served) {
        ttft.push_back(r.ttft());
        tpot.push_back(r.tpot());
        tokens += static_cast<long>(r.generation.ids.size());
        last = std::max(last, r.finished);
        row.ids.push_back(r.generation.ids);
        row.texts.push_back(r.generation.text);
    }
    row.ttft_median = percentile(ttft, 0.5);
    row.ttft_p90 = percentile(ttft, 0.9);
    row.tpot_median = percentile(tpot, 0.5);
    row.tpot_p90 = percentile(tpot, 0.9);
    row.tokens_per_s = static_cast<double>(tokens) / (last / 1000);
    return row;
}

}  // namespace

// Each question kSamples times, sample k seeded seed + k (as serve_paged seeds n samples), all
// arriving at once; no EOS, so every request runs max_new_tokens and the runs compare alike.
std::vector<ServeRequest> workload(const Session& s, const Questions& questions) {
    std::vector<ServeRequest> requests;
    for (const std::string& q : questions)
        for (int k = 0; k < kSamples; ++k) {
            ServeRequest r;
            r.prompt = s.tokenizer.encode(kPreamble + q);
            r.config = s.config;
            r.config.eos_token_id = std::vector<int>{};
            r.seed = 42 + static_cast<uint64_t>(k);
            requests.push_back(std::move(r));
        }
    return requests;
}

void shared_prompt(const Session& s, const Questions& questions, int block_size) {
    const ModelConfig& mc = s.model.config();
    const std::vector<ServeRequest> requests = workload(s, questions);
    size_t longest = 0;
    long prompts = 0;
    for (const ServeRequest& r : requests) {
        longest = std::max(longest, r.prompt.size() + static_cast<size_t>(r.config.max_new_tokens));
        prompts += static_cast<long>(r.prompt.size());
    }
    const double position_bytes = static_cast<double>(kv_cache_bytes(mc.n_layer, 1, mc.n_embd, sizeof(float)));
    // the pool reserves what chapter 07's rows reserve: kRunning rows of the longest request
    const int num_blocks = static_cast<int>(kRunning * ((longest + block_size - 1) / block_size));
    std::printf("%zu requests: %zu questions after the same preamble, %d samples of each (seeds 42..%d), %d new tokens\n"
                "each, no EOS; all arrive at once and %zu run at a time. Times in ms on this machine, in one run.\n\n",
                requests.size(), questions.size(), kSamples, 42 + kSamples - 1, requests[0].config.max_new_tokens,
                kRunning);
    std::vector<Row> rows;
    {
        ServeStats stats;
        Row row = summarize("rows (chapter 07)", serve_requests(s.model, &s.tokenizer, requests, kRunning,
                                                                Scheduling::Continuous, wall_clock(), 0, &stats));
        row.prompt_tokens = row.computed = prompts;
        row.kv_peak = row.kv_reserved = static_cast<double>(kRunning * longest) * position_bytes;
        rows.push_back(row);
    }
    const auto paged = [&](const std::string& name, const std::vector<ServeRequest>& reqs, bool caching) {
        PagedServeOptions o;
        o.max_running = kRunning;
        o.num_blocks = num_blocks;
        o.block_size = block_size;
        o.prefix_caching = caching;
        PagedServeStats stats;
        Row row = summarize(name, serve_paged(s.model, &s.tokenizer, reqs, o, wall_clock(), &stats));
        row.prompt_tokens = stats.prompt_tokens;
        row.computed = stats.computed_tokens;
        if (caching) row.hit_rate = stats.cache.hit_rate();
        row.kv_peak = static_cast<double>(stats.peak_blocks) * block_size * position_bytes;
        row.kv_reserved = static_cast<double>(num_blocks) * block_size * position_bytes;
        rows.push_back(row);
    };
    paged("pool, cold", requests, false);
    paged("pool, prefix cache", requests, true);
    paged("pool, n = 4 samples", as_samples(requests), true);

    std::printf("  %-20s %9s %5s %11s %9s %11s %9s %9s %10s %10s\n", "", "prefilled", "hits", "TTFT median",
                "TTFT p90", "TPOT median", "TPOT p90", "tokens/s", "KV peak", "reserved");
    for (const Row& r : rows) {
        const std::string hits = r.hit_rate < 0 ? "-" : std::to_string(static_cast<int>(std::lround(100 * r.hit_rate))) + "%";
        std::printf("  %-20s %9ld %5s %11.3f %9.3f %11.4f %9.4f %9.0f %10s %10s\n", r.name.c_str(), r.computed,
                    hits.c_str(), r.ttft_median, r.ttft_p90, r.tpot_median, r.tpot_p90, r.tokens_per_s,
                    human_bytes(r.kv_peak).c_str(), human_bytes(r.kv_reserved).c_str());
    }
    const Row &cold = rows[1], &cached = rows[2], &forked = rows[3];
    const bool same = cached.ids == cold.ids && forked.ids == cold.ids;
    std::printf("\n  Prefix caching computed %ld of the %ld prompt tokens (%ld saved: the preamble's whole blocks\n"
                "  after the first request, and every repeated question's); its median TTFT was %.2fx the cold\n"
                "  pool's. As n = 4 samples each prompt was prefilled once: %ld tokens. The pool held at most %s\n"
                "  of keys and values where the rows reserve %s. Same tokens on the pool all three ways: %s.\n",
                cached.computed, cached.prompt_tokens, cached.prompt_tokens - cached.computed,
                cached.ttft_median / cold.ttft_median, forked.computed, human_bytes(cached.kv_peak).c_str(),
                human_bytes(rows[0].kv_reserved).c_str(), same ? "yes" : "NO");
    std::printf("\n  The first question's %d samples, one prefill shared by all (seeds 42..%d):\n", kSamples,
                42 + kSamples - 1);
    for (int k = 0; k < kSamples; ++k) {
        std::string text = one_line(forked.texts[static_cast<size_t>(k)]);
        if (text.size() > 84) text = text.substr(0, 81) + "...";
        std::printf("    %d: \"%s\"\n", 42 + k, text.c_str());
    }
}

void hot_against_cold(const Session& s, const Questions& questions, int block_size) {
    // the workload, then the same requests again once it is done: the second time every prompt's
    // whole blocks are cached (the pool is large enough that nothing was evicted)
    std::vector<ServeRequest> requests = workload(s, questions);
    const size_t n = requests.size();
    for (size_t i = 0; i < n; ++i) {
        ServeRequest again = requests[i];
        again.arrival = 1e6;  // on the cost clock, long after the first run ends
        requests.push_back(again);
    }
    std::printf("The same %zu requests twice on one pool (a cost clock: no waiting), the rerun on a hot cache:\n\n", n);
    std::printf("  %-11s %18s %24s %28s\n", "kernels", "rerun prefilled", "same tokens as cold", "chosen-token logits equal");
    for (const BatchKernels kernels : {BatchKernels::Invariant, BatchKernels::Fast}) {
        PagedServeOptions o;
        o.max_running = kRunning;
        o.block_size = block_size;
        o.num_blocks = 4096 / block_size;  // 4,096 positions: the first run's blocks all stay cached
        o.kernels = kernels;
        CostClock cost;
        PagedServeStats stats;
        const std::vector<ServedRequest> served = serve_paged(s.model, &s.tokenizer, requests, o, cost.clock(), &stats);
        int same_tokens = 0, same_logits = 0;
        for (size_t i = 0; i < n; ++i) {
            const Generation &cold = served[i].generation, &hot = served[n + i].generation;
            same_tokens += hot.ids == cold.ids;
            bool equal = hot.steps.size() == cold.steps.size();
            for (size_t k = 0; equal && k < hot.steps.size(); ++k) equal = hot.steps[k].logit == cold.steps[k].logit;
            same_logits += equal;
        }
        long rerun_prompts = 0;
        for (size_t i = n; i < requests.size(); ++i) rerun_prompts += static_cast<long>(requests[i].prompt.size());
        // the rerun's prefills: everything computed minus the cold half's, which the first run alone shows
        PagedServeStats cold_stats;
        CostClock cold_cost;
        serve_paged(s.model, &s.tokenizer, std::vector<ServeRequest>(requests.begin(), requests.begin() + static_cast<long>(n)),
                    o, cold_cost.clock(), &cold_stats);
        const long rerun_computed = stats.computed_tokens - cold_stats.computed_tokens;
        std::printf("  %-11s %8ld of %-7ld %17d of %zu %21d of %zu\n",
                    kernels == BatchKernels::Invariant ? "invariant" : "fast", rerun_computed, rerun_prompts,
                    same_tokens, n, same_logits, n);
    }
}

}  // namespace chapter12
