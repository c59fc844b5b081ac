// Chapter 07, part 7: serving requests that arrive over time, static batching against continuous
// batching (serve_requests, decoding/serving.hpp), measured on this machine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter07.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/serving.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter07 {
namespace {

// Twelve requests from the embedded model's domain (Debian's fortunes).
const std::vector<std::string> kServePrompts{
    "You will be",    "The best way to", "Q: How many",  "Life is",        "Beware of",   "A fool and",
    "It is a",        "Your lucky",      "Good news:",   "Never trust a",  "Today is",    "Q: What do you call"};
constexpr size_t kSlots = 4;
constexpr int kShortest = 4, kLongest = 48;  // new tokens per request, drawn uniformly
constexpr double kLoad = 0.85;              // arrivals at 85 % of the rate continuous batching serves
constexpr uint64_t kScheduleSeed = 7;       // the arrival schedule's seed

// The median time of one decode call of `n` rows on this machine (nine calls after a prefill).
double decode_step_ms(const Gpt2& model, const Tokenizer& tok, size_t n) {
    KvCache cache(model.config(), n, 32);
    std::vector<size_t> rows;
    for (size_t r = 0; r < n; ++r) {
        model.prefill(tok.encode(kServePrompts[r]), cache, r);
        rows.push_back(r);
    }
    std::vector<double> ms;
    const std::vector<int> tokens(n, 13);
    for (int step = 0; step < 9; ++step) {
        const Clock::time_point t0 = Clock::now();
        model.decode(tokens, rows, cache, BatchKernels::Invariant);
        ms.push_back(ms_between(t0, Clock::now()));
    }
    std::nth_element(ms.begin(), ms.begin() + 4, ms.end());
    return ms[4];
}

// The schedule: request i arrives after request i - 1 by an exponential gap (mean `mean_gap_ms`,
// coin by coin from Rng(kScheduleSeed)), the first at 0; its length is drawn from the same coins,
// so every mean gives the same requests (0: all at once).
std::vector<ServeRequest> arrival_schedule(const Tokenizer& tok, double mean_gap_ms) {
    Rng rng(kScheduleSeed);
    std::vector<ServeRequest> requests;
    double at = 0;
    for (size_t i = 0; i < kServePrompts.size(); ++i) {
        if (i > 0) at += -mean_gap_ms * std::log(1.0 - rng.coin());  // inverse CDF of the exponential
        ServeRequest r;
        r.prompt = tok.encode(kServePrompts[i]);
        r.config.eos_token_id = std::vector<int>{};  // no EOS: each runs to its own length, both schedules alike
        r.config.max_new_tokens = kShortest + static_cast<int>(rng.coin() * (kLongest - kShortest + 1));
        r.arrival = at;
        requests.push_back(std::move(r));
    }
    return requests;
}

// The nearest-rank percentile p (0..1) of `values`: the smallest value with at least p of them at or below it.
double percentile(std::vector<double> values, double p) {
    std::sort(values.begin(), values.end());
    const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::max<size_t>(rank, 1) - 1];
}

// One schedule's figures: throughput over the whole run, latencies per request.
struct ServeSummary {
    long tokens = 0;
    double last_ms = 0;  // when the last token was made (the first request arrives at 0)
    double tokens_per_s = 0;
    double ttft_median = 0, ttft_p90 = 0, tpot_median = 0, tpot_p90 = 0;
    ServeStats stats;
};

ServeSummary summarize(const std::vector<ServedRequest>& served, const ServeStats& stats) {
    ServeSummary s;
    s.stats = stats;
    std::vector<double> ttft, tpot;
    for (const ServedRequest& r : served) {
        s.tokens += static_cast<long>(r.generation.ids.size());
        s.last_ms = std::max(s.last_ms, r.finished);
        ttft.push_back(r.ttft());
        if (r.generation.ids.size() > 1) tpot.push_back(r.tpot());
    }
    s.tokens_per_s = static_cast<double>(s.tokens) / (s.last_ms / 1000);
    s.ttft_median = percentile(ttft, 0.5);
    s.ttft_p90 = percentile(ttft, 0.9);
    s.tpot_median = percentile(tpot, 0.5);
    s.tpot_p90 = percentile(tpot, 0.9);
    return s;
}

}  // namespace

// ------------------------------------------------------------------ part 7: serving over time

void serving(const Session& session, CsvRows& csv_rows) {
    const Gpt2& model = session.model;
    const Tokenizer& tok = session.tokenizer;
    const double one_row_ms = decode_step_ms(model, tok, 1);
    const double step_ms = decode_step_ms(model, tok, kSlots);
    const std::vector<Scheduling> schedules{Scheduling::Static, Scheduling::Continuous};
    // all at once: each policy's throughput when the slots never wait for a request; the best of
    // two runs, interleaved (a busy machine only ever slows a run down, as in part 5)
    const std::vector<ServeRequest> burst = arrival_schedule(tok, 0);
    std::vector<ServeSummary> at_once(schedules.size());
    for (int rep = 0; rep < 2; ++rep) {
        for (size_t k = 0; k < schedules.size(); ++k) {
            ServeStats stats;
            const ServeSummary s =
                summarize(serve_requests(model, &tok, burst, kSlots, schedules[k], wall_clock(), 0, &stats), stats);
            if (rep == 0 || s.last_ms < at_once[k].last_ms) at_once[k] = s;
        }
    }
    // over time: arrivals at kLoad of the pace continuous batching kept all at once
    const double per_request_ms = at_once[1].last_ms / static_cast<double>(burst.size());
    const std::vector<ServeRequest> requests = arrival_schedule(tok, per_request_ms / kLoad);
    std::printf("\n== 7. Serving requests that arrive over time: static against continuous batching ==\n");
    std::printf("  %zu requests (greedy, no EOS, %d to %d new tokens each, %ld in all) on a cache of %zu slots,\n"
                "  first all at once (best of 2), then arriving at seeded random times: exponential gaps, mean\n"
                "  %.2f ms, %.0f %% of the pace continuous batching kept all at once (%.2f ms per request).\n"
                "  One decode call took %.3f ms for 1 row and %.3f ms for %zu: a full step makes %zu tokens in\n"
                "  %.2fx the time of one. Times in ms from the first arrival (ends at: the last token of all).\n",
                requests.size(), kShortest, kLongest, at_once[0].tokens, kSlots, per_request_ms / kLoad, kLoad * 100,
                per_request_ms, one_row_ms, step_ms, kSlots, kSlots, step_ms / one_row_ms);
    std::printf("  %-10s  %11s  | %s\n", "", "all at once", "arriving over time");
    std::printf("  %-10s  %11s  | %11s %9s %11s %9s %7s %13s %8s\n", "scheduling", "tokens/s", "TTFT median",
                "TTFT p90", "TPOT median", "TPOT p90", "decodes", "rows per call", "ends at");
    std::vector<ServeSummary> summaries;
    std::vector<std::vector<ServedRequest>> runs;
    for (size_t k = 0; k < schedules.size(); ++k) {
        ServeStats stats;
        runs.push_back(serve_requests(model, &tok, requests, kSlots, schedules[k], wall_clock(), 0, &stats));
        const ServeSummary s = summarize(runs.back(), stats);
        summaries.push_back(s);
        std::printf("  %-10s  %11.0f  | %11.2f %9.2f %11.3f %9.3f %7d %13.2f %8.1f\n", to_string(schedules[k]),
                    at_once[k].tokens_per_s, s.ttft_median, s.ttft_p90, s.tpot_median, s.tpot_p90, s.stats.decode_steps,
                    static_cast<double>(s.stats.decoded_tokens) / s.stats.decode_steps, s.last_ms);
        const std::string name = to_string(schedules[k]);
        for (size_t i = 0; i < runs.back().size(); ++i) {
            const ServedRequest& r = runs.back()[i];
            const double x = static_cast<double>(i);
            csv_rows.push_back({"serve_" + name + "_arrival", {x, r.arrival}});
            csv_rows.push_back({"serve_" + name + "_admitted", {x, r.admitted}});
            csv_rows.push_back({"serve_" + name + "_first_token", {x, r.first_token}});
            csv_rows.push_back({"serve_" + name + "_finished", {x, r.finished}});
        }
    }
    bool same = true;
    for (size_t i = 0; i < requests.size(); ++i) same = same && runs[0][i].generation.ids == runs[1][i].generation.ids;
    const ServeSummary& st = summaries[0];
    const ServeSummary& co = summaries[1];
    std::printf("  Every request got the same tokens under both schedules: %s (each as it would alone: one decode\n"
                "  call per step on BatchKernels::Invariant).\n", same ? "yes" : "NO");
    std::printf("  Continuous against static: %.2fx the tokens/s all at once; over time %.2fx the median TTFT,\n"
                "  %.2fx the median TPOT, %.2f rows per decode call against %.2f.\n",
                at_once[1].tokens_per_s / at_once[0].tokens_per_s, co.ttft_median / st.ttft_median,
                co.tpot_median / st.tpot_median, static_cast<double>(co.stats.decoded_tokens) / co.stats.decode_steps,
                static_cast<double>(st.stats.decoded_tokens) / st.stats.decode_steps);
    std::printf("  Static lets a batch in only when every slot is free, so a finished row's slot stays empty until\n"
                "  the batch's longest request ends, and a request that arrives meanwhile waits that long for its\n"
                "  first token. Continuous refills a slot at the next step, so its decode calls carry more rows;\n"
                "  that buys throughput as far as a fuller step costs less per token (the %.2fx above; at 1.00x\n"
                "  the extra rows would be free, as when the weights come from main memory). Over time, the\n"
                "  arrivals set most of the run's length, so the gain shows as shorter waits. Its price is in\n"
                "  the TPOT columns: every admission's prefill runs between two decode steps of the rows going.\n",
                step_ms / one_row_ms);
}

}  // namespace chapter07
