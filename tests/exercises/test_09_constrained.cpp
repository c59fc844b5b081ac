// Graded tests for chapter 09's exercises (see exercises/manifest.json). The cases are facts from
// the engines' own tests (the source is named beside each) or worked by hand; the large ones hold
// a student's answer against the library's (Dfa::walk, allowed_tokens), which the engine tests
// (tests/test_constraint.cpp, tests/test_regex.cpp) hold against PCRE2 and the peers.
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): patterns, states and tokens drawn at random, their answers
// from the library's Dfa::walk and allowed_tokens in this test program, which never runs the
// student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/constrain/json_schema.hpp"
#include "decodebook/constrain/regex.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Ids = std::vector<int>;

namespace {


std::string state_text(int32_t s) { return s == Dfa::kDead ? "kDead" : std::to_string(s); }

// The stubs' DFA: " (0|[1-9][0-9]*)": 0 --' '--> 1, 1 --'0'--> 2, 1 --'1'..'9'--> 3, 3 --'0'..'9'--> 3.
const Dfa& number_dfa() {
    static const Dfa dfa = compile_regex(" (0|[1-9][0-9]*)");
    return dfa;
}

// The person schema of chapter 09 (271 states), as the chapter compiles it.
const Dfa& person_dfa() {
    static const Dfa dfa = compile_regex(json_schema_regex(nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},)"
        R"( "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]})")));
    return dfa;
}

// ------------------------------------------------------------------------------------------ 09.1

void check_walk(const Dfa& dfa, const std::string& pattern, int32_t state, const std::string& token, int32_t expected,
                const std::string& why) {
    FEEDBACK("input: the DFA of " << pattern << " (" << dfa.states() << " states), state " << state_text(state)
                                  << ", token " << golden::c_literal(token));
    FEEDBACK(why);
    const int32_t found = your_walk_token(dfa, state, token);
    FEEDBACK("expected: " << state_text(expected) << "\nfound:    " << state_text(found));
    CHECK(found == expected);
}

using feedback::check_refused;

}  // namespace

TEST_CASE("ex09.1 the stub's worked cases", "[ex09.1]") {
    const Dfa& d = number_dfa();
    const std::string p = "\" (0|[1-9][0-9]*)\"";
    REQUIRE(d.states() == 4);
    check_walk(d, p, 0, " 12", 3, "' ' -> 1, '1' -> 3, '2' -> 3");
    check_walk(d, p, 0, " 0", 2, "' ' -> 1, '0' -> 2");
    check_walk(d, p, 2, "5", Dfa::kDead, "after \"0\" no digit may follow");
    check_walk(d, p, 0, "12", Dfa::kDead, "the space must come first");
    check_walk(d, p, 3, "", 3, "an empty token walks nowhere");
    check_walk(d, p, Dfa::kDead, " 1", Dfa::kDead, "kDead stays kDead");
    check_walk(d, p, 1, "120", 3, "the walk goes on through every byte");
    check_walk(d, p, 1, "0 ", Dfa::kDead, "the first byte is fine, the second dies");
}

TEST_CASE("ex09.1 Outlines' final-state walk", "[ex09.1]") {
    // dottxt-ai/outlines-core tests/test_guide.py, test_regex_final_state_walk: `\n(\.\n)?`\n walked
    // token by token: ` \n . \n ` \n ends in the accepting state; ` \n ` \n too (the group is optional).
    const std::string pattern = "`\\n(\\.\\n)?`\\n";
    const Dfa dfa = compile_regex(pattern);
    for (const std::vector<std::string>& tokens : {std::vector<std::string>{"`", "\n", ".", "\n", "`", "\n"},
                                                  std::vector<std::string>{"`", "\n", "`", "\n"}}) {
        int32_t expected = dfa.start;
        std::vector<int32_t> yours;
        std::string walked;
        for (const std::string& t : tokens) {
            expected = dfa.walk(expected, t);
            const int32_t before = yours.empty() ? dfa.start : yours.back();
            yours.push_back(your_walk_token(dfa, before, t));
            walked += golden::c_literal(t) + " ";
            FEEDBACK("input: the DFA of " << pattern << ", the tokens " << walked << "walked one by one from the start");
            FEEDBACK("expected: state " << state_text(expected) << "\nfound:    state " << state_text(yours.back()));
            REQUIRE(yours.back() == expected);
        }
        CHECK(dfa.accepting[static_cast<size_t>(yours.back())]);
    }
    check_walk(dfa, pattern, dfa.start, "`\n`\n`", Dfa::kDead, "one backtick too many: the match was already whole");
}

TEST_CASE("ex09.1 a token may end inside a UTF-8 character", "[ex09.1]") {
    // Byte-level BPE splits "é" (C3 A9) into two tokens; a DFA over bytes walks each half. A byte
    // of 0x80 or more is a negative char: it must still index the table as 0..255.
    const std::string pattern = "caf.";
    const Dfa dfa = compile_regex(pattern);
    const int32_t after_caf = dfa.walk(dfa.start, "caf"), half = dfa.walk(after_caf, "\xC3");
    REQUIRE(half != Dfa::kDead);
    check_walk(dfa, pattern, after_caf, "\xC3", half, "the first byte of \"é\" begins a character '.' takes");
    check_walk(dfa, pattern, half, "\xA9", dfa.walk(half, "\xA9"), "the second byte completes \"é\": accepting");
    check_walk(dfa, pattern, after_caf, "\xA9", Dfa::kDead, "a continuation byte cannot begin a character");
    check_walk(dfa, pattern, after_caf, "\xFF", Dfa::kDead, "0xFF is never UTF-8");
    check_walk(dfa, pattern, dfa.start, "caf\xC3\xA9", dfa.walk(dfa.start, "caf\xC3\xA9"), "the whole word in one token");
}

TEST_CASE("ex09.1 every token of the model from every state of a JSON schema", "[ex09.1]") {
    // Chapter 09's person schema (271 states) and the model's 2,048 tokens: 555,008 walks, all in
    // one sandboxed child, each against the library's Dfa::walk.
    const Dfa& dfa = person_dfa();
    const Vocabulary v = golden::tokenizer().vocabulary();
    const std::vector<int32_t> found = sandbox::run<std::vector<int32_t>>("your_walk_token", [&] {
        std::vector<int32_t> out;
        for (int32_t s = 0; s < static_cast<int32_t>(dfa.states()); ++s)
            for (const std::string& bytes : v.bytes) out.push_back(your_walk_token(dfa, s, bytes));
        return out;
    });
    REQUIRE(found.size() == dfa.states() * v.bytes.size());
    size_t wrong = 0, first = found.size();
    for (size_t i = 0; i < found.size(); ++i) {
        const int32_t s = static_cast<int32_t>(i / v.bytes.size());
        if (found[i] != dfa.walk(s, v.bytes[i % v.bytes.size()])) {
            ++wrong;
            first = std::min(first, i);
        }
    }
    if (wrong) {
        const int32_t s = static_cast<int32_t>(first / v.bytes.size());
        const std::string& t = v.bytes[first % v.bytes.size()];
        FEEDBACK("input: the person schema's DFA, state " << s << ", token " << first % v.bytes.size() << " "
                                                         << golden::c_literal(t) << " (the first of " << wrong << " wrong walks)");
        FEEDBACK("expected: " << state_text(dfa.walk(s, t)) << "\nfound:    " << state_text(found[first]));
        CHECK(wrong == 0);
    } else {
        CHECK(wrong == 0);
    }
}

TEST_CASE("ex09.1 a state the DFA does not have is refused", "[ex09.1]") {
    const Dfa& d = number_dfa();
    check_refused([&] { return your_walk_token(d, 4, " 1"); }, "the DFA of \" (0|[1-9][0-9]*)\" (4 states), state 4",
                  "states are 0 .. 3; reading next[256 * 4 + byte] would read past the table");
    check_refused([&] { return your_walk_token(d, 7, ""); }, "the same DFA, state 7, the empty token",
                  "refused even when there is nothing to walk");
    check_refused([&] { return your_walk_token(d, -2, " 1"); }, "the same DFA, state -2",
                  "only -1 (Dfa::kDead) is a negative state");
}

namespace {

// ---------------------------------------------------------------- the drawn cases' automata

std::string draw_regex(Rng& rng, int depth);

// One atom: a literal (a, b, 0, x, a space written \x20 so that a message never breaks a pattern
// at it, an escaped dot, é as two bytes), a class ([ab], [0-9], [^a], ., \d) or, at depths 0
// and 1, a group.
std::string draw_atom(Rng& rng, int depth) {
    static const std::vector<std::string> atoms{"a", "b", "0", "x", "\\x20", "\\.",
                                                "\xC3\xA9", "[ab]", "[0-9]", "[^a]", ".", "\\d"};
    if (depth < 2 && rng.next_u64() % 5 == 0) return "(" + draw_regex(rng, depth + 1) + ")";
    return atoms[rng.next_u64() % atoms.size()];
}

// An atom, quantified by ?, *, +, {m} or {m,n} half the time.
std::string draw_piece(Rng& rng, int depth) {
    const std::string atom = draw_atom(rng, depth);
    switch (rng.next_u64() % 10) {
        case 0: return atom + "?";
        case 1: return atom + "*";
        case 2: return atom + "+";
        case 3: return atom + "{" + std::to_string(drawn::between(rng, 1, 3)) + "}";
        case 4: {
            const int m = drawn::between(rng, 0, 2);
            return atom + "{" + std::to_string(m) + "," + std::to_string(drawn::between(rng, m, 3)) + "}";
        }
        default: return atom;
    }
}

// 1 to 3 branches (fewer inside groups) of 1 to 4 pieces each.
std::string draw_regex(Rng& rng, int depth) {
    std::string s;
    for (int b = 0, branches = drawn::between(rng, 1, 3 - depth); b < branches; ++b) {
        if (b) s += "|";
        for (int p = 0, pieces = drawn::between(rng, 1, 4); p < pieces; ++p) s += draw_piece(rng, depth);
    }
    return s;
}

// A drawn pattern and its automaton.
struct DrawnDfa {
    std::string pattern;
    Dfa dfa;
};

DrawnDfa draw_dfa(Rng& rng) {
    for (;;) {
        DrawnDfa d;
        d.pattern = draw_regex(rng, 0);
        try {
            d.dfa = compile_regex(d.pattern);
            return d;
        } catch (const Error&) {  // none of this family should be refused; draw another if one is
        }
    }
}

// A state to walk from: kDead one time in 10, one the DFA does not have one time in 20, else any.
int32_t draw_state(Rng& rng, const Dfa& dfa) {
    const uint64_t kind = rng.next_u64() % 20;
    const int32_t n = static_cast<int32_t>(dfa.states());
    if (kind < 2) return Dfa::kDead;
    if (kind == 2) return rng.next_u64() % 2 ? n + drawn::between(rng, 0, 3) : -2 - drawn::between(rng, 0, 3);
    return drawn::between(rng, 0, n - 1);
}

// 0 to `longest` bytes of the patterns' alphabet and beyond (UTF-8 lead and continuation bytes,
// 0xFF, a newline).
std::string pool_bytes(Rng& rng, int longest) {
    static const std::string pool = std::string("ab0x1 .\n") + "\xC3\xA9\x80\xFF";
    std::string t;
    for (int i = 0, n = drawn::between(rng, 0, longest); i < n; ++i) t += pool[rng.next_u64() % pool.size()];
    return t;
}

// 1 to `longest` bytes that stay alive from `state` (a state of `dfa`), one time in 3 with one
// byte of the pool more.
std::string live_bytes(Rng& rng, const Dfa& dfa, int32_t state, int longest) {
    std::string t;
    for (int i = 0, n = drawn::between(rng, 1, longest); i < n; ++i) {
        std::vector<uint8_t> live;
        for (int b = 0; b < 256; ++b)
            if (dfa.step(state, static_cast<uint8_t>(b)) != Dfa::kDead) live.push_back(static_cast<uint8_t>(b));
        if (live.empty()) break;
        const uint8_t b = live[rng.next_u64() % live.size()];
        t += static_cast<char>(b);
        state = dfa.step(state, b);
    }
    return rng.next_u64() % 3 ? t : t + pool_bytes(rng, 1);
}

// A token to walk from `state`: pool bytes, a token of the model, or bytes alive from `state`.
std::string draw_token(Rng& rng, const Dfa& dfa, int32_t state, const Vocabulary& model_vocabulary) {
    const uint64_t kind = rng.next_u64() % 10;
    if (kind < 2) return model_vocabulary.bytes[rng.next_u64() % model_vocabulary.bytes.size()];
    if (kind < 5 || state < 0 || static_cast<size_t>(state) >= dfa.states()) return pool_bytes(rng, 5);
    return live_bytes(rng, dfa, state, 6);
}

// The library's walk, byte by byte: "from state 2: 'a' -> 3, \"\\xC3\" -> 5, 'b' -> kDead".
std::string walk_hint(const Dfa& dfa, int32_t state, const std::string& token) {
    if (state != Dfa::kDead && (state < 0 || static_cast<size_t>(state) >= dfa.states()))
        return "the states are 0 .. " + std::to_string(dfa.states() - 1) +
               " and kDead (-1): refuse any other with decodebook::Error";
    std::string s = "the library's walk from state " + state_text(state) + ":";
    if (state == Dfa::kDead) return s + " kDead stays kDead";
    if (token.empty()) return s + " an empty token stays where it is";
    for (size_t i = 0; i < token.size() && state != Dfa::kDead; ++i) {
        state = dfa.step(state, static_cast<uint8_t>(token[i]));
        s += (i ? ", " : " ") + golden::c_literal(token.substr(i, 1)) + " -> " + state_text(state);
    }
    return s + " (each byte as 0..255; the first kDead ends the walk)";
}

}  // namespace

TEST_CASE("ex09.1 on cases drawn when the test runs", "[ex09.1]") {
    // 30 patterns drawn from a small family (literals, classes, ., groups, ?, *, +, {m}, {m,n},
    // alternation), 10 walks each: from any state, kDead, or one in 20 a state the DFA does not
    // have (refused); tokens of 0 to 5 bytes (UTF-8 halves and 0xFF among them), tokens of the
    // model, and tokens that stay alive from their state. The expected states are the library's
    // Dfa::walk.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const Vocabulary model_vocabulary = golden::tokenizer().vocabulary();
    struct Case {
        size_t dfa = 0;
        int32_t state = 0;
        std::string token;
    };
    std::vector<DrawnDfa> dfas;
    std::vector<Case> cases;
    for (size_t d = 0; d < 30; ++d) {
        dfas.push_back(draw_dfa(rng));
        for (int i = 0; i < 10; ++i) {
            Case c;
            c.dfa = d;
            c.state = draw_state(rng, dfas[d].dfa);
            c.token = draw_token(rng, dfas[d].dfa, c.state, model_vocabulary);
            cases.push_back(c);
        }
    }
    using Found = std::vector<std::tuple<bool, int32_t>>;  // (refused, the state)
    const Found found = sandbox::run<Found>("your_walk_token", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            try {
                out.emplace_back(false, your_walk_token(dfas[c.dfa].dfa, c.state, c.token));
            } catch (const Error&) {
                out.emplace_back(true, 0);
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const Dfa& dfa = dfas[c.dfa].dfa;
        bool refused = false;
        int32_t expected = 0;
        try {
            expected = dfa.walk(c.state, c.token);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const int32_t state = std::get<1>(found[i]);
        const bool same = found_refused == refused && (refused || state == expected);
        const auto answer = [](bool r, int32_t s) { return r ? std::string("decodebook::Error (refused)") : state_text(s); };
        FEEDBACK("a case drawn with seed " << seed << ": the DFA of \"" << dfas[c.dfa].pattern << "\" (" << dfa.states()
                                          << " states), state " << state_text(c.state) << ", token "
                                          << golden::c_literal(c.token));
        FEEDBACK("expected: " << answer(refused, expected) << " (the library's Dfa::walk)\nfound:    "
                              << answer(found_refused, state));
        FEEDBACK((same ? std::string() : "hint: " + walk_hint(dfa, c.state, c.token)));
        REQUIRE(same);
    }
}

// ------------------------------------------------------------------------------------------ 09.2

namespace {

std::string vocabulary_text(const Vocabulary& v) {
    std::string s;
    for (int id = 0; id < v.size(); ++id)
        s += std::to_string(id) + " " + golden::c_literal(v.bytes[static_cast<size_t>(id)]) + (v.is_special(id) ? " (special)" : "") +
             (id + 1 < v.size() ? ", " : "");
    return s;
}

void check_allowed(const Dfa& dfa, const std::string& pattern, int32_t state, const Vocabulary& v, const Ids& eos,
                   const Ids& expected, const std::string& why) {
    FEEDBACK("input: the DFA of " << pattern << ", state " << state_text(state)
                                  << (state >= 0 && dfa.accepting[static_cast<size_t>(state)] ? " (accepting)" : "")
                                  << "\nvocabulary " << vocabulary_text(v) << "\neos_ids " << feedback::list(eos));
    FEEDBACK(why);
    const Ids found = your_allowed_tokens(dfa, state, v, eos);
    FEEDBACK("expected: " << feedback::list(expected) << "\nfound:    " << feedback::list(found));
    CHECK(found == expected);
}


}  // namespace

TEST_CASE("ex09.2 the stub's worked cases", "[ex09.2]") {
    const Dfa& d = number_dfa();
    const std::string p = "\" (0|[1-9][0-9]*)\"";
    const Vocabulary v{{" ", " 1", "0", "12", "1a", "<eos>"}, {5}};
    check_allowed(d, p, 0, v, {5}, {0, 1}, "\" \" -> 1 and \" 1\" -> 3; the others die; state 0 does not accept");
    check_allowed(d, p, 1, v, {5}, {2, 3}, "\"1a\" dies at 'a'; no EOS: state 1 does not accept");
    check_allowed(d, p, 3, v, {5}, {2, 3, 5}, "digits stay in 3, which accepts: the EOS too");
    check_allowed(d, p, 2, v, {5}, {5}, "no digit after \"0\"; the output may end");
    check_allowed(d, p, 3, v, {2}, {2, 3}, "the ordinary token \"0\" is the EOS: in once, since state 3 accepts");
    check_allowed(d, p, 1, v, {2}, {3}, "\"0\" is the EOS and state 1 does not accept: not even as text");
    check_allowed(d, p, Dfa::kDead, v, {5}, {}, "nothing is allowed once the output left the language");
}

TEST_CASE("ex09.2 Outlines' index_from_regex", "[ex09.2]") {
    // dottxt-ai/outlines-core src/index.rs, test index_from_regex: 0|[1-9][0-9]*, {"blah": 0,
    // "1a": 1, "2": 2, "0": 3}, EOS 4: from the start "2" and "0"; after "2" both and the EOS;
    // after "0" only the EOS.
    const std::string p = "0|[1-9][0-9]*";
    const Dfa dfa = compile_regex(p);
    const Vocabulary v{{"blah", "1a", "2", "0", "<eos>"}, {4}};
    check_allowed(dfa, p, dfa.start, v, {4}, {2, 3}, "\"blah\" and \"1a\" die; the start does not accept");
    check_allowed(dfa, p, dfa.walk(dfa.start, "2"), v, {4}, {2, 3, 4}, "after \"2\": more digits, or the end");
    check_allowed(dfa, p, dfa.walk(dfa.start, "0"), v, {4}, {4}, "after \"0\": only the end");
}

TEST_CASE("ex09.2 XGrammar's test_token_operations, step by step", "[ex09.2]") {
    // mlc-ai/xgrammar tests/python/test_grammar_matcher_basic.py, test_token_operations: the
    // allowed tokens before each of { " abc b" : 6 ", " " " "a":true } and after it, on its 15
    // tokens, "</s>" the stop token; tokens that span JSON's elements (":\"", "\"a\":true").
    const golden::TokenOperationsCase& c = golden::xgrammar_token_operations();
    const std::vector<std::string>& tokens = c.tokens;
    const Vocabulary v{tokens, {1}};
    const Dfa dfa = compile_regex(c.regex);
    auto ids_of = [&](const std::vector<std::string>& ts) {
        Ids ids;
        for (const std::string& t : ts) ids.push_back(static_cast<int>(std::find(tokens.begin(), tokens.end(), t) - tokens.begin()));
        std::sort(ids.begin(), ids.end());
        return ids;
    };
    const auto& input = c.input;
    const auto& expected = c.expected;
    int32_t state = dfa.start;
    std::string so_far;
    for (size_t step = 0; step < expected.size(); ++step) {
        check_allowed(dfa, "XGrammar's JSON (depth 2)", state, v, {1}, ids_of(expected[step]),
                      "after the text " + golden::c_literal(so_far) + " (step " + std::to_string(step) + ")");
        if (step < input.size()) {
            so_far += input[step];
            state = dfa.walk(state, input[step]);
        }
    }
}

TEST_CASE("ex09.2 every state of a JSON schema on the model's vocabulary", "[ex09.2]") {
    // Chapter 09's person schema: the 271 states' sets over the model's 2,048 tokens (its EOS
    // special), all in one sandboxed child, each against the library's allowed_tokens.
    const Dfa& dfa = person_dfa();
    const Vocabulary v = golden::tokenizer().vocabulary();
    const Ids eos{golden::model().config().eos_token_id};
    const std::vector<Ids> found = sandbox::run<std::vector<Ids>>("your_allowed_tokens", [&] {
        std::vector<Ids> out;
        for (int32_t s = 0; s < static_cast<int32_t>(dfa.states()); ++s) out.push_back(your_allowed_tokens(dfa, s, v, eos));
        return out;
    });
    REQUIRE(found.size() == dfa.states());
    for (int32_t s = 0; s < static_cast<int32_t>(dfa.states()); ++s) {
        const Ids expected = allowed_tokens(dfa, s, v, eos);
        if (found[static_cast<size_t>(s)] == expected) continue;
        FEEDBACK("input: the person schema's DFA, state " << s << (dfa.accepting[static_cast<size_t>(s)] ? " (accepting)" : "")
                                                         << ", the model's vocabulary, eos_ids " << feedback::list(eos));
        FEEDBACK("expected: " << expected.size() << " ids " << feedback::list(expected) << "\nfound:    "
                              << found[static_cast<size_t>(s)].size() << " ids " << feedback::list(found[static_cast<size_t>(s)]));
        CHECK(found[static_cast<size_t>(s)] == expected);
        return;  // the first state that differs says enough
    }
    CHECK(found.back() == allowed_tokens(dfa, static_cast<int32_t>(dfa.states()) - 1, v, eos));
}

TEST_CASE("ex09.2 special and empty tokens are never text, repeated EOS ids count once", "[ex09.2]") {
    const std::string p = "a+";
    const Dfa dfa = compile_regex(p);
    const Vocabulary v{{"a", "", "aa", "a<x>", "<eos>"}, {3, 4}};
    check_allowed(dfa, p, dfa.start, v, {4}, {0, 2},
                  "\"a<x>\" is special (its bytes are a name, never text) and \"\" walks nowhere");
    check_allowed(dfa, p, dfa.walk(dfa.start, "a"), v, {4, 4}, {0, 2, 4}, "the EOS listed twice is allowed once");
}

TEST_CASE("ex09.2 bad input is refused", "[ex09.2]") {
    const Dfa& d = number_dfa();
    const Vocabulary v{{" ", " 1", "0", "<eos>"}, {3}};
    check_refused([&] { return feedback::list(your_allowed_tokens(d, 4, v, Ids{3})); },
                  "the DFA of \" (0|[1-9][0-9]*)\" (4 states), state 4", "states are 0 .. 3");
    check_refused([&] { return feedback::list(your_allowed_tokens(d, 0, v, Ids{4})); }, "eos_ids [4], 4 tokens",
                  "an EOS id outside the vocabulary");
    check_refused([&] { return feedback::list(your_allowed_tokens(d, 0, v, Ids{-1})); }, "eos_ids [-1]",
                  "an EOS id outside the vocabulary");
    check_refused([&] { return feedback::list(your_allowed_tokens(d, Dfa::kDead, v, Ids{9})); }, "state kDead, eos_ids [9]",
                  "the EOS ids are checked whatever the state");
}

namespace {

// Why the library allows `id` in `state` or not, in words.
std::string allowed_reason(const Dfa& dfa, int32_t state, const Vocabulary& v, const Ids& eos, int id) {
    const std::string at = "id " + std::to_string(id) + " " + golden::c_literal(v.bytes[static_cast<size_t>(id)]) + ": ";
    if (std::find(eos.begin(), eos.end(), id) != eos.end())
        return at + "an EOS id, allowed exactly when the state accepts (state " + state_text(state) +
               (dfa.accepting[static_cast<size_t>(state)] ? " does" : " does not") + "), and never walked as text";
    if (v.is_special(id)) return at + "a special token: never text, never allowed";
    if (v.bytes[static_cast<size_t>(id)].empty()) return at + "an empty token walks nowhere: never allowed";
    const int32_t to = dfa.walk(state, v.bytes[static_cast<size_t>(id)]);
    return at + "its bytes walk from state " + state_text(state) + " to " + state_text(to) +
           (to == Dfa::kDead ? ": not allowed" : ", a live state: allowed");
}

// The first id on which the two lists differ, explained.
std::string allowed_hint(const Dfa& dfa, int32_t state, const Vocabulary& v, const Ids& eos, bool refused,
                         const Ids& expected, const Ids& found) {
    if (refused)
        return "an EOS id outside 0 .. V-1, or a state that is neither kDead nor one of the DFA's, is refused with "
               "decodebook::Error (the EOS ids first, whatever the state)";
    if (state == Dfa::kDead) return "nothing is allowed in kDead";
    for (int id = 0; id < v.size(); ++id) {
        const bool e = std::find(expected.begin(), expected.end(), id) != expected.end();
        const bool f = std::find(found.begin(), found.end(), id) != found.end();
        if (e != f) return allowed_reason(dfa, state, v, eos, id);
    }
    return "the ids ascending, each once (an EOS id listed twice is allowed once)";
}

}  // namespace

TEST_CASE("ex09.2 on cases drawn when the test runs", "[ex09.2]") {
    // 20 patterns of the family ex09.1's drawn cases use, each with a vocabulary of 4 to 12
    // tokens (empty ones, specials, tokens that walk some way into the pattern, bytes beyond
    // it, tokens of the model) and 0 to 2 EOS ids (an ordinary or special token, repeats
    // allowed), in 8 states each: any state (the vocabulary's live tokens drawn from those
    // states), kDead, or one the DFA does not have (refused); one case in 20 also names an EOS id
    // outside the vocabulary (refused). The expected ids are the library's allowed_tokens.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const Vocabulary model_vocabulary = golden::tokenizer().vocabulary();
    struct Case {
        size_t dfa = 0;
        int32_t state = 0;
        Ids eos;
    };
    std::vector<DrawnDfa> dfas;
    std::vector<Vocabulary> vocabularies;
    std::vector<Case> cases;
    for (size_t d = 0; d < 20; ++d) {
        dfas.push_back(draw_dfa(rng));
        const Dfa& dfa = dfas[d].dfa;
        std::vector<int32_t> states;  // the cases' states first, so that the tokens can fit them
        for (int i = 0; i < 8; ++i) states.push_back(draw_state(rng, dfa));
        Vocabulary v;
        for (int id = 0, n = drawn::between(rng, 4, 12); id < n; ++id) {
            const uint64_t kind = rng.next_u64() % 10;
            const int32_t from = rng.next_u64() % 4 ? states[rng.next_u64() % states.size()] : dfa.start;
            if (kind == 0)
                v.bytes.emplace_back();
            else if (kind == 1)
                v.bytes.push_back(model_vocabulary.bytes[rng.next_u64() % model_vocabulary.bytes.size()]);
            else if (kind < 4 || from < 0 || static_cast<size_t>(from) >= dfa.states())
                v.bytes.push_back(pool_bytes(rng, 3));
            else
                v.bytes.push_back(live_bytes(rng, dfa, from, 3));
            if (rng.next_u64() % 8 == 0) v.special.push_back(id);  // ascending, as Vocabulary wants
        }
        vocabularies.push_back(v);
        for (int32_t state : states) {
            Case c;
            c.dfa = d;
            c.state = state;
            for (int k = 0, n = drawn::between(rng, 0, 2); k < n; ++k) c.eos.push_back(drawn::between(rng, 0, v.size() - 1));
            if (rng.next_u64() % 20 == 0) c.eos.push_back(rng.next_u64() % 2 ? v.size() : -1);
            cases.push_back(c);
        }
    }
    using Found = std::vector<std::tuple<bool, Ids>>;  // (refused, the ids)
    const Found found = sandbox::run<Found>("your_allowed_tokens", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            try {
                out.emplace_back(false, your_allowed_tokens(dfas[c.dfa].dfa, c.state, vocabularies[c.dfa], c.eos));
            } catch (const Error&) {
                out.emplace_back(true, Ids{});
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const Dfa& dfa = dfas[c.dfa].dfa;
        const Vocabulary& v = vocabularies[c.dfa];
        bool refused = false;
        Ids expected;
        try {
            expected = allowed_tokens(dfa, c.state, v, c.eos);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const Ids& ids = std::get<1>(found[i]);
        const bool same = found_refused == refused && (refused || ids == expected);
        const bool valid = c.state >= 0 && static_cast<size_t>(c.state) < dfa.states();
        const auto answer = [](bool r, const Ids& a) { return r ? std::string("decodebook::Error (refused)") : feedback::list(a); };
        FEEDBACK("a case drawn with seed " << seed << ": the DFA of \"" << dfas[c.dfa].pattern << "\" (" << dfa.states()
                                          << " states), state " << state_text(c.state)
                                          << (valid && dfa.accepting[static_cast<size_t>(c.state)] ? " (accepting)" : "")
                                          << "\nvocabulary " << vocabulary_text(v) << "\neos_ids " << feedback::list(c.eos));
        FEEDBACK("expected: " << answer(refused, expected) << " (the library's allowed_tokens)\nfound:    "
                              << answer(found_refused, ids));
        FEEDBACK((same ? std::string()
                       : "hint: " + allowed_hint(dfa, c.state, v, c.eos, refused || found_refused, expected, ids)));
        REQUIRE(same);
    }
}
