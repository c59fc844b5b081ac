// Chapter 09, parts 3 and 4: N sampled outputs with and without a constraint (how many are
// valid, and how much the model itself believes what it was made to write, with the first few
// shown as text); then JSON's whitespace, bounded against unbounded, sampled hot.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapter09.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/regex.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"

using namespace decodebook;

namespace chapter09 {
namespace {

// What n seeded runs of one configuration wrote, judged by the constraint's own language.
struct Outcome {
    int runs = 0;
    int valid = 0;         // the whole output is in the language (and, for JSON, parses)
    int starts_valid = 0;  // some prefix of the output is in the language
    int hit_limit = 0;     // stopped by max_new_tokens
    int cut = 0;           // stopped by max_new_tokens before the output was valid
    long tokens = 0;
    long bytes = 0, whitespace = 0;
    double logp = 0;  // the model's own log-probability of each token written (before any mask), summed

    double rate(int k) const { return runs ? 100.0 * k / runs : 0.0; }
    double mean_tokens() const { return runs ? static_cast<double>(tokens) / runs : 0.0; }
    double logp_per_token() const { return tokens ? logp / static_cast<double>(tokens) : 0.0; }
};

bool parses_as_json(const std::string& text) {
    return nlohmann::json::accept(text);  // nlohmann's parser: a check independent of our automaton
}

// The model's own log-probability of each token a run wrote (before any mask), summed: a
// probability that underflowed to 0 counts as float's smallest normal, not as -infinity.
double run_logp(const Generation& g) {
    double logp = 0;
    for (const StepRecord& step : g.steps) logp += std::log(std::max(step.probability, 1.17549435e-38f));
    return logp;
}

// A run is valid when its whole text is in the language (and, for JSON, nlohmann parses it).
bool is_valid(const Dfa& language, bool json, const std::string& text) {
    return language.matches(text) && (!json || parses_as_json(text));
}

bool starts_with_match(const Dfa& dfa, const std::string& text) {
    int32_t state = dfa.start;
    for (char c : text) {
        state = dfa.walk(state, std::string(1, c));
        if (state == Dfa::kDead) return false;
        if (dfa.accepting[static_cast<size_t>(state)]) return true;
    }
    return false;
}

GenerationConfig with_constraint(GenerationConfig config, std::shared_ptr<Constraint> c) {
    config.regex.clear(), config.choice.clear(), config.json_schema.clear();  // ours replaces the command line's
    config.constraint = std::move(c);
    return config;
}

// n seeded samples of one configuration (seeds 0 .. n - 1), decoded 50 rows to a batch: chapter
// 07's batched loop, several times faster here than one row at a time.
std::vector<Generation> sample_many(const Session& s, const GenerationConfig& config, int n) {
    constexpr int kRows = 50;
    std::vector<Generation> out;
    for (int first = 0; first < n; first += kRows) {
        std::vector<Sampler> samplers;
        for (int seed = first; seed < std::min(n, first + kRows); ++seed)
            samplers.push_back(make_sampler(config, static_cast<uint64_t>(seed)));
        const std::vector<std::vector<int>> prompts(samplers.size(), s.prompt);
        for (Generation& g : generate_batch(s.model, &s.tokenizer, prompts, config, samplers)) out.push_back(std::move(g));
    }
    return out;
}

// The runs judged by a constraint's language (and, for JSON, by nlohmann's parser).
Outcome judge(const Tokenizer& tok, const std::vector<Generation>& runs, const Dfa& language, bool json) {
    Outcome o;
    for (const Generation& g : runs) {
        const std::string text = text_of(tok, g.ids);
        ++o.runs;
        const bool valid = is_valid(language, json, text);
        o.valid += valid;
        o.cut += !valid && g.finish_reason == FinishReason::Length;
        o.starts_valid += starts_with_match(language, text);
        o.hit_limit += g.finish_reason == FinishReason::Length;
        o.tokens += static_cast<long>(g.ids.size());
        o.bytes += static_cast<long>(text.size());
        for (char c : text) o.whitespace += c == ' ' || c == '\n' || c == '\t' || c == '\r';
        o.logp += run_logp(g);
    }
    return o;
}

// Part 3 shows the first runs of each row as text, constrained beside free from the same seed:
// whether each is valid, and what the model thought of it, token by token on average.
constexpr int kShownSamples = 3;

void print_samples(const Tokenizer& tok, const std::vector<Generation>& masked, const std::vector<Generation>& free,
                   const Dfa& language, bool json) {
    const size_t shown = std::min({static_cast<size_t>(kShownSamples), masked.size(), free.size()});
    std::printf("    %-8s %-12s %-7s %-14s %s\n", "sample", "decoding", "valid", "log p / token", "text");
    for (size_t i = 0; i < shown; ++i)
        for (const auto& [what, g] : {std::pair<const char*, const Generation&>{"constrained", masked[i]}, {"free", free[i]}}) {
            const std::string text = text_of(tok, g.ids);
            const double per_token = g.ids.empty() ? 0.0 : run_logp(g) / static_cast<double>(g.ids.size());
            std::printf("    %-8s %-12s %-7s %-14.2f '%s'\n", ("seed " + std::to_string(i)).c_str(), what,
                        is_valid(language, json, text) ? "yes" : "no", per_token, one_line(to_valid_utf8(text)).c_str());
        }
}

}  // namespace

void valid_and_distortion(const Session& s, int n, CsvRows& csv) {
    struct Case {
        std::string name;
        std::shared_ptr<Constraint> constraint;
        bool json;
    };
    std::vector<Case> cases{{"regex: a date", constraint_for(s, "date", kDateRegex), false},
                            {"JSON schema: a person", constraint_for(s, "person", person_regex(false)), true}};
    if (s.config.constraint)  // the command line's --regex, --choice or --json-schema
        cases.push_back({"yours: " + s.config.constraint->name, s.config.constraint,
                         constraint_kind(s.config) == "json_schema"});
    constexpr size_t kNameWidth = 30;  // the table's first column; a longer name is given under the row
    GenerationConfig sampled = s.config;
    sampled.do_sample = true;
    std::printf("%d seeded samples per row at T = %.2f, up to %d tokens, prompt '%s'. 'valid': the whole output is in "
                "the constraint's language (JSON also parsed by nlohmann); 'starts valid': some prefix is. "
                "'log p / token': the model's own log-probability of what it wrote, before any mask, in nats. Under "
                "each row, its first %d samples as text, constrained beside free from the same seed.\n",
                n, static_cast<double>(sampled.temperature), sampled.max_new_tokens,
                one_line(s.tokenizer.decode(s.prompt)).c_str(), std::min(kShownSamples, n));
    std::printf("  %-*s %-12s %-8s %-13s %-14s %-12s %s\n", static_cast<int>(kNameWidth), "constraint", "decoding", "valid",
                "starts valid", "hit the limit", "mean tokens", "log p / token");
    const std::vector<Generation> free_runs = sample_many(s, with_constraint(sampled, nullptr), n);  // judged by each case
    int cut = 0;  // constrained runs that max_new_tokens stopped before the output was whole
    for (size_t k = 0; k < cases.size(); ++k) {
        const Case& c = cases[k];
        const Dfa& language = c.constraint->index->dfa();
        const std::vector<Generation> masked_runs = sample_many(s, with_constraint(sampled, c.constraint), n);
        const Outcome masked = judge(s.tokenizer, masked_runs, language, c.json);
        const Outcome free = judge(s.tokenizer, free_runs, language, c.json);
        cut += masked.cut;
        const bool fits = c.name.size() <= kNameWidth;  // else the row says "yours" and the name follows it
        for (const auto& [what, o] : {std::pair<const char*, const Outcome&>{"constrained", masked}, {"free", free}}) {
            std::printf("  %-*s %-12s %-8s %-13s %-14d %-12.1f %.2f\n", static_cast<int>(kNameWidth),
                        what == std::string("free") ? "" : (fits ? c.name.c_str() : "yours (named below)"), what,
                        (std::to_string(o.valid) + "/" + std::to_string(o.runs)).c_str(),
                        (std::to_string(o.starts_valid) + "/" + std::to_string(o.runs)).c_str(), o.hit_limit,
                        o.mean_tokens(), o.logp_per_token());
            csv.push_back({std::string("logp_") + what, static_cast<double>(k), o.logp_per_token(), c.name});
        }
        if (!fits) std::printf("  %-*s %s\n", static_cast<int>(kNameWidth), "", c.name.c_str());
        std::printf("  %-*s the constrained text costs %.2f nats per token more: the model is %.1fx less sure of "
                    "each token it was made to write\n",
                    static_cast<int>(kNameWidth), "", free.logp_per_token() - masked.logp_per_token(),
                    std::exp(free.logp_per_token() - masked.logp_per_token()));
        print_samples(s.tokenizer, masked_runs, free_runs, language, c.json);
    }
    if (cut > 0)
        std::printf("%d constrained runs are not valid: max_new_tokens (%d) stopped them before the output was whole. "
                    "The mask keeps every prefix inside the language; it cannot make a budget long enough.\n",
                    cut, sampled.max_new_tokens);
}

void whitespace_runaway(const Session& s, int n, CsvRows& csv) {
    GenerationConfig hot = s.config;
    hot.do_sample = true;
    hot.temperature = 1.5f;
    const std::string bounded = person_regex(false), unbounded = person_regex(true);
    std::printf("The person schema twice: whitespace between JSON tokens as the library writes it, [ \\t\\n\\r]? (at most one "
                "character), and as llama.cpp's converter wrote it before PR #7866, [ \\t\\n\\r]*. %d sample%s each at "
                "T = %.1f, up to %d tokens.\n",
                n, n == 1 ? "" : "s", static_cast<double>(hot.temperature), hot.max_new_tokens);
    std::printf("  %-24s %-8s %-14s %-12s %s\n", "whitespace", "valid", "hit the limit", "mean tokens", "whitespace share of the bytes");
    for (const auto& [name, regex, series] :
         {std::tuple<const char*, const std::string&, const char*>{"bounded [ \\t\\n\\r]?", bounded, "ws_bounded"},
          {"unbounded [ \\t\\n\\r]*", unbounded, "ws_unbounded"}}) {
        const auto c = constraint_for(s, name, regex);
        const std::vector<Generation> runs = sample_many(s, with_constraint(hot, c), n);
        const Outcome o = judge(s.tokenizer, runs, c->index->dfa(), true);
        std::printf("  %-24s %-8s %-14s %-12.1f %.0f %%\n", name, (std::to_string(o.valid) + "/" + std::to_string(o.runs)).c_str(),
                    (std::to_string(o.hit_limit) + "/" + std::to_string(o.runs)).c_str(), o.mean_tokens(),
                    o.bytes ? 100.0 * static_cast<double>(o.whitespace) / static_cast<double>(o.bytes) : 0.0);
        for (size_t i = 0; i < runs.size(); ++i)
            csv.push_back({series, static_cast<double>(i), static_cast<double>(runs[i].ids.size()), ""});
    }
}

}  // namespace chapter09
