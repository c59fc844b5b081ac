// Graded tests for chapter 00's exercises (see exercises/manifest.json). Every test name starts
// with its exercise id; every failure says what was expected and what your code returned.
#include <catch2/catch.hpp>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/exercises.hpp"
#include "feedback.hpp"
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
    FEEDBACK("input: 3 x 4 logits [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]");
    FEEDBACK("expected: " << show(expected));
    FEEDBACK("found:    " << show(found));
    CHECK((found.shape() == expected.shape() && found == expected));
}

TEST_CASE("ex00.1 last_position_logits works for a single position", "[ex00.1]") {
    const xt::xtensor<float, 1> found = your_last_position_logits(xt::xtensor<float, 2>{{-1.5f, 0.25f}});
    FEEDBACK("input: 1 x 2 logits [[-1.5, 0.25]] (one position: row 0 is the last)");
    FEEDBACK("expected: [-1.5, 0.25] (size 2)");
    FEEDBACK("found:    " << show(found));
    CHECK((found == xt::xtensor<float, 1>{-1.5f, 0.25f}));
}

TEST_CASE("ex00.1 last_position_logits matches the model's next-token row", "[ex00.1]") {
    const xt::xtensor<float, 2> logits = model().forward({464, 1266, 835});
    const xt::xtensor<float, 1> found = your_last_position_logits(logits);
    FEEDBACK("input: the model's (3, " << logits.shape(1) << ") logits for the tokens 464, 1266, 835");
    FEEDBACK("expected: row 2, " << logits.shape(1) << " values, starting "
                                 << feedback::list(xt::xtensor<float, 1>(xt::view(logits, 2, xt::all())), 4));
    FEEDBACK("found:    " << found.size() << " values, starting " << feedback::list(found, 4));
    REQUIRE(found.size() == logits.shape(1));
    size_t first = found.size();
    for (size_t v = found.size(); v-- > 0;)
        if (found(v) != logits(2, v)) first = v;
    FEEDBACK("the first difference is at index " << first << ": expected " << feedback::num(logits(2, first < found.size() ? first : 0))
                                                 << ", found " << feedback::num(found(first < found.size() ? first : 0)));
    CHECK(first == found.size());
}

TEST_CASE("ex00.2 generate_naive makes exactly max_new_tokens tokens", "[ex00.2]") {
    const std::vector<int> found = your_generate_naive(model(), {10, 20}, {7, -1}, scripted({5, 6}));
    const std::vector<int> expected{5, 6, 5, 6, 5, 6, 5};
    FEEDBACK("picker returns 5, 6, 5, 6, ...; max_new_tokens = 7; no EOS");
    FEEDBACK("expected: " << golden::join(expected));
    FEEDBACK("found:    " << golden::join(found));
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
    FEEDBACK("picker returns 3, 4, EOS (" << eos << "), 9; max_new_tokens = 50");
    FEEDBACK("expected: " << golden::join(expected));
    FEEDBACK("found:    " << golden::join(found));
    CHECK(found == expected);
    FEEDBACK("on_step saw tokens: " << golden::join(steps) << " with context lengths " << golden::join(lengths)
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
    FEEDBACK("prompt " << c["prompt"].dump() << " with the library's argmax as the picker");
    FEEDBACK("expected: " << golden::join(expected));
    FEEDBACK("found:    " << golden::join(found));
    CHECK(found == expected);
}

namespace {

// What a request that must be refused did: the decodebook::Error's message, or the tokens it returned.
template <class Call>
std::string refused_with(Call&& call) {
    try {
        return "no exception: it returned [" + golden::join(call()) + "]";
    } catch (const Error& e) {
        return std::string("decodebook::Error: ") + e.what();
    }
}

void check_refused(const std::string& input, const std::string& message, const std::string& found) {
    FEEDBACK("input: " << input);
    FEEDBACK("expected: a decodebook::Error from check_generation_request saying \"" << message << "\"");
    FEEDBACK("found:    " << found);
    CHECK(found.find("decodebook::Error: ") == 0);
    CHECK(found.find(message) != std::string::npos);
}

}  // namespace

TEST_CASE("ex00.2 generate_naive refuses bad requests", "[ex00.2]") {
    const ModelConfig& c = model().config();
    check_refused("an empty prompt, max_new_tokens 4", "prompt is empty",
                  refused_with([&] { return your_generate_naive(model(), {}, {4, -1}, scripted({1})); }));
    check_refused("a prompt of n_positions (" + std::to_string(c.n_positions) + ") tokens, max_new_tokens 1",
                  "exceeds the model's context", refused_with([&] {
                      return your_generate_naive(model(), std::vector<int>(static_cast<size_t>(c.n_positions), 1), {1, -1},
                                                 scripted({1}));
                  }));
    check_refused("prompt [1], max_new_tokens 0", "at least 1",
                  refused_with([&] { return your_generate_naive(model(), {1}, {0, -1}, scripted({1})); }));
}
