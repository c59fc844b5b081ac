#pragma once
/// @file decoding/stop_strings.hpp
/// @brief Stop strings on the text (chapter 06): where a stop matches, which of several wins, and
/// a stream that shows text only once no stop string can still match it.
///
/// A stop string is text, not a token: it may start inside an earlier token and end inside the
/// last one ("DE" in the tokens "ABC" + "DEF"), or span several tokens. The general loop of
/// chapter 02 streams through make_text_stream(config), which is a StopStringStream when
/// `config.stop` is not empty; its stop_string_criterion ends the generation when the stream has
/// found a stop. `min_new_tokens` does not delay stop strings (Hugging Face's rule; vLLM ignores
/// stop strings until `min_tokens` tokens were generated): it only masks the EOS ids.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/base/utf8.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/stopping.hpp"

namespace decodebook {

/// One occurrence of a stop string in a text. Introduced in chapter 06.
struct StopHit {
    size_t position = 0;  ///< byte offset in the text where the stop string starts
    size_t index = 0;     ///< which stop string: an index into the list
};

/// The occurrence that wins among the stop strings that occur in `text` and end after byte `from`
/// (the text before `from` was searched at an earlier token), under `rule`:
/// Earliest and TokenOverlap take the one that starts first, Vllm the one that ends first (a tie
/// goes to the earlier in the list), ListOrder the first in the list that occurs at all, wherever
/// it starts.
///
/// Vllm is vLLM's `check_stop_strings(output_text, new_char_count, stop, include_in_output)`
/// (vllm/v1/engine/detokenizer.py, read at commit 29e0907951d3e5befc013a92e8f3b9828da000ed), the
/// rule since vllm-project/vllm PR #49391 (merged 2026, "Select earliest-completing stop string",
/// which called list order a bug): `from` is len(output_text) - new_char_count, each stop's first
/// occurrence from there counts, and the smallest end wins. vLLM counts characters, decodebook
/// bytes of whole characters: the same cut. ListOrder is the rule before that PR.
/// Introduced in chapter 06.
std::optional<StopHit> find_stop(std::string_view text, size_t from, const std::vector<std::string>& stops,
                                 StopMatch rule);

/// Warnings for the stop strings that can never end a text under `rule`, whatever the model writes,
/// because another stop of the list inside them always wins first: under Vllm a stop that holds
/// another one ending before its own end (or at it, listed earlier); under ListOrder one that holds
/// another listed earlier; under Earliest and TokenOverlap one that begins with another listed
/// earlier. E.g. "User:" after "User". Empty when every stop can win. Such a stop changes nothing
/// (the text ends at the same place without it), so programs warn and go on.
/// Introduced in chapter 06.
std::vector<std::string> never_winning_stops(const std::vector<std::string>& stops, StopMatch rule);

/// The length in bytes of the longest suffix of `text` that is a proper prefix of some stop
/// string: what must be held back because a stop string may still complete (llama.cpp finds the
/// same partial match, but its server then holds back all text not yet sent).
/// Introduced in chapter 06.
size_t stop_holdback(std::string_view text, const std::vector<std::string>& stops);

/// What a holdback matcher may show of the text it has not shown yet. Introduced in chapter 06.
struct StopScan {
    size_t safe = 0;                  ///< bytes at the start of the pending text that can be shown now
    std::optional<size_t> stop = {};  ///< the stop string found (index into the list), if any
};

/// The holdback matcher, the lesson of chapter 06 (exercise 06.1): `pending` is the text not shown
/// yet (it may end in a cut-off UTF-8 character). When a stop string occurs in it, the earliest
/// wins (a tie goes to the earlier in the list) and `safe` is where it starts; otherwise `safe`
/// leaves out the longest suffix that is a proper prefix of a stop string, and a cut-off
/// character at the end. Introduced in chapter 06.
StopScan scan_stops(std::string_view pending, const std::vector<std::string>& stops);

/// The TextStream for stop strings: UTF-8 safe, and with `include_stop_str_in_output` false it
/// holds back exactly the text that may still become a stop string. After a match it releases
/// the text up to the stop (through it with `include_stop_str_in_output`: vLLM's truncation to the
/// stop's end) and nothing after it, not even at flush. With StopMatch::Vllm and ListOrder a match
/// is final at once: under Vllm no stop can complete earlier than one that already has, so the
/// cut is where the stop that completes first in the whole text starts, however the text was
/// split into tokens. With StopMatch::Earliest a match is final only when no stop string that
/// starts earlier (or at the same place and earlier in the list) can still complete, so the text
/// is cut where the earliest stop of the whole text starts, however it was split into tokens;
/// a match still waiting when the generation ends is final at flush. With StopMatch::TokenOverlap it behaves as Hugging Face's
/// StopStringCriteria: nothing is held back or cut, the whole last token is kept.
/// Introduced in chapter 06.
class StopStringStream : public TextStream {
public:
    /// A stream that watches for `stops`, cuts as `rule` says, and keeps the matched stop when
    /// `include_stop_str_in_output`. Introduced in chapter 06.
    /// @throws Error when `stops` is empty, or a stop string is empty or not valid UTF-8.
    StopStringStream(std::vector<std::string> stops, bool include_stop_str_in_output, StopMatch rule);
    /// Add one token's bytes; returns the text that may be shown now. Introduced in chapter 06.
    std::string push(std::string_view bytes) override;
    /// The generation ended: no stop can complete any more, so the held text is released (a
    /// cut-off character becomes U+FFFD); nothing when a stop was found. Introduced in chapter 06.
    std::string flush() override;
    /// The stop string found, once one is. Introduced in chapter 06.
    std::optional<std::string> matched_stop() const override { return matched_; }
    /// The text received but not shown: held back, or after a match the stop string (without
    /// `include_stop_str_in_output`) and what followed it in its token, which are never shown.
    /// Introduced in chapter 06.
    std::string_view held() const { return std::string_view(text_).substr(released_); }

private:
    std::string advance(const std::string& complete_text, bool final);
    bool earlier_stop_pending(std::string_view text, const StopHit& hit) const;

    std::vector<std::string> stops_;
    bool include_;
    StopMatch rule_;
    Utf8Stream utf8_;
    std::string text_;     // every complete character received
    size_t released_ = 0;  // bytes of text_ shown
    std::optional<StopHit> found_;  // the winning stop so far (Earliest may wait for an earlier one)
    std::optional<std::string> matched_;
};

}  // namespace decodebook
