// Chapter 09: what the parts share (chapter09.hpp): the person schema's two regexes, a constraint
// built from a regex, the text of a run.
#include <string>

#include <nlohmann/json.hpp>

#include "chapter09.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/constrain/json_schema.hpp"
#include "decodebook/constrain/regex.hpp"

using namespace decodebook;

namespace chapter09 {

std::string person_regex(bool unbounded_whitespace) {
    const auto schema = nlohmann::ordered_json::parse(kPersonSchema);  // ordered: name before age
    std::string regex = json_schema_regex(schema, JsonWhitespace{1});
    if (!unbounded_whitespace) return regex;
    // The same language but for the whitespace: every bounded run becomes the unbounded rule.
    const std::string bounded = "[ \\t\\n\\r]?", unbounded = "[ \\t\\n\\r]*";
    size_t replaced = 0;
    for (size_t at = regex.find(bounded); at != std::string::npos;
         at = regex.find(bounded, at + unbounded.size())) {
        regex.replace(at, bounded.size(), unbounded);
        ++replaced;
    }
    if (replaced == 0)  // the converter writes its whitespace another way: this part must follow it
        throw Error("chapter 09 did not find " + bounded + " in the person schema's regex " + regex,
                    "update person_regex (chapters/09-constrained/shared.cpp) to the converter's whitespace");
    return regex;
}

std::shared_ptr<Constraint> constraint_for(const Session& s, const std::string& name, const std::string& regex) {
    auto c = std::make_shared<Constraint>();
    c->name = name;
    c->regex = regex;
    c->index = std::make_shared<TokenIndex>(compile_regex(regex), s.tokenizer.vocabulary(),
                                            resolve_eos_ids(s.config, s.model.config().eos_token_id));
    return c;
}

std::string text_of(const Tokenizer& tok, const std::vector<int>& ids) {
    std::string text;
    for (int id : ids)
        if (!tok.is_special(id)) text += tok.token_bytes(id);
    return text;
}

}  // namespace chapter09
