#pragma once
// Chapter 04, private to its program (chapters/04-penalties/): what its parts share. main.cpp
// calls them in order: part 1 in runs.cpp, 2-3 in last_step.cpp, 4 in runs.cpp; your_turn.cpp
// reports the exercises.
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/cli.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace chapter04 {

using Vec = xt::xtensor<float, 1>;

// Part 1: the same greedy run with each penalty and scope; returns the run with no penalty.
std::vector<int> each_penalty(const decodebook::Session& session);

// Part 2: the sign trap on the logits `z` after `context` (the prompt and part 1's looping run):
// the seen token with a negative logit that a naive z / theta lifts past the most other tokens.
void sign_trap(const Vec& z, const std::vector<int>& context, const decodebook::Tokenizer& tok);

// Part 3: the seen token the model likes most next, under a growing repetition penalty.
void penalty_strength(const Vec& z, const std::vector<int>& context, const decodebook::Tokenizer& tok);

// Part 4: a sampled run with your settings, penalty included.
void sampling_with_penalty(const decodebook::Session& session, const decodebook::CommandLine& opt);

// Your turn: part 2's step through your exercises (exercises/04-penalties/); `plain` is part 1's run.
void report_exercises(const Vec& z, const std::vector<int>& context, const std::vector<int>& plain);

}  // namespace chapter04
