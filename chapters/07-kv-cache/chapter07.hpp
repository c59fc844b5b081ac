#pragma once
// Chapter 07, private to its program (chapters/07-kv-cache/): what its parts share. main.cpp
// calls them in order; parts 1-2 are in naive_vs_cached.cpp, 3-4 in memory.cpp, 5-6 in batches.cpp,
// 7 in serving.cpp, 8 in bytes_per_weight.cpp.
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/timing.hpp"
#include "decodebook/model/gpt2.hpp"

namespace chapter07 {

using Clock = std::chrono::steady_clock;
using Vec = xt::xtensor<float, 1>;

// The rows of --csv FILE (columns series,x,y): a series and one (x, y) point. Parts 1, 5 and 7 add them.
using CsvRows = decodebook::SeriesRows;

// One prompt timed in its two phases: prefill (time to first token), decode (time per output token).
struct Phases {
    size_t prompt_tokens = 0;
    double prefill_ms = 0;  // best of the repeats: time to first token
    double decode_ms = 0;   // median time per output token
    int decoded = 0;
};

// Decode rates of part 5 that part 6 sets against each other: a batch of 16, in tokens/s.
struct BatchRates {
    double matvec16 = 0;  // BatchKernels::Invariant: every row through the matvec
    double gemm16 = 0;    // BatchKernels::Gemm
};

// Part 1: the naive loop against the cached one on the prompt, step by step (the step times go to
// `csv`). Returns the positions the cached run's cache held (prompt and new tokens), for part 3.
size_t naive_against_cached(const decodebook::Session& session, const decodebook::CommandLine& opt, int threads,
                            CsvRows& csv);

// Part 2: time to first token against time per output token, for a short and a long prompt, and
// the flops and bytes behind each. Returns the short prompt's phases, for part 4.
Phases prefill_against_decode(const decodebook::Session& session);

// Part 3: how big the cache is, for this model and two larger ones; `part1_positions` from part 1.
void cache_sizes(const decodebook::ModelConfig& mc, size_t part1_positions);

// Part 4: this machine's read bandwidth and the lowest time per token it allows, against the
// decode part 2 measured for its short prompt (`short_p`).
void roofline(const decodebook::Gpt2& model, const Phases& short_p, int threads);

// Part 5: decode throughput against batch size, with the matvec and with GEMM (the rates go to `csv`).
BatchRates batches(const decodebook::Session& session, CsvRows& csv);

// Part 6: greedy decoding alone against in a batch: the logits differ, and a close step can flip.
void temperature_zero_in_batch(const decodebook::Session& session, const BatchRates& part5);

// Part 7: requests arriving over time on 4 slots, static against continuous batching (each request's
// arrival, admission, first token and finish go to `csv`).
void serving(const decodebook::Session& session, CsvRows& csv);

// Part 8: the model held in float32 and in float16 (`--dtype`): the same logits from an f16
// checkpoint, decode against each one's roofline, and what rounding an f32 model to f16 changes.
void bytes_per_weight(const decodebook::Session& session, const decodebook::CommandLine& opt, int threads);

}  // namespace chapter07
