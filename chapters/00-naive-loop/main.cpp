// Chapter 00 - The naive decode loop.
//
// A language model only ever answers one question: "given these tokens, how likely is each
// possible next token?". Text comes out of a loop around that question:
//   forward the whole sequence -> take the last position's logits -> pick -> append -> stop?
// This program runs that loop on the embedded model, streams the text as it grows, and times
// one step at growing context lengths: each step re-reads the whole prefix, so a step costs in
// proportion to the positions it computes, and the whole loop O(n^2); then it works the usual
// cost formula O(T (L + T) d^2) for L = 8, T = 20, d = 64 beside those 20 steps measured.
//
// Library code this chapter introduces: Gpt2::forward (model/gpt2.hpp), Tokenizer
// (model/tokenizer.hpp), last_position_logits and generate_naive (decoding/naive_loop.hpp),
// Utf8Stream (base/utf8.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace {

// The steps of the run above: single steps of a millisecond or so are noisy on a busy machine.
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

// One naive step at a given context length: the fastest of `runs` forward passes (other work on
// the machine only ever adds time, so the fastest run is the least disturbed one).
struct Timing {
    int context = 0;
    std::vector<double> ms;  // every run
    double best = 0;
};

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

// The cost formula worked with the seed book's numbers, beside this machine's step times: a prompt
// of L tokens, T new tokens, width d. Step t forwards L + t positions, and each position goes
// through matrices of about d x d (d^2 multiply-adds each, times a constant per layer), so a step
// costs about (L + t) d^2 and the run sum_t (L + t) d^2 <= T (L + T) d^2: O(T (L + T) d^2).
// The times are this model's forward passes at those lengths (the fastest of `runs` each).
void print_worked_formula(const Gpt2& model, const std::vector<int>& ids, int runs) {
    const long L = 8, T = 20, d = 64;  // the seed's example
    const long d2 = d * d;
    const auto commas = [](long v) { return with_commas(static_cast<uint64_t>(v)); };
    std::printf("\nThe cost formula O(T (L + T) d^2), worked for L = %ld prompt tokens, T = %ld new tokens, width d = %ld:\n",
                L, T, d);
    std::printf("  (L + T) d^2     = %ld x %s = %s: a bound on one step (the ~115,000 quoted for this example)\n", L + T,
                commas(d2).c_str(), commas((L + T) * d2).c_str());
    std::printf("                    (the last step, t = %ld, forwards L + T - 1 = %ld positions: %s)\n", T - 1, L + T - 1,
                commas((L + T - 1) * d2).c_str());
    std::printf("  T (L + T) d^2   = %ld x %s = %s: the whole run's bound, what the O() counts\n", T,
                commas((L + T) * d2).c_str(), commas(T * (L + T) * d2).c_str());
    std::printf("  sum (L + t) d^2 = (T L + T(T-1)/2) d^2 = %ld x %s = %s: the run exactly, t = 0..%ld\n",
                T * L + T * (T - 1) / 2, commas(d2).c_str(), commas((T * L + T * (T - 1) / 2) * d2).c_str(), T - 1);
    std::vector<int> lengths;
    for (long t = 0; t < T; ++t) lengths.push_back(static_cast<int>(L + t));
    const std::vector<Timing> timings = time_contexts(model, ids, lengths, runs);
    std::printf("Those %ld steps on this model (width %d; the ratios do not depend on d), the fastest of %d passes each:\n", T,
                model.config().n_embd, runs);
    std::printf("%5s %10s %16s %14s %9s %14s  %s\n", "step", "positions", "(L + t) d^2", "formula/step 0", "ms",
                "time/step 0", "time");
    const double first = timings.front().best, max_ms = timings.back().best;
    for (size_t i = 0; i < timings.size(); ++i) {
        if (i % 2 != 0 && i + 1 != timings.size()) continue;
        const Timing& t = timings[i];
        std::printf("%5zu %10d %16s %13.2fx %9.3f %13.2fx  %s\n", i, t.context,
                    commas(static_cast<long>(t.context) * d2).c_str(), static_cast<double>(t.context) / L, t.best,
                    t.best / first, bar(t.best, max_ms, 30).c_str());
    }
    // A straight line through the measured points: time = fixed + per_position * positions.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = static_cast<double>(timings.size());
    for (const Timing& t : timings) {
        sx += t.context;
        sy += t.best;
        sxx += static_cast<double>(t.context) * t.context;
        sxy += t.context * t.best;
    }
    const double per_position = (n * sxy - sx * sy) / (n * sxx - sx * sx), fixed = (sy - per_position * sx) / n;
    std::printf("The formula says the last step costs %.2fx the first; measured, %.2fx. A straight line through the\n"
                "measured times is %.3f ms + %.1f us per position: the part that grows with the positions is the\n"
                "formula's, and the fixed part (reading every weight once per pass, whatever its length) is what\n"
                "the O() leaves out.\n",
                static_cast<double>(L + T - 1) / L, timings.back().best / first, fixed, 1000.0 * per_position);
}

// --csv FILE: every timed forward pass of the cost table, for the site's plot.
void write_cost_csv(const std::string& path, const std::vector<Timing>& timings) {
    CsvFile csv(path, "context_length,run,milliseconds");
    for (const Timing& t : timings)
        for (size_t r = 0; r < t.ms.size(); ++r) csv.out() << t.context << ',' << r << ',' << t.ms[r] << '\n';
    csv.close();
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"chapter-00", "The naive decode loop: forward, take the last logits, pick, append, stop.",
                     "The best way to"};
    info.defaults.max_new_tokens = 96;
    info.csv_columns = "context_length,run,milliseconds";
    const CommandLine opt = parse_command_line(argc, argv, info);
    return run_program([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir, opt.dtype);
        const Tokenizer tokenizer = Tokenizer::load(opt.model_dir);
        const ModelConfig& c = model.config();
        std::printf("model: %s\n  GPT-2, %d layers, %d heads, width %d, vocabulary %d, context %d tokens\n",
                    display_model_dir(opt.model_dir).c_str(), c.n_layer, c.n_head, c.n_embd, c.vocab_size, c.n_positions);

        const std::vector<int> prompt = tokenizer.encode(opt.prompt);
        std::printf("prompt: %zu tokens:", prompt.size());
        for (int id : prompt) std::printf(" %d=%s", id, visible_token(tokenizer.token_bytes(id)).c_str());
        std::printf("\n\n");

        // The loop needs a rule to pick a token; this chapter takes the most likely one
        // (chapter 01 looks at that rule closely, chapters 02-04 replace it).
        // [ch00:stream]
        std::vector<StepRecord> steps;
        Utf8Stream stream;
        std::cout << "--- continuation ---\n" << opt.prompt << std::flush;
        const StopRule stop{opt.config.max_new_tokens, c.eos_token_id};
        generate_naive(model, prompt, stop, argmax, [&](const StepRecord& s) {
            steps.push_back(s);
            std::cout << stream.push(tokenizer.token_bytes(s.token)) << std::flush;
        });
        std::cout << stream.flush() << "\n--- end (" << steps.size() << " new tokens) ---\n";
        // [/ch00:stream]

        if (opt.show_steps) {
            std::cout << "\n";
            print_steps(std::cout, steps, tokenizer);
        }
        print_step_times(steps);
        // The cost curve: one forward pass at growing context lengths, up to the model's limit.
        std::vector<int> lengths;
        lengths.push_back(1);
        for (int length = 16; length <= c.n_positions; length *= 2) lengths.push_back(length);
        std::vector<int> ids = prompt;
        for (const StepRecord& s : steps) ids.push_back(s.token);
        const std::vector<Timing> timings = time_contexts(model, ids, lengths, 7);
        print_cost(timings, static_cast<int>(prompt.size()), static_cast<int>(steps.size()));
        print_worked_formula(model, ids, 11);
        if (!opt.csv.empty()) {
            std::vector<int> every{1};  // the plot gets 1 and every 16th length
            for (int length = 16; length <= c.n_positions; length += 16) every.push_back(length);
            const std::vector<Timing> more = time_contexts(model, ids, every, 5);
            write_cost_csv(opt.csv, more);
            std::printf("(wrote %zu timed forward passes to %s)\n", more.size() * 5, opt.csv.c_str());
        }

        // Your turn: the same input through your exercises (exercises/00-naive-loop/).
        std::printf("\nYour exercises (./grade 00 grades them):\n");
        const xt::xtensor<float, 2> logits = model.forward(prompt);
        xt::xtensor<float, 1> yours_last;
        const ExerciseAttempt last = try_exercise([&] { yours_last = your_last_position_logits(logits); });
        print_exercise_status(course_exercise("your_last_position_logits"), last,
                              yours_last == last_position_logits(logits), "a different vector", "the last row");
        std::vector<int> yours;
        const std::vector<int> library = generate_naive(model, prompt, stop, argmax);
        const ExerciseAttempt loop = try_exercise([&] { yours = your_generate_naive(model, prompt, stop, argmax); });
        print_exercise_status(course_exercise("your_generate_naive"), loop, yours == library,
                              visible_token(tokenizer.decode(yours)), visible_token(tokenizer.decode(library)));
        return 0;
    });
}
