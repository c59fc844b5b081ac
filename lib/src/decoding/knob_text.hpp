// Chapters 02-06 and 10: the knob table's text. Private to decoding/: how a knob's value is read
// from text (numbers, lists, JSON forms, escapes) and how enums are spelled, both ways. The rows
// that use these are in knob_table.cpp; the cross-knob policy is in validate.cpp.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/generation_config.hpp"

namespace decodebook::knob_text {

// One spelling per enum value, used both ways.
template <class Enum>
struct Spelling {
    Enum value;
    const char* text;
};

inline constexpr Spelling<PenaltyScope> kScopes[] = {{PenaltyScope::PromptAndOutput, "prompt_and_output"},
                                               {PenaltyScope::OutputOnly, "output_only"},
                                               {PenaltyScope::LastN, "last_n"}};
inline constexpr Spelling<ChainOrder> kOrderSpellings[] = {
    {ChainOrder::HuggingFace, "hf"}, {ChainOrder::LlamaCpp, "llama.cpp"}, {ChainOrder::Vllm, "vllm"}};

inline constexpr Spelling<EarlyStopping> kEarlyStopping[] = {
    {EarlyStopping::Heuristic, "false"}, {EarlyStopping::Done, "true"}, {EarlyStopping::Never, "never"}};
inline constexpr Spelling<BeamScoring> kBeamScoring[] = {{BeamScoring::HuggingFace, "hf"}, {BeamScoring::Vllm, "vllm"}};
inline constexpr Spelling<AssistantSchedule> kSchedules[] = {{AssistantSchedule::Constant, "constant"},
                                                      {AssistantSchedule::Heuristic, "heuristic"}};
inline constexpr Spelling<VerifyRule> kVerifyRules[] = {{VerifyRule::Leviathan, "leviathan"},
                                                 {VerifyRule::SampleAndCompare, "sample_and_compare"}};
inline constexpr Spelling<StopMatch> kStopMatch[] = {
    {StopMatch::Earliest, "earliest"}, {StopMatch::Vllm, "vllm"}, {StopMatch::ListOrder, "list_order"},
    {StopMatch::TokenOverlap, "token_overlap"}};

template <class Enum, size_t N>
std::string spell(const Spelling<Enum> (&table)[N], Enum value) {
    for (const auto& s : table)
        if (s.value == value) return s.text;
    return "?";
}

template <class Enum, size_t N>
std::string spellings(const Spelling<Enum> (&table)[N]) {
    std::string all;
    for (const auto& s : table) {
        if (!all.empty()) all += ", ";
        all += std::string(s.text);
    }
    return all;
}

template <class Enum, size_t N>
Enum parse_spelling(const Spelling<Enum> (&table)[N], const std::string& text, const std::string& what) {
    for (const auto& s : table)
        if (text == s.text) return s.value;
    throw Error("unknown " + what + " '" + text + "'", "use one of: " + spellings(table));
}

// "NAME = VALUE is invalid: it must be RULE", with the flag to pass instead.
[[noreturn]] void invalid(const std::string& name, const std::string& flag, const std::string& value,
                          const std::string& rule);

// Strict text -> number: the whole text must be one number of the member's type (no spaces, no
// sign on the unsigned seed). Text that is a number but does not fit the type is refused with the
// knob's rule, never as "not a number"; `example` is a valid value for the fix.
template <class T>
T parse_number(const std::string& name, const std::string& flag, const std::string& text, const std::string& rule,
               const std::string& example) {
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto not_a_number = [&] {
        return Error("--" + flag + " needs " + (std::is_integral_v<T> ? "a whole number" : "a number") + ", got '" +
                         text + "'",
                     "e.g. --" + flag + " " + example);
    };
    if (text.empty()) throw not_a_number();
    if constexpr (std::is_same_v<T, float>) {
        double value = 0;
        const auto [end, ec] = std::from_chars(first, last, value);
        if (ec == std::errc::result_out_of_range && end == last) {  // beyond even a double, either way
            value = std::abs(std::strtod(text.c_str(), nullptr)) >= 1 ? HUGE_VAL : 1e-300;
        } else if (ec != std::errc() || end != last) {
            throw not_a_number();
        }
        if (std::isfinite(value) ? std::abs(value) > std::numeric_limits<float>::max() : value == HUGE_VAL) {
            throw Error(name + " = " + text + " is invalid: it is beyond a float's range (about 3.4e38); it must be " +
                            rule,
                        "pass --" + flag + " with a value " + rule);
        }
        if (value != 0 && std::abs(value) < std::numeric_limits<float>::min()) {
            throw Error(name + " = " + text + " is invalid: it is too close to 0 for a float (below 1.2e-38); it must be " +
                            rule,
                        "pass --" + flag + " with a value " + rule);
        }
        return static_cast<float>(value);
    } else {
        using Wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
        Wide value = 0;
        const bool negative_unsigned = !std::is_signed_v<T> && text[0] == '-';
        const auto [end, ec] = std::from_chars(negative_unsigned ? first + 1 : first, last, value);
        if (ec == std::errc::invalid_argument || end != last) throw not_a_number();
        // the seed's rule names its bounds ("in [0, 2^64)"); an int knob's may be one the value
        // meets (">= 0"), so beyond the type it names the bound the value passes
        if (!std::is_signed_v<T> && (negative_unsigned || ec == std::errc::result_out_of_range))
            invalid(name, flag, text, rule);
        bool below = false, above = false;
        if constexpr (std::is_signed_v<T>) {
            below = ec == std::errc::result_out_of_range ? text[0] == '-'
                                                         : value < static_cast<Wide>(std::numeric_limits<T>::min());
            above = ec == std::errc::result_out_of_range ? text[0] != '-'
                                                         : value > static_cast<Wide>(std::numeric_limits<T>::max());
        }
        if (below || above) {
            const std::string bound = below ? "at least " + std::to_string(std::numeric_limits<T>::min())
                                            : "at most " + std::to_string(std::numeric_limits<T>::max());
            throw Error(name + " = " + text + " is invalid: it must be " + bound + ", the " +
                            (below ? "smallest" : "largest") + " " + name + " can hold (and " + rule + ")",
                        "pass --" + flag + " with a value " + rule + ", " + bound);
        }
        return static_cast<T>(value);
    }
}

// "true"/"1" or "false"/"0".
bool parse_bool(const std::string& flag, const std::string& text);

// One value of stop (or of another list of strings written as stop is): a JSON array of strings,
// or one string with the escapes \n \t \r and \\ (knob_text.cpp has the rule).
std::vector<std::string> parse_stops(const std::string& text, const std::string& rule, const std::string& name = "stop",
                                     const std::string& flag = "stop");
// choice: one string, or a JSON array of strings. Chapter 09.
std::vector<std::string> parse_choices(const std::string& text, const std::string& rule);

// The list knobs of chapter 10: one value per flag, or (json true) the engines' JSON forms.
bool bias_ok(float bias, bool bounded);
nlohmann::json bias_json(float bias);
bool ids_ok(const std::vector<int>& ids);
std::vector<std::pair<int, float>> parse_logit_bias(const std::string& text, const std::string& rule, bool json);
std::vector<std::pair<std::vector<int>, float>> parse_sequence_bias(const std::string& text, const std::string& rule,
                                                                    bool json);
std::vector<std::vector<int>> parse_bad_words(const std::string& text, const std::string& rule, bool json);
std::vector<int> parse_token_list(const std::string& name, const std::string& flag, const std::string& text,
                                  const std::string& rule, bool json);

}  // namespace decodebook::knob_text
