// Graded tests for chapter 00's exercises (see exercises/manifest.json). Every test name starts
// with its exercise id; every failure says what was expected and what your code returned.
#include <catch2/catch.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/exercises.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::scripted;

namespace {

std::string show(const xt::xtensor<float, 1>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v(i)).substr(0, 6);
    return s + "] (size " + std::to_string(v.size()) + ")";
}

}  // namespace

TEST_CASE("ex00.1 last_position_logits returns the last row", "[ex00.1]") {
    const xt::xtensor<float, 2> z{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}};
    const xt::xtensor<float, 1> expected{9, 10, 11, 12};
    const xt::xtensor<float, 1> found = your_last_position_logits(z);
    INFO("input: 3 x 4 logits [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]");
    INFO("expected: " << show(expected));
    INFO("found:    " << show(found));
    CHECK((found.shape() == expected.shape() && found == expected));
}

TEST_CASE("ex00.1 last_position_logits works for a single position", "[ex00.1]") {
    const xt::xtensor<float, 1> found = your_last_position_logits(xt::xtensor<float, 2>{{-1.5f, 0.25f}});
    INFO("expected: [-1.5, 0.25] (size 2)");
    INFO("found:    " << show(found));
    CHECK((found == xt::xtensor<float, 1>{-1.5f, 0.25f}));
}

TEST_CASE("ex00.1 last_position_logits matches the model's next-token row", "[ex00.1]") {
    const xt::xtensor<float, 2> logits = model().forward({464, 1266, 835});
    const xt::xtensor<float, 1> found = your_last_position_logits(logits);
    REQUIRE(found.size() == logits.shape(1));
    bool same = true;
    for (size_t v = 0; v < found.size(); ++v) same = same && found(v) == logits(2, v);
    INFO("expected: row 2 of the (3, V) logits; found a different vector");
    CHECK(same);
}

TEST_CASE("ex00.2 generate_naive makes exactly max_new_tokens tokens", "[ex00.2]") {
    const std::vector<int> found = your_generate_naive(model(), {10, 20}, {7, -1}, scripted({5, 6}));
    const std::vector<int> expected{5, 6, 5, 6, 5, 6, 5};
    INFO("picker returns 5, 6, 5, 6, ...; max_new_tokens = 7; no EOS");
    INFO("expected: " << golden::join(expected));
    INFO("found:    " << golden::join(found));
    CHECK(found == expected);
}

TEST_CASE("ex00.2 generate_naive stops at EOS and keeps it", "[ex00.2]") {
    const int eos = model().config().eos_token_id;
    std::vector<int> steps, lengths;
    const std::vector<int> found =
        your_generate_naive(model(), {10}, {50, eos}, scripted({3, 4, eos, 9}), [&](const StepRecord& s) {
            steps.push_back(s.token);
            lengths.push_back(s.context_length);
        });
    const std::vector<int> expected{3, 4, eos};
    INFO("picker returns 3, 4, EOS (" << eos << "), 9; max_new_tokens = 50");
    INFO("expected: " << golden::join(expected));
    INFO("found:    " << golden::join(found));
    CHECK(found == expected);
    INFO("on_step saw tokens: " << golden::join(steps) << " with context lengths " << golden::join(lengths)
                                << " (expected tokens 3, 4, " << eos << " and lengths 1, 2, 3)");
    CHECK(steps == expected);
    CHECK(lengths == std::vector<int>{1, 2, 3});
}

TEST_CASE("ex00.2 generate_naive feeds the growing sequence to the model", "[ex00.2]") {
    // With argmax as the picker the loop must reproduce the reference's greedy tokens.
    const nlohmann::json g = golden::load("greedy.json");
    const auto& c = g["cases"][0];
    const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
    const std::vector<int> expected = c["ids"].get<std::vector<int>>();
    const std::vector<int> found = your_generate_naive(
        model(), prompt, {c["max_new_tokens"].get<int>(), model().config().eos_token_id}, decodebook::argmax);
    INFO("prompt " << c["prompt"].dump() << " with the library's argmax as the picker");
    INFO("expected: " << golden::join(expected));
    INFO("found:    " << golden::join(found));
    CHECK(found == expected);
}

TEST_CASE("ex00.2 generate_naive refuses bad requests", "[ex00.2]") {
    const ModelConfig& c = model().config();
    INFO("expected a decodebook::Error from check_generation_request for each bad request");
    CHECK_THROWS_WITH(your_generate_naive(model(), {}, {4, -1}, scripted({1})), Catch::Contains("prompt is empty"));
    CHECK_THROWS_WITH(your_generate_naive(model(), std::vector<int>(static_cast<size_t>(c.n_positions), 1),
                                                {1, -1}, scripted({1})),
                      Catch::Contains("exceeds the model's context"));
    CHECK_THROWS_WITH(your_generate_naive(model(), {1}, {0, -1}, scripted({1})), Catch::Contains("at least 1"));
}
