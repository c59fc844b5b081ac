// Graded tests for chapter 01's exercises (see exercises/manifest.json).
// Each exercise also meets cases drawn when the test runs, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library in this test program,
// which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/base/rng.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using golden::model;

namespace {

void check_argmax(const xt::xtensor<float, 1>& logits, int expected, const std::string& what) {
    const int found = your_argmax(logits);
    FEEDBACK("input: " << what);
    FEEDBACK("expected: " << expected);
    FEEDBACK("found:    " << found);
    CHECK(found == expected);
}

}  // namespace

TEST_CASE("ex01.1 argmax finds the largest logit", "[ex01.1]") {
    check_argmax({0.5f, 2.0f, -1.0f}, 1, "logits [0.5, 2.0, -1.0]");
    check_argmax({-5.0f, -2.0f, -3.0f}, 1, "logits [-5, -2, -3] (all negative)");
    check_argmax({4.0f}, 0, "logits [4] (one token)");
    check_argmax({-INFINITY, -INFINITY, 0.0f}, 2, "logits [-inf, -inf, 0]");
    check_argmax({1.0f, 2.0f, 3.0f, 9.0f}, 3, "logits [1, 2, 3, 9] (the last one)");
}

TEST_CASE("ex01.1 argmax breaks ties toward the lowest id", "[ex01.1]") {
    check_argmax({1.0f, 3.0f, 3.0f, 2.0f}, 1, "logits [1, 3, 3, 2]: ids 1 and 2 tie");
    check_argmax({7.0f, 7.0f, 7.0f}, 0, "logits [7, 7, 7]: all tie");
    check_argmax({0.0f, 5.0f, 1.0f, 5.0f, 5.0f}, 1, "logits [0, 5, 1, 5, 5]: ids 1, 3, 4 tie");
}

TEST_CASE("ex01.1 argmax agrees with the model's greedy choice", "[ex01.1]") {
    const nlohmann::json g = golden::load("greedy.json");
    for (const auto& c : g["cases"]) {
        const xt::xtensor<float, 2> logits = model().forward(c["prompt_ids"].get<std::vector<int>>());
        const xt::xtensor<float, 1> last = xt::view(logits, logits.shape(0) - 1, xt::all());
        check_argmax(last, c["ids"][0].get<int>(), "first step after the prompt " + c["prompt"].dump());
    }
}

namespace {

// What a wrong argmax says about the rule that was missed.
std::string argmax_diagnosis(const xt::xtensor<float, 1>& logits, int expected, int found) {
    if (found < 0 || static_cast<size_t>(found) >= logits.size())
        return "an id is an index into the logits: 0 to " + std::to_string(logits.size() - 1);
    const float best = logits(static_cast<size_t>(expected)), got = logits(static_cast<size_t>(found));
    if (got == best)
        return "ids " + std::to_string(expected) + " and " + std::to_string(found) + " tie at the largest logit " +
               feedback::num(best) + ": the lowest id wins (replace the best only on a strictly larger value)";
    return "id " + std::to_string(found) + " holds " + feedback::num(got) + "; the largest logit is " + feedback::num(best) +
           ", first at id " + std::to_string(expected);
}

}  // namespace

TEST_CASE("ex01.1 on cases drawn when the test runs", "[ex01.1]") {
    // 300 vectors of 1 to 12 logits, small integers in [-3, 3] (so the largest is often tied)
    // and about one in eight -inf (never all of them): the expected id is the library's argmax.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<xt::xtensor<float, 1>> cases;
    for (int i = 0; i < 300; ++i) {
        xt::xtensor<float, 1> z = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(drawn::between(rng, 1, 12))});
        for (float& x : z) x = drawn::between(rng, 0, 7) == 0 ? -INFINITY : static_cast<float>(drawn::between(rng, -3, 3));
        const size_t some = static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(z.size()) - 1));
        z(some) = static_cast<float>(drawn::between(rng, -3, 3));  // never all -inf
        cases.push_back(z);
    }
    const std::vector<int> found = sandbox::run<std::vector<int>>("your_argmax", [&] {
        std::vector<int> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& z : cases) out.push_back(your_argmax(z));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const int expected = decodebook::argmax(cases[i]);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << feedback::list(cases[i], 12));
        FEEDBACK("expected: " << expected << " (the library's argmax)\nfound:    " << found[i]);
        FEEDBACK((found[i] == expected ? std::string() : "hint: " + argmax_diagnosis(cases[i], expected, found[i])));
        REQUIRE(found[i] == expected);
    }
}

TEST_CASE("ex01.2 greedy_generate matches the independent reference", "[ex01.2]") {
    const Tokenizer tok = Tokenizer::load(golden::model_dir());
    const nlohmann::json g = golden::load("greedy.json");
    for (const auto& c : g["cases"]) {
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        const std::vector<int> found = your_greedy_generate(
            model(), c["prompt_ids"].get<std::vector<int>>(), {c["max_new_tokens"].get<int>(), model().config().eos_token_id});
        FEEDBACK("prompt " << c["prompt"].dump());
        FEEDBACK("expected: " << golden::join(expected) << "\n  (text " << nlohmann::json(c["text"]).dump() << ")");
        FEEDBACK("found:    " << golden::join(found));
        CHECK(found == expected);
    }
}

TEST_CASE("ex01.2 greedy_generate stops at EOS and keeps it", "[ex01.2]") {
    const nlohmann::json g = golden::load("greedy.json");
    const int eos = model().config().eos_token_id;
    int checked = 0;
    for (const auto& c : g["cases"]) {
        if (!c["stopped_by_eos"].get<bool>()) continue;
        const std::vector<int> found = your_greedy_generate(
            model(), c["prompt_ids"].get<std::vector<int>>(), {c["max_new_tokens"].get<int>(), eos});
        FEEDBACK("prompt " << c["prompt"].dump() << ": the reference ends with <|endoftext|> (" << eos << ") after "
                       << c["ids"].size() << " tokens");
        FEEDBACK("found:    " << golden::join(found));
        REQUIRE_FALSE(found.empty());
        CHECK(found.back() == eos);
        CHECK(found.size() == c["ids"].size());
        ++checked;
    }
    CHECK(checked >= 1);
}

TEST_CASE("ex01.2 greedy_generate is deterministic", "[ex01.2]") {
    const StopRule stop{20, model().config().eos_token_id};
    const std::vector<int> a = your_greedy_generate(model(), {100, 200, 300}, stop);
    const std::vector<int> b = your_greedy_generate(model(), {100, 200, 300}, stop);
    FEEDBACK("first run:  " << golden::join(a));
    FEEDBACK("second run: " << golden::join(b));
    CHECK(a == b);
    CHECK_FALSE(a.empty());
}

namespace {

// What the first difference between two greedy runs says about the rule that was missed.
std::string greedy_diagnosis(const std::vector<int>& expected, const std::vector<int>& found, const StopRule& stop) {
    for (size_t i = 0; i < std::min(expected.size(), found.size()); ++i)
        if (expected[i] != found[i])
            return "step " + std::to_string(i) + " chose " + std::to_string(found[i]) +
                   ": the greedy token after the prompt and the " + std::to_string(i) + " tokens before it is " +
                   std::to_string(expected[i]) +
                   " (the largest logit of the last row, ties to the lowest id)";
    if (found.size() > expected.size() && !expected.empty() && expected.back() == stop.eos_id)
        return "token " + std::to_string(stop.eos_id) + " is eos_id: stop right after it (it stays in the output)";
    if (found.size() < expected.size() && !found.empty() && found.back() == stop.eos_id && stop.eos_id >= 0)
        return "eos_id " + std::to_string(stop.eos_id) + " is the last token: keep it in the output";
    return "without EOS greedy makes exactly max_new_tokens (" + std::to_string(stop.max_new_tokens) + ") tokens";
}

}  // namespace

TEST_CASE("ex01.2 on cases drawn when the test runs", "[ex01.2]") {
    // 20 requests (each step runs the model, so a handful of short ones): prompts of 1 to 4 ids
    // drawn from the whole vocabulary, max_new_tokens 1 to 4, eos_id -1, the model's EOS or a
    // token greedy picks on the way (so it stops early there). The expected tokens are the
    // library's greedy_generate.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const ModelConfig& config = model().config();
    struct Case {
        std::vector<int> prompt = {};
        StopRule stop = {};
    };
    std::vector<Case> cases;
    for (int i = 0; i < 20; ++i) {
        Case c;
        c.prompt.resize(static_cast<size_t>(drawn::between(rng, 1, 4)));
        for (int& id : c.prompt) id = drawn::between(rng, 0, config.vocab_size - 1);
        c.stop = {drawn::between(rng, 1, 4), drawn::between(rng, 0, 1) ? -1 : config.eos_token_id};
        if (drawn::between(rng, 0, 1)) {  // a token greedy picks on the way
            const std::vector<int> run = greedy_generate(model(), c.prompt, {c.stop.max_new_tokens, -1});
            c.stop.eos_id = run[static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(run.size()) - 1))];
        }
        cases.push_back(c);
    }
    const std::vector<std::vector<int>> found = sandbox::run<std::vector<std::vector<int>>>("your_greedy_generate", [&] {
        std::vector<std::vector<int>> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) out.push_back(your_greedy_generate(model(), c.prompt, c.stop));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const std::vector<int> expected = greedy_generate(model(), c.prompt, c.stop);
        FEEDBACK("a case drawn with seed " << seed << ": prompt [" << golden::join(c.prompt) << "], max_new_tokens "
                                          << c.stop.max_new_tokens << ", eos_id " << c.stop.eos_id);
        FEEDBACK("expected: [" << golden::join(expected) << "] (the library's greedy_generate)\nfound:    ["
                               << golden::join(found[i]) << "]");
        FEEDBACK((found[i] == expected ? std::string() : "hint: " + greedy_diagnosis(expected, found[i], c.stop)));
        REQUIRE(found[i] == expected);
    }
}
