#pragma once
// Chapter 12, private to its program (chapters/12-paged-cache/): what its parts share. main.cpp
// calls them in order: parts 1 and 2 in tables.cpp, 3 and 4 in shared_prompt.cpp, 5 and 6 in
// pressure.cpp; your_turn.cpp reports the exercises.
#include <chrono>
#include <string>
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/decoding/paged_serving.hpp"
#include "decodebook/decoding/serving.hpp"

namespace chapter12 {

using Clock = std::chrono::steady_clock;

// The shared system prompt every request of parts 1, 3, 4 and 6 starts with, and the questions
// that follow it (fortunes of the "Q: ... A: ..." kind, the embedded model's domain): the
// command line's prompt, then these two.
extern const std::string kPreamble;
extern const std::vector<std::string> kMoreQuestions;
using Questions = std::vector<std::string>;

// "7 8 9 4 3 2": block ids as the chapter prints them.
std::string ids_text(const std::vector<int>& ids);

// The nearest-rank percentile p (0..1) of `values`: the smallest with at least p of them at or below it.
double percentile(std::vector<double> values, double p);

// One clock for the chapter's deterministic parts: a model call costs 4 units plus 1 per token
// it computes (ServeClock::computed tells it), so a long prefill costs what its tokens cost.
struct CostClock {
    double t = 0;
    size_t pending = 0;
    decodebook::ServeClock clock();
};

// Parts 3, 4 and 6's workload: each question 4 times after the preamble, sample k seeded 42 + k,
// all arriving at once, with no EOS (every request runs max_new_tokens, so the runs compare alike).
std::vector<decodebook::ServeRequest> workload(const decodebook::Session& s, const Questions& questions);

// Part 1: three prompts' block tables on a small pool, a shared prefix and a forked sample.
void block_tables(const decodebook::Session& s, const Questions& questions);

// Part 2: vLLM's worked example of prefix caching (docs/design/prefix_caching.md), step by step.
void vllm_example();

// Part 3: the shared-prompt workload served on chapter 07's rows, then on the pool cold, with
// prefix caching, and as n samples of each prompt; part 4: a hot cache's rerun against the cold
// run, on the invariant kernels and on the fast ones.
void shared_prompt(const decodebook::Session& s, const Questions& questions, int block_size);
void hot_against_cold(const decodebook::Session& s, const Questions& questions, int block_size);

// Part 5: chunked prefill's trade, a long prompt among running requests; part 6: preemption as
// the pool shrinks.
// --csv: part 5's token times on the cost clock, series budget_B_request_R (B off, 16 or 64; R 3
// is the long prompt), x the time, y the token's index.
void chunked_prefill(const decodebook::Session& s, const Questions& questions, decodebook::SeriesRows& csv);
void preemption(const decodebook::Session& s, const Questions& questions);

// Your exercises on the chapter's own examples: 12.1 on part 1's prompts, 12.2 on part 2's time 5.
void report_exercises(const decodebook::Session& s, const Questions& questions);

}  // namespace chapter12
