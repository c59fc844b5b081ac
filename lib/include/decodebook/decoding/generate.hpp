#pragma once
/// @file decoding/generate.hpp
/// @brief The general decode loop every chapter from 02 on and every tool runs: samplers with
/// context, stopping criteria as a list, and a result that says why it ended (chapter 02).
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
#include <string_view>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/base/utf8.hpp"

namespace decodebook {

class Gpt2;
class Tokenizer;
struct ModelConfig;

/// Chooses the next token from the last position's logits (V) and the context. A picker with
/// context: greedy, make_sampler's chain, or a later chapter's. Introduced in chapter 02.
using Sampler = std::function<int(const xt::xtensor<float, 1>& logits, const DecodeContext& context)>;

/// The simplest Sampler: argmax of the raw logits (no processors). Introduced in chapter 02.
int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext& context);

/// The Sampler a config describes: LogitsChain(config), then argmax or a sample with
/// coin i of Rng(seed) for token i. Exactly one coin is drawn per step, used or not, so coin i
/// always belongs to token i. Each call starts a fresh coin stream. Introduced in chapter 02.
/// @throws Error on a bad config.
Sampler make_sampler(const GenerationConfig& config, uint64_t seed);

/// Why a generation ended. Introduced in chapter 02.
enum class FinishReason {
    Length,      ///< "length": max_new_tokens reached
    Eos,         ///< "eos": an EOS id was generated (it is the last id)
    StopString,  ///< "stop_string": a stop string appeared in the text (chapter 06)
    Callback,    ///< "callback": the step callback asked to stop
};

/// "length", "eos", "stop_string" or "callback". Introduced in chapter 02.
std::string to_string(FinishReason reason);

/// Token bytes in, printable text out: the general loop streams through one. Introduced in chapter 02.
class TextStream {
public:
    virtual ~TextStream() = default;
    /// Add one token's bytes; returns the text that may be shown now.
    virtual std::string push(std::string_view bytes) = 0;
    /// The generation ended: returns whatever was held back that may still be shown.
    virtual std::string flush() = 0;
    /// The stop string this stream found in the text, if any (chapter 06's streams find them).
    virtual std::optional<std::string> matched_stop() const { return std::nullopt; }
};

/// The plain stream: never splits a UTF-8 character (Utf8Stream), holds nothing else back.
/// Introduced in chapter 02.
class PlainTextStream : public TextStream {
public:
    /// Add bytes; returns the complete characters so far.
    std::string push(std::string_view bytes) override { return utf8_.push(bytes); }
    /// A character cut off at the end becomes U+FFFD.
    std::string flush() override { return utf8_.flush(); }

private:
    Utf8Stream utf8_;
};

/// The stream a config asks for: PlainTextStream, or with stop strings chapter 06's StopStringStream.
/// Introduced in chapter 02.
std::unique_ptr<TextStream> make_text_stream(const GenerationConfig& config);

/// What a stopping criterion looks at after each token. Introduced in chapter 02.
struct StopState {
    const std::vector<int>& generated;  ///< the new ids, the latest last
    const std::string& text;            ///< the text released so far
    const TextStream& stream;           ///< the loop's stream (it knows a matched stop string)
};

/// One way for a generation to end: after each token, `check` returns a reason or nothing.
/// Introduced in chapter 02.
struct StoppingCriterion {
    std::string name;  ///< e.g. "max_new_tokens(32)", "eos(2047)"
    std::function<std::optional<FinishReason>(const StopState& state)> check;  ///< the test
};

/// The criteria a generation checks, in order: the first that fires gives the reason.
/// Introduced in chapter 02.
using StoppingCriteria = std::vector<StoppingCriterion>;

/// Stop once `max_new_tokens` ids were generated. Introduced in chapter 02.
StoppingCriterion max_new_tokens_criterion(int max_new_tokens);
/// Stop right after any of `eos_ids` (it stays in the ids, as in HF). Introduced in chapter 02.
StoppingCriterion eos_criterion(std::vector<int> eos_ids);

/// Stop when the loop's stream found a stop string. Introduced in chapter 02.
StoppingCriterion stop_string_criterion();

/// The criteria of a config: the stream's stop strings, EOS (an EOS at the last step ends by
/// "eos"), then the length. Introduced in chapter 02.
StoppingCriteria stopping_criteria(const GenerationConfig& config, const std::vector<int>& eos_ids);

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

/// Check a request before any work, for the general loop and every later loop: the config
/// (validate), the prompt against the model (empty, unknown ids, prompt + max_new_tokens beyond
/// the context), and the EOS ids against the vocabulary. Introduced in chapter 02.
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
