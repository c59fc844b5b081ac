#pragma once
// Chapter 02, private to its program (chapters/02-temperature/): what its parts share. main.cpp
// calls them in order: parts 1-2 in distribution.cpp, 3 and the first steps of your settings in
// generations.cpp, 4 in gumbel.cpp, 5 in numerics.cpp; distribution.cpp also writes --csv FILE,
// your_turn.cpp reports the exercises.
#include <cstdint>
#include <string>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/cli.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace chapter02 {

using Vec = xt::xtensor<float, 1>;

// The logits divided by the temperature `t` (apply_temperature on a copy).
Vec with_temperature(const Vec& logits, float t);

// Part 1: the next-token distribution at T = 0.5, 1 and 1.5, as bars on one scale.
void distribution_at_temperatures(const Vec& logits, const decodebook::Tokenizer& tok);

// Part 2: the entropy of the distribution against the temperature.
void entropy_against_temperature(const Vec& logits);

// --csv FILE: the 20 most likely next tokens at several temperatures, for the course site's plot.
void write_temperature_csv(const std::string& path, const Vec& logits, const decodebook::Tokenizer& tok);

// Part 3: seeded generations at T = 0, 0.5, 1 and 1.5.
void seeded_generations(const decodebook::Session& session);

// The first steps of a run with the settings given, each with its coin and where it landed.
void first_steps_with_coins(const decodebook::Session& session, const decodebook::CommandLine& opt);

// Part 4: the inverse CDF and the Gumbel-max trick, 5000 draws each from the same distribution.
void two_ways_to_draw(const Vec& logits, const decodebook::Tokenizer& tok, uint64_t seed);

// Part 5: when float32 is not enough: the end of a CDF walk in float32 and in double, at growing
// vocabularies, then a coin at a boundary of the prompt's own distribution.
void print_numerics(const Vec& logits, const decodebook::Tokenizer& tok, uint64_t seed);

// Your turn: the first step's logits through your exercises (exercises/02-temperature/).
void report_exercises(const Vec& logits);

}  // namespace chapter02
