#pragma once
// Chapter 00, private to its program (chapters/00-naive-loop/): what its parts share. main.cpp
// calls them in order: the model, the prompt and the streamed run in run.cpp, the run's step
// times and the cost curve in cost.cpp, the worked cost formula in formula.cpp; your_turn.cpp
// reports the exercises.
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace chapter00 {

// One naive step at a given context length: the fastest of `runs` forward passes (other work on
// the machine only ever adds time, so the fastest run is the least disturbed one).
struct Timing {
    int context = 0;
    std::vector<double> ms;  // every run
    double best = 0;
};

// One Timing per length in `lengths`: a context of that many tokens cut from `ids`, `runs` passes each.
std::vector<Timing> time_contexts(const decodebook::Gpt2& model, const std::vector<int>& ids, const std::vector<int>& lengths,
                                  int runs);

// The model's shape, then the prompt token by token; returns the prompt's ids.
std::vector<int> show_model_and_prompt(const decodebook::Gpt2& model, const decodebook::Tokenizer& tokenizer,
                                       const decodebook::CommandLine& opt);

// The naive loop with argmax, streaming the text as it grows; returns every step it took.
std::vector<decodebook::StepRecord> stream_continuation(const decodebook::Gpt2& model, const decodebook::Tokenizer& tokenizer,
                                                        const std::vector<int>& prompt, const decodebook::CommandLine& opt);

// The steps of the run, timed (single steps of a millisecond or so are noisy on a busy machine).
void print_step_times(const std::vector<decodebook::StepRecord>& steps);

// One forward pass at growing context lengths, up to the model's limit, and what that makes the
// whole loop cost; then the worked formula, and --csv's passes. `ids`: the prompt and the run.
void cost_curve(const decodebook::Gpt2& model, const std::vector<int>& ids, int prompt_tokens, int new_tokens,
                const decodebook::CommandLine& opt);

// The cost formula O(T (L + T) d^2) worked with the seed book's numbers, beside this machine's step times.
void print_worked_formula(const decodebook::Gpt2& model, const std::vector<int>& ids, int runs);

// Your turn: the same input through your exercises (exercises/00-naive-loop/).
void report_exercises(const decodebook::Gpt2& model, const decodebook::Tokenizer& tokenizer, const std::vector<int>& prompt,
                      const decodebook::StopRule& stop);

}  // namespace chapter00
