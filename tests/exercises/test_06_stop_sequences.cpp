// Graded tests for chapter 06's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/exercises.hpp"
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
    INFO(what);
    const Shown found = run(tokens, stops);
    INFO("tokens:            " << show(tokens));
    INFO("expected to show:  " << show(expected) << (stop ? "then stop " + std::to_string(*stop) : "and no stop"));
    INFO("you showed:        " << show(found.pieces) << (found.stop ? "then stop " + std::to_string(*found.stop) : "and no stop"));
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

TEST_CASE("ex06.1 the earliest stop wins", "[ex06.1]") {
    const StopScan a = your_scan_stops("hello", {"lo", "hel"});
    CHECK(a.safe == 0);
    CHECK(a.stop == std::optional<size_t>{1});
    const StopScan b = your_scan_stops("xab", {"ab", "b"});
    CHECK(b.safe == 1);
    CHECK(b.stop == std::optional<size_t>{0});
    const StopScan tie = your_scan_stops("xabc", {"abc", "ab"});  // same start: the earlier in the list
    CHECK(tie.safe == 1);
    CHECK(tie.stop == std::optional<size_t>{0});
    const StopScan none = your_scan_stops("Hello Us", {"User:"});
    CHECK(none.safe == 6);
    CHECK_FALSE(none.stop);
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
        INFO("pending " << visible_token(pendings[t]) << ", stops " << show(stop_lists[t]));
        REQUIRE(found[t].safe == expected.safe);
        REQUIRE(found[t].stop == expected.stop);
    }
}

TEST_CASE("ex06.2 min_new_tokens masks every EOS id until it is reached", "[ex06.2]") {
    Vec a{1.0f, 5.0f, 2.0f};
    your_apply_min_new_tokens(a, {1}, 0, 2);
    CHECK(a(0) == 1.0f);
    CHECK(std::isinf(a(1)));
    CHECK(a(1) < 0);
    CHECK(a(2) == 2.0f);
    Vec b{1.0f, 5.0f, 2.0f};
    your_apply_min_new_tokens(b, {1}, 2, 2);  // reached: unchanged
    CHECK(bool(b == Vec{1.0f, 5.0f, 2.0f}));
    Vec c{4.0f, 5.0f, 2.0f};
    your_apply_min_new_tokens(c, {0, 1}, 1, 3);  // every EOS id, not only the first
    CHECK(golden::finite_ids(c) == std::vector<int>{2});
    Vec d{4.0f, 5.0f, 2.0f};
    your_apply_min_new_tokens(d, {0}, 0, 0);  // 0 = off
    CHECK(bool(d == Vec{4.0f, 5.0f, 2.0f}));
    Vec e{4.0f, 5.0f, 2.0f};
    your_apply_min_new_tokens(e, {7}, 0, 3);  // an id outside the logits is ignored
    CHECK(bool(e == Vec{4.0f, 5.0f, 2.0f}));
}

TEST_CASE("ex06.2 a greedy generation with your processor matches the library's", "[ex06.2]") {
    const Gpt2& model = golden::model();
    const Tokenizer& tok = golden::tokenizer();
    const std::vector<int> prompt = tok.encode("A computer is");
    GenerationConfig free_run;
    free_run.max_new_tokens = 48;
    const Generation ended = generate(model, tok, prompt, free_run, greedy);
    REQUIRE(ended.finish_reason == FinishReason::Eos);  // the model ends this fortune by itself
    GenerationConfig library = free_run;
    library.min_new_tokens = static_cast<int>(ended.ids.size()) + 4;
    const Generation expected = generate(model, tok, prompt, library, make_sampler(library, 0));
    const Sampler yours = [&](const Vec& logits, const DecodeContext& context) {
        Vec z = logits;
        const std::vector<int> eos_ids(context.eos_ids.begin(), context.eos_ids.end());
        your_apply_min_new_tokens(z, eos_ids, static_cast<int>(context.generated.size()), library.min_new_tokens);
        return argmax(z);
    };
    const Generation found = generate(model, tok, prompt, free_run, yours);
    INFO("expected ids: " << golden::join(expected.ids));
    INFO("found ids:    " << golden::join(found.ids));
    CHECK(found.ids == expected.ids);
    CHECK(found.ids.size() >= static_cast<size_t>(library.min_new_tokens));
}
