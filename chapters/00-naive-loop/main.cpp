// Chapter 00 - The naive decode loop.
//
// A language model only ever answers one question: "given these tokens, how likely is each
// possible next token?". Text comes out of a loop around that question:
//   forward the whole sequence -> take the last position's logits -> pick -> append -> stop?
// This program runs that loop on the embedded model, streams the text as it grows, and times
// every step: each step re-reads the whole prefix, so the cost grows with its length.
//
// Library code this chapter introduces: Gpt2::forward (model.hpp), Tokenizer (tokenizer.hpp),
// last_position_logits and generate_naive (decode.hpp), Utf8Stream (utf8.hpp).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/cli.hpp"
#include "decodebook/csv.hpp"
#include "decodebook/decode.hpp"
#include "decodebook/error.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model.hpp"
#include "decodebook/terminal.hpp"
#include "decodebook/tokenizer.hpp"
#include "decodebook/utf8.hpp"

using namespace decodebook;

namespace {

// The cost table: a row every few steps, then how much the last steps cost against the first.
void print_cost_table(const std::vector<StepRecord>& steps) {
    if (steps.empty()) return;
    double max_ms = 0;
    for (const StepRecord& s : steps) max_ms = std::max(max_ms, s.milliseconds);
    std::printf("\nPer-step cost of the naive loop (every step re-runs the whole sequence):\n");
    std::printf("%5s %8s %9s  %s\n", "step", "context", "ms", "time");
    const size_t every = std::max<size_t>(1, steps.size() / 16);
    for (size_t i = 0; i < steps.size(); ++i) {
        if (i % every != 0 && i + 1 != steps.size()) continue;
        const StepRecord& s = steps[i];
        std::printf("%5d %8d %9.3f  %s\n", s.step, s.context_length, s.milliseconds, bar(s.milliseconds, max_ms, 40).c_str());
    }
    // Compare the average of the first and last quarter, which is steadier than single steps.
    const size_t q = std::max<size_t>(1, steps.size() / 4);
    double first = 0, last = 0, total = 0;
    for (size_t i = 0; i < q; ++i) first += steps[i].milliseconds / static_cast<double>(q);
    for (size_t i = steps.size() - q; i < steps.size(); ++i) last += steps[i].milliseconds / static_cast<double>(q);
    for (const StepRecord& s : steps) total += s.milliseconds;
    std::printf("\nfirst %zu steps: %.3f ms each (context ~%d tokens); last %zu steps: %.3f ms each (context ~%d)\n", q,
                first, steps[q / 2].context_length, q, last, steps[steps.size() - 1 - q / 2].context_length);
    std::printf("total %.1f ms for %zu tokens. Work per step grows with the prefix, so the whole loop is\n"
                "O(n^2) in the number of tokens; chapter 07's KV cache makes each step O(n).\n",
                total, steps.size());
}

// --csv FILE: one row per step, for plotting the cost (the course site draws it).
void write_cost_csv(const std::string& path, const std::vector<StepRecord>& steps) {
    CsvFile csv(path, "step,context_length,milliseconds,token");
    for (const StepRecord& s : steps) {
        csv.out() << s.step << ',' << s.context_length << ',' << s.milliseconds << ',' << s.token << '\n';
    }
    csv.close();
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"chapter-00", "The naive decode loop: forward, take the last logits, pick, append, stop.",
                     "The best way to"};
    info.defaults.max_new_tokens = 96;
    info.csv_columns = "step,context_length,milliseconds,token";
    const CommandLine opt = parse_command_line(argc, argv, info);
    return run_program([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir);
        const Tokenizer tokenizer = Tokenizer::load(opt.model_dir);
        const ModelConfig& c = model.config();
        std::printf("model: %s\n  GPT-2, %d layers, %d heads, width %d, vocabulary %d, context %d tokens\n",
                    opt.model_dir.c_str(), c.n_layer, c.n_head, c.n_embd, c.vocab_size, c.n_positions);

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
        print_cost_table(steps);
        if (!opt.csv.empty()) {
            write_cost_csv(opt.csv, steps);
            std::printf("(wrote %zu rows to %s)\n", steps.size(), opt.csv.c_str());
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
