#pragma once
// Chapter 06, private to its program (chapters/06-stop-sequences/): what its parts share. main.cpp
// calls them in order: part 1 in eos.cpp, 2-4 in streams.cpp, 5-6 in fortune.cpp, which also
// writes --csv FILE; your_turn.cpp reports the exercises.
#include <string>
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace chapter06 {

inline constexpr const char* kFortunePrompt = "A computer is";
inline constexpr const char* kAttribution = "\n\t\t--";

// Greedy decoding of `max_new_tokens`: do_sample false, argmax after the processors (here: min_new_tokens).
decodebook::GenerationConfig greedy_config(int max_new_tokens);

// Part 1's runs after kFortunePrompt: greedy with the model's EOS, and with min_new_tokens past it.
struct EosRuns {
    decodebook::Generation plain;
    decodebook::Generation held_open;  // the same, EOS masked until min_new_tokens tokens exist
    int min_new_tokens = 0;
};

// One row of part 5: a token, what the stream showed and what it held back after it.
struct HoldRow {
    int step;
    std::string token, shown, held;
};

// Part 5's run: the fortune cut before its attribution, and what the stream held after each token.
struct FortuneCut {
    decodebook::Generation run;
    std::vector<HoldRow> rows;
};

// Part 1: EOS is a list of ids, it stays in the output, and min_new_tokens masks it for a while.
EosRuns eos_rules(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok);

// Part 2: a stop string that begins inside one token and ends inside the next.
void stop_across_tokens();

// Part 3: several stops: which one wins under each stop_match rule, with and without
// include_stop_str_in_output.
void several_stops();

// Part 4: streaming holds back only what may still become a stop.
void streaming_holdback();

// Part 5: a fortune cut before its attribution, step by step; `plain` is part 1's run without the stop.
FortuneCut fortune_cut(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const decodebook::Generation& plain);

// Part 6: a run with your settings, streamed through the stop strings.
void your_settings_run(const decodebook::Session& session, const decodebook::CommandLine& opt);

// --csv FILE: part 5's steps (held = characters held back after the token).
void write_hold_csv(const std::string& path, const std::vector<HoldRow>& rows);

// Your turn: part 5's tokens and part 1's min_new_tokens run through your exercises (exercises/06-stop-sequences/).
void report_exercises(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const EosRuns& part1,
                      const decodebook::Generation& cut);

}  // namespace chapter06
