// Chapters 02-06 and 10: the knob table. Each decoding parameter is one row here and nowhere else;
// how a value is read from text is in knob_text.cpp, what knobs mean together in validate.cpp.
#include "decodebook/decoding/generation_config.hpp"

#include <cmath>
#include <functional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "knob_text.hpp"

namespace decodebook {

std::vector<std::string> default_dry_sequence_breakers() { return {"\n", ":", "\"", "*"}; }

namespace {

using namespace knob_text;

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
constexpr size_t kMaxDryBreakers = 100;

Knob dry_breakers_knob() {
    Knob k{"dry_sequence_breakers", "dry-sequence-breakers", KnobGroup::Penalties,
           "DRY never matches a repeat across this text (llama.cpp; default \\n : \" *); repeatable",
           "non-empty text of at most 40 bytes with the escapes \\n \\t \\r \\\\, or a JSON array of such strings "
           "like [\"\\n\", \":\"]; at most 100 of them",
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
    // each breaker is looked for in every token when the config is bound: their number is capped
    const auto count_ok = [](const std::vector<std::string>& breakers) {
        if (breakers.size() <= kMaxDryBreakers) return;
        throw Error("dry_sequence_breakers holds " + std::to_string(breakers.size()) + " strings, more than the " +
                        std::to_string(kMaxDryBreakers) + " decodebook binds to a tokenizer",
                    "pass at most " + std::to_string(kMaxDryBreakers) +
                        " --dry-sequence-breakers (llama.cpp's default has 4)");
    };
    k.set = [parse, count_ok](GenerationConfig& c, const std::string& text) {
        std::vector<std::string> breakers = parse(text);
        count_ok(breakers);
        c.dry_sequence_breakers = std::move(breakers);
    };
    k.add = [parse, count_ok](GenerationConfig& c, const std::string& text) {
        for (std::string& s : parse(text)) c.dry_sequence_breakers.push_back(std::move(s));
        count_ok(c.dry_sequence_breakers);
    };
    k.valid = [](const GenerationConfig& c) {
        if (c.dry_sequence_breakers.size() > kMaxDryBreakers) return false;
        for (const std::string& s : c.dry_sequence_breakers)
            if (s.empty() || s.size() > 40 || to_valid_utf8(s) != s) return false;
        return true;
    };
    return k;
}

// Chapter 09's constraints: the text only. Compiling a regex or reading a schema file is the
// constraint's (check_constraint where a value is given, make_constraint where it is bound).
void add_constraint_knobs(std::vector<Knob>& t) {
    using G = KnobGroup;
    using C = GenerationConfig;
    Knob regex{"regex", "regex", G::Constraint, "the whole output must match this regex (chapter 09)",
               "a regex in the supported syntax (constrain/regex.hpp); empty = off", false, {}, {}, {}};
    regex.get = [](const C& c) { return c.regex; };
    regex.set = [](C& c, const std::string& text) { c.regex = text; };
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
        std::vector<std::string> added = parse_choices(text, rule);
        if (added.empty())  // a flag that adds nothing would leave the constraint off without a word
            throw Error("--choice " + text + " gives no choice", "give at least one non-empty string, e.g. --choice yes");
        for (std::string& s : added) c.choice.push_back(std::move(s));
    };
    choice_knob.valid = [](const C& c) {
        for (const std::string& s : c.choice)
            if (s.empty()) return false;
        return true;
    };
    t.push_back(choice_knob);
    Knob schema{"json_schema", "json-schema", G::Constraint,
                "the output must be JSON satisfying the schema in this file (chapter 09)",
                "a JSON schema file in the supported subset (constrain/json_schema.hpp), or the schema itself as "
                "text starting with {; empty = off", false, {}, {},
                {}};
    schema.get = [](const C& c) { return c.json_schema; };
    schema.set = [](C& c, const std::string& text) { c.json_schema = text; };
    schema.valid = [](const C&) { return true; };
    t.push_back(schema);
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
    t.push_back(choice("order", "order", G::Sampling, "processor order of an engine", &C::order, kOrderSpellings));
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
    add_constraint_knobs(t);
    return t;
}


}  // namespace

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

}  // namespace decodebook
