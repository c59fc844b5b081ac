// Graded tests for chapter 11's exercises (see exercises/manifest.json). The cases are worked by
// hand, with the arithmetic in a comment, or are facts from vLLM's own tests (the repository,
// file, commit and test are named beside each) and from the float64 reference
// (tests/data/logprobs.json, tests/reference/logprobs.py); none was produced by the code it checks.
// A hand-worked table of windows is also checked against the library's sliding_window_perplexity
// in the test program, so a table that disagrees with the library fails as the test's own error.
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's top_logprobs and
// sliding_window_perplexity in this test program, which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

// Catch2 prints an entry as (id, value, rank) in an expansion.
namespace Catch {
template <>
struct StringMaker<decodebook::LogprobEntry> {
    static std::string convert(const decodebook::LogprobEntry& e) {
        return "(id " + std::to_string(e.token) + ", " + feedback::num(e.value, 8) + ", rank " + std::to_string(e.rank) + ")";
    }
};
}  // namespace Catch

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;
using Ids = std::vector<int>;
using Entries = std::vector<LogprobEntry>;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using feedback::floats;
using feedback::vec;

using feedback::check_refused;

// ------------------------------------------------------------------------------------------ 11.1

// "2 entries [(id 1, -0.5, rank 1), (id 3, -0.5, rank 2)]"
std::string show(const Entries& entries) {
    std::string s = std::to_string(entries.size()) + (entries.size() == 1 ? " entry [" : " entries [");
    for (size_t i = 0; i < entries.size(); ++i)
        s += (i ? ", " : "") + std::string("(id ") + std::to_string(entries[i].token) + ", " +
             feedback::num(entries[i].value, 8) + ", rank " + std::to_string(entries[i].rank) + ")";
    return s + "]";
}

// What the first difference between two lists of entries says about the rule that was missed.
std::string diagnosis(const Entries& expected, const Entries& found, int k, int sampled) {
    const size_t top = std::min(expected.size(), static_cast<size_t>(k));  // the top-K part
    for (size_t i = 0; i < std::min(expected.size(), found.size()); ++i) {
        const LogprobEntry &e = expected[i], &f = found[i];
        if (e == f) continue;
        const std::string at = "entry " + std::to_string(i + 1) + ": ";
        if (i < top && f.token != e.token)
            return at + "the top entries go by value, largest first, and equal values by the lower id first";
        if (f.token != e.token)
            return at + "after the top k comes the sampled token " + std::to_string(sampled) + " and nothing else";
        if (f.value != e.value && !(std::isnan(f.value) && std::isnan(e.value)))
            return at + "an entry's value is values(token), as given (-inf included)";
        if (i < top)
            return at + "a top entry's rank is its place in that order: 1, 2, ..., k (even when values tie)";
        return at + "the appended token's rank is how many values are >= its own: itself and every tie count";
    }
    if (found.size() == expected.size() + 1)
        return "one entry too many: the sampled token " + std::to_string(sampled) +
               " is already among the top k, so it is not appended again";
    if (found.size() + 1 == expected.size())
        return "one entry missing: the sampled token " + std::to_string(sampled) +
               " is not among the top k, so it comes after them (k = 0: it alone)";
    return "k entries (or all V when k > V), plus the sampled token when it is not among them";
}

void check_top(const std::vector<float>& values, int k, int sampled, const Entries& expected, const std::string& why) {
    // The messages in the order ./grade's excerpt keeps them: what was asked, what came back, why.
    FEEDBACK("input: values " << floats(values) << ", k " << k << ", sampled " << sampled);
    const Entries found = your_top_logprobs(vec(values), k, sampled);
    FEEDBACK("expected: " << show(expected) << "\nfound:    " << show(found));
    FEEDBACK((found == expected ? std::string() : "hint: " + diagnosis(expected, found, k, sampled)));
    FEEDBACK("the case: " << why);
    CHECK(found == expected);
}

// The prompt cases of the reference (tests/data/logprobs.json): each position's raw
// log-probabilities (the library's log_softmax of the embedded model's logits, which
// tests/test_logprobs.cpp checks against the reference within 1e-5), the prompt's token as the
// sampled one, and the reference's entries.
struct PromptStep {
    std::string where;           // "case medium, token 4"
    Vec values;                  // (V) log-probabilities at the position
    int k = 0;
    int token = 0;               // the prompt's token there
    nlohmann::json want;         // the reference's entry
};

std::vector<PromptStep> prompt_steps() {
    const nlohmann::json file = golden::load("logprobs.json");
    std::vector<PromptStep> steps;
    for (const auto& c : file["cases"]) {
        if (c["kind"] != "prompt") continue;
        const Ids ids = c["prompt_ids"].get<Ids>();
        const xt::xtensor<float, 2> logits = golden::model().forward(ids);
        for (size_t i = 1; i < ids.size(); ++i) {
            Vec row = Vec::from_shape({logits.shape(1)});
            for (size_t v = 0; v < row.size(); ++v) row(v) = logits(i - 1, v);
            steps.push_back({"case " + c["name"].get<std::string>() + ", token " + std::to_string(i), log_softmax(row),
                             c["k"].get<int>(), ids[i], c["entries"][i]});
        }
    }
    return steps;
}

// ------------------------------------------------------------------------------------------ 11.2

// One window of a hand-worked table: the text's tokens [begin, end), its targets from `first`
// (an index into the text) to end - 1, and its weight.
struct Window {
    size_t begin, end, first, weight;
};

// "[0, 4) scores t1 .. t3, weight 3; [2, 6) scores t4 t5, weight 1; ..."
std::string table(const std::vector<Window>& windows) {
    std::string s;
    for (const Window& x : windows) {
        std::string targets = "nothing";
        if (x.end - x.first == 1) targets = "t" + std::to_string(x.first);
        if (x.end - x.first == 2) targets = "t" + std::to_string(x.first) + " t" + std::to_string(x.first + 1);
        if (x.end - x.first > 2) targets = "t" + std::to_string(x.first) + " .. t" + std::to_string(x.end - 1);
        s += (s.empty() ? "" : "; ") + std::string("[") + std::to_string(x.begin) + ", " + std::to_string(x.end) +
             ") scores " + targets + ", weight " + std::to_string(x.weight);
    }
    return s;
}

// The sums of a hand-worked table: each window's forward on its own tokens, its targets' mean NLL
// times its weight.
Perplexity by_hand(const Gpt2& model, const Ids& ids, const std::vector<Window>& windows) {
    Perplexity p;
    for (const Window& x : windows) {
        const Ids input(ids.begin() + static_cast<std::ptrdiff_t>(x.begin), ids.begin() + static_cast<std::ptrdiff_t>(x.end));
        const xt::xtensor<float, 2> logits = model.forward(input);
        double nll = 0;
        for (size_t t = x.first; t < x.end; ++t) {
            const size_t j = t - x.begin;  // its position in the window; row j - 1 predicts it
            Vec row = Vec::from_shape({logits.shape(1)});
            for (size_t v = 0; v < row.size(); ++v) row(v) = logits(j - 1, v);
            nll -= log_softmax(row)(static_cast<size_t>(input[j]));
        }
        if (x.end > x.first) p.nll_sum += nll / static_cast<double>(x.end - x.first) * static_cast<double>(x.weight);
        p.tokens += x.weight;
        ++p.windows;
    }
    return p;
}

std::string show(const Perplexity& p) {
    return std::to_string(p.windows) + " windows, tokens " + std::to_string(p.tokens) + ", nll_sum " +
           feedback::num(p.nll_sum, 10);
}

bool close(double found, double expected, double relative) {
    return std::abs(found - expected) <= relative * std::abs(expected) + 1e-9;  // false for NaN
}

std::string diagnosis(const Perplexity& expected, const Perplexity& found) {
    if (found.windows != expected.windows)
        return "windows start at 0, stride, 2 stride, ...; the loop stops after the window whose end is the "
               "text's end (min(begin + max_length, n) == n), and every window run counts, even one that weighs 0";
    if (found.tokens != expected.tokens)
        return "a window weighs trg_len - 1, trg_len = its end - the previous window's end (0 before the first), "
               "even when it scores trg_len tokens (HF's num_valid_tokens - batch_size)";
    if (std::isnan(found.nll_sum))
        return "a window with no target (a last window of one token) adds nothing: 0 / 0 is NaN";
    return "each window scores only its last trg_len tokens, never its own first token, each given the window's "
           "tokens before it (row j - 1 of its own forward), and adds their mean NLL times its weight";
}

// `windows` is the table worked by hand (the stub's rules); the test checks it against the
// library first, then asks for yours.
void check_windows(const Ids& ids, int max_length, int stride, const std::vector<Window>& windows,
                   const std::string& why) {
    const Gpt2& model = golden::model();
    const Perplexity expected = by_hand(model, ids, windows);
    {
        const Perplexity library = sliding_window_perplexity(model, ids, max_length, stride);
        INFO("the test's own table against the library's sliding_window_perplexity: " << show(library));
        REQUIRE(library.windows == expected.windows);
        REQUIRE(library.tokens == expected.tokens);
        REQUIRE(close(library.nll_sum, expected.nll_sum, 1e-9));
    }
    // The messages in the order ./grade's excerpt keeps them: what was asked, what came back, why.
    FEEDBACK("input: " << ids.size() << " tokens t0 .. t" << ids.size() - 1 << " (held-out fortunes), max_length "
                       << max_length << ", stride " << stride);
    const Perplexity found = your_sliding_window_perplexity(model, ids, max_length, stride);
    FEEDBACK("expected: " << show(expected) << "\nfound:    " << show(found) << "\n(tokens: the sum of the weights)");
    const bool same = found.windows == expected.windows && found.tokens == expected.tokens &&
                      close(found.nll_sum, expected.nll_sum, 1e-6);
    FEEDBACK((same ? std::string() : "hint: " + diagnosis(expected, found)));
    FEEDBACK("the windows by hand: " << table(windows));
    FEEDBACK("the case: " << why);
    CHECK(found.windows == expected.windows);
    CHECK(found.tokens == expected.tokens);
    CHECK(close(found.nll_sum, expected.nll_sum, 1e-6));
}

// The first n tokens of the reference's held-out fortunes (a real text for the model).
Ids held_out(size_t n) {
    static const Ids all = [] {
        const nlohmann::json file = golden::load("logprobs.json");
        for (const auto& c : file["cases"])
            if (c["kind"] == "perplexity") return c["ids"].get<Ids>();
        return Ids{};
    }();
    REQUIRE(all.size() >= n);
    return Ids(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

// ------------------------------------------------------------------------------ 11.1 top_logprobs

TEST_CASE("ex11.1 top_logprobs on the stub's worked cases", "[ex11.1]") {
    // values [-2.0, -0.5, -1.0, -0.5, -3.0]: by value then id, the order is 1, 3, 2, 0, 4.
    const std::vector<float> v{-2.0f, -0.5f, -1.0f, -0.5f, -3.0f};
    check_top(v, 2, 3, {{1, -0.5f, 1}, {3, -0.5f, 2}}, "the sampled token 3 is among the top 2: 2 entries");
    check_top(v, 2, 2, {{1, -0.5f, 1}, {3, -0.5f, 2}, {2, -1.0f, 3}},
              "the sampled token 2 is outside the top 2: appended (K + 1 entries), 3 values are >= -1.0");
    check_top(v, 1, 3, {{1, -0.5f, 1}, {3, -0.5f, 2}},
              "id 1 wins the tie for the top 1; the sampled 3 is appended, and 2 values are >= -0.5 (its tie counts against it)");
    check_top(v, 0, 4, {{4, -3.0f, 5}}, "k 0: the sampled token alone; all 5 values are >= -3.0");
    check_top(v, 5, 4, {{1, -0.5f, 1}, {3, -0.5f, 2}, {2, -1.0f, 3}, {0, -2.0f, 4}, {4, -3.0f, 5}},
              "k = V: every token, in order; the sampled one is among them");
    // values [0, -inf, -1, -inf]: the order is 0, 2, 1, 3 (the two -inf by id).
    check_top({0.0f, -kInf, -1.0f, -kInf}, 3, 3, {{0, 0.0f, 1}, {2, -1.0f, 2}, {1, -kInf, 3}, {3, -kInf, 4}},
              "the top 3 end with id 1 (-inf, the lower id of the tie); the sampled 3 is appended, every value is >= -inf");
}

TEST_CASE("ex11.1 top_logprobs with a tie at the K-th place", "[ex11.1]") {
    // values [3, 1, 2, 2, 2]: the order is 0 (3), 2, 3, 4 (the three 2s by id), 1 (1).
    const std::vector<float> v{3.0f, 1.0f, 2.0f, 2.0f, 2.0f};
    check_top(v, 3, 3, {{0, 3.0f, 1}, {2, 2.0f, 2}, {3, 2.0f, 3}},
              "the sampled 3 is the 3rd of the top 3: listed once, ranked by its place (3), although 4 values are >= 2");
    check_top(v, 3, 2, {{0, 3.0f, 1}, {2, 2.0f, 2}, {3, 2.0f, 3}}, "the sampled 2 is among the top 3: 3 entries");
    check_top(v, 3, 4, {{0, 3.0f, 1}, {2, 2.0f, 2}, {3, 2.0f, 3}, {4, 2.0f, 4}},
              "the sampled 4 ties with the 3rd value but comes after it by id: appended, 4 values are >= 2");
    check_top(v, 3, 1, {{0, 3.0f, 1}, {2, 2.0f, 2}, {3, 2.0f, 3}, {1, 1.0f, 5}},
              "the sampled 1 holds the smallest value: appended with rank 5");
    check_top(v, 2, 4, {{0, 3.0f, 1}, {2, 2.0f, 2}, {4, 2.0f, 4}},
              "k 2 cuts the three-way tie after id 2; the sampled 4 is appended with rank 4 (the tie counts against it)");
    check_top(v, 1, 2, {{0, 3.0f, 1}, {2, 2.0f, 4}}, "k 1: id 0 alone on top; the sampled 2 ties with 3 and 4: rank 4");
    // All equal: the order is the ids, and every value is >= every other.
    check_top({0.5f, 0.5f, 0.5f, 0.5f}, 2, 0, {{0, 0.5f, 1}, {1, 0.5f, 2}}, "four equal values: the top 2 are ids 0 and 1");
    check_top({0.5f, 0.5f, 0.5f, 0.5f}, 2, 3, {{0, 0.5f, 1}, {1, 0.5f, 2}, {3, 0.5f, 4}},
              "four equal values: the sampled 3 is appended with rank 4 (all four are >= its value)");
}

TEST_CASE("ex11.1 top_logprobs with -inf values", "[ex11.1]") {
    // A processed step (vLLM's processed_logprobs): the chain removed ids 1 and 3.
    const std::vector<float> v{0.0f, -kInf, -1.0f, -kInf};
    check_top(v, 1, 1, {{0, 0.0f, 1}, {1, -kInf, 4}}, "a removed token sampled (raw values in another mode): -inf, rank 4 of 4");
    check_top(v, 2, 2, {{0, 0.0f, 1}, {2, -1.0f, 2}}, "the sampled 2 is among the top 2");
    check_top(v, 4, 3, {{0, 0.0f, 1}, {2, -1.0f, 2}, {1, -kInf, 3}, {3, -kInf, 4}},
              "k = V lists the -inf tokens too, the lower id first, ranked by place");
    check_top(v, 0, 3, {{3, -kInf, 4}}, "k 0: the sampled -inf token alone, rank 4");
    check_top({-kInf, -kInf, 5.0f}, 2, 0, {{2, 5.0f, 1}, {0, -kInf, 2}}, "the top 2 end with id 0 (-inf, the lower id): it is among them");
    check_top({-kInf, -kInf, 5.0f}, 1, 1, {{2, 5.0f, 1}, {1, -kInf, 3}}, "the sampled 1 (-inf) is appended: all 3 values are >= -inf");
    check_top({-kInf, 2.0f, -kInf, 1.0f, -kInf}, 3, 4, {{1, 2.0f, 1}, {3, 1.0f, 2}, {0, -kInf, 3}, {4, -kInf, 5}},
              "the 3rd place goes to id 0 (-inf, the lowest id of three); the sampled 4 is appended with rank 5");
}

TEST_CASE("ex11.1 top_logprobs with k 0 and k beyond the vocabulary", "[ex11.1]") {
    const std::vector<float> v{1.5f, -0.25f, 0.75f};
    check_top(v, 0, 0, {{0, 1.5f, 1}}, "k 0: only the sampled token, even the most likely one");
    check_top(v, 0, 1, {{1, -0.25f, 3}}, "k 0: only the sampled token, with its rank");
    check_top(v, 0, 2, {{2, 0.75f, 2}}, "k 0: only the sampled token, with its rank");
    check_top(v, 20, 1, {{0, 1.5f, 1}, {2, 0.75f, 2}, {1, -0.25f, 3}}, "k 20 on 3 tokens lists all 3, in order, once");
    check_top({0.0f, -1.0f}, 20, 1, {{0, 0.0f, 1}, {1, -1.0f, 2}}, "k 20 on 2 tokens: 2 entries (the case of tests/test_logprobs.cpp)");
    check_top({4.0f}, 3, 0, {{0, 4.0f, 1}}, "one token: k 3 lists it once");
}

TEST_CASE("ex11.1 top_logprobs at the largest k", "[ex11.1]") {
    // values(i) = -i / 4 for 25 ids: the order is the ids; the top 20 are ids 0..19.
    std::vector<float> v(25);
    for (size_t i = 0; i < v.size(); ++i) v[i] = -static_cast<float>(i) / 4.0f;
    Entries top20;
    for (int i = 0; i < 20; ++i) top20.push_back({i, v[static_cast<size_t>(i)], i + 1});
    Entries with24 = top20;
    with24.push_back({24, v[24], 25});
    check_top(v, 20, 24, with24, "k 20 (the most, kMaxLogprobs): the top 20, then the sampled 24 with rank 25");
    check_top(v, 20, 7, top20, "k 20: the sampled 7 is among the top 20");
}

TEST_CASE("ex11.1 top_logprobs passes vLLM's facts", "[ex11.1]") {
    // vllm-project/vllm tests/v1/sample/test_batched_count_greater_than.py (commit
    // 75162ed0be3505bbdaa9f24849afbb03dd7d2568), test_batched_count_greater_than_correctness:
    // x = [[1, 2, 3], [4, 5, 6]], values [[2], [5]] -> [2, 2]: the rank vLLM gives the token of
    // value 2 in [1, 2, 3] and of 5 in [4, 5, 6] (id 1 in both) is 2.
    check_top({1.0f, 2.0f, 3.0f}, 0, 1, {{1, 2.0f, 2}}, "vLLM's batched_count_greater_than: [1, 2, 3] at value 2 counts 2");
    check_top({4.0f, 5.0f, 6.0f}, 0, 1, {{1, 5.0f, 2}}, "vLLM's batched_count_greater_than: [4, 5, 6] at value 5 counts 2");
    check_top({4.0f, 5.0f, 6.0f}, 1, 1, {{2, 6.0f, 1}, {1, 5.0f, 2}}, "the same, after the top 1");
}

TEST_CASE("ex11.1 top_logprobs keeps vLLM's rules on the model's own distributions", "[ex11.1]") {
    // vllm-project/vllm tests/v1/sample/test_logprobs.py (commit
    // 023fa7b36570e9b6f4c6f4c6a229e71cfad18426), _run_and_validate, for every sampled and every
    // prompt token: the token appears among the entries; if its rank <= K and K != 0 there are K
    // entries, else K + 1; for K > 0 every rank 1..K appears. Here on every position of the
    // reference's prompts, for K = 0, 1, 2, 5, 7 (that test's max_logprobs) and 20.
    const std::vector<PromptStep> steps = prompt_steps();
    const std::vector<int> ks{0, 1, 2, 5, 7, 20};
    const std::vector<Entries> found = sandbox::run<std::vector<Entries>>("your_top_logprobs", [&] {
        std::vector<Entries> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const PromptStep& s : steps)
            for (int k : ks) out.push_back(your_top_logprobs(s.values, k, s.token));
        return out;
    });
    REQUIRE(found.size() == steps.size() * ks.size());
    size_t at = 0;
    for (const PromptStep& s : steps) {
        for (int k : ks) {
            const Entries& e = found[at++];
            FEEDBACK("input: the raw logprobs of the reference's " << s.where << " (" << s.values.size()
                                                                    << " values), k " << k << ", sampled " << s.token);
            FEEDBACK("found: " << show(e));
            const auto it = std::find_if(e.begin(), e.end(), [&](const LogprobEntry& x) { return x.token == s.token; });
            FEEDBACK("vLLM: the sampled token appears among the entries");
            REQUIRE(it != e.end());
            const bool in_top = it->rank <= k && k != 0;
            FEEDBACK("vLLM: its rank is " << it->rank << ", so " << (in_top ? "K" : "K + 1") << " entries");
            REQUIRE(e.size() == static_cast<size_t>(in_top ? k : k + 1));
            for (int r = 1; r <= k; ++r) {
                FEEDBACK("vLLM: every rank 1..K appears; rank " << r << " is missing");
                REQUIRE(std::any_of(e.begin(), e.end(), [&](const LogprobEntry& x) { return x.rank == r; }));
            }
        }
    }
}

TEST_CASE("ex11.1 top_logprobs equals the float64 reference's prompt logprobs", "[ex11.1]") {
    // tests/data/logprobs.json, kind prompt: every prompt token's top k entries [id, logprob,
    // rank], with the token appended from outside them. The values given are the embedded model's
    // log-probabilities in float32 (within 1e-5 of the reference's, checked here first): each
    // entry must hold the reference's id and rank and the given value of that id. A position is
    // compared only where the reference's values are further than 2e-5 from reordering its top k
    // (top_margin), and an appended token's rank only where they are as far from changing it
    // (rank_margin), as tests/test_logprobs.cpp does; elsewhere the rank expected is the count on
    // the float32 values given (the library's logprob_rank).
    constexpr double kTolerance = 1e-5;
    const std::vector<PromptStep> steps = prompt_steps();
    const std::vector<Entries> found = sandbox::run<std::vector<Entries>>("your_top_logprobs", [&] {
        std::vector<Entries> out;
        for (const PromptStep& s : steps) out.push_back(your_top_logprobs(s.values, s.k, s.token));
        return out;
    });
    REQUIRE(found.size() == steps.size());
    size_t compared = 0, appended = 0, by_reference_rank = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        const PromptStep& s = steps[i];
        if (s.want["top_margin"].get<double>() <= 2 * kTolerance) continue;
        const bool rank_safe = s.want["rank_margin"].get<double>() > 2 * kTolerance;
        Entries expected;
        for (const auto& t : s.want["top"]) {
            const int id = t[0].get<int>();
            const float value = s.values(static_cast<size_t>(id));
            INFO("the test's own check: the embedded model's logprob of id " << id << " at the reference's " << s.where
                                                                              << " is within 1e-5 of the reference's");
            REQUIRE(std::abs(value - t[1].get<double>()) < kTolerance);
            const bool appended_entry = expected.size() >= static_cast<size_t>(s.k);
            expected.push_back({id, value, appended_entry && !rank_safe ? logprob_rank(s.values, id) : t[2].get<int>()});
            by_reference_rank += appended_entry && rank_safe;
        }
        FEEDBACK("input: the raw logprobs of the reference's " << s.where << " (" << s.values.size() << " values), k "
                                                                << s.k << ", sampled " << s.token);
        FEEDBACK("expected (the reference's): " << show(expected)
                                                << "\nfound:                      " << show(found[i]));
        FEEDBACK((found[i] == expected ? std::string() : "hint: " + diagnosis(expected, found[i], s.k, s.token)));
        CHECK(found[i] == expected);
        ++compared;
        appended += expected.size() > static_cast<size_t>(s.k);
    }
    CHECK(compared >= 40);
    CHECK(appended >= 20);           // the K + 1 rule is exercised
    CHECK(by_reference_rank >= 20);  // and the appended ranks are mostly the reference's own
}

TEST_CASE("ex11.1 top_logprobs refuses k outside 0..20 and a sampled id outside the vocabulary", "[ex11.1]") {
    const Vec v{-2.0f, -0.5f, -1.0f, -0.5f, -3.0f};
    for (int k : {-1, 21, 100})
        check_refused([&] { return show(your_top_logprobs(v, k, 0)); }, "5 values, k " + std::to_string(k) + ", sampled 0",
                      "k must be in 0..20 (kMaxLogprobs, vLLM's max_logprobs and OpenAI's limit)");
    for (int sampled : {-1, 5, 6, 2048})
        check_refused([&] { return show(your_top_logprobs(v, 2, sampled)); },
                      "5 values, k 2, sampled " + std::to_string(sampled), "the sampled token must be an id 0..4 of the values");
    check_refused([&] { return show(your_top_logprobs(Vec::from_shape({0}), 0, 0)); }, "no values, k 0, sampled 0",
                  "an empty vocabulary holds no sampled token");
}

TEST_CASE("ex11.1 on cases drawn when the test runs", "[ex11.1]") {
    // 300 steps of 1 to 30 values: quarters from -4 to 0 (ties, at the K-th place too) with some
    // -inf, or the log-softmax of logits in quarters; k 0 to 20 (beyond V when V is small), the
    // sampled id any of the V; one case in 20 a k outside 0..20, a sampled id outside the values
    // or no values at all (refused). The expected entries are the library's top_logprobs.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Vec values;
        int k = 0, sampled = 0;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 300; ++i) {
        Case c;
        const size_t n = static_cast<size_t>(drawn::between(rng, 1, 30));
        c.values = Vec::from_shape({n});
        const bool quarters = rng.next_u64() % 3 != 0;
        for (float& x : c.values)
            x = quarters && rng.next_u64() % 6 == 0 ? -kInf
                                                    : static_cast<float>(drawn::between(rng, -16, quarters ? 0 : 16)) / 4.0f;
        if (!quarters) c.values = log_softmax(c.values);
        c.k = drawn::between(rng, 0, 20);
        c.sampled = drawn::between(rng, 0, static_cast<int>(n) - 1);
        if (rng.next_u64() % 20 == 0) {
            const uint64_t kind = rng.next_u64() % 3;
            if (kind == 0) c.k = std::vector<int>{-1, 21, 30}[rng.next_u64() % 3];
            if (kind == 1) c.sampled = std::vector<int>{-1, static_cast<int>(n), static_cast<int>(n) + 3}[rng.next_u64() % 3];
            if (kind == 2) c.values = Vec::from_shape({0});
        }
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<bool, Entries>>;  // (refused, the entries)
    const Found found = sandbox::run<Found>("your_top_logprobs", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            try {
                out.emplace_back(false, your_top_logprobs(c.values, c.k, c.sampled));
            } catch (const Error&) {
                out.emplace_back(true, Entries{});
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        bool refused = false;
        Entries expected;
        try {
            expected = top_logprobs(c.values, c.k, c.sampled);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const Entries& entries = std::get<1>(found[i]);
        const bool same = found_refused == refused && (refused || entries == expected);
        const auto answer = [](bool r, const Entries& e) { return r ? std::string("decodebook::Error (refused)") : show(e); };
        FEEDBACK("a case drawn with seed " << seed << ": values " << feedback::list(c.values, 100, 9) << " (" << c.values.size()
                                          << " values), k " << c.k << ", sampled " << c.sampled);
        FEEDBACK("expected: " << answer(refused, expected) << " (the library's top_logprobs)\nfound:    "
                              << answer(found_refused, entries));
        FEEDBACK((same ? std::string()
                       : "hint: " + (refused || found_refused
                                         ? std::string("k must be in 0..20 and the sampled id one of the values (0..V-1); "
                                                       "refuse anything else, no values included, with decodebook::Error")
                                         : diagnosis(expected, entries, c.k, c.sampled))));
        REQUIRE(same);
    }
}

// ----------------------------------------------------------------- 11.2 sliding-window perplexity

TEST_CASE("ex11.2 sliding_window_perplexity on the stub's worked windows", "[ex11.2]") {
    // The stub's table: 10 tokens, max_length 4, stride 2. trg_len = end - previous end; targets
    // are the last trg_len tokens but never the window's first; weight trg_len - 1.
    check_windows(held_out(10), 4, 2, {{0, 4, 1, 3}, {2, 6, 4, 1}, {4, 8, 6, 1}, {6, 10, 8, 1}},
                  "4 windows: the first scores t1 t2 t3 (weight 3), each later one 2 new tokens with weight 1; "
                  "window 4 ends at 10 = n and the loop stops");
    // 9 tokens, max_length 4, stride 4: [0, 4) t1..t3 (3); [4, 8) trg_len 4, t5..t7 (its first token
    // t4 is never a target; 3); [8, 9) holds t8 alone: trg_len 1, nothing to score, weight 0.
    check_windows(held_out(9), 4, 4, {{0, 4, 1, 3}, {4, 8, 5, 3}, {8, 9, 9, 0}},
                  "windows that do not overlap; the last holds one token, scores nothing and weighs 0 (no 0 / 0)");
}

TEST_CASE("ex11.2 sliding_window_perplexity with stride = max_length", "[ex11.2]") {
    // 12 tokens, 4, 4: [0, 4) t1..t3, [4, 8) t5..t7, [8, 12) t9..t11, each weight 3: t4 and t8 are
    // the first tokens of their windows and never scored.
    check_windows(held_out(12), 4, 4, {{0, 4, 1, 3}, {4, 8, 5, 3}, {8, 12, 9, 3}},
                  "three windows side by side, each of trg_len 4: 3 targets and weight 3 each");
    // 10 tokens, 4, 4: the last window [8, 10) has trg_len 2: it scores t9 and weighs 1.
    check_windows(held_out(10), 4, 4, {{0, 4, 1, 3}, {4, 8, 5, 3}, {8, 10, 9, 1}},
                  "the last window is short: trg_len 2, one target (t9), weight 1");
}

TEST_CASE("ex11.2 sliding_window_perplexity with stride 1", "[ex11.2]") {
    // 10 tokens, 4, 1: begins 0..6; after [0, 4) each window adds one token (trg_len 1): it scores
    // that token and weighs 0. 7 windows, tokens 3: only the first window counts (HF's rule).
    check_windows(held_out(10), 4, 1,
                  {{0, 4, 1, 3}, {1, 5, 4, 0}, {2, 6, 5, 0}, {3, 7, 6, 0}, {4, 8, 7, 0}, {5, 9, 8, 0}, {6, 10, 9, 0}},
                  "every window after the first has trg_len 1 and weight 0; the 7th ends at n");
    // 5 tokens, 2, 1: [0, 2) scores t1 (weight 1); [1, 3), [2, 4), [3, 5) weigh 0.
    check_windows(held_out(5), 2, 1, {{0, 2, 1, 1}, {1, 3, 2, 0}, {2, 4, 3, 0}, {3, 5, 4, 0}},
                  "the smallest window (2 tokens): the first scores t1, the others weigh 0");
}

TEST_CASE("ex11.2 sliding_window_perplexity on a text shorter than the window", "[ex11.2]") {
    check_windows(held_out(3), 8, 4, {{0, 3, 1, 2}}, "one window [0, 3) reaches the end at once: t1 t2, weight 2");
    check_windows(held_out(2), 256, 256, {{0, 2, 1, 1}}, "two tokens: one window, one target");
    check_windows(held_out(5), 8, 2, {{0, 5, 1, 4}}, "the first window already ends at n: the loop stops, whatever the stride");
    check_windows(held_out(8), 8, 3, {{0, 8, 1, 7}}, "a text exactly max_length long: one window");
}

TEST_CASE("ex11.2 sliding_window_perplexity with a stride that does not divide the text", "[ex11.2]") {
    // 10 tokens, 4, 3: [0, 4) t1..t3 (3); [3, 7) trg_len 3, t4..t6 (its first token t3 was scored
    // before; weight 2); [6, 10) t7..t9 (2).
    check_windows(held_out(10), 4, 3, {{0, 4, 1, 3}, {3, 7, 4, 2}, {6, 10, 7, 2}},
                  "3 targets per later window but weight 2: trg_len - 1");
    // 11 tokens, 4, 3: the same, then [9, 11): trg_len 1, scores t10, weight 0.
    check_windows(held_out(11), 4, 3, {{0, 4, 1, 3}, {3, 7, 4, 2}, {6, 10, 7, 2}, {9, 11, 10, 0}},
                  "a last window that adds one token scores it and weighs 0");
    // 20 tokens, 8, 5: [0, 8) t1..t7 (7); [5, 13) t8..t12 (4); [10, 18) t13..t17 (4); [15, 20)
    // t18 t19 (trg_len 2, weight 1).
    check_windows(held_out(20), 8, 5, {{0, 8, 1, 7}, {5, 13, 8, 4}, {10, 18, 13, 4}, {15, 20, 18, 1}},
                  "a window of 8 every 5 tokens: the last ends at 20 with 2 new tokens");
}

namespace {

// tests/data/logprobs.json, kind perplexity: the first 50 held-out fortunes (3,273 tokens), a
// window of the model's whole context (256) at stride 256 or 128; the windows and weights exactly,
// the perplexity within 1e-6 relative, as tests/test_logprobs.cpp checks the library's.
void check_reference_perplexity(int stride, const std::string& why) {
    const nlohmann::json file = golden::load("logprobs.json");
    int seen = 0;
    for (const auto& c : file["cases"]) {
        if (c["kind"] != "perplexity" || c["stride"].get<int>() != stride) continue;
        const Ids ids = c["ids"].get<Ids>();
        const int max_length = c["max_length"].get<int>();
        const Perplexity want{c["nll_sum"].get<double>(), c["tokens"].get<size_t>(), c["windows"].get<size_t>()};
        FEEDBACK("input: the reference's " << c["name"].get<std::string>() << ": " << ids.size()
                                           << " tokens, max_length " << max_length << ", stride " << stride);
        const Perplexity found = your_sliding_window_perplexity(golden::model(), ids, max_length, stride);
        FEEDBACK("expected (the reference's): " << show(want) << ", perplexity " << feedback::num(want.value(), 10)
                                                << "\nfound:                      " << show(found) << ", perplexity "
                                                << feedback::num(found.value(), 10));
        const bool same = found.windows == want.windows && found.tokens == want.tokens &&
                          close(found.value(), c["perplexity"].get<double>(), 1e-6);
        FEEDBACK((same ? std::string() : "hint: " + diagnosis(want, found)));
        FEEDBACK("the case: " << why);
        CHECK(found.windows == want.windows);
        CHECK(found.tokens == want.tokens);
        CHECK(close(found.value(), c["perplexity"].get<double>(), 1e-6));
        ++seen;
    }
    CHECK(seen == 1);
}

}  // namespace

TEST_CASE("ex11.2 sliding_window_perplexity equals the float64 reference at stride 256", "[ex11.2]") {
    check_reference_perplexity(256, "13 windows side by side: [0, 256), [256, 512), ...; each scores its tokens but its "
                                    "first; the last ends at 3,273");
}

TEST_CASE("ex11.2 sliding_window_perplexity equals the float64 reference at stride 128", "[ex11.2]") {
    check_reference_perplexity(128, "25 windows of 256 every 128 tokens: after the first, each scores only its last "
                                    "128 tokens, given the 128 before them");
}

TEST_CASE("ex11.2 sliding_window_perplexity takes the window's bound from the model", "[ex11.2]") {
    // A random model of 8 positions (random_gpt2_tensors): a window of 8 is its whole context, 9
    // is refused. The windows of 20 tokens at max_length 8, stride 4: [0, 8) (7), [4, 12) (3),
    // [8, 16) (3), [12, 20) (3).
    ModelConfig config;
    config.vocab_size = 64;
    config.n_positions = 8;
    config.n_embd = 16;
    config.n_layer = 1;
    config.n_head = 2;
    config.eos_token_id = 63;
    const Gpt2 tiny = Gpt2::from_tensors(config, random_gpt2_tensors(config, 11));
    Ids ids(20);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>((7 * i + 3) % 64);
    const Perplexity expected = by_hand(tiny, ids, {{0, 8, 1, 7}, {4, 12, 8, 3}, {8, 16, 12, 3}, {12, 20, 16, 3}});
    FEEDBACK("input: a random model of 8 positions, a text of 20 tokens, max_length 8, stride 4");
    const Perplexity found = your_sliding_window_perplexity(tiny, ids, 8, 4);
    FEEDBACK("expected: " << show(expected) << "\nfound:    " << show(found));
    CHECK(found.windows == expected.windows);
    CHECK(found.tokens == expected.tokens);
    CHECK(close(found.nll_sum, expected.nll_sum, 1e-6));
    check_refused([&] { return show(your_sliding_window_perplexity(tiny, ids, 9, 4)); },
                  "a random model of 8 positions, 20 tokens, max_length 9, stride 4",
                  "a window cannot hold more tokens than the model's context (model.config().n_positions = 8)");
}

TEST_CASE("ex11.2 sliding_window_perplexity refuses a short text and a bad window or stride", "[ex11.2]") {
    const Gpt2& m = golden::model();
    const Ids ids = held_out(10);
    check_refused([&] { return show(your_sliding_window_perplexity(m, {}, 4, 2)); }, "an empty text, max_length 4, stride 2",
                  "a text needs 2 tokens or more: the first is never predicted");
    check_refused([&] { return show(your_sliding_window_perplexity(m, held_out(1), 4, 2)); }, "a text of 1 token",
                  "a text needs 2 tokens or more: the first is never predicted");
    for (int max_length : {1, 0, -4, 257})
        check_refused([&] { return show(your_sliding_window_perplexity(m, ids, max_length, 1)); },
                      "10 tokens, max_length " + std::to_string(max_length) + ", stride 1",
                      "max_length must be in 2..n_positions (256 for the embedded model)");
    for (int stride : {0, -1, 5, 100})
        check_refused([&] { return show(your_sliding_window_perplexity(m, ids, 4, stride)); },
                      "10 tokens, max_length 4, stride " + std::to_string(stride), "stride must be in 1..max_length (4)");
}

TEST_CASE("ex11.2 on cases drawn when the test runs", "[ex11.2]") {
    // 10 texts of 2 to 12 ids from the model's whole vocabulary, windows of 2 to 9 tokens (longer
    // than the text too) or the model's whole context, strides 1 to max_length (at most 9); one
    // case in 8 a text under 2 tokens, a window outside 2..n_positions or a stride outside
    // 1..max_length (refused). The expected sums are the library's sliding_window_perplexity on
    // the embedded model.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const Gpt2& model = golden::model();
    const int vocab = model.config().vocab_size, n_positions = model.config().n_positions;
    struct Case {
        Ids ids;
        int max_length = 0, stride = 0;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 10; ++i) {
        Case c;
        c.ids.resize(static_cast<size_t>(drawn::between(rng, 2, 12)));
        for (int& t : c.ids) t = drawn::between(rng, 0, vocab - 1);
        c.max_length = rng.next_u64() % 6 == 0 ? n_positions : drawn::between(rng, 2, 9);
        c.stride = drawn::between(rng, 1, std::min(c.max_length, 9));
        if (rng.next_u64() % 8 == 0) {
            const uint64_t kind = rng.next_u64() % 3;
            if (kind == 0) c.ids.resize(rng.next_u64() % 2);
            if (kind == 1) c.max_length = rng.next_u64() % 2 ? 1 : n_positions + 1;
            if (kind == 2) c.stride = rng.next_u64() % 2 ? 0 : c.max_length + 1;
        }
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<bool, Perplexity>>;  // (refused, the sums)
    const Found found = sandbox::run<Found>("your_sliding_window_perplexity", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            try {
                out.emplace_back(false, your_sliding_window_perplexity(model, c.ids, c.max_length, c.stride));
            } catch (const Error&) {
                out.emplace_back(true, Perplexity{});
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        bool refused = false;
        Perplexity expected;
        try {
            expected = sliding_window_perplexity(model, c.ids, c.max_length, c.stride);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const Perplexity& sums = std::get<1>(found[i]);
        const bool same = found_refused == refused &&
                          (refused || (sums.windows == expected.windows && sums.tokens == expected.tokens &&
                                       close(sums.nll_sum, expected.nll_sum, 1e-6)));
        const auto answer = [](bool r, const Perplexity& p) { return r ? std::string("decodebook::Error (refused)") : show(p); };
        FEEDBACK("a case drawn with seed " << seed << ": the embedded model, ids [" << golden::join(c.ids) << "] ("
                                          << c.ids.size() << " tokens), max_length " << c.max_length << ", stride " << c.stride);
        FEEDBACK("expected: " << answer(refused, expected) << " (the library's sliding_window_perplexity)\nfound:    "
                              << answer(found_refused, sums) << "\n(tokens: the sum of the weights)");
        FEEDBACK((same ? std::string()
                       : "hint: " + (refused || found_refused
                                         ? "a text needs 2 tokens or more, max_length must be in 2.." +
                                               std::to_string(n_positions) +
                                               " (the model's n_positions) and the stride in 1..max_length; refuse "
                                               "anything else with decodebook::Error"
                                         : diagnosis(expected, sums))));
        REQUIRE(same);
    }
}
