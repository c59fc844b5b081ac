// Graded tests for chapter 06's exercises (see exercises/manifest.json).
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's scan_stops and
// min_new_tokens processor in this test program, which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>

#include "decodebook/base/rng.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;
using Pieces = std::vector<std::string>;

namespace {

// A scripted stream through your_scan_stops: what was shown after each token (and, when no stop
// was found, what the end of the generation released), and the stop found.
struct Shown {
    Pieces pieces;
    std::optional<size_t> stop;
};

Shown run(const std::vector<std::string>& tokens, const std::vector<std::string>& stops) {
    Shown out;
    std::string pending;
    for (const std::string& t : tokens) {
        pending += t;
        const StopScan scan = your_scan_stops(pending, stops);
        FEEDBACK("input: pending " << visible_token(pending) << "; expected: safe at most its " << pending.size()
                               << " bytes; found: safe " << scan.safe);
        REQUIRE(scan.safe <= pending.size());
        out.pieces.push_back(pending.substr(0, scan.safe));
        if (scan.stop) {
            out.stop = scan.stop;
            return out;
        }
        pending.erase(0, scan.safe);
    }
    out.pieces.push_back(pending);  // the end: nothing can complete any more
    return out;
}

std::string show(const Pieces& pieces) {
    std::string out;
    for (const std::string& p : pieces) out += visible_token(p) + " ";
    return out;
}

void check_run(const std::vector<std::string>& tokens, const std::vector<std::string>& stops, const Pieces& expected,
               std::optional<size_t> stop, const std::string& what) {
    FEEDBACK(what);
    const Shown found = run(tokens, stops);
    FEEDBACK("tokens:            " << show(tokens));
    FEEDBACK("expected to show:  " << show(expected) << (stop ? "then stop " + std::to_string(*stop) : "and no stop"));
    FEEDBACK("you showed:        " << show(found.pieces) << (found.stop ? "then stop " + std::to_string(*found.stop) : "and no stop"));
    CHECK(found.pieces == expected);
    CHECK(found.stop == stop);
}

}  // namespace

TEST_CASE("ex06.1 the User: stream waits and then shows User said", "[ex06.1]") {
    check_run({"User", " said"}, {"User:"}, {"", "User said", ""}, std::nullopt, "\"User\" may become \"User:\": wait");
    check_run({"User", ":", " hi"}, {"User:"}, {"", ""}, 0, "\"User\" then \":\": the stop, nothing shown");
    check_run({"Hello Us", "e", "r"}, {"User:"}, {"Hello ", "", "", "User"}, std::nullopt,
              "only the partial match waits (not a fixed 4 characters)");
}

TEST_CASE("ex06.1 a stop inside a token or across three tokens", "[ex06.1]") {
    check_run({"ABC", "xDEF"}, {"DE"}, {"ABC", "x"}, 0, "\"DE\" inside the token \"xDEF\"");
    check_run({"AB", "CD", "EF"}, {"DE"}, {"AB", "C", ""}, 0, "\"DE\" across two tokens");
    check_run({"x\n", "\t", "\t-", "-", " Twain"}, {"\n\t\t--"}, {"x", "", "", ""}, 0, "a stop across three tokens");
}

TEST_CASE("ex06.1 a stop longer than any token", "[ex06.1]") {
    check_run({"AB", "CD", "EF", "GH", "IJ", "KL"}, {"DEFGHIJ"}, {"AB", "C", "", "", ""}, 0, "\"DEFGHIJ\" over 2-byte tokens");
    check_run({"AB", "CD", "EF", "GX"}, {"DEFGHIJ"}, {"AB", "C", "", "DEFGX", ""}, std::nullopt, "almost: released at once");
}

TEST_CASE("ex06.1 two stops sharing a prefix", "[ex06.1]") {
    const std::vector<std::string> stops{"<|end|>", "<|im_end|>"};
    check_run({"a<", "|", "im", "_end|>"}, stops, {"a", "", "", ""}, 1, "\"<|\" begins both; \"<|im_end|>\" completes");
    check_run({"a<", "|e", "nd", "|>"}, stops, {"a", "", "", ""}, 0, "\"<|end|>\" completes");
    check_run({"a<", "|i", "x"}, stops, {"a", "", "<|ix", ""}, std::nullopt, "neither completes");
}

TEST_CASE("ex06.1 never shows half a UTF-8 character", "[ex06.1]") {
    // é = C3 A9, € = E2 82 AC
    check_run({"caf\xC3", "\xA9 ok"}, {"!"}, {"caf", "\xC3\xA9 ok", ""}, std::nullopt, "é split after its first byte");
    check_run({"1\xE2", "\x82", "\xAC!"}, {"!"}, {"1", "", "\xE2\x82\xAC"}, 0, "€ split into three tokens, then the stop");
    check_run({"x\xC3", "\xA9t"}, {"\xC3\xA9t\xC3\xA9"}, {"x", "", "\xC3\xA9t"}, std::nullopt, "a stop that begins with é");
}

namespace {

std::string show_scan(size_t safe, std::optional<size_t> stop) {
    return "safe " + std::to_string(safe) + ", " + (stop ? "stop " + std::to_string(*stop) : std::string("no stop"));
}

void check_scan(const std::string& pending, const std::vector<std::string>& stops, size_t safe,
                std::optional<size_t> stop, const std::string& why) {
    const StopScan found = your_scan_stops(pending, stops);
    FEEDBACK("input: pending " << visible_token(pending) << ", stops " << show(stops));
    FEEDBACK(why);
    FEEDBACK("expected: " << show_scan(safe, stop));
    FEEDBACK("found:    " << show_scan(found.safe, found.stop));
    CHECK(found.safe == safe);
    CHECK(found.stop == stop);
}

}  // namespace

TEST_CASE("ex06.1 the earliest stop wins", "[ex06.1]") {
    check_scan("hello", {"lo", "hel"}, 0, 1, "\"hel\" (stop 1) starts at 0, before \"lo\" at 3");
    check_scan("xab", {"ab", "b"}, 1, 0, "\"ab\" (stop 0) starts at 1, before \"b\" at 2");
    check_scan("xabc", {"abc", "ab"}, 1, 0, "both start at 1: the earlier in the list wins");
    check_scan("Hello Us", {"User:"}, 6, std::nullopt, "no stop; \"Us\" may become \"User:\": hold it back");
}

TEST_CASE("ex06.1 agrees with the library on 3000 random pending texts", "[ex06.1]") {
    std::mt19937 rng(6);
    const std::vector<std::string> alphabet{"a", "b", "\n", "\xC3\xA9", "\xC3"};
    auto text = [&](int max_pieces) {
        std::string s;
        for (int i = 0, n = static_cast<int>(rng() % static_cast<unsigned>(max_pieces)) + 1; i < n; ++i)
            s += alphabet[rng() % alphabet.size()];
        return s;
    };
    std::vector<std::string> pendings;
    std::vector<std::vector<std::string>> stop_lists;
    for (int trial = 0; trial < 3000; ++trial) {
        std::string pending = text(10);
        if (pending.back() == '\xC3' && trial % 2 == 0) pending.pop_back();
        std::vector<std::string> stops;
        for (int i = 0, n = 1 + trial % 3; i < n; ++i) stops.push_back(to_valid_utf8(text(3)));
        pendings.push_back(pending);
        stop_lists.push_back(stops);
    }
    const std::vector<StopScan> found = sandbox::run<std::vector<StopScan>>("your_scan_stops", [&] {
        std::vector<StopScan> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (size_t t = 0; t < pendings.size(); ++t) out.push_back(your_scan_stops(pendings[t], stop_lists[t]));
        return out;
    });
    REQUIRE(found.size() == pendings.size());
    for (size_t t = 0; t < pendings.size(); ++t) {
        const StopScan expected = scan_stops(pendings[t], stop_lists[t]);
        FEEDBACK("input: pending " << visible_token(pendings[t]) << ", stops " << show(stop_lists[t]));
        FEEDBACK("expected: " << show_scan(expected.safe, expected.stop) << " (the library's scan_stops)");
        FEEDBACK("found:    " << show_scan(found[t].safe, found[t].stop));
        REQUIRE(found[t].safe == expected.safe);
        REQUIRE(found[t].stop == expected.stop);
    }
}

TEST_CASE("ex06.1 on cases drawn when the test runs", "[ex06.1]") {
    // 300 pending texts of 0 to 10 pieces over a, b, newline, e-acute, the euro sign and the first
    // bytes of both (a character cut off), with 0 to 3 stop strings of 1 to 3 such pieces (made
    // valid UTF-8, so "\xC3" becomes U+FFFD): stops inside, at the end, overlapping, repeated. The
    // expected scan is the library's scan_stops.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const std::vector<std::string> alphabet{"a", "b", "\n", "\xC3\xA9", "\xE2\x82\xAC", "\xC3", "\xE2\x82"};
    auto text = [&](int min_pieces, int max_pieces) {
        std::string s;
        for (int i = 0, n = drawn::between(rng, min_pieces, max_pieces); i < n; ++i)
            s += alphabet[static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(alphabet.size()) - 1))];
        return s;
    };
    std::vector<std::string> pendings;
    std::vector<std::vector<std::string>> stop_lists;
    for (int trial = 0; trial < 300; ++trial) {
        std::vector<std::string> stops;
        for (int i = 0, n = drawn::between(rng, 0, 3); i < n; ++i) stops.push_back(to_valid_utf8(text(1, 3)));
        std::string pending = text(0, 10);
        if (!stops.empty() && drawn::between(rng, 0, 2) == 0) {
            // a stop, or the start of one, planted at a random place
            const std::string& stop = stops[static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(stops.size()) - 1))];
            const std::string piece = stop.substr(0, static_cast<size_t>(drawn::between(rng, 1, static_cast<int>(stop.size()))));
            pending.insert(static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(pending.size()))), piece);
        }
        pendings.push_back(pending);
        stop_lists.push_back(stops);
    }
    const std::vector<StopScan> found = sandbox::run<std::vector<StopScan>>("your_scan_stops", [&] {
        std::vector<StopScan> out;  // every call in one sandboxed child (sandbox.hpp)
        for (size_t t = 0; t < pendings.size(); ++t) out.push_back(your_scan_stops(pendings[t], stop_lists[t]));
        return out;
    });
    REQUIRE(found.size() == pendings.size());
    for (size_t t = 0; t < pendings.size(); ++t) {
        const StopScan expected = scan_stops(pendings[t], stop_lists[t]);
        FEEDBACK("a case drawn with seed " << seed << ": pending " << visible_token(pendings[t]) << " ("
                                          << pendings[t].size() << " bytes), stops "
                                          << (stop_lists[t].empty() ? std::string("none") : show(stop_lists[t])));
        FEEDBACK("expected: " << show_scan(expected.safe, expected.stop) << " (the library's scan_stops)");
        FEEDBACK("found:    " << show_scan(found[t].safe, found[t].stop));
        const bool same = found[t].safe == expected.safe && found[t].stop == expected.stop;
        FEEDBACK((same ? std::string()
                       : "hint: " + std::string(expected.stop || found[t].stop
                                                    ? "the earliest stop wins: the smallest position at which any stop "
                                                      "occurs (a tie goes to the earlier in the list), and safe is where "
                                                      "it starts"
                                                    : "no stop occurs: hold back the longest end of the pending text that "
                                                      "is a proper start of a stop string, or a UTF-8 character cut off "
                                                      "at the end, whichever is longer")));
        REQUIRE(found[t].safe == expected.safe);
        REQUIRE(found[t].stop == expected.stop);
    }
}

namespace {

std::string show(const Vec& v) { return feedback::list(v); }

void check_min_new(const Vec& logits, const std::vector<int>& eos_ids, int generated_count, int min_new_tokens,
                   const Vec& expected, const std::string& why) {
    Vec found = logits;
    your_apply_min_new_tokens(found, eos_ids, generated_count, min_new_tokens);
    FEEDBACK("input: logits " << show(logits) << ", eos_ids " << feedback::list(eos_ids) << ", generated_count "
                          << generated_count << ", min_new_tokens " << min_new_tokens);
    FEEDBACK(why);
    FEEDBACK("expected: " << show(expected));
    FEEDBACK("found:    " << show(found));
    bool same = found.size() == expected.size();
    for (size_t i = 0; same && i < expected.size(); ++i) same = found(i) == expected(i);  // -inf == -inf
    CHECK(same);
}

}  // namespace

TEST_CASE("ex06.2 min_new_tokens masks every EOS id until it is reached", "[ex06.2]") {
    const float X = -INFINITY;
    check_min_new({1, 5, 2}, {1}, 0, 2, {1, X, 2}, "0 tokens of at least 2 so far: EOS (id 1) is masked to -inf");
    check_min_new({1, 5, 2}, {1}, 1, 2, {1, X, 2},
                  "1 token of at least 2 so far: this step makes the 2nd token, so EOS may not be it (masked)");
    check_min_new({1, 5, 2}, {1}, 2, 2, {1, 5, 2},
                  "2 tokens of at least 2 made: min_new_tokens is reached, EOS may come now (nothing masked)");
    check_min_new({1, 5, 2}, {1}, 3, 2, {1, 5, 2}, "3 tokens made, past min_new_tokens 2: nothing masked");
    check_min_new({4, 5, 2}, {0, 1}, 1, 3, {X, X, 2}, "two EOS ids: both masked, not only the first");
    check_min_new({4, 5, 2}, {0}, 0, 0, {4, 5, 2}, "min_new_tokens 0 is off: nothing masked");
    check_min_new({4, 5, 2}, {7}, 0, 3, {4, 5, 2}, "an EOS id outside the logits (id 7 of 3) is ignored");
}

namespace {

// The greedy continuation of "A computer is" with min_new_tokens applied by the library and by
// your processor; the first position where they differ is named.
void check_greedy(const Generation& ended, int min_new_tokens, const std::string& why) {
    const Gpt2& model = golden::model();
    const Tokenizer& tok = golden::tokenizer();
    const std::vector<int> prompt = tok.encode("A computer is");
    GenerationConfig free_run;
    free_run.max_new_tokens = 48;
    GenerationConfig library = free_run;
    library.min_new_tokens = min_new_tokens;
    const Generation expected = generate(model, tok, prompt, library, make_sampler(library, 0));
    const Sampler yours = [&](const Vec& logits, const DecodeContext& context) {
        Vec z = logits;
        const std::vector<int> eos_ids(context.eos_ids.begin(), context.eos_ids.end());
        your_apply_min_new_tokens(z, eos_ids, static_cast<int>(context.generated.size()), min_new_tokens);
        return argmax(z);
    };
    const Generation found = generate(model, tok, prompt, free_run, yours);
    size_t first = 0;
    while (first < found.ids.size() && first < expected.ids.size() && found.ids[first] == expected.ids[first]) ++first;
    const size_t from = first > 3 ? first - 3 : 0;  // the tokens before the first difference are the same
    const auto tail = [&](const std::vector<int>& ids) {
        const std::vector<int> rest(ids.begin() + static_cast<long>(std::min(from, ids.size())), ids.end());
        return std::to_string(ids.size()) + " tokens" + (from ? ", from token " + std::to_string(from + 1) + ": ... " : ": ") +
               golden::join(rest);
    };
    FEEDBACK("input: greedy after \"A computer is\" (max_new_tokens 48), min_new_tokens " +
                        std::to_string(min_new_tokens) + "; without it the model ends with EOS as token " +
                        std::to_string(ended.ids.size()));
    FEEDBACK(why);
    FEEDBACK("expected: " << tail(expected.ids));
    FEEDBACK("found:    " << tail(found.ids));
    FEEDBACK("(EOS is " << model.config().eos_token_id << "; the first difference is token " << first + 1 << ")");
    CHECK((found.ids == expected.ids));
}

}  // namespace

TEST_CASE("ex06.2 a greedy generation with your processor matches the library's", "[ex06.2]") {
    const Gpt2& model = golden::model();
    const Tokenizer& tok = golden::tokenizer();
    GenerationConfig free_run;
    free_run.max_new_tokens = 48;
    const Generation ended = generate(model, tok, tok.encode("A computer is"), free_run, greedy);
    REQUIRE(ended.finish_reason == FinishReason::Eos);  // the model ends this fortune by itself
    const int n = static_cast<int>(ended.ids.size());
    check_greedy(ended, n + 4, "EOS masked for the first " + std::to_string(n + 4) + " tokens: the model must go on");
    check_greedy(ended, n, "EOS masked while fewer than " + std::to_string(n) + " tokens are made: token " +
                               std::to_string(n) + ", where the model wants EOS, must be another");
    check_greedy(ended, n - 1, std::to_string(n - 1) + " tokens are made when the model wants EOS as token " +
                                   std::to_string(n) + ": min_new_tokens is reached, so EOS is allowed there");
}

TEST_CASE("ex06.2 on cases drawn when the test runs", "[ex06.2]") {
    // 300 calls: logits of 1 to 8 values in steps of 1/4 (some already -inf), 0 to 3 EOS ids from
    // -1 to V + 1 (so some lie outside the logits, some repeat), generated_count and min_new_tokens
    // from 0 to 6 (so it is below, at and past the minimum). The expected logits are those after
    // the min_new_tokens processor of the library's LogitsChain.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Vec logits = {};
        std::vector<int> eos_ids = {};
        int generated_count = 0, min_new_tokens = 0;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 300; ++i) {
        Case c;
        const int vocab = drawn::between(rng, 1, 8);
        c.logits = xt::zeros<float>({static_cast<size_t>(vocab)});
        for (float& x : c.logits)
            x = drawn::between(rng, 0, 9) == 0 ? -INFINITY : 0.25f * static_cast<float>(drawn::between(rng, -12, 12));
        for (int k = drawn::between(rng, 0, 3); k > 0; --k) c.eos_ids.push_back(drawn::between(rng, -1, vocab + 1));
        c.generated_count = drawn::between(rng, 0, 6);
        c.min_new_tokens = drawn::between(rng, 0, 6);
        cases.push_back(c);
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_apply_min_new_tokens", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) {
            Vec z = c.logits;
            your_apply_min_new_tokens(z, c.eos_ids, c.generated_count, c.min_new_tokens);
            out.push_back(z);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        // the library's processor, taken from a chain with only min_new_tokens on (off at 0)
        GenerationConfig config;
        config.max_new_tokens = 64;
        config.min_new_tokens = c.min_new_tokens;
        const LogitsChain chain(config);
        const std::vector<int> generated(static_cast<size_t>(c.generated_count), 0);
        const DecodeContext context{{}, generated, c.generated_count, c.eos_ids};
        Vec expected = c.logits;
        int ran = 0;
        for (const Processor& p : chain.processors()) {
            if (p.name.rfind("min_new_tokens", 0) != 0) continue;
            p.apply(expected, context);
            ++ran;
        }
        REQUIRE(ran == (c.min_new_tokens > 0 ? 1 : 0));
        FEEDBACK("a case drawn with seed " << seed << ": logits " << show(c.logits) << ", eos_ids "
                                          << feedback::list(c.eos_ids) << ", generated_count " << c.generated_count
                                          << ", min_new_tokens " << c.min_new_tokens);
        FEEDBACK("expected: " << show(expected) << " (the library's min_new_tokens processor)");
        FEEDBACK("found:    " << show(found[i]));
        bool same = found[i].size() == expected.size();
        for (size_t k = 0; same && k < expected.size(); ++k) same = found[i](k) == expected(k);  // -inf == -inf
        FEEDBACK((same ? std::string()
                       : "hint: mask (-inf) every EOS id inside the logits while generated_count < min_new_tokens (this "
                         "step makes token generated_count + 1); from then on change nothing, and ignore an id outside "
                         "the logits (negative, or V and above)"));
        REQUIRE(same);
    }
}
