#pragma once
/// @file decoding/beam_search.hpp
/// @brief Beam search (chapter 05): its own loop beside generate(), with Hugging Face's
/// semantics by default and vLLM's variant as an option.
///
/// Each step takes the log-probabilities of every running beam (log_softmax first, then the
/// processors of the config on log-probabilities), adds each beam's running sum, keeps the best
/// max(2, 1 + n_eos) * num_beams candidates so EOS cannot starve the beams, finishes the EOS
/// candidates ranked among the first num_beams and continues the best num_beams others. The
/// model is reached through one seam (NextLogProbs), so the loop runs on toy tables too.
#include <functional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/sampling/logprobs.hpp"  // log_softmax (chapter 05)

namespace decodebook {

class Gpt2;
class Tokenizer;

/// A running beam: the ids generated so far and the sum of their log-probabilities.
/// Introduced in chapter 05.
struct Beam {
    std::vector<int> ids;      ///< the new ids only (no prompt)
    double sum_logprobs = 0;   ///< sum of the (processed) log-probabilities of `ids`
};

/// What one beam step returns. Introduced in chapter 05.
struct BeamStep {
    std::vector<Beam> running;   ///< the beams that go on, best first (num_beams of them)
    std::vector<Beam> finished;  ///< candidates finished at this step (EOS, or every top one at the last step), best first
};

/// One beam step of Hugging Face's beam search, on given log-probability rows (one per beam):
/// candidate (b, t) has the sum `beams[b].sum_logprobs + logprobs[b](t)`; the best
/// max(2, 1 + eos_ids.size()) * num_beams candidates are ranked (sum descending, then beam,
/// then token ascending); walking them in rank order, an EOS candidate ranked below num_beams
/// finishes (a lower one is dropped), any other candidate continues until num_beams run. With
/// `last_step` every candidate ranked below num_beams finishes instead (max_new_tokens reached).
/// Introduced in chapter 05.
/// @throws Error when the rows and the beams do not match.
BeamStep beam_step(const std::vector<Beam>& beams, const std::vector<xt::xtensor<float, 1>>& logprobs,
                   const std::vector<int>& eos_ids, int num_beams, bool last_step);

/// The score of a finished hypothesis: `sum_logprobs / length ^ length_penalty`, where length
/// is the generated length with its EOS (HF: the prompt excluded), or with `BeamScoring::Vllm`
/// the prompt plus the generated length without a final EOS. Introduced in chapter 05.
double beam_score(double sum_logprobs, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                  BeamScoring scoring = BeamScoring::HuggingFace);

/// Whether Hugging Face's beam search stops after a step: never while fewer than num_beams
/// hypotheses are finished; with `early_stopping` true as soon as they are; otherwise when the
/// best running beam's sum, divided by `generated_len ^ length_penalty` (with "never" and a
/// positive length_penalty by `max_new_tokens ^ length_penalty`, the best it could ever reach),
/// cannot beat the worst finished score. `finished_count` hypotheses are finished (at most
/// num_beams are kept), the lowest score among them is `worst_finished_score`, the best beam that
/// goes on has the sum `best_running_sum`, and the running beams hold `generated_len` new tokens.
/// Introduced in chapter 05.
bool beam_search_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                      int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping);

/// A finished beam search result. Introduced in chapter 05.
struct Hypothesis {
    std::vector<int> ids;          ///< the new ids (an EOS is kept)
    std::string text;              ///< their text (empty when the search ran without a tokenizer)
    double score = 0;              ///< the length-normalised score it was ranked by
    double sum_logprobs = 0;       ///< the sum of its log-probabilities
    FinishReason finish_reason = FinishReason::Length;  ///< eos, or length (max_new_tokens)
};

/// The log-probability rows of the beams at one step: one row (V) per beam, already processed.
/// The seam between the loop and the model. Introduced in chapter 05.
using NextLogProbs = std::function<std::vector<xt::xtensor<float, 1>>(const std::vector<Beam>& beams, int step)>;

/// What the loop did, for the chapter's tree and tests. Introduced in chapter 05.
struct BeamTrace {
    std::vector<std::vector<Beam>> running;   ///< the running beams after each step
    std::vector<std::vector<Beam>> finished;  ///< the candidates finished at each step
    int steps = 0;                            ///< steps run
};

/// A beam step: beam_step, or an exercise's. Introduced in chapter 05.
using BeamStepFunction = std::function<BeamStep(const std::vector<Beam>& beams,
                                                const std::vector<xt::xtensor<float, 1>>& logprobs,
                                                const std::vector<int>& eos_ids, int num_beams, bool last_step)>;

/// The model as a NextLogProbs: one forward per distinct beam, log_softmax of the last position,
/// then the caller's processors `first` (a constraint's mask) and the config's (penalties,
/// min_new_tokens) on log-probabilities, with a DecodeContext per beam. Introduced in chapter 05.
/// @throws Error on a bad config.
NextLogProbs model_log_probs(const Gpt2& model, const std::vector<int>& prompt, const GenerationConfig& config,
                             const std::vector<int>& eos_ids, std::vector<Processor> first = {});

/// Beam search over a log-probability source: `config`'s num_beams, length_penalty,
/// early_stopping, num_return_sequences, beam_scoring and max_new_tokens; `eos_ids` end a
/// hypothesis; `prompt_len` only enters vLLM's score. Beams 1..n-1 start at -1e9, so step 1
/// does not duplicate beam 0. At max_new_tokens the unfinished beams are finalised as HF does.
/// Returns num_return_sequences hypotheses, best first (text empty). `step` is HF's step
/// (beam_step unless an exercise's is tried; vLLM's variant has its own). Introduced in chapter 05.
/// @throws Error on a bad config.
std::vector<Hypothesis> beam_search(const NextLogProbs& next, const std::vector<int>& eos_ids, int prompt_len,
                                    const GenerationConfig& config, BeamTrace* trace = nullptr,
                                    const BeamStepFunction& step = beam_step);

/// Beam search on the model: one forward per beam and step (no KV cache yet), log_softmax of
/// the last position, then the config's processors (penalties, min_new_tokens) on
/// log-probabilities. The request is checked as in generate(). Introduced in chapter 05.
/// @throws Error on a bad request or config.
std::vector<Hypothesis> beam_search(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                                    const GenerationConfig& config, BeamTrace* trace = nullptr);

/// Fill in each hypothesis's text from its ids, through a PlainTextStream as the general loop
/// streams text (a split UTF-8 character is completed or flushed at the end). Both beam searches
/// finish with it, passing the config's `skip_special_tokens` (special tokens add no text; the ids
/// keep them). Introduced in chapter 05.
void fill_texts(std::vector<Hypothesis>& hypotheses, const Tokenizer& tokenizer, bool skip_special_tokens = false);

}  // namespace decodebook
