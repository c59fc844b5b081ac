// Chapter 09, parts 1 and 2: a regex compiled to a DFA over bytes, printed as a table; then the
// tokens each state allows, on Outlines' toy vocabulary and on the model under a JSON schema.
#include <cstdio>
#include <string>
#include <vector>

#include "chapter09.hpp"
#include "decodebook/constrain/regex.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"

using namespace decodebook;

namespace chapter09 {
namespace {

std::string byte_text(int b) {
    if (b == ' ') return "' '";
    if (b > ' ' && b < 0x7F) return std::string("'") + static_cast<char>(b) + "'";
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    return buf;
}

// A state's edges as runs of consecutive bytes with the same target: "'1'-'9' -> 3".
struct Edge {
    int first, last, to;
    std::string label() const { return first == last ? byte_text(first) : byte_text(first) + "-" + byte_text(last); }
};

std::vector<Edge> edges_of(const Dfa& dfa, int32_t state) {
    std::vector<Edge> out;
    for (int b = 0; b < 256; ++b) {
        const int32_t to = dfa.step(state, static_cast<uint8_t>(b));
        if (to == Dfa::kDead) continue;
        if (!out.empty() && out.back().last == b - 1 && out.back().to == to)
            out.back().last = b;
        else
            out.push_back({b, b, to});
    }
    return out;
}

std::string state_name(int32_t s) { return s == Dfa::kDead ? "dead" : std::to_string(s); }

// A JSON token that spans two of the grammar's elements: a structural character and more.
bool spans_elements(const std::string& bytes) {
    return bytes.size() > 1 && bytes.find_first_of("{}[]:,\"") != std::string::npos;
}

}  // namespace

void draw_dfa(const std::string& pattern, CsvRows& csv) {
    const RegexBuild b = build_regex(pattern);
    const Dfa& dfa = b.dfa;
    std::printf("'%s' compiles to a Thompson NFA of %zu states over %zu byte classes; the subset construction makes "
                "%zu DFA states, %zu of them live; minimised: %zu states.\n",
                pattern.c_str(), b.nfa_states, b.byte_classes, b.subset_states, b.live_states, dfa.states());
    std::printf("  %-10s %-10s %s\n", "state", "accepts", "edges (every other byte goes to dead, Dfa::kDead)");
    for (int32_t s = 0; s < static_cast<int32_t>(dfa.states()); ++s) {
        std::string edges;
        for (const Edge& e : edges_of(dfa, s)) {
            edges += (edges.empty() ? "" : "   ") + e.label() + " -> " + std::to_string(e.to);
            csv.push_back({"dfa_edge", static_cast<double>(s), static_cast<double>(e.to), e.label()});
        }
        const bool accepts = dfa.accepting[static_cast<size_t>(s)];
        csv.push_back({"dfa_state", static_cast<double>(s), accepts ? 1.0 : 0.0, s == dfa.start ? "start" : ""});
        std::printf("  %-10s %-10s %s\n", (std::to_string(s) + (s == dfa.start ? " (start)" : "")).c_str(),
                    accepts ? "yes" : "no", edges.empty() ? "(none: the output may only end)" : edges.c_str());
    }
    for (const std::string text : {" 120", " 012", "120"}) {
        std::string path = "0";
        int32_t s = dfa.start;
        for (char c : text) {
            s = dfa.walk(s, std::string(1, c));
            path += " -" + byte_text(static_cast<unsigned char>(c)) + "-> " + state_name(s);
            if (s == Dfa::kDead) break;
        }
        std::printf("  walk \"%s\": %s: %s\n", text.c_str(), path.c_str(),
                    dfa.matches(text) ? "a match" : "not a match");
    }
}

std::vector<int> allowed_step_by_step(const Session& s, CsvRows& csv) {
    // dottxt-ai/outlines-core src/index.rs, test index_from_regex: its regex and vocabulary
    const std::vector<std::string> toy{"blah", "1a", "2", "0", "<eos>"};
    TokenIndex index(compile_regex("0|[1-9][0-9]*"), Vocabulary{toy, {4}}, {4});
    std::printf("Outlines' index_from_regex: '0|[1-9][0-9]*' over the tokens {\"blah\", \"1a\", \"2\", \"0\"} and an EOS.\n");
    std::printf("  %-24s", "state");
    for (const std::string& t : toy) std::printf(" %-8s", ("\"" + t + "\"").c_str());
    std::printf(" allowed\n");
    const int32_t start = index.dfa().start;
    for (const auto& [name, state] : {std::pair<std::string, int32_t>{"start", start},
                                      {"after \"2\"", index.next_state(start, 2)},
                                      {"after \"0\"", index.next_state(start, 3)}}) {
        std::printf("  %-24s", (name + " (" + std::to_string(state) + (index.accepting(state) ? ", accepts)" : ")")).c_str());
        for (int id = 0; id < 4; ++id) std::printf(" %-8s", ("-> " + state_name(index.next_state(state, id))).c_str());
        std::printf(" %-8s", index.accepting(state) ? "ok" : "no");
        std::string allowed;
        for (int id : index.allowed(state)) allowed += (allowed.empty() ? "" : ", ") + ("\"" + toy[static_cast<size_t>(id)] + "\"");
        std::printf(" {%s}\n", allowed.c_str());
    }
    std::printf("  (\"blah\" dies at 'b', \"1a\" at 'a'; the EOS is never walked: it is allowed where the state accepts.)\n");

    const auto c = constraint_for(s, "json_schema(person)", person_regex(false));
    GenerationConfig config = s.config;
    config.regex.clear(), config.choice.clear(), config.json_schema.clear();
    config.do_sample = false;
    config.constraint = c;
    const Generation g = generate_cached(s.model, s.tokenizer, s.prompt, config, make_sampler(config, config.seed));
    TokenIndex& idx = *c->index;
    const int V = idx.vocabulary_size();
    std::printf("\nOn the model (%s tokens), greedy under the JSON schema %s\n", with_commas(static_cast<uint64_t>(V)).c_str(),
                kPersonSchema);
    std::string first;
    int shown = 0;
    for (int id : idx.allowed(idx.dfa().start)) {
        if (shown++ >= 10) continue;
        if (!first.empty()) first += ' ';
        first += visible_token(s.tokenizer.token_bytes(id));
    }
    const size_t at_start = idx.allowed(idx.dfa().start).size();
    std::printf("The start state allows %zu token%s: %s%s\n", at_start, at_start == 1 ? "" : "s", first.c_str(),
                shown > 10 ? " ..." : "");
    std::printf("  %-5s %-7s %-18s %-16s %s\n", "step", "state", "allowed", "chosen", "");
    int spanning = 0;
    std::string spanning_tokens;
    for (size_t i = 0; i < g.ids.size(); ++i) {
        const int32_t state = idx.state_after(std::span<const int>(g.ids.data(), i));
        const size_t allowed = idx.allowed(state).size();
        const int id = g.ids[i];
        const std::string bytes = s.tokenizer.is_special(id) ? "" : s.tokenizer.token_bytes(id);
        const bool spans = spans_elements(bytes);
        if (spans) {
            ++spanning;
            if (!spanning_tokens.empty()) spanning_tokens += ' ';
            spanning_tokens += visible_token(bytes);
        }
        csv.push_back({"allowed_greedy", static_cast<double>(i), static_cast<double>(allowed), ""});
        std::printf("  %-5zu %-7d %-18s %-16s %s\n", i, state,
                    (with_commas(allowed) + " of " + with_commas(static_cast<uint64_t>(V))).c_str(),
                    visible_token(s.tokenizer.decode({id})).c_str(),
                    spans ? "spans two elements" : (s.tokenizer.is_special(id) ? "EOS: allowed only here, where the object is whole" : ""));
    }
    std::printf("Output: %s (%s, %zu tokens; %d of them span two JSON elements: %s)\n",
                one_line(text_of(s.tokenizer, g.ids)).c_str(), to_string(g.finish_reason).c_str(), g.ids.size(), spanning,
                spanning_tokens.c_str());
    return g.ids;
}

}  // namespace chapter09
