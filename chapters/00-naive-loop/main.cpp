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
#include <cstdio>
#include <optional>
#include <iostream>
#include <vector>

#include "chapter00.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;
using namespace chapter00;

int main(int argc, char** argv) {
    ProgramInfo info{"chapter-00", "The naive decode loop: forward, take the last logits, pick, append, stop.",
                     "The best way to"};
    info.defaults.max_new_tokens = 96;
    info.steers = {{"the streamed run and its timed steps", {"max-new-tokens"}}};
    info.csv_columns = "context_length,run,milliseconds";
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir, opt.dtype);
        const Tokenizer tokenizer = Tokenizer::load(opt.model_dir);
        const std::vector<int> prompt = show_model_and_prompt(model, tokenizer, opt);
        const std::vector<StepRecord> steps = stream_continuation(model, tokenizer, prompt, opt);
        if (opt.show_steps) {
            std::cout << "\n";
            print_steps(std::cout, steps, tokenizer);
        }
        print_step_times(steps);

        std::vector<int> ids = prompt;  // the text so far: what the timed contexts are cut from
        for (const StepRecord& s : steps) ids.push_back(s.token);
        cost_curve(model, ids, static_cast<int>(prompt.size()), static_cast<int>(steps.size()), opt);

        std::printf("\nYour exercises (./grade 00 grades them):\n");
        report_exercises(model, tokenizer, prompt, {opt.config.max_new_tokens, model.config().eos_token_id});
        return 0;
    });
}
