#pragma once
/// @file decoding/generate.hpp
/// @brief The general decode loop every chapter from 02 on and every tool runs (chapter 02): a
/// Sampler (sampler.hpp) picks each token, stopping criteria (stopping.hpp) end it, and the
/// result says why it ended.
///
/// Chapter 00's generate_naive stays the lesson as a student writes it; this loop is the same
/// idea with the seams later chapters plug into: a Sampler sees the prompt, the generated ids and
/// the step; a criterion can end the run for its own reason; a step callback can stop it; the
/// text is streamed UTF-8 safe by the loop itself.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/stopping.hpp"

namespace decodebook {

class Gpt2;
class Tokenizer;
struct ModelConfig;

/// What a step callback tells the loop. Introduced in chapter 02.
enum class StepAction {
    Continue,  ///< go on
    Stop,      ///< end now, with FinishReason::Callback
};

/// Called after every step of the general loop (e.g. to stream `record.text`). Introduced in chapter 02.
using StepObserver = std::function<StepAction(const StepRecord& record)>;

/// A StepObserver that prints each step's text to `out` and flushes it: the streaming printer.
/// Introduced in chapter 02.
StepObserver print_text_to(std::ostream& out);

/// The result of the general loop. Introduced in chapter 02.
struct Generation {
    std::vector<int> ids;                             ///< the new tokens only (an EOS is kept)
    std::string text;                                 ///< their text as streamed (invalid UTF-8 -> U+FFFD)
    FinishReason finish_reason = FinishReason::Length;  ///< why it ended
    std::string stopped_by;                           ///< the criterion's name, or "callback"
    std::string matched_stop;                         ///< the stop string that ended it (chapter 06), or ""
    std::vector<StepRecord> steps;                    ///< one record per token, with its text
};

/// One sequence being generated: what the general loop keeps, and what every loop that chooses
/// tokens its own way keeps per sequence (generate_batch per row, chapter 08 per accepted token).
/// Introduced in chapter 02.
struct GenerationState {
    /// A fresh state for a checked request (check_request gave `eos_ids`).
    /// @param model the model's shape (its vocabulary size)
    /// @param tokenizer the token bytes; null: no text (generate_batch without a tokenizer)
    /// @param prompt the prompt (a view: the caller keeps it alive)
    /// @param config the stopping knobs (criteria, stop strings)
    /// @param eos_ids the ids check_request resolved
    GenerationState(const ModelConfig& model, const Tokenizer* tokenizer, std::span<const int> prompt,
                    const GenerationConfig& config, const std::vector<int>& eos_ids);
    const Tokenizer* tokenizer;            ///< bytes of each token (null: no text)
    int vocab_size;                        ///< ids must be below it
    std::span<const int> prompt;           ///< the prompt (a view: the caller keeps it)
    std::vector<int> eos_ids;              ///< what min_new_tokens masks and EOS stops at
    StoppingCriteria criteria;             ///< the config's, in order
    std::unique_ptr<TextStream> stream;    ///< bytes in, printable text out
    bool skip_special_tokens;              ///< the config's: special tokens add no bytes to the text
    Generation out;                        ///< the result so far
    /// The context a sampler sees for the next token (views of this state: valid until the next append).
    DecodeContext context() const;
};

/// The one step every loop takes when it has chosen a token: check the id is in the vocabulary,
/// append it, record its StepRecord (its logit and softmax probability under `logits`, `ms`, the
/// text it released), check the stopping criteria, tell `on_step`, and at the end flush the text
/// the stream held back. Introduced in chapter 02.
/// @param state the sequence the token joins
/// @param token the chosen id
/// @param logits (V) the raw logits the token was chosen from
/// @param ms the time the step took (model and choice), for its StepRecord
/// @param on_step told about the step; its StepAction::Stop ends the generation (reason callback)
/// @return why the generation ended with this token, or nothing
/// @throws Error when the token is outside the vocabulary.
std::optional<FinishReason> append_token(GenerationState& state, int token, const xt::xtensor<float, 1>& logits,
                                         double ms, const StepObserver& on_step = {});

/// Check a request before any work: the one place a request is refused. Each public loop calls
/// it once at its entrance (generate, generate_cached, generate_batch, beam_search) and what it
/// calls inside assumes a checked request. It checks the config (validate), the prompt against
/// the model (empty, unknown ids, prompt + max_new_tokens beyond the context), and the EOS ids
/// against the vocabulary. Introduced in chapter 02.
/// @return the EOS ids the generation stops at (resolve_eos_ids)
/// @throws Error naming the problem and the fix.
std::vector<int> check_request(const ModelConfig& model, const std::vector<int>& prompt, const GenerationConfig& config);

/// The loop's model seam: the next-token logits (V) of a sequence (prompt + tokens so far).
/// The loop calls it once per step with the sequence grown by one token. Introduced in chapter 02.
using NextLogits = std::function<xt::xtensor<float, 1>(const std::vector<int>& sequence)>;

/// Chapter 00's way: forward the whole sequence and keep the last position's row.
/// The model must outlive the returned function. Introduced in chapter 02.
NextLogits naive_logits(const Gpt2& model);

/// The general loop: forward the whole sequence, take the last logits, `sample` with the context,
/// append, stream the text, check the config's stopping criteria, tell `on_step`. The request is
/// checked before any work (empty prompt, unknown ids, prompt + max_new_tokens beyond the
/// context, EOS ids outside the vocabulary). Introduced in chapter 02.
/// @throws Error on a bad request or config, or when the sampler returns an id outside the vocabulary.
Generation generate(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                    const GenerationConfig& config, const Sampler& sample, const StepObserver& on_step = {});

/// The general loop over any model seam (`naive_logits`, or chapter 07's `cached_logits`); the
/// overload above is this loop on `naive_logits(model)`. Introduced in chapter 02.
/// @throws Error on a bad request or config.
Generation generate(const NextLogits& next, const ModelConfig& model_config, const Tokenizer& tokenizer,
                    const std::vector<int>& prompt, const GenerationConfig& config, const Sampler& sample,
                    const StepObserver& on_step = {});

}  // namespace decodebook
