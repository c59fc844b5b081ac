#pragma once
// Chapter 05, private to its program (chapters/05-beam-search/): what its parts share. main.cpp
// calls them in order: part 1 in greedy.cpp, 2 in toy.cpp, 3 in open_ended.cpp, 4 in
// length_penalty.cpp, 5 in engines.cpp, 6 through search.cpp (the memoized search parts 3, 4 and
// 6 share); length_penalty.cpp also writes --csv FILE, your_turn.cpp reports the exercises.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/course/cli.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace chapter05 {

using Vec = xt::xtensor<float, 1>;

// Beam search on the model with every log-probability row memoized (not chapter 07's KV cache):
// part 4 runs the same search four times (length_penalty changes which finished hypothesis wins,
// not which beams run), part 6 once more.
class MemoizedSearch {
public:
    MemoizedSearch(const decodebook::Gpt2& model, const decodebook::Tokenizer& tok, std::vector<int> prompt,
                   const decodebook::GenerationConfig& config);
    std::vector<decodebook::Hypothesis> run(const decodebook::GenerationConfig& config);

private:
    const decodebook::Tokenizer& tok_;
    std::vector<int> prompt_;
    std::vector<int> eos_;
    decodebook::NextLogProbs rows_of_;
    std::map<std::vector<int>, Vec> seen_;
};

// Each returned hypothesis on one line: its score, its sum of log-probabilities, its length and text.
void print_hypotheses(const std::vector<decodebook::Hypothesis>& hyps);

// `config` with one beam, one returned sequence and no sampling: greedy.
decodebook::GenerationConfig one_beam(const decodebook::GenerationConfig& config);

// The toy of part 2: tokens A, B, C and no EOS; two steps. The next log-probabilities of each beam,
// and a sequence of its ids as letters.
std::vector<Vec> toy_rows(const std::vector<decodebook::Beam>& beams);
std::string toy_text(const std::vector<int>& ids);

// Part 1: num_beams 1 gives greedy's ids.
void one_beam_is_greedy(const decodebook::Session& session, const decodebook::CommandLine& opt);

// Part 2: the toy traced by hand, with one beam and with two.
void toy_by_hand();

// Part 3: greedy, beam search and sampling on open-ended text, measured over four prompts.
void open_ended(const decodebook::Session& session, const decodebook::CommandLine& opt, MemoizedSearch& search);

// Part 4: the same search under length_penalty -1, 0, 1 and 2; returns each one's hypotheses.
using PenaltyRuns = std::vector<std::pair<float, std::vector<decodebook::Hypothesis>>>;
PenaltyRuns length_penalty_winners(const decodebook::GenerationConfig& config, MemoizedSearch& search);

// --csv FILE: the finished hypotheses of part 4, one row each.
void write_length_penalty_csv(const std::string& path, const std::string& columns, const PenaltyRuns& by_penalty);

// Part 5: Hugging Face's beam score against vLLM's on one prompt.
void hf_against_vllm(const decodebook::Session& session);

// Your turn: part 2's toy through your exercises (exercises/05-beam-search/).
void report_exercises();

}  // namespace chapter05
