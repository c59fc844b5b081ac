// Chapter 11: multiple choice by scoring, as lm-eval does it (EleutherAI/lm-evaluation-harness at
// 4e7e0d47f33b; each rule's file is named where it is used).
#include "decodebook/decoding/choices.hpp"

#include <cmath>
#include <cstdint>
#include <iterator>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/files.hpp"
#include "decodebook/base/utf8.hpp"

namespace decodebook {
namespace {

constexpr const char* kTaskFix =
    "pass a task file of {\"items\": [{\"context\": TEXT, \"choices\": [TEXT, ...], \"answer\": INDEX}, ...]}; "
    "the course's is models/tasks/author_choice.json in the repository (rebuild it with "
    "/usr/bin/python3 tests/reference/author_task.py, which needs Debian's fortunes package)";

// The characters Python's str.isspace() accepts, which str.rstrip() with no argument removes.
bool python_whitespace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The code point of one valid UTF-8 sequence.
char32_t code_point(std::string_view seq) {
    const auto b = [&](size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(seq[i])); };
    switch (seq.size()) {
        case 1: return b(0);
        case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
        case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    }
}

// How many bytes at the end of `text` are whitespace characters (Python's rstrip), walking back
// one whole character at a time; an invalid byte stops the walk.
size_t trailing_whitespace(std::string_view text) {
    size_t end = text.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        const std::string_view seq = text.substr(start, end - start);
        const Utf8Step step = utf8_step(seq);
        if (!step.valid || step.length != seq.size() || !python_whitespace(code_point(seq))) break;
        end = start;
    }
    return text.size() - end;
}

// Characters in valid UTF-8, or nullopt when it is not valid.
std::optional<size_t> characters(std::string_view text) {
    size_t count = 0;
    for (size_t i = 0; i < text.size(); ++count) {
        const Utf8Step step = utf8_step(text.substr(i));
        if (!step.valid) return std::nullopt;
        i += step.length;
    }
    return count;
}

// A choice as a message quotes it: at most 40 bytes, whole characters.
std::string quoted(const std::string& text) {
    if (text.size() <= 40) return "\"" + text + "\"";
    size_t cut = 37;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return "\"" + text.substr(0, cut) + "...\"";
}

std::string choice_name(size_t i, const std::string& text) { return "choice " + std::to_string(i) + " (" + quoted(text) + ")"; }

}  // namespace

void check_choice_item(const ChoiceItem& item) {
    if (!characters(item.context))
        throw Error("the context is not valid UTF-8", "pass text: lm-eval's contexts and choices are Python strings");
    if (trailing_whitespace(item.context) == item.context.size())
        throw Error(item.context.empty() ? "the context is empty" : "the context is only whitespace",
                    "pass a context with text: lm-eval asserts a non-empty context, and moves its trailing "
                    "whitespace to the choices");
    if (item.choices.size() < 2)
        throw Error("the item has " + std::to_string(item.choices.size()) + " choice" +
                        (item.choices.size() == 1 ? "" : "s") + ", not a choice",
                    "give at least two choices");
    for (size_t i = 0; i < item.choices.size(); ++i) {
        if (item.choices[i].empty())
            throw Error("choice " + std::to_string(i) + " is empty",
                        "give every choice some text: acc_norm divides by its length");
        if (!characters(item.choices[i]))
            throw Error("choice " + std::to_string(i) + " is not valid UTF-8",
                        "pass text: lm-eval's lengths count a choice's characters");
    }
    if (item.answer < 0 || static_cast<size_t>(item.answer) >= item.choices.size())
        throw Error("the answer " + std::to_string(item.answer) + " is outside 0.." +
                        std::to_string(item.choices.size() - 1),
                    "give the index of the right choice, counting from 0");
}

std::vector<ChoiceItem> read_choice_task(const std::string& path) {
    const std::string text = read_small_file(path, "choice task", 64u << 20, kTaskFix);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error("the choice task '" + path + "' is not valid JSON (" + e.what() + ")", kTaskFix);
    }
    if (!j.is_object() || !j.contains("items") || !j["items"].is_array())
        throw Error("the choice task '" + path + "' has no \"items\" array", kTaskFix);
    std::vector<ChoiceItem> items;
    for (size_t k = 0; k < j["items"].size(); ++k) {
        const nlohmann::json& e = j["items"][k];
        const std::string where = "the choice task '" + path + "', item " + std::to_string(k) + ": ";
        if (!e.is_object() || !e.contains("context") || !e["context"].is_string() || !e.contains("choices") ||
            !e["choices"].is_array() || !e.contains("answer") || !e["answer"].is_number_integer())
            throw Error(where + "needs \"context\" (a string), \"choices\" (an array of strings) and \"answer\" "
                                "(a whole number)",
                        kTaskFix);
        ChoiceItem item;
        item.context = e["context"].get<std::string>();
        for (const nlohmann::json& c : e["choices"]) {
            if (!c.is_string()) throw Error(where + "a choice is not a string", kTaskFix);
            item.choices.push_back(c.get<std::string>());
        }
        const nlohmann::json& answer = e["answer"];
        // nlohmann stores a JSON number >= 0 as unsigned, a negative one as signed
        const bool in_range = answer.is_number_unsigned() && answer.get<uint64_t>() < item.choices.size();
        item.answer = in_range ? answer.get<int>() : 0;
        try {
            check_choice_item(item);
        } catch (const Error& bad) {
            throw Error(where + bad.problem(), bad.fix());
        }
        if (!in_range)
            throw Error(where + "the answer " + answer.dump() + " is outside 0.." + std::to_string(item.choices.size() - 1),
                        "give the index of the right choice, counting from 0");
        items.push_back(std::move(item));
    }
    if (items.empty()) throw Error("the choice task '" + path + "' has no items", kTaskFix);
    return items;
}

// lm_eval/api/model.py, TemplateLM._encode_pair (the causal branch).
EncodedPair encode_pair(const Tokenizer& tokenizer, std::string_view context, std::string_view continuation) {
    if (context.empty())
        throw Error("the context is empty", "pass a context: lm-eval asserts one (an empty context is its "
                                            "prefix token's case, which this does not cover)");
    // The trailing whitespace moves to the continuation: the whole text stays context + continuation.
    const std::string_view kept = context.substr(0, context.size() - trailing_whitespace(context));
    std::string whole(context);
    whole.append(continuation);
    EncodedPair pair;
    pair.context = tokenizer.encode(kept);
    const std::vector<int> all = tokenizer.encode(whole);
    if (all.size() > pair.context.size())
        pair.continuation.assign(all.begin() + static_cast<std::ptrdiff_t>(pair.context.size()), all.end());
    return pair;
}

ChoiceLength choice_length(std::string_view choice) {
    const std::optional<size_t> chars = characters(choice);
    if (!chars) throw Error("the choice is not valid UTF-8", "pass text: lm-eval's lengths count a choice's characters");
    return {*chars, choice.size()};
}

std::vector<ChoiceScore> score_choices(const Gpt2& model, const Tokenizer& tokenizer, const ChoiceItem& item) {
    check_choice_item(item);
    const size_t n = static_cast<size_t>(model.config().n_positions);
    std::vector<ChoiceScore> out;
    out.reserve(item.choices.size());
    for (size_t i = 0; i < item.choices.size(); ++i) {
        const EncodedPair pair = encode_pair(tokenizer, item.context, item.choices[i]);
        if (pair.continuation.empty())
            throw Error(choice_name(i, item.choices[i]) + " has no token of its own: BPE merged it into the "
                                                          "context's last token",
                        "end the context with a separator the choice cannot merge with, such as a space");
        if (pair.context.size() + pair.continuation.size() > n)
            throw Error(choice_name(i, item.choices[i]) + ": the context's " + std::to_string(pair.context.size()) +
                            " tokens and its " + std::to_string(pair.continuation.size()) +
                            " exceed the model's context of " + std::to_string(n),
                        "shorten the context (lm-eval would cut its left end; this refuses)");
        out.push_back({score_continuation(model, pair.context, pair.continuation), choice_length(item.choices[i])});
    }
    return out;
}

std::string to_string(ChoiceRule rule) {
    switch (rule) {
        case ChoiceRule::Acc: return "acc";
        case ChoiceRule::AccNorm: return "acc_norm";
        case ChoiceRule::AccBytes: return "acc_bytes";
    }
    return "?";
}

// lm_eval/api/task.py, ConfigurableTask.process_results: lls, lls / completion_len (len(choice),
// characters), lls / byte_length (len(choice.encode("utf-8"))).
double choice_value(const ChoiceScore& score, ChoiceRule rule) {
    switch (rule) {
        case ChoiceRule::Acc: return score.score.logprob;
        case ChoiceRule::AccNorm: return score.score.logprob / static_cast<double>(score.length.chars);
        case ChoiceRule::AccBytes: return score.score.logprob / static_cast<double>(score.length.bytes);
    }
    return score.score.logprob;
}

int pick_choice(const std::vector<ChoiceScore>& scores, ChoiceRule rule) {
    if (scores.empty()) throw Error("there is no choice to pick from", "score at least one choice");
    size_t best = 0;
    for (size_t i = 1; i < scores.size(); ++i)
        if (choice_value(scores[i], rule) > choice_value(scores[best], rule)) best = i;  // ties: the first (np.argmax)
    return static_cast<int>(best);
}

void Accuracy::add(bool hit) {
    correct += hit ? 1 : 0;
    ++items;
}

double Accuracy::value() const { return items == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(items); }

// lm_eval/api/metrics.py: mean_stderr(arr) = sample_stddev(arr) / sqrt(len(arr)), sample_stddev
// dividing by len(arr) - 1; lm_eval/evaluator_utils.py reports "N/A" for a single item.
std::optional<double> Accuracy::standard_error() const {
    if (items < 2) return std::nullopt;
    const double n = static_cast<double>(items), mu = value();
    const double squares = static_cast<double>(correct) * (1 - mu) * (1 - mu) +
                           static_cast<double>(items - correct) * mu * mu;
    return std::sqrt(squares / (n - 1)) / std::sqrt(n);
}

double chance_accuracy(const std::vector<ChoiceItem>& items) {
    if (items.empty()) return 0.0;
    double sum = 0;
    for (const ChoiceItem& item : items) sum += 1.0 / static_cast<double>(item.choices.size());
    return sum / static_cast<double>(items.size());
}

TaskResult evaluate_choice_task(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<ChoiceItem>& items) {
    TaskResult r;
    r.by_rule.resize(std::size(kChoiceRules));
    for (const ChoiceItem& item : items) {
        r.scores.push_back(score_choices(model, tokenizer, item));
        for (size_t i = 0; i < std::size(kChoiceRules); ++i)
            r.by_rule[i].add(pick_choice(r.scores.back(), kChoiceRules[i]) == item.answer);
        r.without_logprobs.add(item.answer == 0);  // equal sums: np.argmax's first choice
    }
    r.chance = chance_accuracy(items);
    return r;
}

}  // namespace decodebook

