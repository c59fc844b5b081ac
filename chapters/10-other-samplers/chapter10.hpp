#pragma once
// Chapter 10, private to its program (chapters/10-other-samplers/): what its parts share. main.cpp
// calls them in order: part 1 in truncations.cpp, 2 in dry.cpp, 3 in mirostat.cpp, 4 in
// biases.cpp; your_turn.cpp reports the exercises.
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/csv.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/decoding/generate.hpp"

namespace chapter10 {

using Vec = xt::xtensor<float, 1>;

// Part 1 scans this many greedy steps after the prompt, as chapter 03 does (with chapter 03's
// prompt, the default, the peaked and the flat step are the ones its page shows).
inline constexpr int kScanned = 32;
// Part 2's prompt and length: chapter 01's long greedy run, which falls into a loop.
inline constexpr const char* kLoopPrompt = "The best way to";
inline constexpr int kLoopTokens = 128;

// One row of --csv FILE (columns series,x,y,label).
using CsvRow = decodebook::LabelledRow;
using CsvRows = decodebook::LabelledRows;

// The logits after `context` (V).
Vec next_logits(const decodebook::Session& s, const std::vector<int>& context);

// The contexts of the most and the least confident of the first greedy steps (chapter 03's peaked
// and flat steps): part 1 shows the truncations there, part 3 dynamic temperature.
std::pair<std::vector<int>, std::vector<int>> peaked_and_flat_contexts(const decodebook::Session& s);

// A plain greedy run of `max_new_tokens` after `prompt` (on the cached loop).
decodebook::Generation greedy_run(const decodebook::Session& s, const std::vector<int>& prompt, int max_new_tokens);

// Part 1: what typical-p, epsilon, eta, top-n-sigma and XTC keep on chapter 03's peaked and flat
// steps, beside top-p and min-p (a table of kept tokens and mass; every row also to the CSV).
void truncations_side_by_side(const decodebook::Session& s, CsvRows& csv);

// Part 2: DRY against the repetition penalty on chapter 01's looping greedy run: the penalties
// each applies to the same step, then both runs.
void dry_against_repetition(const decodebook::Session& s);

// Part 3: mirostat 2.0's mu over a sampled run, step by step, holding the surprise near tau
// (every step to the CSV), at your tau and at 3; mirostat 1 at your tau; each the same tokens as
// make_sampler with --mirostat 2 or 1; then dynamic temperature on the prompt's, the peaked and
// the flat step.
void mirostat_run(const decodebook::Session& s, CsvRows& csv);

// Part 4: logit bias, bad words and suppressed tokens on one short greedy run.
void biases_demo(const decodebook::Session& s);

// Your turn: the chapter's examples through your exercises (exercises/10-other-samplers/).
void report_exercises(const decodebook::Session& s);

}  // namespace chapter10
