// Chapters 02-06 and 10: reading knob values from text, and the enums' spellings.
#include "knob_text.hpp"

#include "decodebook/base/utf8.hpp"

namespace decodebook {
namespace knob_text {

[[noreturn]] void invalid(const std::string& name, const std::string& flag, const std::string& value,
                          const std::string& rule) {
    throw Error(name + " = " + value + " is invalid: it must be " + rule, "pass --" + flag + " with a value " + rule);
}

bool parse_bool(const std::string& flag, const std::string& text) {
    if (text == "true" || text == "1") return true;
    if (text == "false" || text == "0") return false;
    throw Error("--" + flag + " needs true or false, got '" + text + "'", "e.g. --" + flag + " true");
}

// One value of stop: a JSON array of strings (["User:", "\n--"], JSON's escapes), or one string
// with the escapes \n \t \r and \\ (the shell passes a backslash through: --stop '\n' is a
// newline). Any other backslash is refused rather than kept, so '\N' is not a stop that silently
// never matches; a stop starting with [ is written as a JSON array.
std::vector<std::string> parse_stops(const std::string& text, const std::string& rule, const std::string& name,
                                      const std::string& flag) {
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
// A value that starts with [ is a JSON array of strings, as a stop's is: text such as ["a", is
// refused, not taken as a literal choice (a choice that starts with [ is written ["[yes]"]).
std::vector<std::string> parse_choices(const std::string& text, const std::string& rule) {
    std::vector<std::string> choices{text};
    if (!text.empty() && text[0] == '[') {
        try {
            choices = nlohmann::json::parse(text).get<std::vector<std::string>>();
        } catch (const nlohmann::json::exception&) {
            throw Error("choice = " + text + " is not a JSON array of strings",
                        "give a JSON array such as '[\"yes\", \"no\"]' (a choice that starts with [ is written "
                        "'[\"[yes]\"]'), or one --choice per string");
        }
    }
    for (const std::string& s : choices) {
        if (s.empty()) invalid("choice", "choice", "\"\"", rule);
        if (to_valid_utf8(s) != s)
            throw Error("choice = " + nlohmann::json(to_valid_utf8(s)).dump() +
                            " is not valid UTF-8, so no text can match it (the output always is)",
                        "pass --choice as UTF-8 text");
    }
    return choices;
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

bool ids_ok(const std::vector<int>& ids) {
    if (ids.empty()) return false;
    for (int id : ids)
        if (id < 0) return false;
    return true;
}

}  // namespace knob_text

using namespace knob_text;

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
std::string to_string(ChainOrder order) { return spell(kOrderSpellings, order); }
ChainOrder parse_chain_order(const std::string& text) { return parse_spelling(kOrderSpellings, text, "chain order"); }

}  // namespace decodebook
