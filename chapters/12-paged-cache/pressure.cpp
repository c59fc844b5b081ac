// Chapter 12, parts 5 and 6: chunked prefill's trade (a long prompt arrives among running
// requests) and preemption as the pool shrinks (serve_paged, decoding/paged_serving.hpp).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter12.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter12 {
namespace {

constexpr size_t kLongPrompt = 200;  // tokens: most of the model's context of 256

// Three short requests running, and a long prompt that arrives while they decode.
std::vector<ServeRequest> long_among_short(const Session& s, const Questions& questions, double arrival) {
    std::vector<ServeRequest> requests;
    for (const char* text : {"You will", "Life is", "The best way to"}) {
        ServeRequest r;
        r.prompt = s.tokenizer.encode(text);
        r.config = s.config;
        r.config.eos_token_id = std::vector<int>{};
        r.config.max_new_tokens = 48;
        requests.push_back(std::move(r));
    }
    std::string text;
    while (s.tokenizer.encode(text).size() < kLongPrompt)
        for (const std::string& q : questions) text += kPreamble + q + " Patience.\n";
    ServeRequest r;
    r.prompt = s.tokenizer.encode(text);
    r.prompt.resize(kLongPrompt);
    r.config = s.config;
    r.config.eos_token_id = std::vector<int>{};
    r.config.max_new_tokens = 4;
    r.arrival = arrival;
    requests.push_back(std::move(r));
    return requests;
}

struct Trade {
    double long_ttft = 0;   // the long prompt's time to first token
    double worst_gap = 0;   // the short requests' longest wait between two tokens
    double tpot = 0;        // their median time per output token
};

Trade measure(const std::vector<ServedRequest>& served) {
    Trade t;
    std::vector<double> tpots;
    for (size_t i = 0; i + 1 < served.size(); ++i) {
        const std::vector<double>& times = served[i].token_times;
        for (size_t k = 1; k < times.size(); ++k) t.worst_gap = std::max(t.worst_gap, times[k] - times[k - 1]);
        tpots.push_back(served[i].tpot());
    }
    t.long_ttft = served.back().ttft();
    t.tpot = percentile(tpots, 0.5);
    return t;
}

}  // namespace

void chunked_prefill(const Session& s, const Questions& questions, SeriesRows& csv) {
    const std::vector<size_t> budgets{0, 16, 64};
    // on the wall clock the long prompt arrives a third of the way through the short ones' run
    PagedServeOptions o;
    o.max_running = 4;
    const std::vector<ServedRequest> alone = serve_paged(s.model, &s.tokenizer, long_among_short(s, questions, 0), o, wall_clock());
    double shorts_ms = 0;
    for (size_t i = 0; i < 3; ++i) shorts_ms = std::max(shorts_ms, alone[i].finished);
    std::printf("Three requests decode 48 tokens each; a prompt of %zu tokens arrives while they run. A budget caps\n"
                "the tokens of one step: every decode first, then the prompt in chunks of what is left. On a cost\n"
                "clock (a model call costs 4 units plus 1 per token), then on this machine's clock (ms):\n\n",
                kLongPrompt);
    std::printf("  %-8s | %14s %16s %11s | %14s %16s %11s\n", "budget", "long TTFT", "others' worst gap", "their TPOT",
                "long TTFT ms", "worst gap ms", "TPOT ms");
    std::vector<std::vector<int>> first_ids;
    bool same = true;
    for (const size_t budget : budgets) {
        o.token_budget = budget;
        CostClock cost;
        const std::vector<ServedRequest> modelled = serve_paged(s.model, &s.tokenizer, long_among_short(s, questions, 40), o, cost.clock());
        const std::vector<ServedRequest> timed =
            serve_paged(s.model, &s.tokenizer, long_among_short(s, questions, shorts_ms / 3), o, wall_clock());
        const Trade m = measure(modelled), w = measure(timed);
        // --csv: when each request made each token on the cost clock, for the page's plot
        for (size_t r = 0; r < modelled.size(); ++r)
            for (size_t k = 0; k < modelled[r].token_times.size(); ++k)
                csv.push_back({"budget_" + (budget ? std::to_string(budget) : std::string("off")) + "_request_" +
                                   std::to_string(r),
                               {modelled[r].token_times[k], static_cast<double>(k)}});
        std::printf("  %-8s | %14.0f %16.0f %11.2f | %14.3f %16.3f %11.4f\n",
                    budget ? std::to_string(budget).c_str() : "off", m.long_ttft, m.worst_gap, m.tpot, w.long_ttft,
                    w.worst_gap, w.tpot);
        std::vector<std::vector<int>> ids;
        for (const ServedRequest& r : modelled) ids.push_back(r.generation.ids);
        if (first_ids.empty()) first_ids = ids;
        same = same && ids == first_ids;
    }
    std::printf("\n  Without a budget the long prefill runs in one call, and every running request waits for it\n"
                "  once; with one, no step holds more than the budget, so the worst wait shrinks, and the long\n"
                "  prompt's first token comes later: its chunks share steps with the decodes. Same tokens every\n"
                "  way: %s.\n",
                same ? "yes" : "NO");
}

void preemption(const Session& s, const Questions& questions) {
    const std::vector<ServeRequest> requests = workload(s, questions);
    size_t longest = 0;
    for (const ServeRequest& r : requests)
        longest = std::max(longest, r.prompt.size() + static_cast<size_t>(r.config.max_new_tokens));
    const int one = static_cast<int>((longest + 15) / 16);  // blocks of 16 one request needs alone
    std::printf("Part 3's %zu requests, 4 at a time, on pools from roomy down to what one request needs alone (%d\n"
                "blocks of 16). When a running request needs a block and none is free, the latest admitted gives\n"
                "its blocks back and is recomputed later from its prompt and output (cost clock):\n\n",
                requests.size(), one);
    std::printf("  %6s %12s %10s %13s %10s %16s\n", "blocks", "preemptions", "prefilled", "decode steps", "ends at",
                "same tokens");
    std::vector<std::vector<int>> roomy;
    for (const int blocks : {64, 4 * one, 2 * one, one}) {
        PagedServeOptions o;
        o.max_running = 4;
        o.num_blocks = blocks;
        CostClock cost;
        PagedServeStats stats;
        const std::vector<ServedRequest> served = serve_paged(s.model, &s.tokenizer, requests, o, cost.clock(), &stats);
        std::vector<std::vector<int>> ids;
        double end = 0;
        for (const ServedRequest& r : served) {
            ids.push_back(r.generation.ids);
            end = std::max(end, r.finished);
        }
        if (roomy.empty()) roomy = ids;
        size_t same = 0;
        for (size_t i = 0; i < ids.size(); ++i) same += ids[i] == roomy[i];
        std::printf("  %6d %12d %10ld %13d %10.0f %13zu of %zu\n", blocks, stats.preemptions, stats.computed_tokens,
                    stats.steps.decode_steps, end, same, ids.size());
    }
}

}  // namespace chapter12
