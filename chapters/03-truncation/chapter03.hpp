#pragma once
// Chapter 03, private to its program (chapters/03-truncation/): what its parts share. main.cpp
// calls them in order: parts 1-2 in steps.cpp, 3 and 5 in top_p.cpp, 4 and 6 in chains.cpp;
// shared.cpp holds the helpers they share, steps.cpp also writes --csv FILE, your_turn.cpp
// reports the exercises.
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/cli.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace chapter03 {

using Vec = xt::xtensor<float, 1>;

inline constexpr int kScanned = 32;  // part 2 looks for its peaked and flat step among this many greedy steps

// Print the candidates that survive `z` (up to 8), renormalised, and how many there are.
void print_survivors(const char* label, const Vec& z, const decodebook::Tokenizer& tok);

// The logits after `config`'s chain of processors.
Vec filtered(const Vec& logits, const decodebook::GenerationConfig& config);

// A sampling config with one knob set, e.g. only("top_k", "10").
decodebook::GenerationConfig only(const std::string& knob, const std::string& value);
decodebook::GenerationConfig only_k(int k);
decodebook::GenerationConfig only_p(float v);
decodebook::GenerationConfig only_min_p(float v);

// How many tokens top-p keeps under each engine's arithmetic.
int kept_by(const Vec& probs, double p, decodebook::TopPRule rule);

// Part 5's case, Hugging Face's own test: softmax(log [0.3, 0.1, 0.1, 0.5]) in float32.
Vec hf_top_p_case();

// Greedy steps after the prompt: the most and the least confident ones, to contrast. Confidence is
// the top token's probability; entropy is printed beside it.
struct Step {
    std::vector<int> context;
    double top1 = 0;     // probability of the most likely token
    double entropy = 0;  // nats
};

// Part 1: top-k, top-p and min-p on the step after the prompt.
void three_truncations(const Vec& logits, const decodebook::Tokenizer& tok);

// Part 2: the most and the least confident of `steps` greedy steps after `prompt`.
std::pair<Step, Step> peaked_and_flat(const decodebook::Gpt2& model, const std::vector<int>& prompt, int steps);

// Part 2: what each rule keeps on the peaked and on the flat step.
void print_peaked_and_flat(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, const Step& peaked,
                           const Step& flat);

// --csv FILE: the 40 most likely tokens of part 2's steps, and which rules keep each.
void write_truncation_csv(const std::string& path, const decodebook::Gpt2& model, const decodebook::Tokenizer& tok,
                          const Step& peaked, const Step& flat);

// Part 3: the classic top-p exercise worked.
void classic_exercise();

// Part 4: the same knobs in Hugging Face's, llama.cpp's and vLLM's order.
void temperature_placement(const Vec& logits, const decodebook::Tokenizer& tok);

// Part 5: where the mass lands on p: each engine's sum, one token apart.
void mass_at_the_boundary();

// Part 6: a run with your settings, streamed.
void your_settings_run(const decodebook::Session& session, const decodebook::CommandLine& opt);

// Your turn: the first step and part 5's case through your exercises (exercises/03-truncation/).
void report_exercises(const Vec& logits);

}  // namespace chapter03
