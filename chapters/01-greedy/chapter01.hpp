#pragma once
// Chapter 01, private to its program (chapters/01-greedy/): what its parts share. main.cpp calls
// them in order: part 1 in argmax.cpp, 2 in long_run.cpp, 3 in ending.cpp, or instead, with
// --reference FILE, the comparison in reference.cpp; your_turn.cpp reports the exercises.
#include <string>
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace chapter01 {

// Run greedy decoding with the general loop (chapter 02) and `greedy` as its sampler, streaming
// the text; returns the new tokens and why they ended.
decodebook::Generation run_greedy(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const std::string& prompt,
                                  int max_new_tokens);

// Part 1: the five most likely next tokens after `prompt`, to show what argmax chooses from.
void show_first_choice(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const std::string& prompt);

// Part 2: a long greedy run after --prompt, a second run to show it is deterministic, and the
// repetition loop it falls into; returns the run's new tokens.
std::vector<int> long_greedy_run(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok,
                                 const decodebook::CommandLine& opt);

// Part 3: a fortune that ends with <|endoftext|>, which stays in the ids (skip_special_tokens
// leaves it out of the text only).
void stopping_at_eos(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok);

// --reference FILE: every golden case greedy here beside the independent reference, and the case
// whose prompt is `prompt` token by token.
void compare_with_reference(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const std::string& path,
                            const std::string& prompt);

// Your turn: the same inputs through your exercises (exercises/01-greedy/); `first` is part 2's run.
void report_exercises(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const std::string& prompt,
                      const decodebook::StopRule& stop, const std::vector<int>& first);

}  // namespace chapter01
