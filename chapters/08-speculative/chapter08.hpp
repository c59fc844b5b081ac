#pragma once
// Chapter 08, private to its program (chapters/08-speculative/): what its parts share. main.cpp
// calls them in order: part 1 in round.cpp, 2-3 in speedup.cpp, 4-5 in lookup.cpp; measure.cpp
// holds the measurements they share, your_turn.cpp reports the exercises.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/timing.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/speculative.hpp"

namespace chapter08 {

using Clock = std::chrono::steady_clock;

// What every part works on: chapter 02's session (the target, its tokenizer, the prompt, the
// config) and the draft model.
struct Speculation : decodebook::Session {
    decodebook::Gpt2 draft;
};

// The rows of --csv FILE (columns series,x,y): a series and one (x, y) point.
using CsvRows = decodebook::SeriesRows;

// A timed run: its output, what speculation did (plain runs: nothing), the fastest of its repeats.
struct Timed {
    decodebook::Generation g;
    decodebook::SpeculativeStats stats;
    double ms = 0;
    double tokens_per_second() const { return ms > 0 ? 1000.0 * static_cast<double>(g.ids.size()) / ms : 0.0; }
};

// The fastest of `reps` runs of plain cached decoding / of speculative decoding with the drafter
// the config asks for (the session's draft model, or prompt lookup). A fixed seed: the same output each time.
Timed plain_run(const Speculation& s, const std::vector<int>& prompt, const decodebook::GenerationConfig& config,
                int reps);
Timed speculative_run(const Speculation& s, const std::vector<int>& prompt,
                      const decodebook::GenerationConfig& config, int reps);

// Median milliseconds of one cached step of `model` (a one-token decode call and the chain's
// distribution and draw); one verification call of k + 1 tokens (k + 1 distributions, one draw)
// over one step, both measured interleaved.
double step_ms(const decodebook::Gpt2& model, const std::vector<int>& prompt, const decodebook::GenerationConfig& config,
               int steps);
double verify_ratio(const decodebook::Gpt2& model, const std::vector<int>& prompt,
                    const decodebook::GenerationConfig& config, int k, int reps);

// The acceptance a run should see, from a text the target wrote (alone, or speculating: the output
// follows the target's law): the mean over its positions of sum min(p, q) (Leviathan's rule) and of
// sum p q (sample-and-compare). Acceptance is alpha: drafts kept over drafts looked at.
struct Acceptance {
    double leviathan = 0;
    double sample_and_compare = 0;
};
Acceptance expected_acceptance(const Speculation& s, const decodebook::GenerationConfig& config,
                               const std::vector<int>& generated);

// What part 2 measures once and part 4 reuses: a target step, a draft step, and verification
// calls for k = 1..kMaxK, each as a multiple of one target step.
inline constexpr int kMaxK = 8;
struct Costs {
    double target_ms = 0;
    double draft_ms = 0;               // 0 without a draft model
    double c = 0;                      // draft_ms / target_ms
    std::vector<double> verify{0.0};  // verify[k]: one call verifying k drafts / one target step
};

// Part 1: rounds of greedy speculation with the draft model, step by step, then the whole run.
void one_round_at_a_time(const Speculation& session, int k, int rounds);

// Part 2: the costs, Leviathan's prediction before running, and the measured speed-up, k = 1..8.
Costs predicted_against_measured(const Speculation& session, CsvRows& csv);

// Part 3: acceptance against temperature, for Leviathan's rule and for sample-and-compare, each
// seen and expected over the same few seeded runs.
void acceptance_against_temperature(const Speculation& session, CsvRows& csv);

// Part 4: prompt lookup on a looping greedy run and on a sampled one.
/// The table's rows are HF's and vLLM's rules; a last row, "yours", drafts by `yours`'s
/// prompt_lookup_num_tokens, max_matching_ngram_size and prompt_lookup_min (the command line's)
/// when they differ from the first row's.
void prompt_lookup(const Speculation& session, const Costs& costs, const decodebook::GenerationConfig& yours);

// Part 5: Hugging Face's target-distribution case, 10,000 seeded rounds against the exact law.
void target_distribution_case();

// Your turn: the chapter's examples through your exercises (exercises/08-speculative/).
void report_exercises();

}  // namespace chapter08
