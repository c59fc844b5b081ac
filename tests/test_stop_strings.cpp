// Stop strings (chapter 06): where a stop matches, which one wins, what the stream holds back,
// and a generation that a stop string ends.
#include <catch2/catch.hpp>

#include <random>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::tokenizer;

namespace {

// A scripted run: what each push released, what flush released, and the stop found.
struct Run {
    std::vector<std::string> pieces;  // one per token, then the flush
    std::string text;
    std::optional<std::string> matched;
};

Run stream(const std::vector<std::string>& tokens, const std::vector<std::string>& stops, bool include = false,
           StopMatch rule = StopMatch::Earliest) {
    StopStringStream s(stops, include, rule);
    Run r;
    for (const std::string& t : tokens) r.pieces.push_back(s.push(t));
    r.pieces.push_back(s.flush());
    for (const std::string& p : r.pieces) r.text += p;
    r.matched = s.matched_stop();
    return r;
}

using Pieces = std::vector<std::string>;

// The independent reference: the whole text, cut where the earliest stop starts (a tie goes to
// the earlier in the list); `include` keeps that stop.
std::string cut_at_earliest_stop(const std::string& text, const std::vector<std::string>& stops, bool include) {
    size_t best = std::string::npos, length = 0;
    for (const std::string& s : stops) {
        const size_t at = text.find(s);
        if (at < best) best = at, length = s.size();
    }
    if (best == std::string::npos) return text;
    return text.substr(0, best + (include ? length : 0));
}

// The independent reference of vLLM's rule: the whole text, cut where the stop that completes first
// starts (a tie goes to the earlier in the list); `include` keeps that stop.
std::string cut_at_first_completed_stop(const std::string& text, const std::vector<std::string>& stops, bool include) {
    for (size_t end = 1; end <= text.size(); ++end) {
        for (const std::string& s : stops) {
            if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0)
                return text.substr(0, include ? end : end - s.size());
        }
    }
    return text;
}

// One case of vLLM's check_stop_strings(output_text, new_char_count, stop, include_in_output),
// which returns (stop_string, truncate_to), truncate_to = -1 when nothing is cut, or None.
struct VllmCase {
    std::string text;
    size_t new_chars;
    std::vector<std::string> stops;
    bool include;
    std::optional<std::pair<std::string, long>> expected;
};

std::string joined(const std::vector<std::string>& stops) {
    std::string out;
    for (const std::string& s : stops) out += (out.empty() ? "" : "' '") + s;
    return out;
}

bool has_cut_off_character(const std::string& piece) { return to_valid_utf8(piece) != piece; }

}  // namespace

TEST_CASE("a stop string is found inside a token and the text ends before it", "[stop]") {
    // vLLM #3572: "DE" inside the single token "DEF" was missed by an endswith check
    const Run r = stream({"ABC", "DEF", "GH"}, {"DE"});
    CHECK(r.text == "ABC");
    CHECK(r.matched == "DE");
    CHECK(r.pieces == Pieces{"ABC", "", "", ""});  // nothing after the stop, not even at flush
    const Run one = stream({"ABCDEF"}, {"DE"});
    CHECK(one.text == "ABC");
    CHECK(one.pieces == Pieces{"ABC", ""});
}

TEST_CASE("a stop string across three tokens and a stop longer than any token", "[stop]") {
    const Run r = stream({"x\n", "\t", "\t-", "-", " Mark Twain"}, {"\n\t\t--"});
    CHECK(r.text == "x");
    CHECK(r.pieces == Pieces{"x", "", "", "", "", ""});
    CHECK(r.matched == "\n\t\t--");
    // vLLM #3574 / #11089: "ABC" is shown before "DEFGHIJ" completes, and "DEF" never leaks
    const Run long_stop = stream({"AB", "CD", "EF", "GH", "IJ", "KL"}, {"DEFGHIJ"});
    CHECK(long_stop.pieces == Pieces{"AB", "C", "", "", "", "", ""});
    CHECK(long_stop.matched == "DEFGHIJ");
}

TEST_CASE("holdback keeps exactly the suffix that may still become a stop", "[stop]") {
    // the seed book's case: "User" waits; " said" shows it was not a stop
    CHECK(stream({"User", " said"}, {"User:"}).pieces == Pieces{"", "User said", ""});
    const Run stop = stream({"User", ":"}, {"User:"});
    CHECK(stop.pieces == Pieces{"", "", ""});
    CHECK(stop.matched == "User:");
    // only the partial match waits, not a fixed max_len - 1 characters (vLLM's rule)
    CHECK(stream({"Hello Us", "e"}, {"User:"}).pieces == Pieces{"Hello ", "", "Use"});
    CHECK(stream({"Hello world"}, {"User:"}).pieces == Pieces{"Hello world", ""});
    // two stops sharing a prefix: the longest suffix that begins either is held
    CHECK(stream({"a<", "|", "x"}, {"<|end|>", "<|im_end|>"}).pieces == Pieces{"a", "", "<|x", ""});
}

TEST_CASE("holdback never splits a UTF-8 character and the end flushes what was held", "[stop]") {
    // "é" is C3 A9: the lead byte waits for its continuation
    CHECK(stream({"caf\xC3", "\xA9!"}, {"STOP"}).pieces == Pieces{"caf", "\xC3\xA9!", ""});
    // a stop that begins with a two-byte character: its first byte alone is not shown
    CHECK(stream({"x\xC3", "\xA9t\xC3", "\xA9"}, {"\xC3\xA9t\xC3\xA9!"}).pieces ==
          Pieces{"x", "", "", "\xC3\xA9t\xC3\xA9"});
    // llama.cpp #15007: a partial stop held at the end is flushed, not lost
    CHECK(stream({"Answer: Us"}, {"User:"}).pieces == Pieces{"Answer: ", "Us"});
    // a character cut off at the very end becomes U+FFFD, as without stop strings
    CHECK(stream({"a\xE2\x82"}, {"zz"}).text == "a\xEF\xBF\xBD");
}

TEST_CASE("stop_match earliest takes the stop that starts first in the text", "[stop]") {
    const Run r = stream({"hello"}, {"lo", "hel"});
    CHECK(r.text == "");
    CHECK(r.matched == "hel");
    // same start: the earlier in the list wins
    CHECK(stream({"abc"}, {"ab", "abc"}).matched == "ab");
    CHECK(stream({"abc"}, {"abc", "ab"}, true).text == "abc");
    // however the text is split: "bc" completes first, but "abcd" starts earlier and is waited for
    const Run split = stream({"ab", "c", "d", "e"}, {"abcd", "bc"});
    CHECK(split.pieces == Pieces{"", "", "", "", ""});
    CHECK(split.matched == "abcd");
    const Run other = stream({"ab", "c", "X", "e"}, {"abcd", "bc"});
    CHECK(other.pieces == Pieces{"", "", "a", "", ""});
    CHECK(other.matched == "bc");
    // the generation may end while it waits: the match found is final at flush
    const Run ended = stream({"ab", "c"}, {"abcd", "bc"});
    CHECK(ended.pieces == Pieces{"", "", "a"});
    CHECK(ended.matched == "bc");
}

TEST_CASE("stop_match list_order takes the first stop of the list that matches", "[stop]") {
    const Run r = stream({"hello"}, {"lo", "hel"}, false, StopMatch::ListOrder);
    CHECK(r.text == "hel");  // vLLM: the list decides, so the text keeps "hel"
    CHECK(r.matched == "lo");
    CHECK(stream({"hello"}, {"lo", "hel"}, true, StopMatch::ListOrder).text == "hello");
    // it does not wait for a longer stop either
    CHECK(stream({"ab", "c", "d"}, {"abcd", "bc"}, false, StopMatch::ListOrder).matched == "bc");
}

TEST_CASE("a final match shows all the text before its stop even while a longer stop is pending", "[stop]") {
    // issue 23: "an" completes inside " man" while " man" is still a prefix of "a mango"; the match
    // is final, so nothing is held back for "a mango" any more: vLLM (old rule and new) returns " a m"
    for (StopMatch rule : {StopMatch::ListOrder, StopMatch::Vllm}) {
        const Run r = stream({" a", " man"}, {"a mango", "an"}, false, rule);
        CHECK(r.text == " a m");
        CHECK(r.matched == "an");
        CHECK(r.pieces == Pieces{" ", "a m", ""});
        // chapter 06 part 3: "bc" completes while "abc" may still become "abcd"
        const Run part3 = stream({"xab", "c", "d"}, {"abcd", "bc"}, false, rule);
        CHECK(part3.text == "xa");
        CHECK(part3.matched == "bc");
        CHECK(stream({"xab", "c", "d"}, {"abcd", "bc"}, true, rule).text == "xabc");
    }
}

// Facts from vLLM: tests/detokenizer/test_check_stop_strings.py of vllm-project/vllm (commit
// 29e0907951d3e5befc013a92e8f3b9828da000ed), the tests of PR #49391 for check_stop_strings in
// vllm/v1/engine/detokenizer.py. Each case's inputs and vLLM's expected (stop, truncate_to), as
// written there; a parametrized case appears once per parameter.
const std::vector<VllmCase> kVllmCheckStopStrings{
    // test_earliest_completing_stop_wins_regardless_of_list_order
    {" The user is a", 5, {"a", "is"}, false, {{"is", 10}}},
    {" The user is a", 5, {"is", "a"}, false, {{"is", 10}}},
    // test_earliest_completing_stop_include_in_output: truncate to the end of "is"
    {" The user is a", 5, {"a", "is"}, true, {{"is", 12}}},
    {" The user is a", 5, {"is", "a"}, true, {{"is", 12}}},
    // test_completion_position_not_start_position: "b" starts later than "abc" but completes first
    {"abc", 3, {"abc", "b"}, false, {{"b", 1}}},
    // test_ties_broken_by_list_order: both complete at index 2
    {"ab", 2, {"ab", "b"}, false, {{"ab", 0}}},
    {"ab", 2, {"b", "ab"}, false, {{"b", 1}}},
    // test_single_stop_in_window_unchanged; a stop that ends the text is not cut (-1)
    {"hello world.", 1, {"."}, false, {{".", 11}}},
    {"hello world.", 1, {"."}, true, {{".", -1}}},
    // test_no_match_and_empty_inputs_return_none
    {"hello", 5, {"zzz"}, false, std::nullopt},
    {"hello", 0, {"h"}, false, std::nullopt},
    {"hello", 5, {}, false, std::nullopt},
};

TEST_CASE("stop_match vllm is vLLM's check_stop_strings since PR 49391", "[stop]") {
    for (const VllmCase& c : kVllmCheckStopStrings) {
        INFO("text '" << c.text << "', new " << c.new_chars << ", stops '" << joined(c.stops) << "', include " << c.include);
        // find_stop: which stop, and where; `from` is where vLLM's new text begins
        const std::optional<StopHit> hit = find_stop(c.text, c.text.size() - c.new_chars, c.stops, StopMatch::Vllm);
        REQUIRE(hit.has_value() == c.expected.has_value());
        if (!hit) continue;
        const std::string& stop = c.stops[hit->index];
        CHECK(stop == c.expected->first);
        const size_t end = hit->position + stop.size();
        const long truncate_to = c.include ? (end >= c.text.size() ? -1 : static_cast<long>(end))
                                           : static_cast<long>(hit->position);
        CHECK(truncate_to == c.expected->second);
        // the stream: the text before the new text, then the new text; it shows output_text[:truncate_to]
        const Run r = stream({c.text.substr(0, c.text.size() - c.new_chars), c.text.substr(c.text.size() - c.new_chars)},
                             c.stops, c.include, StopMatch::Vllm);
        CHECK(r.matched == c.expected->first);
        CHECK(r.text == (c.expected->second < 0 ? c.text : c.text.substr(0, static_cast<size_t>(c.expected->second))));
    }
}

TEST_CASE("stop_match vllm and list_order differ where vLLM changed its rule", "[stop]") {
    // issue 23: before PR #49391 the list decided (list_order); now the first stop to complete does
    CHECK(stream({"abc"}, {"abc", "b"}, false, StopMatch::ListOrder).matched == "abc");
    CHECK(stream({"abc"}, {"abc", "b"}, false, StopMatch::Vllm).matched == "b");
    CHECK(stream({"abc"}, {"abc", "b"}, false, StopMatch::Earliest).matched == "abc");  // it starts first
    const Run old_rule = stream({" The user", " is a"}, {"a", "is"}, false, StopMatch::ListOrder);
    CHECK(old_rule.matched == "a");
    CHECK(old_rule.text == " The user is ");
    // "bc" completes before "abcd" can: vllm decides at once, earliest waits for the earlier start
    const Run part3 = stream({"xab", "c", "d"}, {"abcd", "bc"}, false, StopMatch::Vllm);
    CHECK(part3.pieces == Pieces{"x", "a", "", ""});
    CHECK(part3.matched == "bc");
    CHECK(stream({"xab", "c", "d"}, {"abcd", "bc"}, false, StopMatch::Earliest).matched == "abcd");
    // split into one character per token or not, the cut is the same (the first stop to complete)
    for (bool include : {false, true}) {
        const Run whole = stream({"xabcd"}, {"abcd", "bc"}, include, StopMatch::Vllm);
        const Run chars = stream({"x", "a", "b", "c", "d"}, {"abcd", "bc"}, include, StopMatch::Vllm);
        CHECK(whole.text == (include ? "xabc" : "xa"));
        CHECK(chars.text == whole.text);
    }
}

TEST_CASE("stop_match token_overlap keeps the whole last token and holds nothing back", "[stop]") {
    // HF's StopStringCriteria: it stops, but returns the stop and the rest of the token
    const Run r = stream({"hello", " world"}, {"lo", "hel"}, false, StopMatch::TokenOverlap);
    CHECK(r.pieces == Pieces{"hello", "", ""});
    CHECK(r.matched == "hel");
    CHECK(stream({"User", ":x", "y"}, {"User:"}, false, StopMatch::TokenOverlap).pieces == Pieces{"User", ":x", "", ""});
}

TEST_CASE("include_stop_str_in_output keeps the stop and drops what follows it", "[stop]") {
    const Run r = stream({"AB", "CDEF"}, {"DE"}, true);
    CHECK(r.text == "ABCDE");
    CHECK(r.matched == "DE");
    // nothing needs holding back: text before a stop is shown either way
    CHECK(stream({"User", ":!", "z"}, {"User:"}, true).pieces == Pieces{"User", ":", "", ""});
}

TEST_CASE("bad stop strings are refused with a fix", "[stop]") {
    CHECK_THROWS_WITH(StopStringStream({""}, false, StopMatch::Earliest), Catch::Contains("empty") && Catch::Contains("fix"));
    CHECK_THROWS_WITH(StopStringStream({"\xC3"}, false, StopMatch::Earliest), Catch::Contains("not valid UTF-8"));
    CHECK_THROWS_AS(StopStringStream({}, false, StopMatch::Earliest), Error);
}

TEST_CASE("never_winning_stops names a stop that another stop always beats", "[stop]") {
    const std::vector<std::string> user{"User", "User:"};
    REQUIRE(never_winning_stops(user, StopMatch::Earliest).size() == 1);
    CHECK_THAT(never_winning_stops(user, StopMatch::Earliest)[0],
               Catch::Contains("the stop \"User:\" (stop 2) can never end the text under stop_match earliest") &&
                   Catch::Contains("\"User\" (stop 1) begins it"));
    CHECK(stream({"User", ":"}, user).matched == "User");
    // listed the other way, earliest waits for the longer stop, so it can win
    CHECK(never_winning_stops({"User:", "User"}, StopMatch::Earliest).empty());
    CHECK(stream({"User", ":"}, {"User:", "User"}).matched == "User:");
    // vllm: a stop inside another that completes before its end always wins, in any order
    CHECK(never_winning_stops({"abcd", "bc"}, StopMatch::Vllm).size() == 1);
    CHECK(never_winning_stops({"bc", "abcd"}, StopMatch::Vllm).size() == 1);
    CHECK(never_winning_stops({"abcd", "bc"}, StopMatch::Earliest).empty());  // "abcd" starts first
    CHECK(stream({"abcd"}, {"abcd", "bc"}, false, StopMatch::Vllm).matched == "bc");
    // vllm: one that ends it wins only when listed first
    CHECK(never_winning_stops({"cd", "abcd"}, StopMatch::Vllm).size() == 1);
    CHECK(never_winning_stops({"abcd", "cd"}, StopMatch::Vllm).empty());
    CHECK(stream({"abcd"}, {"abcd", "cd"}, false, StopMatch::Vllm).matched == "abcd");
    // list_order: a stop listed first inside a later one always wins; listed after, one token may bring both
    CHECK(never_winning_stops({"bc", "abcd"}, StopMatch::ListOrder).size() == 1);
    CHECK(never_winning_stops({"abcd", "bc"}, StopMatch::ListOrder).empty());
    CHECK(stream({"abcd"}, {"abcd", "bc"}, false, StopMatch::ListOrder).matched == "abcd");
    // a duplicate never wins; stops that do not hold each other all can
    CHECK(never_winning_stops({"a", "a"}, StopMatch::Vllm).size() == 1);
    CHECK(never_winning_stops({"User:", "\n--", "Q:"}, StopMatch::Vllm).empty());
}

TEST_CASE("scan_stops is the holdback matcher on the pending text", "[stop]") {
    CHECK(scan_stops("Hello Us", {"User:"}).safe == 6);
    CHECK_FALSE(scan_stops("Hello Us", {"User:"}).stop);
    CHECK(scan_stops("User said", {"User:"}).safe == 9);
    const StopScan hit = scan_stops("xab", {"ab", "b"});
    CHECK(hit.safe == 1);
    CHECK(hit.stop == 0u);
    CHECK(scan_stops("caf\xC3", {"!"}).safe == 3);
    CHECK(stop_holdback("a<|i", {"<|end|>", "<|im_end|>"}) == 3);
    CHECK(stop_holdback("User:", {"User:"}) == 0);  // a whole stop is a match, not a prefix
    CHECK(find_stop("xxABCDEF", 4, {"DE"}, StopMatch::Earliest)->position == 5);
    CHECK_FALSE(find_stop("DExxx", 3, {"DE"}, StopMatch::Earliest));  // ended before `from`: searched already
}

TEST_CASE("random streams emit the text cut at the winning stop and never take anything back", "[stop][property]") {
    // For earliest and vllm, 10,000 random texts over a small alphabet (so stops match often, and share prefixes), each
    // split into tokens at random byte positions (so tokens cut characters), with 1-3 random stops.
    std::mt19937_64 rng(20261123);
    const std::vector<std::string> alphabet{"a", "b", "c", "\n", "\xC3\xA9", "\xE2\x82\xAC"};  // é, €
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    auto random_text = [&](size_t max_chars) {
        std::string s;
        for (size_t i = 0, n = 1 + pick(max_chars); i < n; ++i) s += alphabet[pick(alphabet.size())];
        return s;
    };
    for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm}) {
        int matched = 0;
        for (int trial = 0; trial < 10000; ++trial) {
            const std::string text = random_text(24);
            std::vector<std::string> stops;
            for (size_t i = 0, n = 1 + pick(3); i < n; ++i) stops.push_back(random_text(4));
            std::vector<std::string> tokens;
            for (size_t at = 0; at < text.size();) {
                const size_t len = std::min(text.size() - at, 1 + pick(5));
                tokens.push_back(text.substr(at, len));
                at += len;
            }
            const bool include = trial % 4 == 3;
            INFO(to_string(rule) << " trial " << trial << ", include " << include << ", text '" << text << "', stops '" << joined(stops) << "'");
            StopStringStream s(stops, include, rule);
            std::string emitted;
            bool ok = true;
            for (const std::string& t : tokens) {
                const std::string piece = s.push(t);
                // no chunk holds a stop or half a character; text + released is never rewritten
                for (const std::string& stop : stops)
                    if (!include && piece.find(stop) != std::string::npos) ok = false;
                if (has_cut_off_character(piece)) ok = false;
                emitted += piece;
                if (std::string_view(text).substr(0, emitted.size()) != emitted) ok = false;  // a prefix: nothing taken back
            }
            const std::string tail = s.flush();
            if (has_cut_off_character(tail)) ok = false;
            emitted += tail;
            REQUIRE(ok);
            REQUIRE(emitted == (rule == StopMatch::Earliest ? cut_at_earliest_stop(text, stops, include)
                                                      : cut_at_first_completed_stop(text, stops, include)));
            if (!include) {
                for (const std::string& stop : stops) REQUIRE(emitted.find(stop) == std::string::npos);
            }
            if (s.matched_stop()) ++matched;
        }
        CHECK(matched > 2000);  // the cases are not trivial: many streams do hit a stop
    }
}

TEST_CASE("a stop string ends a generation on the model", "[stop][generate]") {
    const Tokenizer& tok = tokenizer();
    GenerationConfig c;
    c.max_new_tokens = 24;
    c.eos_token_id = std::vector<int>{};
    const std::vector<int> prompt = tok.encode("Murphy's Law:\n\t");
    const Generation free_run = generate(model(), tok, prompt, c, greedy);
    REQUIRE(free_run.text.size() > 8);
    // a stop taken from the middle of the greedy text: the same run, cut where it starts
    size_t from = free_run.text.size() / 2, to = from + 3;
    auto continuation = [&](size_t i) { return i < free_run.text.size() && (free_run.text[i] & 0xC0) == 0x80; };
    while (continuation(from)) ++from;
    while (continuation(to)) ++to;
    const std::string stop = free_run.text.substr(from, to - from);
    REQUIRE(to_valid_utf8(stop) == stop);
    const size_t at = free_run.text.find(stop);
    c.stop = {stop};
    const Generation g = generate(model(), tok, prompt, c, greedy);
    CHECK(g.finish_reason == FinishReason::StopString);
    CHECK(g.stopped_by == "stop_string");
    CHECK(g.matched_stop == stop);
    CHECK(g.text == free_run.text.substr(0, at));
    CHECK(g.ids.size() < free_run.ids.size());
    // the ids are those of the free run up to the token that completed the stop
    CHECK(std::equal(g.ids.begin(), g.ids.end(), free_run.ids.begin()));
    CHECK(to_valid_utf8(tok.decode(g.ids)).find(stop) != std::string::npos);
    std::string streamed;
    for (const StepRecord& r : g.steps) streamed += r.text;
    CHECK(streamed == g.text);
    c.include_stop_str_in_output = true;
    const Generation kept = generate(model(), tok, prompt, c, greedy);
    CHECK(kept.text == free_run.text.substr(0, at + stop.size()));
    CHECK(kept.finish_reason == FinishReason::StopString);
    // no stop in the text: it runs to the length limit and flushes what it held
    c.stop = {"\x01never"};
    const Generation none = generate(model(), tok, prompt, c, greedy);
    CHECK(none.text == free_run.text);
    CHECK(none.finish_reason == FinishReason::Length);
    CHECK(none.matched_stop.empty());
}

TEST_CASE("min_new_tokens does not delay a stop string (HF)", "[stop][generate]") {
    const Tokenizer& tok = tokenizer();
    GenerationConfig c;
    c.max_new_tokens = 16;
    c.eos_token_id = std::vector<int>{};
    const std::vector<int> prompt = tok.encode("Murphy's Law:\n\t");
    const Generation free_run = generate(model(), tok, prompt, c, greedy);
    c.stop = {free_run.text.substr(0, 2)};
    REQUIRE(to_valid_utf8(c.stop[0]) == c.stop[0]);
    c.min_new_tokens = 10;
    const Generation g = generate(model(), tok, prompt, c, make_sampler(c, 1));
    CHECK(g.finish_reason == FinishReason::StopString);
    CHECK(g.ids.size() < 10);
    CHECK(g.text.empty());
}
