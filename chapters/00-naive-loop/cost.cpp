// Chapter 00: the run's step times, then the cost curve: one naive step at growing context
// lengths, and what that makes the whole loop cost.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter00.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter00 {
namespace {

// The cost of a step against its context length, and what that makes the whole loop cost.
void print_cost(const std::vector<Timing>& timings, int prompt_tokens, int new_tokens) {
    std::printf("\nCost of one naive step against its context (the fastest of %zu forward passes each):\n",
                timings.front().ms.size());
    std::printf("%8s %9s %14s  %s\n", "context", "ms", "us/position", "time");
    const double max_ms = timings.back().best;
    for (const Timing& t : timings) {
        std::printf("%8d %9.3f %14.1f  %s\n", t.context, t.best, 1000.0 * t.best / t.context,
                    bar(t.best, max_ms, 40).c_str());
    }
    const Timing &one = timings.front(), &a = timings[1], &b = timings.back();  // lengths 1, 16, ..., max
    std::printf("%d positions took %.1fx as long as %d (%.0fx the positions): a step's cost grows with the positions\n"
                "it computes, roughly in proportion (attention, which compares each position with every earlier\n"
                "one, adds a part that grows faster).\n",
                b.context, b.best / a.best, a.context, static_cast<double>(b.context) / a.context);
    std::printf("One position alone took %.0f us; at %d positions each took %.0f us. A pass reads every weight once,\n"
                "whatever its length: many positions share that read (prefill), one position pays it alone (decode).\n",
                1000.0 * one.best, b.context, 1000.0 * b.best / b.context);
    const long p = prompt_tokens, n = new_tokens;
    std::printf("Step t computes P + t positions, so %ld new tokens after a %ld-token prompt computed\n"
                "nP + n(n-1)/2 = %ld positions in all: O(n^2). Computing only the new position at each step\n"
                "(chapter 07's KV cache) would make it P + n - 1 = %ld.\n",
                n, p, n * p + n * (n - 1) / 2, p + n - 1);
}

// --csv FILE: every timed forward pass of the cost table, for the site's plot.
void write_cost_csv(const std::string& path, const std::vector<Timing>& timings) {
    CsvFile csv(path, "context_length,run,milliseconds");
    for (const Timing& t : timings)
        for (size_t r = 0; r < t.ms.size(); ++r) csv.out() << t.context << ',' << r << ',' << t.ms[r] << '\n';
    csv.close();
}

}  // namespace

void print_step_times(const std::vector<StepRecord>& steps) {
    if (steps.empty()) return;
    double max_ms = 0;
    for (const StepRecord& s : steps) max_ms = std::max(max_ms, s.milliseconds);
    std::printf("\nThe steps of this run (one forward pass each; single steps are noisy):\n");
    std::printf("%5s %8s %9s  %s\n", "step", "context", "ms", "time");
    const size_t every = std::max<size_t>(1, steps.size() / 8);
    for (size_t i = 0; i < steps.size(); ++i) {
        if (i % every != 0 && i + 1 != steps.size()) continue;
        const StepRecord& s = steps[i];
        std::printf("%5d %8d %9.3f  %s\n", s.step, s.context_length, s.milliseconds, bar(s.milliseconds, max_ms, 40).c_str());
    }
    double rest = 0;
    for (size_t i = 1; i < steps.size(); ++i) rest += steps[i].milliseconds;
    std::printf("time to first token (TTFT) %.3f ms; time per output token after it (TPOT) %.3f ms on average\n",
                steps.front().milliseconds, steps.size() > 1 ? rest / static_cast<double>(steps.size() - 1) : 0.0);
}

std::vector<Timing> time_contexts(const Gpt2& model, const std::vector<int>& ids, const std::vector<int>& lengths, int runs) {
    std::vector<Timing> out;
    for (int length : lengths) {
        std::vector<int> context(static_cast<size_t>(length));
        for (size_t i = 0; i < context.size(); ++i) context[i] = ids[i % ids.size()];  // what the tokens are does not matter
        Timing t{length, {}, 0};
        for (int r = 0; r < runs; ++r) {
            const auto start = std::chrono::steady_clock::now();
            const xt::xtensor<float, 2> logits = model.forward(context);
            t.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
            if (logits.shape(0) != context.size()) throw Error("forward returned the wrong number of rows", "report a bug");
        }
        t.best = *std::min_element(t.ms.begin(), t.ms.end());
        out.push_back(t);
    }
    return out;
}

void cost_curve(const Gpt2& model, const std::vector<int>& ids, int prompt_tokens, int new_tokens, const CommandLine& opt) {
    const int n_positions = model.config().n_positions;
    std::vector<int> lengths;
    lengths.push_back(1);
    for (int length = 16; length <= n_positions; length *= 2) lengths.push_back(length);
    const std::vector<Timing> timings = time_contexts(model, ids, lengths, 7);
    print_cost(timings, prompt_tokens, new_tokens);
    print_worked_formula(model, ids, 11);
    if (!opt.csv.empty()) {
        std::vector<int> every{1};  // the plot gets 1 and every 16th length
        for (int length = 16; length <= n_positions; length += 16) every.push_back(length);
        const std::vector<Timing> more = time_contexts(model, ids, every, 5);
        write_cost_csv(opt.csv, more);
        std::printf("(wrote %zu timed forward passes to %s)\n", more.size() * 5, opt.csv.c_str());
    }
}

}  // namespace chapter00
