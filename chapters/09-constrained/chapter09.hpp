#pragma once
// Chapter 09, private to its program (chapters/09-constrained/): what its parts share. main.cpp
// calls them in order: parts 1-2 in automaton.cpp, 3-4 in samples.cpp, 5 in naive.cpp;
// your_turn.cpp reports the exercises.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "decodebook/course/csv.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/timing.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/generate.hpp"

namespace chapter09 {

using Clock = std::chrono::steady_clock;

// Part 1's pattern: a space, then a number without a leading zero (GPT-2's tokens carry their
// leading space, so " 42" is one token).
inline constexpr const char* kNumberRegex = " (0|[1-9][0-9]*)";
// Part 3's regex: a date as English prose writes it.
inline constexpr const char* kDateRegex =
    " (January|February|March|April|May|June|July|August|September|October|November|December) "
    "[1-9][0-9]?, (1[5-9]|20)[0-9]{2}";
// Parts 2-5's JSON schema: a person, two required properties.
inline constexpr const char* kPersonSchema =
    R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},)"
    R"( "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]})";

// The regex of kPersonSchema with the library's bounded whitespace (at most one character between
// two JSON tokens), or with the unbounded `[ \t\n\r]*` llama.cpp's converter wrote before PR #7866.
std::string person_regex(bool unbounded_whitespace);

// A constraint built from a regex for the session's vocabulary and EOS ids.
std::shared_ptr<decodebook::Constraint> constraint_for(const decodebook::Session& s, const std::string& name,
                                                       const std::string& regex);

// The bytes of the ids, special tokens (the EOS) left out.
std::string text_of(const decodebook::Tokenizer& tok, const std::vector<int>& ids);

// One row of --csv FILE (columns series,x,y,label).
using CsvRow = decodebook::LabelledRow;
using CsvRows = decodebook::LabelledRows;

// Part 1: the regex compiled stage by stage, its DFA printed as a table (and written to the CSV).
void draw_dfa(const std::string& pattern, CsvRows& csv);

// Part 2: the allowed set on Outlines' toy vocabulary, then on the model for a greedy run under
// the JSON schema (its tokens are returned for part 5).
std::vector<int> allowed_step_by_step(const decodebook::Session& s, CsvRows& csv);

// Part 3: N sampled outputs with and without each constraint: valid rate and the model's own
// log-probability per token (the distortion), and the first few as text, constrained beside free;
// the command line's constraint, if any, is one more row.
void valid_and_distortion(const decodebook::Session& s, int n, CsvRows& csv);

// Part 4: the JSON schema with bounded against unbounded whitespace, sampled hot.
void whitespace_runaway(const decodebook::Session& s, int n, CsvRows& csv);

// Part 5: the naive mask (PCRE2 asked about text + token, for every token) against the DFA:
// every token walked (09.2), the trie, and the cached set, timed per step of part 2's run.
void naive_against_index(const decodebook::Session& s, const std::vector<int>& run);

// Your turn: the chapter's examples through your exercises (exercises/09-constrained/).
void report_exercises(const decodebook::Session& s);

}  // namespace chapter09
