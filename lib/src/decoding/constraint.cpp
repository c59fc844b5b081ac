// Chapter 09: a constraint on the output as a mask at the head of the chain and a stopping
// criterion (decoding/constraint.hpp).
#include "decodebook/decoding/constraint.hpp"

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/files.hpp"
#include "decodebook/constrain/json_schema.hpp"
#include "decodebook/constrain/regex.hpp"

namespace decodebook {

std::string constraint_kind(const GenerationConfig& config) {
    if (!config.regex.empty()) return "regex";
    if (!config.choice.empty()) return "choice";
    if (!config.json_schema.empty()) return "json_schema";
    return "";
}

namespace {

// The json_schema knob holds a file's path, or the schema itself when it starts with { (a server
// receives the schema in its request). Returns the schema's text.
bool inline_schema(const std::string& value) {
    const size_t first = value.find_first_not_of(" \t\r\n");
    return first != std::string::npos && value[first] == '{';
}

// How messages name the schema: its path, or "(inline)".
std::string schema_name(const GenerationConfig& config) {
    return inline_schema(config.json_schema) ? "(inline)" : config.json_schema;
}

}  // namespace

std::string constraint_regex(const GenerationConfig& config) {
    const std::string kind = constraint_kind(config);
    if (kind == "regex") return config.regex;
    if (kind == "choice") return choice_regex(config.choice);
    if (kind != "json_schema") return "";
    if (config.json_schema.size() > (1 << 20))
        throw Error("the inline JSON schema has " + std::to_string(config.json_schema.size()) + " bytes",
                    "give a schema of at most 1 MiB");
    const std::string text = inline_schema(config.json_schema)
                                 ? config.json_schema
                                 : read_small_file(config.json_schema, "JSON schema", 1 << 20,
                                                   "pass the path of a JSON schema file to --json-schema, or the schema "
                                                   "itself (text starting with {)");
    // ordered: properties come out in the file's order; nesting is bounded while it is read
    return json_schema_regex(parse_json_schema(text, schema_name(config)));
}

namespace {
// The DFA of a constraint's regex. A schema's regex is the converter's, not the user's: a limit
// it meets is told about the schema (an enum of 100,000 values has no bounded repeat to shorten).
Dfa compile_constraint(const GenerationConfig& config, const std::string& regex) {
    if (constraint_kind(config) != "json_schema") return compile_regex(regex);
    try {
        return compile_regex(regex);
    } catch (const Error& e) {
        throw Error("the JSON schema " + schema_name(config) + " converts to a regex too large for the DFA compiler: " +
                        e.problem(),
                    "make the schema smaller (fewer enum values, fewer nested arrays, smaller minItems/maxItems "
                    "and lengths)");
    }
}
}  // namespace

void check_constraint(const GenerationConfig& config) {
    if (!config.regex.empty()) (void)compile_regex(config.regex);
    if (!config.json_schema.empty()) {
        GenerationConfig schema_only;  // its regex alone, whatever else is set (validate refuses two)
        schema_only.json_schema = config.json_schema;
        (void)compile_constraint(schema_only, constraint_regex(schema_only));
    }
}

std::shared_ptr<Constraint> make_constraint(const GenerationConfig& config, const Vocabulary& vocabulary,
                                            const std::vector<int>& eos_ids) {
    const std::string kind = constraint_kind(config);
    if (kind.empty()) return nullptr;
    auto c = std::make_shared<Constraint>();
    c->regex = constraint_regex(config);
    c->name = kind == "regex"    ? "regex(" + config.regex + ")"
              : kind == "choice" ? "choice(" + std::to_string(config.choice.size()) + ")"
                                 : "json_schema(" + schema_name(config) + ")";
    c->index = std::make_shared<TokenIndex>(compile_constraint(config, c->regex), vocabulary, eos_ids);
    if (c->index->allowed(c->index->dfa().start).empty()) {
        throw Error(c->name + " cannot begin: no token of the vocabulary starts a match",
                    "check the pattern's first characters against the model's tokens");
    }
    return c;
}

// [ch09:mask]
Processor constraint_mask(std::shared_ptr<Constraint> c) {
    return {c->name, [c](xt::xtensor<float, 1>& logits, const DecodeContext& context) {
                TokenIndex& index = *c->index;
                const int32_t state = index.state_after(context.generated);
                // Outside the language already: a position after a drafted token the mask refuses
                // (speculative verification scores every position before the verdict), or a beam
                // kept on a -inf score. Nothing chosen here is ever kept, so the logits stay.
                if (state == Dfa::kDead) return;
                // By runs of masked ids, not by allowed ids: a dense state (inside a JSON string)
                // has a few runs but some 50,000 allowed ids (token_index.hpp, masked_ranges).
                mask_ranges(std::span<float>(logits.data(), logits.size()), index.masked(state));
            }};
}
// [/ch09:mask]

StoppingCriterion dead_end_criterion(std::shared_ptr<Constraint> c) {
    return {"dead_end(" + c->name + ")", [c](const StopState& s) -> std::optional<FinishReason> {
                TokenIndex& index = *c->index;
                if (index.allowed(index.state_after(s.generated)).empty()) return FinishReason::DeadEnd;
                return std::nullopt;
            }};
}

}  // namespace decodebook
