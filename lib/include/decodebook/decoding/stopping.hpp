#pragma once
/// @file decoding/stopping.hpp
/// @brief How a generation ends (chapter 02): text streams that release printable text, stopping
/// criteria checked after every token, and the reason a generation ended.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/base/utf8.hpp"
#include "decodebook/decoding/generation_config.hpp"

namespace decodebook {

/// Why a generation ended. Introduced in chapter 02.
enum class FinishReason {
    Length,      ///< "length": max_new_tokens reached
    Eos,         ///< "eos": an EOS id was generated (it is the last id)
    StopString,  ///< "stop_string": a stop string appeared in the text (chapter 06)
    Callback,    ///< "callback": the step callback asked to stop
    DeadEnd,     ///< "dead_end": the constraint allows no token after the output so far (chapter 09)
};

/// "length", "eos", "stop_string", "callback" or "dead_end". Introduced in chapter 02.
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

}  // namespace decodebook
