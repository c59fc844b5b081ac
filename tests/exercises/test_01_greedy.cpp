// Graded tests for chapter 01's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <cmath>

#include <xtensor/xview.hpp>

#include "decodebook/exercises.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "feedback.hpp"
#include "golden.hpp"

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
