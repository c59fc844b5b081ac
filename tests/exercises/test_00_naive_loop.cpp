// Graded tests for chapter 00's exercises (see exercises/manifest.json). Every test name starts
// with its exercise id; every failure says what was expected and what your code returned.
// Each exercise also meets cases drawn when the test runs, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library in this test program,
// which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

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

namespace {

using Matrix = xt::xtensor<float, 2>;
using Vec = xt::xtensor<float, 1>;

std::string show(const Matrix& z) {
    std::string s = std::to_string(z.shape(0)) + " x " + std::to_string(z.shape(1)) + " logits [";
    for (size_t t = 0; t < z.shape(0); ++t) {
        s += t ? ", [" : "[";
        for (size_t v = 0; v < z.shape(1); ++v) s += (v ? ", " : "") + feedback::num(z(t, v));
        s += "]";
    }
    return s + "]";
}

// What a wrong row says: which row of the input it was, if any.
std::string row_diagnosis(const Matrix& z, const Vec& found) {
    const size_t T = z.shape(0), V = z.shape(1);
    if (found.size() != V) return "one value per token: the last row holds " + std::to_string(V) + " values";
    for (size_t t = 0; t + 1 < T; ++t)
        if (found == Vec(xt::view(z, t, xt::all())))
            return "that is row " + std::to_string(t) + "; the next token's scores are the last row, " + std::to_string(T - 1) +
                   " = logits.shape(0) - 1";
    return "the answer is row " + std::to_string(T - 1) + " = logits.shape(0) - 1, copied value for value";
}

}  // namespace

TEST_CASE("ex00.1 on cases drawn when the test runs", "[ex00.1]") {
    // 200 matrices of 1 to 6 rows and 1 to 8 columns, values multiples of 1/4 in [-8, 8] (so
    // rows may repeat values) and about one in ten -inf: the expected row is the library's
    // last_position_logits.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<Matrix> cases;
    for (int i = 0; i < 200; ++i) {
        const size_t T = static_cast<size_t>(drawn::between(rng, 1, 6)), V = static_cast<size_t>(drawn::between(rng, 1, 8));
        Matrix z = Matrix::from_shape({T, V});
        for (float& x : z) x = drawn::between(rng, 0, 9) == 0 ? -INFINITY : static_cast<float>(drawn::between(rng, -32, 32)) / 4;
        cases.push_back(z);
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_last_position_logits", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Matrix& z : cases) out.push_back(your_last_position_logits(z));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec expected = last_position_logits(cases[i]);
        const bool same = found[i].shape() == expected.shape() && found[i] == expected;
        FEEDBACK("a case drawn with seed " << seed << ": " << show(cases[i]));
        FEEDBACK("expected: " << feedback::list(expected, 8) << " (the library's last_position_logits)\nfound:    "
                              << feedback::list(found[i], 8) << " (size " << found[i].size() << ")");
        FEEDBACK((same ? std::string() : "hint: " + row_diagnosis(cases[i], found[i])));
        REQUIRE(same);
    }
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

namespace {

// A drawn request and its picker: a script of ids (cycled, whatever the logits say) or the argmax
// of the logits plus a fixed drawn offset per token (a picker that reads the logits, so the tokens
// depend on what the loop fed the model).
struct LoopCase {
    std::vector<int> prompt = {};
    StopRule stop = {};
    std::vector<int> script = {};
    std::vector<float> offsets = {};
};

// A fresh picker for one run (a script's position starts at 0 in every run).
Picker picker_of(const LoopCase& c) {
    if (!c.script.empty()) return scripted(c.script);
    const std::vector<float> offsets = c.offsets;
    return [offsets](const xt::xtensor<float, 1>& z) {
        size_t best = 0;
        for (size_t i = 1; i < z.size(); ++i)
            if (z(i) + offsets[i % offsets.size()] > z(best) + offsets[best % offsets.size()]) best = i;
        return static_cast<int>(best);
    };
}

std::string show(const LoopCase& c) {
    std::string s = "prompt [" + golden::join(c.prompt) + "], max_new_tokens " + std::to_string(c.stop.max_new_tokens) +
                    ", eos_id " + std::to_string(c.stop.eos_id) + ", picker ";
    if (!c.script.empty()) return s + "returns " + golden::join(c.script) + " in turn (cycling), whatever the logits";
    bool plain = true;
    for (float o : c.offsets) plain = plain && o == 0;
    if (plain) return s + "argmax of the logits";
    return s + "argmax of the logits plus a fixed offset per token (offsets in [0, 2), drawn with the seed)";
}

// What one run of a loop did: refused (and why), or its tokens and what on_step saw.
struct LoopRun {
    bool refused = false;
    std::string why = {};
    std::vector<int> ids = {}, steps = {}, lengths = {};
};

using LoopFound = std::tuple<bool, std::vector<int>, std::vector<int>, std::vector<int>>;

template <class Loop>
LoopFound run_loop(Loop&& loop, const LoopCase& c, std::string* why = nullptr) {
    std::vector<int> steps, lengths;
    try {
        std::vector<int> ids = loop(golden::model(), c.prompt, c.stop, picker_of(c), [&](const StepRecord& s) {
            steps.push_back(s.token);
            lengths.push_back(s.context_length);
        });
        return {false, ids, steps, lengths};
    } catch (const Error& e) {
        if (why) *why = e.what();
        return {true, {}, {}, {}};
    }
}

// What the first difference between two runs says about the rule that was missed.
std::string loop_diagnosis(const LoopCase& c, const LoopFound& expected, const LoopFound& found) {
    if (std::get<0>(expected)) return "refuse this request before any work: call check_generation_request";
    if (std::get<0>(found)) return "this request is valid: nothing to refuse";
    const std::vector<int>&e = std::get<1>(expected), &f = std::get<1>(found);
    for (size_t i = 0; i < std::min(e.size(), f.size()); ++i)
        if (e[i] != f[i])
            return "step " + std::to_string(i) + " picked " + std::to_string(f[i]) + ", not " + std::to_string(e[i]) +
                   ": each step forwards the prompt and every new token so far, takes the LAST row and lets the picker choose";
    if (f.size() > e.size() && !e.empty() && e.back() == c.stop.eos_id)
        return "token " + std::to_string(c.stop.eos_id) + " is eos_id: stop right after it (it stays in the output)";
    if (f.size() < e.size() && !f.empty() && f.back() == c.stop.eos_id && c.stop.eos_id >= 0)
        return "eos_id is " + std::to_string(c.stop.eos_id) + ": stop right after it, not before";
    if (f.size() != e.size())
        return "without EOS the loop makes exactly max_new_tokens (" + std::to_string(c.stop.max_new_tokens) + ") tokens";
    return "on_step: one call per step, after the pick, with the token and context_length = the tokens fed to the model";
}

}  // namespace

TEST_CASE("ex00.2 on cases drawn when the test runs", "[ex00.2]") {
    // 24 requests (each step runs the model, so a handful of short ones): prompts of 1 to 4 ids
    // drawn from the whole vocabulary, max_new_tokens 1 to 4, a scripted picker (eos_id -1, the
    // model's EOS or one of the script's ids, so it stops early) or one that reads the logits
    // (eos_id -1 or the model's EOS); about one in six is a request to refuse (an empty prompt, an
    // id outside the vocabulary, max_new_tokens < 1, or prompt + max_new_tokens beyond the
    // context). The expected tokens and on_step records are the library's generate_naive.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const ModelConfig& config = model().config();
    std::vector<LoopCase> cases;
    for (int i = 0; i < 24; ++i) {
        LoopCase c;
        c.prompt.resize(static_cast<size_t>(drawn::between(rng, 1, 4)));
        for (int& id : c.prompt) id = drawn::between(rng, 0, config.vocab_size - 1);
        c.stop = {drawn::between(rng, 1, 4), drawn::between(rng, 0, 1) ? -1 : config.eos_token_id};
        if (drawn::between(rng, 0, 1)) {
            c.script.resize(static_cast<size_t>(drawn::between(rng, 1, 4)));
            for (int& id : c.script) id = drawn::between(rng, 0, config.vocab_size - 1);
            if (drawn::between(rng, 0, 1))  // stop at one of the script's ids
                c.stop.eos_id = c.script[static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(c.script.size()) - 1))];
        } else {
            c.offsets.assign(static_cast<size_t>(config.vocab_size), 0.0f);
            if (drawn::between(rng, 0, 2))
                for (float& o : c.offsets) o = static_cast<float>(drawn::uniform(rng, 0, 2));
        }
        if (drawn::between(rng, 0, 5) == 0) {  // a request to refuse
            switch (drawn::between(rng, 0, 3)) {
            case 0: c.prompt.clear(); break;
            case 1:
                c.prompt[static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(c.prompt.size()) - 1))] =
                    drawn::between(rng, 0, 1) ? config.vocab_size + drawn::between(rng, 0, 3) : -drawn::between(rng, 1, 3);
                break;
            case 2: c.stop.max_new_tokens = drawn::between(rng, -2, 0); break;
            default:
                c.stop.max_new_tokens = config.n_positions - static_cast<int>(c.prompt.size()) + drawn::between(rng, 1, 3);
            }
        }
        cases.push_back(c);
    }
    const std::vector<LoopFound> found = sandbox::run<std::vector<LoopFound>>("your_generate_naive", [&] {
        std::vector<LoopFound> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const LoopCase& c : cases) out.push_back(run_loop(your_generate_naive, c));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        std::string why;
        const LoopFound expected = run_loop(generate_naive, cases[i], &why);
        const auto says = [](const LoopFound& r, const std::string& reason) {
            if (std::get<0>(r)) return "refused (decodebook::Error" + (reason.empty() ? std::string() : ": " + reason) + ")";
            return "[" + golden::join(std::get<1>(r)) + "], on_step saw tokens [" + golden::join(std::get<2>(r)) +
                   "] with context lengths [" + golden::join(std::get<3>(r)) + "]";
        };
        const bool same = found[i] == expected;
        FEEDBACK("a case drawn with seed " << seed << ": " << show(cases[i]));
        FEEDBACK("expected: " << says(expected, why) << " (the library's generate_naive)\nfound:    " << says(found[i], ""));
        FEEDBACK((same ? std::string() : "hint: " + loop_diagnosis(cases[i], expected, found[i])));
        REQUIRE(same);
    }
}
