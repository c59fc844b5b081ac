// The regex compiler of chapter 09 (constrain/regex.hpp): PCRE2 as the independent oracle on
// generated strings, the peers' cases as facts, the errors, and escape_regex / choice_regex.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/regex.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

bool valid_utf8(std::string_view s) {
    for (size_t k = 0; k < s.size();) {
        const Utf8Step step = utf8_step(s.substr(k));
        if (!step.valid) return false;
        k += step.length;
    }
    return true;
}

// The characters of a valid UTF-8 string, each as its bytes.
std::vector<std::string> characters(std::string_view s) {
    std::vector<std::string> out;
    for (size_t k = 0; k < s.size();) {
        const size_t n = utf8_step(s.substr(k)).length;
        out.emplace_back(s.substr(k, n));
        k += n;
    }
    return out;
}


// PCRE2 in UTF mode, newline LF (so . excludes only \n, whatever PCRE2's build default), with
// PCRE2_ALLOW_EMPTY_CLASS (our [] and [^]). Two compiled forms: anchored at both ends for the
// full match, and (?:p)\z with PCRE2_PARTIAL_HARD for "a prefix of some match" (PCRE2 refuses
// PCRE2_ENDANCHORED with partial matching; \z is the same anchor, and partial-hard reports a
// path that ran out of subject).
class Pcre2 {
public:
    explicit Pcre2(const std::string& pattern)
        : context_(pcre2_compile_context_create(nullptr), pcre2_compile_context_free) {
        pcre2_set_newline(context_.get(), PCRE2_NEWLINE_LF);
        // PCRE2_DOLLAR_ENDONLY: a final $ means the end of the subject, as ours (PCRE2's default
        // also matches before a final newline, so "ab\n" would be a partial match of ^ab$).
        const uint32_t options = PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ALLOW_EMPTY_CLASS | PCRE2_DOLLAR_ENDONLY;
        full_ = compile(pattern, options | PCRE2_ENDANCHORED);
        prefix_ = compile("(?:" + pattern + ")\\z", options);
        data_ = pcre2_match_data_create(8, nullptr);
    }
    ~Pcre2() {
        pcre2_match_data_free(data_);
        pcre2_code_free(full_);
        pcre2_code_free(prefix_);
    }
    Pcre2(const Pcre2&) = delete;
    Pcre2& operator=(const Pcre2&) = delete;

    bool full(std::string_view s) { return run(full_, s, 0) >= 0; }

    // PCRE2 never reports a partial match of the empty subject (it inspects no character), so
    // the caller answers that case: the empty string is a prefix of every match.
    bool prefix(std::string_view s) {
        const int rc = run(prefix_, s, PCRE2_PARTIAL_HARD);
        return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
    }

private:
    std::unique_ptr<pcre2_compile_context, void (*)(pcre2_compile_context*)> context_;
    pcre2_code* full_ = nullptr;
    pcre2_code* prefix_ = nullptr;
    pcre2_match_data* data_ = nullptr;

    pcre2_code* compile(const std::string& pattern, uint32_t options) {
        int error = 0;
        PCRE2_SIZE offset = 0;
        pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                         &offset, context_.get());
        if (!code) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            FAIL("PCRE2 refuses " << pattern << ": " << reinterpret_cast<const char*>(message));
        }
        return code;
    }

    int run(pcre2_code* code, std::string_view s, uint32_t options) {
        const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, options, data_, nullptr);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && rc != PCRE2_ERROR_PARTIAL)
            FAIL("PCRE2 error " << rc << " on " << golden::c_literal(s));
        return rc;
    }
};

// The patterns of the property test: literals, classes and their negations, UTF-8, every
// quantifier, nested groups, alternation, and JSON's string and number. Written in the syntax
// both engines read the same way (no \v, which PCRE2 reads as a class, and no \u).
const std::vector<std::string> kOraclePatterns = {
    "abc",
    "a|b|c",
    "(ab|cd)*",
    "a*b+c?",
    "[a-z]+",
    "[^\"\\\\]*",
    "\"([^\"\\\\]|\\\\.)*\"",
    "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?",
    ".",
    ".*x",
    "..?é",
    "é+ü?",
    "[é-ü]+",
    "[^a]",
    "[^a]*b",
    "\\d{2,4}",
    "\\w+@\\w+\\.com",
    "\\s*\\S",
    "[\\D]x\\W",
    "(a|ab)(c|bcd)",
    "(a*)*b",
    "(a|a)*b",
    "a{3}",
    "a{2,}b",
    "(ab){1,3}",
    "[ab]{0,4}",
    "((a|b)c){2,3}d?",
    "\\x41\\x{e9}\\x{1F600}",
    "[\\x{80}-\\x{7FF}]+",
    "[\\x{800}-\\x{FFFF}]",
    "[\\x{10000}-\\x{10FFFF}]x",
    "[^\\x00-\\x7F]*",
    "(true|false|null)",
    "\\[(\\d+(,\\d+)*)?\\]",
    "[a\\-z]+[-a][a-]",
    "\\{\"a\":\\s?\\d+\\}",
    "([0-9]*)?\\.?[0-9]*",
    "(0x[A-F0-9]{2} ?){3,5}",
    "...abc...",
    "[😀-😂]?x",
    "a(?:b|)c|",
    "\\t\\n\\r\\f\\0+",
    "[\\s\\d]+[^\\w\\s]",
    "^ab$",
    "(([^x]*){0,2}){0,3}y",  // nested repeats, small enough for PCRE2 to backtrack through
    "(a+){2,3}b|(c?){2}d|((ab)*){2}e",  // a repeat of + ? and *: rewritten as one repeat
    "\\/\\\"\\.",
    "[]a]|[^]",
};

// Characters random strings are drawn from besides the pattern's own: bytes a pattern may or may
// not accept, and characters of each UTF-8 length, including the ends of the ranges.
const std::vector<std::string> kExtraCharacters = {
    "a", "b", "x", "0", "9", " ", "\n", "\t", "\"", "\\", ".", "-", "{", "}", std::string(1, '\0'), "\x7F",
    "\xC2\x80", "é", "ü", "\xDF\xBF", "\xE0\xA0\x80", "€", "\xED\x9F\xBF", "\xEE\x80\x80", "\xEF\xBF\xBF",
    "😀", "😁", "😃", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"};

class Generator {
public:
    Generator(const Dfa& dfa, const std::string& pattern, std::mt19937_64& rng)
        : dfa_(dfa), rng_(rng), to_accept_(bytes_to_accept(dfa)) {
        alphabet_ = characters(pattern);
        alphabet_.insert(alphabet_.end(), kExtraCharacters.begin(), kExtraCharacters.end());
    }

    std::string random_string() {
        std::string s;
        const size_t n = pick(11);
        for (size_t k = 0; k < n; ++k) s += alphabet_[pick(alphabet_.size())];
        return s;
    }

    // A string the DFA accepts, by a random walk along live transitions (the oracle then judges
    // it). After 24 bytes every step goes closer to an accepting state, so strings stay short
    // enough for PCRE2's backtracking on the nested repeats.
    std::string dfa_match() {
        std::string s;
        int32_t state = dfa_.start;
        std::vector<uint8_t> onward;
        while (true) {
            onward.clear();
            for (int b = 0; b < 256; ++b) {
                const int32_t t = dfa_.step(state, static_cast<uint8_t>(b));
                if (t != Dfa::kDead && (s.size() < 24 || to_accept_[t] < to_accept_[state]))
                    onward.push_back(static_cast<uint8_t>(b));
            }
            if (onward.empty() || (dfa_.accepting[state] && (pick(4) == 0 || s.size() >= 24))) return s;
            const uint8_t b = onward[pick(onward.size())];
            s += static_cast<char>(b);
            state = dfa_.step(state, b);
        }
    }

    // A near miss of a match: a prefix, or one character changed, inserted or deleted, or one
    // byte changed when that leaves valid UTF-8.
    std::string mutated(const std::string& match) {
        std::vector<std::string> chars = characters(match);
        const std::string other = alphabet_[pick(alphabet_.size())];
        switch (pick(5)) {
            case 0: chars.resize(pick(chars.size() + 1)); break;
            case 1:
                if (!chars.empty()) chars[pick(chars.size())] = other;
                break;
            case 2: chars.insert(chars.begin() + static_cast<std::ptrdiff_t>(pick(chars.size() + 1)), other); break;
            case 3:
                if (!chars.empty()) chars.erase(chars.begin() + static_cast<std::ptrdiff_t>(pick(chars.size())));
                break;
            default: {
                std::string s = match;
                if (s.empty()) return other;
                s[pick(s.size())] = static_cast<char>(pick(256));
                return valid_utf8(s) ? s : match + other;
            }
        }
        std::string s;
        for (const std::string& c : chars) s += c;
        return s;
    }

    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

private:
    const Dfa& dfa_;
    std::mt19937_64& rng_;
    std::vector<size_t> to_accept_;  // per state: the fewest bytes to an accepting state
    std::vector<std::string> alphabet_;

    static std::vector<size_t> bytes_to_accept(const Dfa& dfa) {
        std::vector<size_t> d(dfa.states(), SIZE_MAX);
        for (size_t s = 0; s < dfa.states(); ++s)
            if (dfa.accepting[s]) d[s] = 0;
        for (bool changed = true; changed;) {  // Bellman-Ford: these DFAs are small
            changed = false;
            for (size_t s = 0; s < dfa.states(); ++s)
                for (int b = 0; b < 256; ++b) {
                    const int32_t t = dfa.step(static_cast<int32_t>(s), static_cast<uint8_t>(b));
                    if (t != Dfa::kDead && d[t] != SIZE_MAX && d[t] + 1 < d[s]) d[s] = d[t] + 1, changed = true;
                }
        }
        return d;
    }
};

bool all_states_live_and_reachable(const Dfa& dfa) {
    const size_t n = dfa.states();
    std::vector<std::vector<int32_t>> into(n);
    std::vector<uint8_t> seen(n, 0), live(n, 0);
    std::vector<int32_t> todo{dfa.start};
    seen[dfa.start] = 1;
    while (!todo.empty()) {
        const int32_t s = todo.back();
        todo.pop_back();
        for (int b = 0; b < 256; ++b) {
            const int32_t t = dfa.step(s, static_cast<uint8_t>(b));
            if (t == Dfa::kDead) continue;
            into[t].push_back(s);
            if (!seen[t]) seen[t] = 1, todo.push_back(t);
        }
    }
    for (size_t s = 0; s < n; ++s)
        if (dfa.accepting[s]) live[s] = 1, todo.push_back(static_cast<int32_t>(s));
    while (!todo.empty()) {
        const int32_t t = todo.back();
        todo.pop_back();
        for (int32_t s : into[t])
            if (!live[s]) live[s] = 1, todo.push_back(s);
    }
    for (size_t s = 0; s < n; ++s)
        if (!seen[s] || !live[s]) return false;
    return true;
}

// The message of the Error compile_regex throws, or "" when it compiles.
std::string error_of(std::string_view pattern, const RegexLimits& limits = {}) {
    try {
        compile_regex(pattern, limits);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("the DFA matches exactly what PCRE2 fully matches and is live exactly on its partial matches",
          "[regex]") {
    constexpr int kPerPattern = 2200;  // 48 patterns: 105,600 strings
    std::mt19937_64 rng(20260901);
    size_t strings = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (const std::string& pattern : kOraclePatterns) {
        INFO("pattern " << golden::c_literal(pattern));
        const Dfa dfa = compile_regex(pattern);
        REQUIRE(all_states_live_and_reachable(dfa));
        Pcre2 pcre(pattern);
        Generator gen(dfa, pattern, rng);
        size_t full = 0, live_only = 0, dead = 0, failures = 0;
        std::string last_match;
        for (int k = 0; k < kPerPattern && failures < 5; ++k) {
            std::string s;
            switch (k % 3) {
                case 0: s = gen.random_string(); break;
                case 1:
                    s = gen.dfa_match();
                    if (!valid_utf8(s)) {
                        FAIL_CHECK("the DFA accepts invalid UTF-8 " << golden::c_literal(s));
                        ++failures;
                        continue;
                    }
                    last_match = s;
                    break;
                default: s = gen.mutated(last_match); break;
            }
            REQUIRE(valid_utf8(s));
            ++strings;
            const bool want_full = pcre.full(s);
            const bool want_prefix = s.empty() || pcre.prefix(s);
            const int32_t end = dfa.walk(dfa.start, s);
            const bool got_full = dfa.matches(s), got_prefix = end != Dfa::kDead;
            if (got_full != want_full || got_prefix != want_prefix) {
                ++failures;
                FAIL_CHECK("string " << golden::c_literal(s) << ": DFA full " << got_full << " prefix " << got_prefix
                                     << ", PCRE2 full " << want_full << " prefix " << want_prefix);
            }
            (want_full ? full : want_prefix ? live_only : dead) += 1;
        }
        // Each pattern met matches, proper prefixes of matches and strings that are neither
        // (except where its language has no such strings: .* and [^]-like patterns).
        CHECK(full > 0);
        CHECK(dead > 0);
    }
    CHECK(strings >= 100000);
    WARN(strings << " strings checked against PCRE2 in " << ms_since(t0) << " ms");
}

TEST_CASE("every compiled state is live and the numbering is breadth-first from the start", "[regex]") {
    for (const std::string& pattern : kOraclePatterns) {
        INFO("pattern " << golden::c_literal(pattern));
        const Dfa dfa = compile_regex(pattern);
        CHECK(dfa.start == 0);
        CHECK(dfa.next.size() == 256 * dfa.states());
        CHECK(all_states_live_and_reachable(dfa));
    }
}

TEST_CASE("minimal DFAs have the sizes the chapter draws", "[regex]") {
    CHECK(compile_regex("abc").states() == 4);
    // one UTF-8 character: start, accept, 1/2/3 continuation bytes to go, and the four lead bytes
    // with a narrower second byte (E0, ED, F0, F4)
    CHECK(compile_regex(".").states() == 9);
    CHECK(compile_regex("[^a]").states() == 9);
    // start, after -, after 0, after 1-9 and digits, after ., fraction, after e, after sign, exponent
    CHECK(compile_regex("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?").states() == 9);
    // start, inside, after \, closed, and the 7 states inside a multi-byte character
    const RegexBuild json = build_regex("\"([^\"\\\\]|\\\\.)*\"");
    CHECK(json.dfa.states() == 11);
    CHECK(json.live_states > json.dfa.states());  // Hopcroft merged the subset construction's states
    CHECK(compile_regex("(a|b)*a(a|b){3}").states() == 16);  // 2^(3+1): the classic blow-up
    const RegexBuild bounded = build_regex("[a-z]{1,1000}");
    CHECK(bounded.dfa.states() == 1001);
    CHECK(bounded.byte_classes == 3);  // below a, a-z, above z
}

TEST_CASE("escapes classes and dot follow the documented syntax", "[regex]") {
    CHECK(compile_regex("\\u00e9\\u20AC").matches("é€"));
    CHECK(compile_regex("\\xE9").matches("é"));          // a code point, two bytes
    CHECK_FALSE(compile_regex("\\xE9").matches("\xE9"));  // never the raw byte
    CHECK(compile_regex("\\v").matches("\x0B"));           // U+000B, as ECMAScript and Python
    CHECK_FALSE(compile_regex("\\v").matches("\n"));
    CHECK(compile_regex("[\\v]").matches("\x0B"));
    CHECK(compile_regex(".").matches("\r"));
    CHECK_FALSE(compile_regex(".").matches("\n"));
    CHECK(compile_regex("[^]").matches("\n"));
    CHECK(compile_regex("[^a]").matches("😀"));
    CHECK_FALSE(compile_regex("[^a]").matches("\xF0\x9F\x98"));  // a cut character is not one
    CHECK(compile_regex("[é-ü]").matches("ö"));
    CHECK_FALSE(compile_regex("[é-ü]").matches("e"));
    CHECK(compile_regex("\\D").matches("é"));  // the negated shorthands take non-ASCII
    CHECK_FALSE(compile_regex("\\w").matches("é"));
    CHECK(compile_regex("a\\#\\ \\'b").matches("a# 'b"));  // any escaped punctuation is itself
    CHECK(compile_regex("}]").matches("}]"));
    // a walk that stops inside a character is alive exactly when the character can complete
    const Dfa e = compile_regex("é");
    CHECK(e.walk(e.start, "\xC3") != Dfa::kDead);
    CHECK(e.walk(e.start, "\xC2") == Dfa::kDead);
    CHECK(e.walk(Dfa::kDead, "") == Dfa::kDead);
    CHECK_THROWS_AS(e.walk(7, "a"), Error);
}

// Willard & Louf 2023 (arXiv 2307.09702), Example 1 / Figure 1: the regex ([0-9]*)?\.?[0-9]* and
// the vocabulary {"A", ".", "42", ".2", "1"}.
TEST_CASE("Outlines teaching example masks A first and keeps only 42 and 1 after .2", "[regex]") {
    const Dfa dfa = compile_regex("([0-9]*)?\\.?[0-9]*");
    const std::vector<std::string> vocab = {"A", ".", "42", ".2", "1"};
    auto allowed = [&](int32_t state) {
        std::vector<std::string> out;
        for (const std::string& t : vocab)
            if (dfa.walk(state, t) != Dfa::kDead) out.push_back(t);
        return out;
    };
    CHECK(allowed(dfa.start) == std::vector<std::string>{".", "42", ".2", "1"});
    const int32_t after = dfa.walk(dfa.start, ".2");
    REQUIRE(after != Dfa::kDead);
    CHECK(allowed(after) == std::vector<std::string>{"42", "1"});
    CHECK(dfa.matches(""));
    CHECK(dfa.matches("3.14"));
    CHECK_FALSE(dfa.matches("1.2.3"));
}

namespace {

void check_cases(const std::string& pattern, const std::vector<std::string>& pass,
                 const std::vector<std::string>& fail) {
    INFO("pattern " << golden::c_literal(pattern));
    const Dfa dfa = compile_regex(pattern);
    for (const std::string& s : pass) CHECK(dfa.matches(s));
    for (const std::string& s : fail) CHECK_FALSE(dfa.matches(s));
}

}  // namespace

// llama.cpp tests/test-grammar-integration.cpp (ggml-org/llama.cpp 072efa22): its GBNF grammars
// rewritten as regexes, with their pass and fail lists.
TEST_CASE("llama.cpp grammar integration cases as regexes", "[regex]") {
    // "simple grammar": root ::= expr; expr ::= term ("+" term)*; term ::= number; number ::= [0-9]+
    check_cases("[0-9]+(\\+[0-9]+)*", {"42", "1+2+3+4+5", "123+456"}, {"+", "/ 3", "1+2+3+4+5+", "12a45"});
    const std::string a62(62, 'a');
    check_cases("a*", {"", "a", "aaaaa", std::string(18, 'a'), a62}, {"b", "ab", "aab", "ba", a62 + "b"});
    check_cases("a+", {"a", "aaaaa", std::string(18, 'a'), a62}, {"", "b", "ab", "aab", "ba", a62 + "b"});
    check_cases("a?", {"", "a"}, {"b", "ab", "aa", "ba"});
    // "mixed quantifiers": cons+ vowel* cons? (vowel cons)*
    const std::string vowel = "[aeiouy]", cons = "[bcdfghjklmnpqrstvwxyz]";
    check_cases(cons + "+" + vowel + "*" + cons + "?(" + vowel + cons + ")*",
                {"yes", "no", "noyes", "crwth", "four", "bryyyy"}, {"yess", "yesno", "forty", "catyyy"});
    check_cases("[ab]{4}", {"aaaa", "bbbb", "abab"}, {"a", "b", "aaaaa"});
    check_cases("[ab]{4,}", {"aaaa", "aaaaab", "bbbb", "ababab"}, {"", "aba"});
    check_cases("[ab]{0,4}", {"", "a", "aa", "aaa", "aaab"}, {"aaaaa"});
    // "min / max repetition": ("0x" [A-F0-9]{2} " "?){3,5}
    check_cases("(0x[A-F0-9]{2} ?){3,5}", {"0xFF 0x12 0xAB", "0xFF 0x12 0xAB 0x00 0x00"},
                {"", "0xFF", "0xFF 0x12", "0xFF 0x12 0xAB 0x00 0x00 0x00"});
    // "segfault": ( [x]* )*
    check_cases("(x*)*", {"", "x", "xx"}, {"y", "yy"});
    // "special characters": ... "abc" ... (a multi-byte character counts as one .)
    check_cases("...abc...", {"abcabcabc", "aaaabcccc", "🔵🟠✅abc❌🟠🔵"},
                {"aaabcccc", "aaaaabcccc", "aaaabccc", "aaaabccccc", "🔵🟠✅❌abc❌✅🟠🔵", "🔵🟠abc🟠🔵"});
}

TEST_CASE("pathological patterns compile or are refused quickly", "[regex]") {
    struct Case {
        std::string pattern;
        bool compiles;
    };
    const std::vector<Case> cases = {
        {"(x*)*", true},
        {"(a|a)*b", true},
        {"(([^x]*){0,99}){0,99}", true},                                  // a repeat of a star is the star
        {"(((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}", true},  // llama.cpp's "hang"
        {"(a{0,99}){0,99}", false},        // each DFA state tracks thousands of NFA states: the work limit
        {"((a{1000}){1000}){1000}", false},  // 10^9 copies: the NFA limit
        {"(a|b)*a(a|b){20}", false},       // 2^21 states: the DFA limit
        {"(.{0,100}x){1,10}", false},
    };
    for (const Case& c : cases) {
        INFO("pattern " << golden::c_literal(c.pattern));
        const auto t0 = std::chrono::steady_clock::now();
        const std::string error = error_of(c.pattern);
        const double ms = ms_since(t0);
        CHECK(error.empty() == c.compiles);
        if (!c.compiles) CHECK_THAT(error, Catch::Contains("limit") || Catch::Contains("more than"));
        CHECK(ms < 3000);  // a few ms to 0.1 s here; generous for a shared machine
    }
    const Dfa star = compile_regex("(([^x]*){0,99}){0,99}");
    CHECK(star.matches(""));
    CHECK(star.matches("abé"));
    CHECK_FALSE(star.matches("abx"));
    CHECK(compile_regex("(a|a)*b").matches("aaab"));
}

TEST_CASE("RegexLimits are enforced with a clear error", "[regex]") {
    CHECK_THAT(error_of("a{200}", {100, 20000}), Catch::Contains("more than 100 NFA states") && Catch::Contains("fix:"));
    CHECK_THAT(error_of("a{10}", {200000, 5}), Catch::Contains("more than 5 DFA states") && Catch::Contains("max_dfa_states"));
    CHECK(error_of("a{10}", {200000, 11}).empty());
}

TEST_CASE("unsupported constructs are refused naming their column and a fix", "[regex]") {
    struct Case {
        std::string pattern, column, construct;
    };
    const std::vector<Case> cases = {
        {"a(?=b)", "column 2", "lookahead"},
        {"a(?!b)", "column 2", "negative lookahead"},
        {"(?<=a)b", "column 1", "lookbehind"},
        {"(?<!a)b", "column 1", "negative lookbehind"},
        {"(?<n>a)", "column 1", "named group"},
        {"(?P<n>a)", "column 1", "named group"},
        {"(?i)a", "column 1", "inline flag"},
        {"(?>a)", "column 1", "atomic group"},
        {"a(?R)?b", "column 2", "recursion"},
        {"(?#note)a", "column 1", "comment"},
        {"(a)\\1", "column 4", "backreference \\1"},
        {"(a)\\k<x>", "column 4", "backreference \\k"},
        {"a\\bc", "column 2", "word boundary \\b"},
        {"a\\B", "column 2", "word boundary \\B"},
        {"a^", "column 2", "anchor ^"},
        {"$a", "column 1", "anchor $"},
        {"(^a)", "column 2", "anchor ^"},
        {"\\Aa", "column 1", "anchor \\A"},
        {"a\\z", "column 2", "anchor \\z"},
        {"\\p{L}", "column 1", "Unicode property"},
        {"\\P{L}", "column 1", "Unicode property"},
        {"x[[:alpha:]]", "column 3", "POSIX"},
        {"a*?", "column 3", "lazy quantifier *?"},
        {"a{2,3}?", "column 7", "lazy quantifier {2,3}?"},
        {"a++", "column 3", "possessive quantifier ++"},
        {"a**", "column 3", "quantifier follows"},
        {"*a", "column 1", "nothing to repeat"},
        {"a|+", "column 3", "nothing to repeat"},
        {"a{3,2}", "column 2", "minimum 3 is above the maximum 2"},
        {"a{1001}", "column 2", "above 1000"},
        {"a{2,5000}", "column 2", "above 1000"},
        {"a{,3}", "column 2", "no minimum"},
        {"a{x}", "column 2", "does not start a quantifier"},
        {"é(b", "column 2", "never closed"},
        {"ab)", "column 3", "closes no group"},
        {"[ab", "column 1", "never closed"},
        {"[b-a]", "column 2", "out of order"},
        {"[\\d-z]", "column 2", "shorthand"},
        {"[a-c-e]", "column 5", "ambiguous"},
        {"\\e", "column 1", "escape \\e"},
        {"\\012", "column 1", "octal"},
        {"\\x4", "column 1", "hex digits"},
        {"\\x{110000}", "column 1", "above U+10FFFF"},
        {"\\uD800", "column 1", "surrogate"},
        {"\\Qa\\E", "column 1", "quoting"},
        {"ab\\", "column 3", "lone \\"},
        {"a\xFF", "column 2", "not valid UTF-8"},
        {"(*UTF)a", "column 1", "verb"},
    };
    for (const Case& c : cases) {
        INFO("pattern " << golden::c_literal(c.pattern));
        const std::string error = error_of(c.pattern);
        CHECK_THAT(error, Catch::Contains(c.column + ":") && Catch::Contains(c.construct) && Catch::Contains("fix:"));
    }
    // 200 nested groups are fine, 201 are refused (the parser recurses)
    CHECK(error_of(std::string(200, '(') + "a" + std::string(200, ')')).empty());
    CHECK_THAT(error_of(std::string(201, '(') + "a" + std::string(201, ')')), Catch::Contains("nested more than 200"));
}

TEST_CASE("a pattern that matches no string is refused", "[regex]") {
    for (const char* pattern : {"[^\\x00-\\x{10FFFF}]", "a[]", "[^\\s\\S]", "(a|[])b[]", "([]x)+"}) {
        INFO("pattern " << golden::c_literal(pattern));
        CHECK_THAT(error_of(pattern), Catch::Contains("matches no string at all") && Catch::Contains("fix:"));
    }
    // an empty alternative or an optional empty class is fine: the language is not empty
    const Dfa dfa = compile_regex("a|[]");
    CHECK(dfa.matches("a"));
    CHECK_FALSE(dfa.matches(""));
    CHECK(compile_regex("[]*").matches(""));
    CHECK(compile_regex("[]{0}x").matches("x"));
}

TEST_CASE("escape_regex round-trips random text", "[regex]") {
    std::mt19937_64 rng(7);
    std::vector<std::string> pool;
    for (int b = 0; b < 128; ++b) pool.emplace_back(1, static_cast<char>(b));  // every ASCII byte, NUL too
    for (const char* c : {"é", "€", "😀", "\xF4\x8F\xBF\xBF", "\xC2\x80"}) pool.emplace_back(c);
    for (int k = 0; k < 2000; ++k) {
        std::string s;
        const size_t n = std::uniform_int_distribution<size_t>(0, 12)(rng);
        for (size_t j = 0; j < n; ++j) s += pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
        const std::string pattern = escape_regex(s);
        INFO("literal " << golden::c_literal(s) << " pattern " << golden::c_literal(pattern));
        const Dfa dfa = compile_regex(pattern);
        CHECK(dfa.matches(s));
        CHECK_FALSE(dfa.matches(s + "x"));
        CHECK(dfa.states() == s.size() + 1);  // a literal's minimal DFA is a chain of its bytes
        CHECK(pattern.find('\n') == std::string::npos);
    }
    CHECK(escape_regex("a.b*") == "a\\.b\\*");
    CHECK(escape_regex("\n\x01") == "\\n\\x01");
    CHECK_THROWS_WITH(escape_regex("\xC3"), Catch::Contains("not valid UTF-8"));
}

TEST_CASE("choice_regex matches exactly its choices", "[regex]") {
    const std::string pattern = choice_regex({"yes", "no", "n/a"});
    CHECK(pattern == "(?:yes|no|n/a)");
    const Dfa dfa = compile_regex(pattern);
    for (const char* s : {"yes", "no", "n/a"}) CHECK(dfa.matches(s));
    for (const char* s : {"", "y", "ye", "yes ", "n", "no!", "n/", "nna", "n.a", "yesno", "N/A", "(?:yes"})
        CHECK_FALSE(dfa.matches(s));
    CHECK(compile_regex(choice_regex({"a|b", "(c)", ""})).matches("a|b"));
    CHECK_FALSE(compile_regex(choice_regex({"a|b", "(c)", ""})).matches("a"));
    CHECK(compile_regex(choice_regex({"a|b", "(c)", ""})).matches(""));
    CHECK_THROWS_WITH(choice_regex({}), Catch::Contains("list of choices is empty") && Catch::Contains("fix:"));
}
