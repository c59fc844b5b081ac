#pragma once
// Chapter 11, private to its program (chapters/11-logprobs/): what its parts share. main.cpp calls
// them in order: part 1 in four_modes.cpp, 2 in surprise.cpp, 3 in perplexity.cpp, 4 in
// choices.cpp; your_turn.cpp reports the exercises.
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"

namespace chapter11 {

using Vec = xt::xtensor<float, 1>;

// One row of --csv FILE (columns series,x,y,label).
using CsvRows = decodebook::LabelledRows;

// The held-out fortunes the chapter scores (models/tasks/held_out_fortunes.json): the model never
// trained on them.
std::vector<std::string> held_out_fortunes();

// The fortunes as the model was trained on them: <|endoftext|> before and after each, every
// fortune encoded on its own (make_goldens.py's held_out_ids).
std::vector<int> held_out_ids(const decodebook::Session& s, const std::vector<std::string>& fortunes);

// Part 1: the token the session's config draws after the prompt, in vLLM's four logprobs modes
// side by side, with the alternatives beside it (the chain's stages first with --show-chain).
void four_modes(const decodebook::Session& s, bool show_chain);

// Part 1, then: a run of max_new_tokens with each token's raw and processed logprob side by side
// (the same seed twice: the same tokens).
void a_run_in_two_modes(const decodebook::Session& s);

// Part 2: a held-out fortune token by token: each token's probability given the text before it
// (shaded in a terminal), the surprise it carried and the entropy the model had there (every
// token to the CSV, which the site renders as shaded HTML).
void surprise_along_a_text(const decodebook::Session& s, const std::string& fortune, CsvRows& csv);

// Part 3: the perplexity of the held-out fortunes by Hugging Face's sliding window, the stride
// equal to the context and half of it, with the forwards each costs.
void perplexity_by_strides(const decodebook::Session& s, const std::vector<std::string>& fortunes);

// Part 4: the author-choice task (models/tasks/author_choice.json): each fortune's author among
// four, picked by the highest log-likelihood (acc) and per character (acc_norm), over the first
// `items` items, against chance and against an evaluation that got no prompt logprobs.
void author_choice(const decodebook::Session& s, int items);

// Your turn: the chapter's examples through your exercises (exercises/11-logprobs/).
void report_exercises(const decodebook::Session& s);

}  // namespace chapter11
