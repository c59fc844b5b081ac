// Chapters 02-06: the knob table. Each decoding parameter is one row here and nowhere else.
#include "decodebook/decoding/generation_config.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/regex.hpp"
#include "decodebook/decoding/chain_end.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/stages.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {

std::vector<std::string> default_dry_sequence_breakers() { return {"\n", ":", "\"", "*"}; }

namespace {

// One spelling per enum value, used both ways.
template <class Enum>
struct Spelling {
    Enum value;
    const char* text;
};

constexpr Spelling<PenaltyScope> kScopes[] = {{PenaltyScope::PromptAndOutput, "prompt_and_output"},
                                               {PenaltyScope::OutputOnly, "output_only"},
                                               {PenaltyScope::LastN, "last_n"}};
constexpr Spelling<ChainOrder> kOrders[] = {
    {ChainOrder::HuggingFace, "hf"}, {ChainOrder::LlamaCpp, "llama.cpp"}, {ChainOrder::Vllm, "vllm"}};

constexpr Spelling<EarlyStopping> kEarlyStopping[] = {
    {EarlyStopping::Heuristic, "false"}, {EarlyStopping::Done, "true"}, {EarlyStopping::Never, "never"}};
constexpr Spelling<BeamScoring> kBeamScoring[] = {{BeamScoring::HuggingFace, "hf"}, {BeamScoring::Vllm, "vllm"}};
constexpr Spelling<AssistantSchedule> kSchedules[] = {{AssistantSchedule::Constant, "constant"},
                                                      {AssistantSchedule::Heuristic, "heuristic"}};
constexpr Spelling<VerifyRule> kVerifyRules[] = {{VerifyRule::Leviathan, "leviathan"},
                                                 {VerifyRule::SampleAndCompare, "sample_and_compare"}};
constexpr Spelling<StopMatch> kStopMatch[] = {
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

[[noreturn]] void invalid(const std::string& name, const std::string& flag, const std::string& value,
                          const std::string& rule) {
    throw Error(name + " = " + value + " is invalid: it must be " + rule, "pass --" + flag + " with a value " + rule);
}

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

bool parse_bool(const std::string& flag, const std::string& text) {
    if (text == "true" || text == "1") return true;
    if (text == "false" || text == "0") return false;
    throw Error("--" + flag + " needs true or false, got '" + text + "'", "e.g. --" + flag + " true");
}

// A numeric knob: `ok` says which values are valid, `rule` says it in words.
template <class T>
Knob number(std::string name, std::string flag, KnobGroup group, std::string help, T GenerationConfig::*member,
            std::function<bool(T)> ok, std::string rule, bool implies_sampling = false) {
    Knob k{name, flag, group, std::move(help), rule, implies_sampling, {}, {}, {}};
    k.get = [member](const GenerationConfig& c) {
        if constexpr (std::is_same_v<T, float>) return knob_number(c.*member);
        else return std::to_string(c.*member);
    };
    const GenerationConfig defaults;  // a named default: GCC 12 ICEs on k.get(GenerationConfig{}) here
    const std::string example = k.get(defaults);  // the default: valid by construction
    k.set = [=](GenerationConfig& c, const std::string& text) {
        const T value = parse_number<T>(name, flag, text, rule, example);
        if (!ok(value)) invalid(name, flag, text, rule);
        c.*member = value;
    };
    k.valid = [member, ok](const GenerationConfig& c) { return ok(c.*member); };
    return k;
}

// An enum knob: its spellings are its rule.
template <class Enum, size_t N>
Knob choice(std::string name, std::string flag, KnobGroup group, std::string help, Enum GenerationConfig::*member,
            const Spelling<Enum> (&table)[N]) {
    Knob k{name, flag, group, std::move(help), "one of: " + spellings(table), false, {}, {}, {}};
    k.get = [member, &table](const GenerationConfig& c) { return spell(table, c.*member); };
    k.set = [member, &table, name](GenerationConfig& c, const std::string& text) {
        c.*member = parse_spelling(table, text, name);
    };
    k.valid = [](const GenerationConfig&) { return true; };
    return k;
}

// eos_token_id: "model" (the model's own), "none", or ids separated by commas.
Knob eos_knob() {
    Knob k{"eos_token_id", "eos-token-id", KnobGroup::Stopping,
           "ids that end generation (kept in the output)",
           "model (the model's own), none, or ids >= 0 separated by commas", false, {}, {}, {}};
    k.get = [](const GenerationConfig& c) {
        if (!c.eos_token_id) return std::string("model");
        if (c.eos_token_id->empty()) return std::string("none");
        std::string s;
        for (int id : *c.eos_token_id) {
            if (!s.empty()) s += ",";
            s += std::to_string(id);
        }
        return s;
    };
    k.set = [rule = k.rule](GenerationConfig& c, const std::string& text) {
        if (text == "model") return c.eos_token_id.reset();
        std::vector<int> ids;
        if (text != "none") {
            size_t start = 0;
            while (start <= text.size()) {
                const size_t comma = std::min(text.find(',', start), text.size());
                const int id = parse_number<int>("eos_token_id", "eos-token-id", text.substr(start, comma - start),
                                                 rule, "0 (ids separated by commas), or model, or none");
                if (id < 0) invalid("eos_token_id", "eos-token-id", text, rule);
                ids.push_back(id);
                start = comma + 1;
            }
        }
        c.eos_token_id = ids;
    };
    k.valid = [](const GenerationConfig& c) {
        if (c.eos_token_id)
            for (int id : *c.eos_token_id)
                if (id < 0) return false;
        return true;
    };
    return k;
}

// A true/false knob.
Knob flag_knob(std::string name, std::string flag, KnobGroup group, std::string help, bool GenerationConfig::*member) {
    Knob k{name, flag, group, std::move(help), "true or false", false, {}, {}, {}};
    k.get = [member](const GenerationConfig& c) { return std::string(c.*member ? "true" : "false"); };
    k.set = [member, flag](GenerationConfig& c, const std::string& text) { c.*member = parse_bool(flag, text); };
    k.valid = [](const GenerationConfig&) { return true; };
    return k;
}

// One value of stop: a JSON array of strings (["User:", "\n--"], JSON's escapes), or one string
// with the escapes \n \t \r and \\ (the shell passes a backslash through: --stop '\n' is a
// newline). Any other backslash is refused rather than kept, so '\N' is not a stop that silently
// never matches; a stop starting with [ is written as a JSON array.
std::vector<std::string> parse_stops(const std::string& text, const std::string& rule, const std::string& name = "stop",
                                      const std::string& flag = "stop") {
    const std::string fix = "write a newline as \\n, a tab as \\t, a carriage return as \\r, a backslash as \\\\, "
                            "or give a JSON array: --" + flag + " '[\"User:\", \"\\n\"]'";
    std::vector<std::string> stops;
    if (!text.empty() && text[0] == '[') {
        try {
            stops = nlohmann::json::parse(text).get<std::vector<std::string>>();
        } catch (const nlohmann::json::exception&) {
            throw Error(name + " = " + text + " is not a JSON array of strings", fix);
        }
    } else {
        std::string s;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] != '\\') {
                s += text[i];
                continue;
            }
            const char next = i + 1 < text.size() ? text[i + 1] : '\0';
            if (next == 'n') s += '\n';
            else if (next == 't') s += '\t';
            else if (next == 'r') s += '\r';
            else if (next == '\\') s += '\\';
            else
                throw Error(name + " = " + text + " has " +
                                (next ? "the unknown escape \\" + std::string(1, next) : std::string("a backslash at its end")) +
                                " (the escapes are \\n \\t \\r \\\\)",
                            fix);
            ++i;
        }
        stops.push_back(s);
    }
    for (const std::string& s : stops) {
        if (s.empty()) invalid(name, flag, "\"\"", rule);
        if (to_valid_utf8(s) != s)
            throw Error(name + " = " + nlohmann::json(to_valid_utf8(s)).dump() +
                            " is not valid UTF-8, so it can never match the text (which always is)",
                        "pass --" + flag + " as UTF-8 text");
    }
    return stops;
}

// stop: on a command line each --stop adds what its value holds (one string or a JSON array);
// the REPL's :set stop replaces the list.
// choice: one string, or a JSON array of strings (as --show-config prints the list). Chapter 09.
std::vector<std::string> parse_choices(const std::string& text, const std::string& rule) {
    std::vector<std::string> choices{text};
    if (!text.empty() && text[0] == '[') {
        try {
            choices = nlohmann::json::parse(text).get<std::vector<std::string>>();
        } catch (const nlohmann::json::exception&) {  // not an array of strings: the text itself
        }
    }
    for (const std::string& s : choices)
        if (s.empty()) invalid("choice", "choice", "\"\"", rule);
    return choices;
}

Knob stop_knob() {
    Knob k{"stop", "stop", KnobGroup::Stopping, "end the text at this string (repeat --stop for several)",
           "non-empty text with the escapes \\n \\t \\r \\\\, or a JSON array of such strings like "
           "[\"User:\", \"\\n--\"]",
           false, {}, {}, {}};
    k.repeatable = true;
    k.get = [](const GenerationConfig& c) { return nlohmann::json(c.stop).dump(); };
    k.set = [rule = k.rule](GenerationConfig& c, const std::string& text) { c.stop = parse_stops(text, rule); };
    k.add = [rule = k.rule](GenerationConfig& c, const std::string& text) {
        for (std::string& s : parse_stops(text, rule)) c.stop.push_back(std::move(s));
    };
    k.valid = [](const GenerationConfig& c) {
        for (const std::string& s : c.stop)
            if (s.empty() || to_valid_utf8(s) != s) return false;
        return true;
    };
    return k;
}

// ----------------------------------------------------------------------------------- chapter 10
// The list knobs of chapter 10. Each takes one value per flag (`add`, repeatable on a command
// line) and, through `set` (the REPL's :set, golden files), the JSON forms the engines use. Ids are
// checked against the vocabulary where a tokenizer is bound (bind_to_tokenizer): here only >= 0.

// A bias: a number, or -inf ("-inf" as JSON text, since JSON has no infinity). logit_bias's range is
// OpenAI's and vLLM's [-100, 100] (vLLM clamps to it, OpenAI refuses outside it); -inf is how
// llama.cpp bans a token (its `--logit-bias ID-inf`), so it is kept: -inf is exact, -100 nearly so.
bool bias_ok(float bias, bool bounded) {
    if (bias == -INFINITY) return true;
    return std::isfinite(bias) && (!bounded || (bias >= -100 && bias <= 100));
}

// `shown` is the whole value given (e.g. "5:101"), for the message.
float parse_bias(const std::string& name, const std::string& flag, const std::string& text, const std::string& rule,
                 bool bounded, const std::string& shown) {
    if (text == "-inf" || text == "-infinity") return -INFINITY;
    const float bias = parse_number<float>(name, flag, text, rule, "-100");
    if (!bias_ok(bias, bounded)) invalid(name, flag, shown, rule);
    return bias;
}

// One token id >= 0 (its upper bound is the vocabulary's, checked by bind_to_tokenizer).
int parse_id(const std::string& name, const std::string& flag, const std::string& text, const std::string& rule,
             const std::string& shown = "") {
    const int id = parse_number<int>(name, flag, text, rule, "50256");
    if (id < 0) invalid(name, flag, shown.empty() ? text : shown, rule);
    return id;
}

// "464 3290" -> {464, 3290}: ids separated by spaces (at least one).
std::vector<int> parse_ids(const std::string& name, const std::string& flag, const std::string& text,
                           const std::string& rule) {
    std::vector<int> ids;
    size_t start = 0;
    while (start < text.size()) {
        const size_t space = std::min(text.find(' ', start), text.size());
        if (space > start) ids.push_back(parse_id(name, flag, text.substr(start, space - start), rule));
        start = space + 1;
    }
    if (ids.empty()) invalid(name, flag, "\"" + text + "\"", rule);
    return ids;
}

// The JSON value of `text`, or an Error naming the knob and the forms it takes.
nlohmann::json parse_json(const std::string& name, const std::string& flag, const std::string& text,
                          const std::string& forms) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        throw Error(name + " = " + text + " is not valid JSON", "give " + forms + " (or one --" + flag + " per entry)");
    }
}

// A JSON id: a whole number >= 0, or a string of one ({"50256": -100} has string keys).
int json_id(const std::string& name, const std::string& flag, const nlohmann::json& v, const std::string& rule) {
    if (v.is_string()) return parse_id(name, flag, v.get<std::string>(), rule);
    if (!v.is_number_integer()) invalid(name, flag, v.dump(), rule);
    if (v.get<long long>() < 0 || v.get<long long>() > std::numeric_limits<int>::max()) invalid(name, flag, v.dump(), rule);
    return v.get<int>();
}

float json_bias(const std::string& name, const std::string& flag, const nlohmann::json& v, const std::string& rule,
                bool bounded) {
    if (v.is_string()) return parse_bias(name, flag, v.get<std::string>(), rule, bounded, v.dump());
    if (!v.is_number()) invalid(name, flag, v.dump(), rule);
    const double bias = v.get<double>();
    if (!bias_ok(static_cast<float>(bias), bounded) || std::abs(bias) > std::numeric_limits<float>::max())
        invalid(name, flag, v.dump(), rule);
    return static_cast<float>(bias);
}

nlohmann::json bias_json(float bias) { return bias == -INFINITY ? nlohmann::json("-inf") : nlohmann::json(bias); }

std::vector<int> json_ids(const std::string& name, const std::string& flag, const nlohmann::json& v,
                          const std::string& rule) {
    if (!v.is_array() || v.empty()) invalid(name, flag, v.dump(), rule);
    std::vector<int> ids;
    for (const nlohmann::json& id : v) ids.push_back(json_id(name, flag, id, rule));
    return ids;
}

// logit_bias: `ID:BIAS` per flag; set also takes {"ID": BIAS, ...} (OpenAI, vLLM) or [[ID, BIAS], ...]
// (llama.cpp's list). A token biased twice is refused (the OpenAI form cannot say it).
std::vector<std::pair<int, float>> parse_logit_bias(const std::string& text, const std::string& rule, bool json) {
    const std::string name = "logit_bias", flag = "logit-bias";
    std::vector<std::pair<int, float>> out;
    if (json) {
        const nlohmann::json v = parse_json(name, flag, text, "{\"ID\": BIAS, ...} or [[ID, BIAS], ...]");
        if (v.is_object()) {
            for (const auto& [key, bias] : v.items())
                out.emplace_back(parse_id(name, flag, key, rule), json_bias(name, flag, bias, rule, true));
        } else if (v.is_array()) {
            for (const nlohmann::json& pair : v) {
                if (!pair.is_array() || pair.size() != 2) invalid(name, flag, pair.dump(), rule);
                out.emplace_back(json_id(name, flag, pair[0], rule), json_bias(name, flag, pair[1], rule, true));
            }
        } else {
            invalid(name, flag, text, rule);
        }
        return out;
    }
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) invalid(name, flag, text, rule);
    out.emplace_back(parse_id(name, flag, text.substr(0, colon), rule, text),
                     parse_bias(name, flag, text.substr(colon + 1), rule, true, text));
    return out;
}

// sequence_bias: `ID ID ...:BIAS` per flag; set also takes HF's [[[ID, ...], BIAS], ...].
std::vector<std::pair<std::vector<int>, float>> parse_sequence_bias(const std::string& text, const std::string& rule,
                                                                    bool json) {
    const std::string name = "sequence_bias", flag = "sequence-bias";
    std::vector<std::pair<std::vector<int>, float>> out;
    if (json) {
        const nlohmann::json v = parse_json(name, flag, text, "[[[ID, ...], BIAS], ...]");
        if (!v.is_array()) invalid(name, flag, text, rule);
        for (const nlohmann::json& pair : v) {
            if (!pair.is_array() || pair.size() != 2) invalid(name, flag, pair.dump(), rule);
            out.emplace_back(json_ids(name, flag, pair[0], rule), json_bias(name, flag, pair[1], rule, false));
        }
        return out;
    }
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) invalid(name, flag, text, rule);
    out.emplace_back(parse_ids(name, flag, text.substr(0, colon), rule),
                     parse_bias(name, flag, text.substr(colon + 1), rule, false, text));
    return out;
}

// bad_words_ids: `ID ID ...` per flag; set also takes HF's [[ID, ...], ...].
std::vector<std::vector<int>> parse_bad_words(const std::string& text, const std::string& rule, bool json) {
    const std::string name = "bad_words_ids", flag = "bad-words-ids";
    if (!json) return {parse_ids(name, flag, text, rule)};
    const nlohmann::json v = parse_json(name, flag, text, "[[ID, ...], ...]");
    if (!v.is_array()) invalid(name, flag, text, rule);
    std::vector<std::vector<int>> out;
    for (const nlohmann::json& word : v) out.push_back(json_ids(name, flag, word, rule));
    return out;
}

// suppress_tokens, begin_suppress_tokens: one ID (or several separated by spaces) per flag; set also
// takes HF's [ID, ...].
std::vector<int> parse_token_list(const std::string& name, const std::string& flag, const std::string& text,
                                  const std::string& rule, bool json) {
    if (!json) return parse_ids(name, flag, text, rule);
    const nlohmann::json v = parse_json(name, flag, text, "[ID, ...]");
    if (!v.is_array()) invalid(name, flag, text, rule);
    std::vector<int> out;
    for (const nlohmann::json& id : v) out.push_back(json_id(name, flag, id, rule));
    return out;
}

// A list knob: `parse(text, rule, json)` reads one flag's value (json false) or the JSON form (json
// true, and always when the text starts with [ or {); `add` appends, `set` replaces; `ok` checks a
// list set in code; `print` is its JSON for --show-config (what `set` reads back).
template <class T>
Knob list_knob(std::string name, std::string flag, KnobGroup group, std::string help, std::string rule,
               std::vector<T> GenerationConfig::*member,
               std::function<std::vector<T>(const std::string&, const std::string&, bool)> parse,
               std::function<bool(const T&)> ok, std::function<nlohmann::ordered_json(const std::vector<T>&)> print) {
    Knob k{name, flag, group, std::move(help), rule, false, {}, {}, {}};
    k.repeatable = true;
    const auto is_json = [](const std::string& text) { return !text.empty() && (text[0] == '[' || text[0] == '{'); };
    k.get = [member, print](const GenerationConfig& c) { return print(c.*member).dump(); };
    k.set = [=](GenerationConfig& c, const std::string& text) { c.*member = parse(text, rule, is_json(text)); };
    k.add = [=](GenerationConfig& c, const std::string& text) {
        for (T& v : parse(text, rule, is_json(text))) (c.*member).push_back(std::move(v));
    };
    k.valid = [member, ok](const GenerationConfig& c) {
        for (const T& v : c.*member)
            if (!ok(v)) return false;
        return true;
    };
    return k;
}

bool ids_ok(const std::vector<int>& ids) {
    if (ids.empty()) return false;
    for (int id : ids)
        if (id < 0) return false;
    return true;
}

// The chapter-10 list knobs, in the table's order.
void add_bias_knobs(std::vector<Knob>& t) {
    using G = KnobGroup;
    using C = GenerationConfig;
    using Bias = std::pair<int, float>;
    using SeqBias = std::pair<std::vector<int>, float>;
    t.push_back(list_knob<Bias>(
        "logit_bias", "logit-bias", G::Penalties,
        "add BIAS to token ID's logit (llama.cpp, vLLM; HF: a sequence_bias of one token); repeatable",
        "ID:BIAS with ID >= 0 and BIAS in [-100, 100] (OpenAI's and vLLM's range) or -inf (ban); JSON "
        "{\"ID\": BIAS} or [[ID, BIAS]]",
        &C::logit_bias, parse_logit_bias, [](const Bias& b) { return b.first >= 0 && bias_ok(b.second, true); },
        [](const std::vector<Bias>& v) {
            nlohmann::ordered_json j = nlohmann::ordered_json::object();
            for (const auto& [id, bias] : v) j[std::to_string(id)] = bias_json(bias);
            return j;
        }));
    t.push_back(list_knob<SeqBias>(
        "sequence_bias", "sequence-bias", G::Penalties,
        "add BIAS to a sequence's last token when the output ends with the rest of it (HF); repeatable",
        "\"ID ID ...:BIAS\" with ids >= 0 and BIAS a number or -inf; JSON [[[ID, ...], BIAS]]", &C::sequence_bias,
        parse_sequence_bias, [](const SeqBias& b) { return ids_ok(b.first) && bias_ok(b.second, false); },
        [](const std::vector<SeqBias>& v) {
            nlohmann::ordered_json j = nlohmann::ordered_json::array();
            for (const auto& [ids, bias] : v) j.push_back({ids, bias_json(bias)});
            return j;
        }));
    t.push_back(list_knob<std::vector<int>>(
        "bad_words_ids", "bad-words-ids", G::Penalties,
        "never complete this token sequence: its last token is banned after the rest (HF, vLLM); repeatable",
        "\"ID ID ...\" with ids >= 0; JSON [[ID, ...], ...]", &C::bad_words_ids, parse_bad_words, ids_ok,
        [](const std::vector<std::vector<int>>& v) { return nlohmann::ordered_json(v); }));
    for (const auto& [name, flag, member, help] :
         {std::tuple{"suppress_tokens", "suppress-tokens", &C::suppress_tokens,
                     "token ID is never generated (-inf at every step; HF); repeatable"},
          std::tuple{"begin_suppress_tokens", "begin-suppress-tokens", &C::begin_suppress_tokens,
                     "token ID is not the first generated token (HF); repeatable"}}) {
        t.push_back(list_knob<int>(
            name, flag, G::Penalties, help, "ID >= 0 (several separated by spaces); JSON [ID, ...]", member,
            [name = std::string(name), flag = std::string(flag)](const std::string& text, const std::string& rule,
                                                                  bool json) {
                return parse_token_list(name, flag, text, rule, json);
            },
            [](const int& id) { return id >= 0; },
            [](const std::vector<int>& v) { return nlohmann::ordered_json(v); }));
    }
}

// dry_sequence_breakers: text like --stop (escapes \n \t \r \\, or a JSON array); on a command line
// the first --dry-sequence-breakers replaces llama.cpp's defaults (as its --dry-sequence-breaker
// does) and each adds one; an empty list (JSON []) has none. Longer than 40 bytes is refused where
// llama.cpp would cut it (MAX_CHAR_LEN in llama_sampler_init_dry, src/llama-sampler.cpp).
Knob dry_breakers_knob() {
    Knob k{"dry_sequence_breakers", "dry-sequence-breakers", KnobGroup::Penalties,
           "DRY never matches a repeat across this text (llama.cpp; default \\n : \" *); repeatable",
           "non-empty text of at most 40 bytes with the escapes \\n \\t \\r \\\\, or a JSON array of such strings "
           "like [\"\\n\", \":\"]",
           false, {}, {}, {}};
    k.repeatable = true;
    const auto parse = [rule = k.rule](const std::string& text) {
        std::vector<std::string> breakers;
        if (text != "[]") breakers = parse_stops(text, rule, "dry_sequence_breakers", "dry-sequence-breakers");
        for (const std::string& b : breakers)
            if (b.size() > 40) invalid("dry_sequence_breakers", "dry-sequence-breakers", nlohmann::json(b).dump(), rule);
        return breakers;
    };
    k.get = [](const GenerationConfig& c) { return nlohmann::json(c.dry_sequence_breakers).dump(); };
    k.set = [parse](GenerationConfig& c, const std::string& text) { c.dry_sequence_breakers = parse(text); };
    k.add = [parse](GenerationConfig& c, const std::string& text) {
        for (std::string& s : parse(text)) c.dry_sequence_breakers.push_back(std::move(s));
    };
    k.valid = [](const GenerationConfig& c) {
        for (const std::string& s : c.dry_sequence_breakers)
            if (s.empty() || s.size() > 40 || to_valid_utf8(s) != s) return false;
        return true;
    };
    return k;
}

std::vector<Knob> make_table() {
    using G = KnobGroup;
    using C = GenerationConfig;
    const auto finite = [](float v) { return std::isfinite(v); };
    std::vector<Knob> t;
    t.push_back(number<int>("max_new_tokens", "max-new-tokens", G::Length, "tokens to generate at most", &C::max_new_tokens,
                            [](int v) { return v >= 1; }, ">= 1"));
    t.push_back(number<int>("min_new_tokens", "min-new-tokens", G::Stopping,
                            "mask every EOS id until this many new tokens (HF)", &C::min_new_tokens,
                            [](int v) { return v >= 0; }, ">= 0 (0 = off)"));
    t.push_back(eos_knob());
    t.push_back(stop_knob());
    t.push_back(flag_knob("include_stop_str_in_output", "include-stop-str-in-output", G::Stopping,
                          "keep the matched stop string at the end of the text (vLLM's flag)",
                          &C::include_stop_str_in_output));
    t.push_back(choice("stop_match", "stop-match", G::Stopping, "which of several matching stop strings wins",
                       &C::stop_match, kStopMatch));
    t.push_back(flag_knob("skip_special_tokens", "skip-special-tokens", G::Stopping,
                          "leave special tokens such as <|endoftext|> out of the text, not the ids (HF's decode "
                          "flag; vLLM's default is true)",
                          &C::skip_special_tokens));
    Knob sample{"do_sample", "do-sample", G::Sampling,
                "sample (true) or take the argmax after the penalties (false, HF's default)", "true or false",
                false, {}, {}, {}};
    sample.get = [](const C& c) { return std::string(c.do_sample ? "true" : "false"); };
    sample.set = [](C& c, const std::string& text) { c.do_sample = parse_bool("do-sample", text); };
    sample.valid = [](const C&) { return true; };
    t.push_back(sample);
    t.push_back(number<float>("temperature", "temperature", G::Sampling, "z / T when sampling",
                              &C::temperature, [=](float v) { return finite(v) && v >= 0; },
                              ">= 0 (0 = greedy; a tiny T > 0 samples all but greedily)", true));
    t.push_back(number<int>("top_k", "top-k", G::Sampling, "keep the k most likely (ties kept)", &C::top_k,
                            [](int v) { return v >= 0; }, ">= 0 (0 = off)", true));
    t.push_back(number<float>("top_p", "top-p", G::Sampling, "keep the smallest set of likeliest tokens with this mass", &C::top_p,
                              [](float v) { return v >= 0 && v <= 1; }, "in [0, 1] (1 = off)", true));
    t.push_back(number<float>("min_p", "min-p", G::Sampling, "keep p >= min_p * p_max", &C::min_p,
                              [](float v) { return v >= 0 && v <= 1; }, "in [0, 1] (0 = off)", true));
    t.push_back(number<int>("min_tokens_to_keep", "min-tokens-to-keep", G::Sampling,
                            "the truncations never keep fewer", &C::min_tokens_to_keep, [](int v) { return v >= 1; },
                            ">= 1"));
    t.push_back(choice("order", "order", G::Sampling, "processor order of an engine", &C::order, kOrders));
    t.push_back(number<uint64_t>("seed", "seed", G::Sampling, "seed of the coin stream", &C::seed,
                                 [](uint64_t) { return true; }, "in [0, 2^64)"));
    // the field's other samplers (truncations, XTC, mirostat, dynamic temperature)
    t.push_back(number<float>("typical_p", "typical-p", G::Sampling,
                              "locally typical sampling: keep the tokens closest to the entropy up to this mass (HF, llama.cpp)",
                              &C::typical_p, [](float v) { return v > 0 && v <= 1; }, "in (0, 1] (1 = off)", true));
    t.push_back(number<float>("epsilon_cutoff", "epsilon-cutoff", G::Sampling, "remove tokens with p < epsilon (HF)",
                              &C::epsilon_cutoff, [](float v) { return v >= 0 && v < 1; }, "in [0, 1) (0 = off)", true));
    t.push_back(number<float>("eta_cutoff", "eta-cutoff", G::Sampling,
                              "remove tokens with p < min(eta, sqrt(eta) e^-H) (HF)", &C::eta_cutoff,
                              [](float v) { return v >= 0 && v < 1; }, "in [0, 1) (0 = off)", true));
    t.push_back(number<float>("top_n_sigma", "top-n-sigma", G::Sampling,
                              "keep logits >= max - n * sigma (llama.cpp)", &C::top_n_sigma, finite,
                              "a number; <= 0 = off (llama.cpp's -1)", true));
    t.push_back(number<float>("xtc_probability", "xtc-probability", G::Sampling,
                              "chance per step that XTC removes the top choices (llama.cpp)", &C::xtc_probability,
                              [](float v) { return v >= 0 && v <= 1; }, "in [0, 1] (0 = off)", true));
    t.push_back(number<float>("xtc_threshold", "xtc-threshold", G::Sampling,
                              "XTC removes the tokens above this p but the least likely of them (llama.cpp)",
                              &C::xtc_threshold, [](float v) { return v >= 0 && v <= 1; },
                              "in [0, 1]; above 0.5 XTC is off", true));
    t.push_back(number<int>("mirostat", "mirostat", G::Sampling,
                            "1: mirostat, 2: mirostat 2.0, holding the surprise near tau (llama.cpp)", &C::mirostat,
                            [](int v) { return v >= 0 && v <= 2; }, "0, 1 or 2 (0 = off)", true));
    t.push_back(number<float>("mirostat_tau", "mirostat-tau", G::Sampling, "mirostat's target surprise, in bits",
                              &C::mirostat_tau, [=](float v) { return finite(v) && v > 0; }, "> 0", true));
    t.push_back(number<float>("mirostat_eta", "mirostat-eta", G::Sampling, "mirostat's learning rate",
                              &C::mirostat_eta, [=](float v) { return finite(v) && v > 0; }, "> 0", true));
    t.push_back(number<float>("dynatemp_range", "dynatemp-range", G::Sampling,
                              "dynamic temperature: T - range .. T + range by the entropy (llama.cpp)", &C::dynatemp_range,
                              [=](float v) { return finite(v) && v >= 0; }, ">= 0 (0 = off)", true));
    t.push_back(number<float>("dynatemp_exponent", "dynatemp-exponent", G::Sampling,
                              "exponent of the normalised entropy in dynamic temperature", &C::dynatemp_exponent,
                              [=](float v) { return finite(v) && v > 0; }, "> 0", true));
    t.push_back(number<float>("repetition_penalty", "repetition-penalty", G::Penalties, "CTRL penalty theta: z / theta if z > 0, else z * theta",
                              &C::repetition_penalty, [=](float v) { return finite(v) && v > 0; }, "> 0 (1 = off)"));
    t.push_back(choice("penalty_scope", "penalty-scope", G::Penalties, "tokens the repetition penalty sees",
                       &C::penalty_scope, kScopes));
    t.push_back(number<int>("penalty_last_n", "penalty-last-n", G::Penalties, "window of --penalty-scope last_n",
                            &C::penalty_last_n, [](int v) { return v >= 1; }, ">= 1"));
    t.push_back(number<float>("presence_penalty", "presence-penalty", G::Penalties, "OpenAI presence penalty, over the output",
                              &C::presence_penalty, [](float v) { return v >= -2 && v <= 2; }, "in [-2, 2] (0 = off)"));
    t.push_back(number<float>("frequency_penalty", "frequency-penalty", G::Penalties,
                              "OpenAI frequency penalty, over the output", &C::frequency_penalty,
                              [](float v) { return v >= -2 && v <= 2; }, "in [-2, 2] (0 = off)"));
    t.push_back(number<int>("no_repeat_ngram_size", "no-repeat-ngram-size", G::Penalties,
                            "ban repeating any n-gram of this size", &C::no_repeat_ngram_size,
                            [](int v) { return v >= 0; }, ">= 0 (0 = off)"));
    // DRY and the biases
    t.push_back(number<float>("dry_multiplier", "dry-multiplier", G::Penalties,
                              "DRY: penalise a token that would extend a repeat (llama.cpp)", &C::dry_multiplier,
                              [=](float v) { return finite(v) && v >= 0; }, ">= 0 (0 = off)"));
    t.push_back(number<float>("dry_base", "dry-base", G::Penalties, "DRY's penalty grows as base ^ (length - allowed)",
                              &C::dry_base, [=](float v) { return finite(v) && v >= 1; }, ">= 1"));
    t.push_back(number<int>("dry_allowed_length", "dry-allowed-length", G::Penalties,
                            "DRY leaves repeats shorter than this alone", &C::dry_allowed_length,
                            [](int v) { return v >= 0; }, ">= 0"));
    t.push_back(number<int>("dry_penalty_last_n", "dry-penalty-last-n", G::Penalties, "tokens DRY looks back over",
                            &C::dry_penalty_last_n, [](int v) { return v >= -1; }, ">= -1 (-1 = all, 0 = off)"));
    t.push_back(dry_breakers_knob());
    add_bias_knobs(t);
    t.push_back(number<int>("num_beams", "num-beams", G::Beams, "hypotheses kept per step (beam search)",
                            &C::num_beams, [](int v) { return v >= 1 && v <= 64; }, "in [1, 64] (1 = off)"));
    t.push_back(number<float>("length_penalty", "length-penalty", G::Beams,
                              "a finished beam's log-prob sum is divided by length ^ this", &C::length_penalty,
                              [=](float v) { return finite(v); }, "a finite number (0 = raw sum; 1 is not neutral)"));
    t.push_back(choice("early_stopping", "early-stopping", G::Beams, "when beam search ends", &C::early_stopping,
                       kEarlyStopping));
    t.push_back(number<int>("num_return_sequences", "num-return-sequences", G::Beams,
                            "finished hypotheses returned (at most num_beams)", &C::num_return_sequences,
                            [](int v) { return v >= 1; }, ">= 1 and <= num_beams"));
    t.push_back(choice("beam_scoring", "beam-scoring", G::Beams, "the length a beam's score is normalised by",
                       &C::beam_scoring, kBeamScoring));
    t.push_back(number<int>("num_assistant_tokens", "num-assistant-tokens", G::Speculative,
                            "tokens the draft model proposes per round (speculative decoding)", &C::num_assistant_tokens,
                            [](int v) { return v >= 1 && v <= 64; }, "in [1, 64]"));
    t.push_back(choice("num_assistant_tokens_schedule", "num-assistant-tokens-schedule", G::Speculative,
                       "constant, or heuristic: +2 after a round that kept every draft, else -1",
                       &C::num_assistant_tokens_schedule, kSchedules));
    t.push_back(number<int>("prompt_lookup_num_tokens", "prompt-lookup-num-tokens", G::Speculative,
                            "draft by prompt lookup (no draft model): tokens per round", &C::prompt_lookup_num_tokens,
                            [](int v) { return v >= 0 && v <= 64; }, "in [0, 64] (0 = off)"));
    t.push_back(number<int>("max_matching_ngram_size", "max-matching-ngram-size", G::Speculative,
                            "prompt lookup tries n-grams this long first", &C::max_matching_ngram_size,
                            [](int v) { return v >= 1 && v <= 16; }, "in [1, 16]"));
    t.push_back(number<int>("prompt_lookup_min", "prompt-lookup-min", G::Speculative,
                            "0: HF's lookup rule; n: vLLM's (longest n-gram of at least n, earliest)",
                            &C::prompt_lookup_min, [](int v) { return v >= 0 && v <= 16; },
                            "in [0, 16] (0 = HF's rule), at most max_matching_ngram_size"));
    t.push_back(choice("verify_rule", "verify-rule", G::Speculative,
                       "leviathan (HF, vLLM): keep with min(1, p/q); sample_and_compare (llama.cpp): keep if the "
                       "target's own draw matches",
                       &C::verify_rule, kVerifyRules));
    Knob regex{"regex", "regex", G::Constraint, "the whole output must match this regex (chapter 09)",
               "a regex in the supported syntax (constrain/regex.hpp); empty = off", false, {}, {}, {}};
    regex.get = [](const C& c) { return c.regex; };
    regex.set = [](C& c, const std::string& text) {
        if (!text.empty()) (void)compile_regex(text);  // a bad pattern is refused where it is given
        c.regex = text;
    };
    regex.valid = [](const C&) { return true; };
    t.push_back(regex);
    Knob choice_knob{"choice", "choice", G::Constraint,
                     "the whole output must be one of these strings (repeat --choice for each)",
                     "non-empty strings, one per --choice, or a JSON array of them like [\"yes\", \"no\"]", false,
                     {}, {}, {}};
    choice_knob.repeatable = true;
    choice_knob.get = [](const C& c) { return nlohmann::json(c.choice).dump(); };
    choice_knob.set = [rule = choice_knob.rule](C& c, const std::string& text) { c.choice = parse_choices(text, rule); };
    choice_knob.add = [rule = choice_knob.rule](C& c, const std::string& text) {
        for (std::string& s : parse_choices(text, rule)) c.choice.push_back(std::move(s));
    };
    choice_knob.valid = [](const C& c) {
        for (const std::string& s : c.choice)
            if (s.empty()) return false;
        return true;
    };
    t.push_back(choice_knob);
    Knob schema{"json_schema", "json-schema", G::Constraint,
                "the output must be JSON satisfying the schema in this file (chapter 09)",
                "a JSON schema file in the supported subset (constrain/json_schema.hpp); empty = off", false, {}, {},
                {}};
    schema.get = [](const C& c) { return c.json_schema; };
    schema.set = [](C& c, const std::string& text) {
        C probe;  // read, convert and compile it now: a bad schema is refused where it is given
        probe.json_schema = text;
        if (!text.empty()) (void)compile_regex(constraint_regex(probe));
        c.json_schema = text;
    };
    schema.valid = [](const C&) { return true; };
    t.push_back(schema);
    return t;
}


// Mirostat's end keeps mu, and has no greedy mode: the loops that would have to roll mu back
// (beam search, prompt lookup; a draft model in make_drafter) refuse a stateful end, and mirostat
// refuses the settings that leave it nothing to draw.
void check_chain_end(const GenerationConfig& c) {
    if (c.mirostat == 0) return;
    const std::string m = "mirostat = " + std::to_string(c.mirostat);
    if (ends_in_state(c) && c.num_beams > 1)
        throw Error(m + " with beam search (num_beams " + std::to_string(c.num_beams) +
                        ") is not offered: mirostat draws one token per step and keeps mu",
                    "drop --num-beams (or pass --num-beams 1), or drop --mirostat");
    if (ends_in_state(c) && c.prompt_lookup_num_tokens > 0)
        throw Error(m + " with speculative decoding (prompt_lookup_num_tokens " +
                        std::to_string(c.prompt_lookup_num_tokens) +
                        ") is not offered: verifying k drafts at once would have to roll mu back at each rejection",
                    "drop --prompt-lookup-num-tokens, or --mirostat");
    if (!c.do_sample)
        throw Error(m + " with do_sample false: mirostat draws the token itself, it has no greedy mode",
                    "drop --do-sample false for mirostat, or drop --mirostat for greedy decoding");
    if (c.temperature == 0)
        throw Error(m + " with temperature 0: llama.cpp's chain would keep only the top token, and mirostat would "
                        "change nothing",
                    "pass --temperature > 0 with --mirostat, or --do-sample false for greedy decoding");
}

}  // namespace

std::string to_string(EarlyStopping rule) { return spell(kEarlyStopping, rule); }
std::string to_string(VerifyRule rule) { return spell(kVerifyRules, rule); }
VerifyRule parse_verify_rule(const std::string& text) { return parse_spelling(kVerifyRules, text, "verify_rule"); }
std::string to_string(AssistantSchedule schedule) { return spell(kSchedules, schedule); }
AssistantSchedule parse_assistant_schedule(const std::string& text) {
    return parse_spelling(kSchedules, text, "num_assistant_tokens_schedule");
}
EarlyStopping parse_early_stopping(const std::string& text) { return parse_spelling(kEarlyStopping, text, "early_stopping"); }
std::string to_string(BeamScoring scoring) { return spell(kBeamScoring, scoring); }
BeamScoring parse_beam_scoring(const std::string& text) { return parse_spelling(kBeamScoring, text, "beam_scoring"); }
std::string to_string(StopMatch rule) { return spell(kStopMatch, rule); }
StopMatch parse_stop_match(const std::string& text) { return parse_spelling(kStopMatch, text, "stop_match"); }
std::string to_string(PenaltyScope scope) { return spell(kScopes, scope); }
PenaltyScope parse_penalty_scope(const std::string& text) { return parse_spelling(kScopes, text, "penalty_scope"); }
std::string to_string(ChainOrder order) { return spell(kOrders, order); }
ChainOrder parse_chain_order(const std::string& text) { return parse_spelling(kOrders, text, "chain order"); }

const std::vector<Knob>& knobs() {
    static const std::vector<Knob> table = make_table();
    return table;
}

const Knob& find_knob(const std::string& name) {
    for (const Knob& k : knobs())
        if (k.name == name || k.flag == name) return k;
    std::string all;
    for (const Knob& k : knobs()) {
        if (!all.empty()) all += ' ';
        all += k.flag;
    }
    throw Error("unknown parameter '" + name + "'", "use one of: " + all);
}

void set_knob(GenerationConfig& config, const std::string& name, const std::string& value) {
    const Knob& k = find_knob(name);
    GenerationConfig next = config;
    k.set(next, value);
    if (k.implies_sampling) next.do_sample = true;
    config = next;
}

void validate(const GenerationConfig& config) { validate(config, stage_table()); }

void validate(const GenerationConfig& config, const StageTable& stages) {
    for (const Knob& k : knobs())
        if (!k.valid(config)) invalid(k.name, k.flag, k.get(config), k.rule);
    stages.check_engine(config);  // a knob only where its engine's chain has its stage
    check_chain_end(config);
    if (config.min_new_tokens > config.max_new_tokens) {
        throw Error("min_new_tokens (" + std::to_string(config.min_new_tokens) + ") exceeds max_new_tokens (" +
                        std::to_string(config.max_new_tokens) + ")",
                    "lower --min-new-tokens or raise --max-new-tokens");
    }
    if (config.num_return_sequences > config.num_beams) {
        throw Error("num_return_sequences (" + std::to_string(config.num_return_sequences) + ") exceeds num_beams (" +
                        std::to_string(config.num_beams) + ")",
                    "lower --num-return-sequences or raise --num-beams");
    }
    if (config.num_beams > 1 && config.do_sample) {
        throw Error("beam search with sampling (HF's beam sample) is not offered: num_beams is " +
                        std::to_string(config.num_beams) + " and do_sample is true",
                    "drop the sampling flags, or pass --do-sample false with --num-beams");
    }
    if (config.num_beams > 1 && !config.stop.empty()) {  // refused, not ignored
        throw Error("stop strings with beam search are not offered: num_beams is " + std::to_string(config.num_beams) +
                        " and stop is " + nlohmann::json(config.stop).dump() +
                        " (beam search would run to its end and ignore them)",
                    "drop --stop, or pass --num-beams 1");
    }
    const int constraints = !config.regex.empty() + !config.choice.empty() + !config.json_schema.empty();
    if (constraints > 1) {
        throw Error("more than one constraint is set (regex, choice, json_schema)",
                    "give exactly one of --regex, --choice, --json-schema (vLLM's rule)");
    }
    if (config.prompt_lookup_min > config.max_matching_ngram_size) {
        throw Error("prompt_lookup_min (" + std::to_string(config.prompt_lookup_min) + ") exceeds max_matching_ngram_size (" +
                        std::to_string(config.max_matching_ngram_size) + ")",
                    "lower --prompt-lookup-min or raise --max-matching-ngram-size");
    }
}

std::string describe(const GenerationConfig& config, const std::vector<KnobGroup>& groups) {
    std::string s;
    for (const Knob& k : knobs()) {
        bool wanted = groups.empty();
        for (KnobGroup g : groups) wanted = wanted || g == k.group;
        if (wanted) {
            if (!s.empty()) s += ", ";
            s += k.name + " " + k.get(config);
        }
    }
    return s;
}

std::vector<int> resolve_eos_ids(const GenerationConfig& config, int model_eos_token_id) {
    if (config.eos_token_id) return *config.eos_token_id;
    if (model_eos_token_id < 0) return {};
    return {model_eos_token_id};
}

}  // namespace decodebook
