// Graded tests for chapter 10's exercises (see exercises/manifest.json). The cases are facts from
// the engines' own tests (the repository, file, commit and test are named beside each) or worked
// by hand, with the arithmetic in a comment; none was produced by the code it checks.
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's typical_keep,
// dry_repeat_length and dry_penalty, and mirostat_v2_step in this test program, which never runs
// the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;
using Ids = std::vector<int>;

namespace {

using feedback::floats;
using feedback::vec;

using feedback::check_refused;

// ------------------------------------------------------------------------------------------ 10.1

void check_typical(const std::vector<float>& probs, double mass, int min_keep, const Ids& expected,
                   const std::string& why) {
    FEEDBACK("input: probs " << floats(probs) << ", mass " << feedback::num(mass) << ", min_keep " << min_keep);
    FEEDBACK(why);
    const std::vector<bool> keep = your_typical_keep(vec(probs), mass, min_keep);
    FEEDBACK("your mask has " << keep.size() << " flags for " << probs.size() << " tokens (one per token expected)");
    REQUIRE(keep.size() == probs.size());
    const Ids found = golden::kept_ids(keep);
    FEEDBACK("expected kept ids: " << golden::join(expected) << "\nfound kept ids:    " << golden::join(found));
    CHECK(found == expected);
}

// ------------------------------------------------------------------------------------------ 10.2

void check_dry(const Ids& context, int candidate, const Ids& breakers, float multiplier, float base, int allowed,
               float expected, const std::string& why) {
    FEEDBACK("input: context [" << golden::join(context) << "], candidate " << candidate << ", breakers ["
                                << golden::join(breakers) << "], multiplier " << feedback::num(multiplier) << ", base "
                               << feedback::num(base) << ", allowed_length " << allowed);
    FEEDBACK(why);
    const float found = your_dry_penalty(context, candidate, breakers, multiplier, base, allowed);
    FEEDBACK("expected penalty: " << feedback::num(expected, 9) << "\nfound penalty:    " << feedback::num(found, 9));
    CHECK(found == Approx(expected).epsilon(1e-6).margin(1e-6));
}

// One of llama.cpp's test_dry cases (ggml-org/llama.cpp tests/test-sampling.cpp, commit
// 07e4038f07a83cd729bbac700e6681757b313b73): logits ln(probs), DRY over the whole context
// (dry_penalty_last_n there is the context's length), then softmax must give `expected_probs`
// within 1e-5, as the engine asserts. `penalties` is each candidate's penalty worked by hand;
// the probabilities check the hand values against the engine's numbers, then each is asked of you.
void check_llama_dry_case(const std::vector<float>& probs, const Ids& context, const std::vector<float>& expected_probs,
                          float multiplier, float base, int allowed, const Ids& breakers,
                          const std::vector<float>& penalties, const std::string& name) {
    Vec logits = Vec::from_shape({probs.size()});
    for (size_t i = 0; i < probs.size(); ++i) logits(i) = std::log(probs[i]) - penalties[i];
    const Vec p = softmax(logits);
    for (size_t i = 0; i < probs.size(); ++i) {
        INFO("the test's own hand penalties against llama.cpp's expected probabilities, token " << i);
        REQUIRE(std::abs(p(i) - expected_probs[i]) < 1e-5);
    }
    for (size_t c = 0; c < probs.size(); ++c)
        check_dry(context, static_cast<int>(c), breakers, multiplier, base, allowed, penalties[c],
                  "llama.cpp's test_dry " + name + ": it expects probabilities " + floats(expected_probs) +
                      ", which is a penalty of " + feedback::num(penalties[c]) + " on token " + std::to_string(c));
}

// ------------------------------------------------------------------------------------------ 10.3

const double kLn05 = std::log(0.5), kLn025 = std::log(0.25), kLn0125 = std::log(0.125);

void check_mirostat(const std::vector<float>& logits, double tau, double eta, double mu, double coin, int expected,
                    double expected_mu, const std::string& why) {
    FEEDBACK("input: logits " << floats(logits) << ", tau " << feedback::num(tau) << ", eta " << feedback::num(eta)
                              << ", mu " << feedback::num(mu) << ", coin " << feedback::num(coin));
    FEEDBACK(why);
    double found_mu = mu;
    const int found = your_mirostat_v2_step(vec(logits), tau, eta, found_mu, coin);
    FEEDBACK("expected: token " << expected << ", mu afterwards " << feedback::num(expected_mu, 8)
                                << "\nfound:    token " << found << ", mu afterwards " << feedback::num(found_mu, 8));
    CHECK(found == expected);
    CHECK(found_mu == Approx(expected_mu).margin(1e-5));
}

}  // namespace

// ---------------------------------------------------------------------------------- 10.1 typical

TEST_CASE("ex10.1 typical_keep passes Hugging Face's own cases", "[ex10.1]") {
    // huggingface/transformers tests/generation/test_logits_process.py (commit
    // 019af3ac65298aae51038a941c54a038a505bd57), test_typical_dist_warper: TypicalLogitsWarper(0.5)
    // on log([0.97, 0.01, 0.01, 0.01]) keeps [0.97, 0, 0, 0] and on log([0.4, 0.2, 0.2, 0.2])
    // keeps [0, 0.2, 0.2, 0.2]. llama.cpp's test_typical (tests/test-sampling.cpp, commit
    // 07e4038f07a83cd729bbac700e6681757b313b73) expects the same two sets at p = 0.5.
    check_typical({0.97f, 0.01f, 0.01f, 0.01f}, 0.5, 1, {0},
                  "HF's case: H = 0.1677, d = [0.137, 4.44 x 3]; 0.97 >= 0.5 at once");
    check_typical({0.4f, 0.2f, 0.2f, 0.2f}, 0.5, 1, {1, 2, 3},
                  "HF's case: H = 1.3322, d = [0.4159, 0.2773 x 3]: the three 0.2s come first and "
                  "reach 0.6 >= 0.5 at the third; the likeliest token is dropped");
    // The same test: uniform logits of length 5 with mass 0.5 and min_tokens_to_keep 3 remove nothing
    // (every d is 0, so every token ties with the crossing one).
    check_typical({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 0.5, 3, {0, 1, 2, 3, 4},
                  "HF's case: a uniform distribution, every d = 0, all tie with the crossing token");
}

TEST_CASE("ex10.1 typical_keep passes Hugging Face's ramp case with min_keep", "[ex10.1]") {
    // The same test's ramp: logits arange(10) - 5, TypicalLogitsWarper(0.7, min_tokens_to_keep=2)
    // keeps 2 tokens; with the logits times 100 it would keep 1 and keeps 2 for min_tokens_to_keep.
    // Which two, by hand: softmax(-5..4) = [7.8e-5, 2.1e-4, 5.8e-4, 1.6e-3, 4.3e-3, 0.0116,
    // 0.0315, 0.0856, 0.2326, 0.6321], H = 1.0402; d(id 8) = |1.4586 - 1.0402| = 0.418,
    // d(id 9) = |0.4587 - 1.0402| = 0.582, d(id 7) = 1.418: ranking 8, 9, 7 ...; sums 0.2326,
    // 0.8647 >= 0.7 at id 9 -> ids 8 and 9. Times 100: p(9) = 1, p(8) = e^-100 (a float32
    // subnormal, 3.7e-44), the rest 0; H = 0, d(9) = 0 reaches 0.7 alone; min_keep adds id 8.
    Vec ramp = Vec::from_shape({10});
    for (size_t i = 0; i < 10; ++i) ramp(i) = static_cast<float>(i) - 5.0f;
    const Vec p = softmax(ramp);
    check_typical(std::vector<float>(p.begin(), p.end()), 0.7, 2, {8, 9},
                  "HF's ramp: softmax(arange(10) - 5), the 2 tokens HF keeps are ids 8 and 9");
    Vec steep = ramp * 100.0f;
    const Vec q = softmax(steep);
    check_typical(std::vector<float>(q.begin(), q.end()), 0.7, 2, {8, 9},
                  "HF's ramp times 100: one token would do, min_keep 2 adds the next most typical (id 8)");
}

TEST_CASE("ex10.1 typical_keep ranks by typicality and not by probability", "[ex10.1]") {
    // By hand: probs [0.5, 0.3, 0.2]: H = 1.0297, d = [0.3365, 0.1743, 0.5798], ranking 1, 0, 2,
    // running sums 0.3, 0.8, 1.0.
    check_typical({0.5f, 0.3f, 0.2f}, 0.2, 1, {1}, "0.3 >= 0.2 at id 1, the most typical: the likeliest is dropped");
    check_typical({0.5f, 0.3f, 0.2f}, 0.5, 1, {0, 1}, "0.3 < 0.5, then 0.8 >= 0.5 at id 0: the crossing token is kept");
    check_typical({0.5f, 0.3f, 0.2f}, 0.85, 1, {0, 1, 2}, "the sum reaches 0.85 only at the last token");
    check_typical({0.2f, 0.3f, 0.5f}, 0.2, 1, {1}, "the same probabilities in another id order");
    // probs [0.4, 0.15 x 4]: H = 1.5048, d = [0.5885, 0.3923 x 4]: the four 0.15s rank first;
    // 0.15 >= 0.1 at the first of them, and its three ties stay with it.
    check_typical({0.4f, 0.15f, 0.15f, 0.15f, 0.15f}, 0.1, 1, {1, 2, 3, 4},
                  "four tokens tie in d: all four stay, the likeliest (0.4) goes");
}

TEST_CASE("ex10.1 typical_keep keeps the most typical for min_keep", "[ex10.1]") {
    // By hand: probs [0.45, 0.25, 0.15, 0.1, 0.05]: H = 1.3705, d = [0.572, 0.016, 0.527, 0.932,
    // 1.625], ranking 1, 2, 0, 3, 4; 0.25 >= 0.1 at once.
    const std::vector<float> p{0.45f, 0.25f, 0.15f, 0.1f, 0.05f};
    check_typical(p, 0.1, 1, {1}, "0.25 >= 0.1 at the most typical token");
    check_typical(p, 0.1, 2, {1, 2}, "min_keep 2 keeps the two most typical (ids 1 and 2), not the two likeliest (0 and 1)");
    check_typical(p, 0.1, 3, {0, 1, 2}, "min_keep 3: the third most typical is id 0");
    check_typical(p, 0.1, 0, {1}, "min_keep 0 still keeps one token");
}

TEST_CASE("ex10.1 typical_keep at mass 1 and with zero probabilities", "[ex10.1]") {
    check_typical({0.5f, 0.3f, 0.2f}, 1.0, 1, {0, 1, 2}, "mass 1 keeps every token with p > 0");
    check_typical({0.5f, 0.0f, 0.5f}, 1.0, 1, {0, 2}, "mass 1: a token with p = 0 is never kept");
    check_typical({0.0f, 0.4f, 0.2f, 0.2f, 0.2f}, 0.5, 1, {2, 3, 4},
                  "HF's [0.4, 0.2, 0.2, 0.2] behind a token with p = 0 (which adds nothing to H)");
    check_typical({0.0f, 1.0f, 0.0f}, 0.3, 3, {1}, "one token with p > 0: min_keep 3 cannot add tokens with p = 0");
}

TEST_CASE("ex10.1 typical_keep refuses a mass outside its range", "[ex10.1]") {
    const Vec p{0.5f, 0.3f, 0.2f};
    for (double mass : {0.0, -0.1, 1.5, std::nan("")})
        check_refused([&] { return your_typical_keep(p, mass, 1).size(); },
                      "probs [0.5, 0.3, 0.2], mass " + feedback::num(mass), "a mass must be in (0, 1]");
}

namespace {

// What a drawn case's answer prints: "decodebook::Error" for a refusal, else the kept ids.
std::string show_keep(bool refused, const std::vector<bool>& keep, size_t tokens) {
    if (refused) return "decodebook::Error (refused)";
    if (keep.size() != tokens)
        return "a mask of " + std::to_string(keep.size()) + " flags for " + std::to_string(tokens) + " tokens";
    return "kept ids [" + golden::join(golden::kept_ids(keep)) + "]";
}

// The candidates (p > 0) most typical first, as the library ranks them: |-ln p - H| ascending,
// ties in candidate_order.
std::vector<int> typical_ranking(const Vec& probs, std::vector<double>& d) {
    const double h = entropy(probs);
    d.assign(probs.size(), 0.0);
    std::vector<int> order = candidate_order(probs);
    for (int id : order) d[static_cast<size_t>(id)] = std::abs(-std::log(static_cast<double>(probs(static_cast<size_t>(id)))) - h);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return d[static_cast<size_t>(a)] < d[static_cast<size_t>(b)]; });
    return order;
}

// The ranking in words: "H = 1.0297 nats; by |-ln p - H|: id 1 (0.1743), id 0 (0.3365), ...".
std::string typical_hint(const Vec& probs, bool refused) {
    if (refused) return "a mass must be in (0, 1]: refuse anything else (0, negatives, above 1, NaN) with decodebook::Error";
    std::vector<double> d;
    std::string s = "H = " + feedback::num(entropy(probs)) + " nats; the tokens by |-ln p - H|, most typical first:";
    const std::vector<int> ranking = typical_ranking(probs, d);
    for (size_t r = 0; r < ranking.size(); ++r)
        s += (r ? ", id " : " id ") + std::to_string(ranking[r]) + " (" +
             feedback::num(d[static_cast<size_t>(ranking[r])], 4) + ")";
    return s + ". Keep them up to the one where the running sum of p first reaches mass, every token as typical "
               "as that one, and the max(1, min_keep) most typical; p = 0 never";
}

// A distribution of 1 to 9 tokens: integer weights 0..4 over their sum (ties and zeros), or the
// softmax of logits in quarters from -3 to 3, some -inf.
Vec draw_probs(Rng& rng) {
    const size_t n = static_cast<size_t>(drawn::between(rng, 1, 9));
    Vec p = Vec::from_shape({n});
    if (rng.next_u64() % 2) {
        float total = 0;
        for (float& x : p) {
            x = static_cast<float>(drawn::between(rng, 0, 4));
            total += x;
        }
        if (total == 0) {
            p(rng.next_u64() % n) = 1.0f;
            total = 1.0f;
        }
        for (float& x : p) x /= total;
        return p;
    }
    Vec z = Vec::from_shape({n});
    for (float& x : z) x = rng.next_u64() % 5 == 0 ? -INFINITY : static_cast<float>(drawn::between(rng, -12, 12)) / 4.0f;
    z(rng.next_u64() % n) = static_cast<float>(drawn::between(rng, -12, 12)) / 4.0f;  // one finite at least
    return softmax(z);
}

// Whether a running sum of the ranking lies within 1e-6 of `mass`: there the library's float32
// sums (torch's) and a double sum may fall on either side, so the case is drawn again.
bool near_a_running_sum(const Vec& probs, double mass) {
    std::vector<double> d;
    double sum = 0;
    for (int id : typical_ranking(probs, d)) {
        sum += probs(static_cast<size_t>(id));
        if (mass < 1.0 && std::abs(sum - mass) < 1e-6) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("ex10.1 on cases drawn when the test runs", "[ex10.1]") {
    // 300 distributions of 1 to 9 tokens (ties, p = 0 and one-token cases among them), masses in
    // twentieths, with many digits, or 1, min_keep 0 to V + 1; one case in 20 a mass the library
    // refuses (0, negative, above 1, NaN). The expected masks are the library's typical_keep.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Vec probs;
        double mass = 0;
        int min_keep = 0;
    };
    std::vector<Case> cases;
    while (cases.size() < 300) {
        Case c;
        c.probs = draw_probs(rng);
        c.min_keep = drawn::between(rng, 0, static_cast<int>(c.probs.size()) + 1);
        const uint64_t kind = rng.next_u64() % 20;
        if (kind == 0)
            c.mass = std::vector<double>{0.0, -0.25, 1.5, std::nan("")}[rng.next_u64() % 4];
        else if (kind < 4)
            c.mass = 1.0;
        else if (kind < 9)
            c.mass = drawn::between(rng, 1, 19) / 20.0;
        else
            c.mass = drawn::uniform(rng, 0.001, 1.0);
        if (near_a_running_sum(c.probs, c.mass)) continue;
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<bool, std::vector<bool>>>;  // (refused, the mask)
    const Found found = sandbox::run<Found>("your_typical_keep", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            try {
                out.emplace_back(false, your_typical_keep(c.probs, c.mass, c.min_keep));
            } catch (const Error&) {
                out.emplace_back(true, std::vector<bool>{});
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        bool refused = false;
        std::vector<bool> expected;
        try {
            expected = typical_keep(c.probs, c.mass, c.min_keep);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const std::vector<bool>& keep = std::get<1>(found[i]);
        const bool same = found_refused == refused && (refused || keep == expected);
        FEEDBACK("a case drawn with seed " << seed << ": probs " << feedback::list(c.probs, 100, 9) << ", mass "
                                          << feedback::num(c.mass, 17) << ", min_keep " << c.min_keep);
        FEEDBACK("expected: " << show_keep(refused, expected, c.probs.size()) << " (the library's typical_keep)\nfound:    "
                              << show_keep(found_refused, keep, c.probs.size()));
        FEEDBACK((same ? std::string() : "hint: " + typical_hint(c.probs, refused)));
        REQUIRE(same);
    }
}

// -------------------------------------------------------------------------------------- 10.2 DRY

TEST_CASE("ex10.2 dry_penalty passes llama.cpp's five test_dry cases", "[ex10.2]") {
    // test_dry({0.25 x 4}, {0, 1}, {0.25 x 4}, 1.0, 1.1, 2, 4, {}): two tokens of context, no repeat
    // of 2 can exist.
    check_llama_dry_case({0.25f, 0.25f, 0.25f, 0.25f}, {0, 1}, {0.25f, 0.25f, 0.25f, 0.25f}, 1.0f, 1.1f, 2, {},
                         {0, 0, 0, 0}, "case 1 (context [0, 1])");
    // test_dry({0.25 x 4}, {0, 1, 2, 0, 1}, {0.296923, 0.296923, 0.109232, 0.296923}, 1.0, 1.1, 2, 5, {}):
    // candidate 2 extends [0, 1] (L = 2): penalty 1 * 1.1^0 = 1; 0.25 e^-1 / (0.75 + 0.25 e^-1) = 0.109232.
    check_llama_dry_case({0.25f, 0.25f, 0.25f, 0.25f}, {0, 1, 2, 0, 1}, {0.296923f, 0.296923f, 0.109232f, 0.296923f},
                         1.0f, 1.1f, 2, {}, {0, 0, 1, 0}, "case 2 (context [0, 1, 2, 0, 1])");
    // test_dry({0.2 x 5}, {0, 1, 3, 4, 0, 1}, {0.2 x 5}, 1.0, 1.1, 2, 6, {{3}}): candidate 3 would
    // extend [0, 1] but is a sequence breaker, never penalised.
    check_llama_dry_case({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 3, 4, 0, 1}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1.0f, 1.1f,
                         2, {3}, {0, 0, 0, 0, 0}, "case 3 (context [0, 1, 3, 4, 0, 1], breaker 3)");
    // test_dry({0.2 x 5}, {0, 1, 2, 0, 1}, {0.241818, 0.241818, 0.032727, 0.241818, 0.241818}, 2.0, 1.1, 2, 5, {}):
    // penalty 2 * 1.1^0 = 2; 0.2 e^-2 / (0.8 + 0.2 e^-2) = 0.032727.
    check_llama_dry_case({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 0, 1},
                         {0.241818f, 0.241818f, 0.032727f, 0.241818f, 0.241818f}, 2.0f, 1.1f, 2, {}, {0, 0, 2, 0, 0},
                         "case 4 (multiplier 2)");
    // test_dry({0.2 x 5}, {0, 1, 2, 3, 4, 0, 1}, {0.2 x 5}, 1.0, 1.1, 4, 7, {}): candidate 2's
    // L = 2 < allowed_length 4.
    check_llama_dry_case({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 3, 4, 0, 1}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1.0f,
                         1.1f, 4, {}, {0, 0, 0, 0, 0}, "case 5 (allowed_length 4)");
}

TEST_CASE("ex10.2 dry_penalty at the allowed length and one below", "[ex10.2]") {
    // By hand: context [3, 4, 5, 6, 3, 4, 5]: candidate 6 extends [3, 4, 5], L = 3.
    const Ids ctx{3, 4, 5, 6, 3, 4, 5};
    check_dry(ctx, 6, {}, 0.8f, 1.75f, 3, 0.8f, "L = 3 == allowed_length 3: 0.8 * 1.75^0");
    check_dry(ctx, 6, {}, 0.8f, 1.75f, 4, 0.0f, "L = 3 < allowed_length 4: free");
    check_dry(ctx, 6, {}, 0.8f, 1.75f, 2, 1.4f, "L = 3, allowed_length 2: 0.8 * 1.75^1");
    check_dry(ctx, 6, {}, 0.8f, 1.75f, 1, 2.45f, "L = 3, allowed_length 1: 0.8 * 1.75^2 = 2.45");
    check_dry(ctx, 3, {}, 0.8f, 1.75f, 1, 0.0f, "candidate 3 follows 6 once, and 6 is not the last token: L = 0 < 1");
    check_dry(ctx, 7, {}, 0.8f, 1.75f, 0, 0.0f, "candidate 7 is nowhere in the context: it repeats nothing");
}

TEST_CASE("ex10.2 dry_penalty stops at a breaker in the middle", "[ex10.2]") {
    // By hand: context [5, 9, 1, 2, 6, 5, 9, 1, 2], breaker 9: candidate 6 follows [5, 9, 1, 2]
    // (L would be 4), but only [1, 2] follows the last 9: L = 2.
    const Ids ctx{5, 9, 1, 2, 6, 5, 9, 1, 2};
    check_dry(ctx, 6, {9}, 1.0f, 1.75f, 2, 1.0f, "L capped at 2 by the breaker: 1 * 1.75^0 (without the cap 1.75^2)");
    check_dry(ctx, 6, {9}, 1.0f, 1.75f, 3, 0.0f, "L capped at 2 < allowed_length 3 (without the cap 1.75^1)");
    check_dry(ctx, 6, {}, 1.0f, 1.75f, 2, 3.0625f, "no breakers: L = 4, 1.75^2 = 3.0625");
    check_dry(ctx, 9, {9}, 1.0f, 1.75f, 1, 0.0f, "candidate 9 is a breaker itself: never penalised");
    check_dry(ctx, 6, {7, 9}, 1.0f, 1.75f, 2, 1.0f, "two breakers, only 9 occurs: the same cap");
    // [7, 9, 4, 7, 9]: candidate 4 follows [7, 9] (L = 2), but the context ends with the breaker.
    check_dry({7, 9, 4, 7, 9}, 4, {9}, 1.0f, 1.75f, 1, 0.0f, "the context ends with a breaker: L = 0 < 1");
    check_dry({7, 9, 4, 7, 9}, 4, {}, 1.0f, 1.75f, 1, 1.75f, "the same without breakers: L = 2, 1.75^1");
}

TEST_CASE("ex10.2 dry_penalty takes the longest of several repeats", "[ex10.2]") {
    // By hand: context [2, 4, 0, 1, 2, 4, 3, 1, 2]: candidate 4 follows [2] at 1 (L = 1) and
    // [0, 1, 2] at 5, of which [1, 2] matches the end (L = 2): L = 2.
    const Ids ctx{2, 4, 0, 1, 2, 4, 3, 1, 2};
    check_dry(ctx, 4, {}, 1.0f, 2.0f, 2, 1.0f, "the later occurrence repeats more: L = 2 (the first alone gives 1)");
    check_dry(ctx, 4, {}, 1.0f, 2.0f, 1, 2.0f, "L = 2, allowed_length 1: 2^1");
    // Overlaps: [5, 5, 5, 5] then 5 repeats [5, 5, 5] (positions 0..3 against 1..4): L = 3.
    check_dry({5, 5, 5, 5}, 5, {}, 1.0f, 2.0f, 1, 4.0f, "overlapping repeat: L = 3, 2^(3 - 1)");
    check_dry({1, 2, 1, 2, 1, 2}, 1, {}, 1.0f, 2.0f, 2, 4.0f, "[1, 2] x 3 then 1: L = 4, 2^(4 - 2)");
}

TEST_CASE("ex10.2 dry_penalty clamps the exponent as llama.cpp does", "[ex10.2]") {
    // 200 fives then 5: L = 199; allowed_length 2 gives exponent 197, clamped to
    // int(88.7228391f / logf(1.75f)) = int(158.55) = 158: 1.75^158 = 2.6e38 < FLT_MAX (1.75^197 is inf).
    const Ids fives(200, 5);
    const float clamped = static_cast<float>(std::pow(1.75, 158));
    check_dry(fives, 5, {}, 1.0f, 1.75f, 2, clamped, "L = 199: exponent 197 clamped to 158 (finite)");
    // base 1 is not clamped (max_exponent stays 0 in llama.cpp) and 1^anything = 1.
    check_dry(fives, 5, {}, 0.5f, 1.0f, 2, 0.5f, "base 1: 0.5 * 1^197");
}

TEST_CASE("ex10.2 dry_penalty is off at multiplier 0 or base below 1 and refuses negatives", "[ex10.2]") {
    const Ids ctx{0, 1, 2, 0, 1};
    check_dry(ctx, 2, {}, 0.0f, 1.75f, 2, 0.0f, "multiplier 0 turns DRY off (llama.cpp)");
    check_dry(ctx, 2, {}, 1.0f, 0.9f, 2, 0.0f, "base < 1 turns DRY off (llama.cpp)");
    check_refused([&] { return your_dry_penalty(ctx, 2, {}, -1.0f, 1.75f, 2); }, "multiplier -1",
                  "a negative multiplier would reward repeats");
    check_refused([&] { return your_dry_penalty(ctx, 2, {}, 1.0f, 1.75f, -1); }, "allowed_length -1",
                  "a repeat length is never negative");
}

namespace {

// The library's answer for one DRY case: nullopt when it refuses (a negative multiplier or
// allowed_length), else dry_penalty of dry_repeat_length (0 when DRY is off).
std::optional<float> dry_expected(const Ids& context, int candidate, const Ids& breakers, float multiplier, float base,
                                  int allowed) {
    if (multiplier < 0.0f || allowed < 0) return std::nullopt;
    if (multiplier == 0.0f || base < 1.0f) return 0.0f;
    return dry_penalty(dry_repeat_length(context, candidate, breakers), multiplier, base, allowed);
}

std::string show_penalty(const std::optional<float>& penalty) {
    return penalty ? "penalty " + feedback::num(*penalty, 9) : std::string("decodebook::Error (refused)");
}

// The repeat length the library finds, in words.
std::string dry_hint(const Ids& context, int candidate, const Ids& breakers, float multiplier, float base, int allowed) {
    if (multiplier < 0.0f || allowed < 0) return "a negative multiplier or allowed_length is refused with decodebook::Error";
    if (multiplier == 0.0f || base < 1.0f) return "multiplier 0 or a base below 1 turns DRY off: the penalty is 0";
    const int length = dry_repeat_length(context, candidate, breakers);
    if (length < 0)
        return "candidate " + std::to_string(candidate) +
               (std::find(breakers.begin(), breakers.end(), candidate) != breakers.end()
                    ? " is a breaker: never penalised"
                    : " never follows a token of the context: nothing to penalise");
    return "the candidate's repeat length L is " + std::to_string(length) +
           " (the longest run of tokens before one of its occurrences that equals the context's end, at most the "
           "tokens after the last breaker); the penalty is multiplier * base^(L - allowed_length) when L >= "
           "allowed_length, the exponent clamped at int(88.7228391f / log(base)) when base > 1.000001";
}

}  // namespace

TEST_CASE("ex10.2 on cases drawn when the test runs", "[ex10.2]") {
    // 300 contexts of 0 to 14 tokens over alphabets of 2 to 4 ids (so repeats, overlaps and ties
    // of several repeats happen), one in 15 a run of 150 to 260 (the exponent's clamp); the
    // candidate half the time a token that once followed the context's last token, else any id
    // of the alphabet or one past it; 0 to 2 breakers, multipliers 0 to 3, bases 0.9 to 3,
    // allowed_length 0 to 4; one case in 20 a negative multiplier or allowed_length (refused).
    // The expected penalties are the library's dry_repeat_length and dry_penalty.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Ids context, breakers;
        int candidate = 0, allowed = 0;
        float multiplier = 0, base = 0;
    };
    const std::vector<float> bases{0.9f, 1.0f, 1.1f, 1.75f, 2.0f};
    std::vector<Case> cases;
    while (cases.size() < 300) {
        Case c;
        const int alphabet = drawn::between(rng, 2, 4);
        const bool long_run = rng.next_u64() % 15 == 0;
        c.context.resize(static_cast<size_t>(long_run ? drawn::between(rng, 150, 260) : drawn::between(rng, 0, 14)));
        for (int& t : c.context) t = long_run && rng.next_u64() % 40 ? 1 : drawn::between(rng, 0, alphabet - 1);
        c.candidate = drawn::between(rng, 0, alphabet);
        if (rng.next_u64() % 2 && !c.context.empty()) {  // a token that once followed the context's last token
            Ids next;
            for (size_t j = 0; j + 1 < c.context.size(); ++j)
                if (c.context[j] == c.context.back()) next.push_back(c.context[j + 1]);
            if (!next.empty()) c.candidate = next[rng.next_u64() % next.size()];
        }
        for (int k = 0, n = drawn::between(rng, 0, 2); k < n; ++k) c.breakers.push_back(drawn::between(rng, 0, alphabet));
        c.multiplier = rng.next_u64() % 2 ? static_cast<float>(drawn::between(rng, 0, 12)) / 4.0f
                                          : static_cast<float>(drawn::uniform(rng, 0.0, 3.0));
        c.base = rng.next_u64() % 2 ? bases[rng.next_u64() % bases.size()] : static_cast<float>(drawn::uniform(rng, 1.0, 3.0));
        c.allowed = drawn::between(rng, 0, rng.next_u64() % 2 ? 2 : 4);
        if (rng.next_u64() % 20 == 0) {
            if (rng.next_u64() % 2)
                c.multiplier = -static_cast<float>(drawn::between(rng, 1, 8)) / 4.0f;
            else
                c.allowed = -drawn::between(rng, 1, 3);
        }
        const std::optional<float> expected = dry_expected(c.context, c.candidate, c.breakers, c.multiplier, c.base, c.allowed);
        if (expected && !std::isfinite(*expected)) continue;  // beyond float: no case of the chapter's
        cases.push_back(c);
    }
    using Found = std::vector<std::optional<float>>;  // nullopt: refused
    const Found found = sandbox::run<Found>("your_dry_penalty", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            try {
                out.emplace_back(your_dry_penalty(c.context, c.candidate, c.breakers, c.multiplier, c.base, c.allowed));
            } catch (const Error&) {
                out.emplace_back(std::nullopt);
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const std::optional<float> expected = dry_expected(c.context, c.candidate, c.breakers, c.multiplier, c.base, c.allowed);
        const bool same = expected.has_value() == found[i].has_value() &&
                          (!expected || *found[i] == Approx(*expected).epsilon(1e-6).margin(1e-6));
        FEEDBACK("a case drawn with seed " << seed << ": context [" << golden::join(c.context) << "], candidate "
                                          << c.candidate << ", breakers [" << golden::join(c.breakers) << "], multiplier "
                                          << feedback::num(c.multiplier, 9) << ", base " << feedback::num(c.base, 9)
                                          << ", allowed_length " << c.allowed);
        FEEDBACK("expected: " << show_penalty(expected) << " (the library's dry_penalty)\nfound:    " << show_penalty(found[i]));
        FEEDBACK((same ? std::string()
                       : "hint: " + dry_hint(c.context, c.candidate, c.breakers, c.multiplier, c.base, c.allowed)));
        REQUIRE(same);
    }
}

// -------------------------------------------------------------------------------- 10.3 mirostat

TEST_CASE("ex10.3 mirostat_v2_step cuts at mu and draws from what is left", "[ex10.3]") {
    // By hand, logits ln [0.5, 0.25, 0.125, 0.125]: surprises 1, 2, 3, 3 bits; tau 1.5, eta 0.1.
    const std::vector<float> z{static_cast<float>(kLn05), static_cast<float>(kLn025), static_cast<float>(kLn0125),
                               static_cast<float>(kLn0125)};
    // mu 2.5 keeps ids 0, 1: renormalised [2/3, 1/3]. coin 0.5 < 2/3 -> 0;
    // mu = 2.5 - 0.1 (log2 1.5 - 1.5) = 2.5 - 0.1 (0.5849625 - 1.5) = 2.59150375.
    check_mirostat(z, 1.5, 0.1, 2.5, 0.5, 0, 2.59150375, "mu 2.5 keeps ids 0 and 1; q = 2/3");
    // coin 0.8: 2/3 <= 0.8 < 1 -> 1; mu = 2.5 - 0.1 (log2 3 - 1.5) = 2.5 - 0.1 * 0.0849625 = 2.49150375.
    check_mirostat(z, 1.5, 0.1, 2.5, 0.8, 1, 2.49150375,
                   "mu 2.5, coin 0.8: id 1 (over the whole distribution 0.8 would land on id 2)");
    // mu 10 keeps all: coin 0.9 walks 0.5, 0.75, 0.875, 1.0 -> id 3; q = 0.125, s = 3:
    // mu = 10 - 0.1 (3 - 1.5) = 9.85.
    check_mirostat(z, 1.5, 0.1, 10.0, 0.9, 3, 9.85, "mu 10 keeps every token; q = 0.125, 3 bits");
    // coin 0.3 -> id 0, q = 0.5, s = 1: mu = 10 - 0.1 (1 - 1.5) = 10.05.
    check_mirostat(z, 1.5, 0.1, 10.0, 0.3, 0, 10.05, "mu 10, coin 0.3: id 0, 1 bit below tau raises mu");
}

TEST_CASE("ex10.3 mirostat_v2_step keeps one token when mu is below every surprise", "[ex10.3]") {
    const std::vector<float> z{static_cast<float>(kLn05), static_cast<float>(kLn025), static_cast<float>(kLn0125),
                               static_cast<float>(kLn0125)};
    // mu 0.5 < 1 bit: id 0 alone, q = 1, s = 0: mu = 0.5 - 0.1 (0 - 1.5) = 0.65 (with p = 0.5, not
    // renormalised, it would be 0.55).
    check_mirostat(z, 1.5, 0.1, 0.5, 0.3, 0, 0.65, "mu 0.5: the most likely token alone, renormalised to 1");
    check_mirostat(z, 1.5, 0.1, 0.5, 0.99, 0, 0.65, "the same with coin 0.99: nothing else is left to draw");
    check_mirostat(z, 1.5, 0.1, -3.0, 0.7, 0, -2.85, "a negative mu: still one token; -3 - 0.1 (0 - 1.5)");
    // Four equal logits: p = 0.25 each, exactly 2 bits. mu 1.9 is below all: keep the first of
    // candidate_order (id 0): q = 1, mu = 1.9 - 0.2 (0 - 3) = 2.5.
    check_mirostat({0.0f, 0.0f, 0.0f, 0.0f}, 3.0, 0.2, 1.9, 0.6, 0, 2.5, "four ties above mu: the lowest id alone");
}

TEST_CASE("ex10.3 mirostat_v2_step keeps a surprise exactly at mu", "[ex10.3]") {
    // Four equal logits: p = 0.25 exactly (exp(0) / 4), surprise exactly 2 bits. mu 2 keeps all
    // (llama.cpp cuts where -log2 p > mu); coin 0.6 walks 0.25, 0.5, 0.75 -> id 2; q = 0.25:
    // mu = 2 - 0.2 (2 - 3) = 2.2.
    check_mirostat({0.0f, 0.0f, 0.0f, 0.0f}, 3.0, 0.2, 2.0, 0.6, 2, 2.2, "surprise 2 == mu 2: kept");
    // Removed tokens stay out: logits [0, 0, -inf, 0] give p = 1/3 each for ids 0, 1, 3
    // (log2 3 = 1.585 <= 2); coin 0.6 walks 1/3, 2/3 -> id 1; mu = 2 - 0.2 (1.5849625 - 3) = 2.2830075.
    check_mirostat({0.0f, 0.0f, -INFINITY, 0.0f}, 3.0, 0.2, 2.0, 0.6, 1, 2.2830075, "a removed token (-inf) is never drawn");
}

TEST_CASE("ex10.3 mirostat_v2_step draws in candidate_order", "[ex10.3]") {
    // By hand: logits ln [0.125, 0.5, 0.125, 0.25]: candidate_order is 1, 3, 0, 2 (ties by id);
    // mu 10 keeps all; coin 0.8 walks 0.5, 0.75, 0.875 -> id 0; q = 0.125, s = 3:
    // mu = 10 - 0.1 (3 - 1.5) = 9.85. By id the walk 0.125, 0.625, 0.75, 1.0 would give id 3.
    check_mirostat({static_cast<float>(kLn0125), static_cast<float>(kLn05), static_cast<float>(kLn0125),
                    static_cast<float>(kLn025)},
                   1.5, 0.1, 10.0, 0.8, 0, 9.85, "the walk goes by probability, then by id");
}

TEST_CASE("ex10.3 mirostat_v2_step carries mu from step to step", "[ex10.3]") {
    // By hand, logits ln [0.5, 0.25, 0.125, 0.125], tau 1.6, eta 1 (large, so mu moves a lot),
    // mu starting at 2 tau = 3.2 as llama.cpp starts it (no mu lands on a surprise of 1, 2 or 3):
    //   step 1, coin 0.95: mu 3.2 keeps all; walk 0.5, 0.75, 0.875, 1.0 -> id 3; s = 3; mu = 3.2 - (3 - 1.6) = 1.8
    //   step 2, coin 0.95: mu 1.8 keeps id 0 alone -> 0; q = 1, s = 0; mu = 1.8 - (0 - 1.6) = 3.4
    //   step 3, coin 0.3: mu 3.4 keeps all; 0.3 < 0.5 -> id 0; s = 1; mu = 3.4 - (1 - 1.6) = 4.0
    //   step 4, coin 0.7: mu 4 keeps all; 0.5 <= 0.7 < 0.75 -> id 1; s = 2; mu = 4 - (2 - 1.6) = 3.6
    const Vec z{static_cast<float>(kLn05), static_cast<float>(kLn025), static_cast<float>(kLn0125),
                static_cast<float>(kLn0125)};
    const double coins[] = {0.95, 0.95, 0.3, 0.7};
    const int tokens[] = {3, 0, 0, 1};
    const double mus[] = {1.8, 3.4, 4.0, 3.6};
    double mu = 3.2;
    for (int s = 0; s < 4; ++s) {
        FEEDBACK("input: logits ln [0.5, 0.25, 0.125, 0.125], tau 1.6, eta 1, step " << s + 1 << " of 4 from mu 3.2, coin "
                                                                                    << feedback::num(coins[s]));
        FEEDBACK("mu goes in as your previous step left it (" << feedback::num(mu, 8) << ")");
        const int found = your_mirostat_v2_step(z, 1.6, 1.0, mu, coins[s]);
        FEEDBACK("expected: token " << tokens[s] << ", mu afterwards " << feedback::num(mus[s], 8)
                                    << "\nfound:    token " << found << ", mu afterwards " << feedback::num(mu, 8));
        CHECK(found == tokens[s]);
        CHECK(mu == Approx(mus[s]).margin(1e-5));
    }
}

TEST_CASE("ex10.3 mirostat_v2_step refuses bad tau eta and coin", "[ex10.3]") {
    const Vec z{0.0f, 1.0f, 2.0f};
    double mu = 6.0;
    check_refused([&] { return your_mirostat_v2_step(z, 0.0, 0.1, mu, 0.5); }, "tau 0", "tau must be > 0 (bits)");
    check_refused([&] { return your_mirostat_v2_step(z, 3.0, 0.0, mu, 0.5); }, "eta 0", "eta must be > 0");
    check_refused([&] { return your_mirostat_v2_step(z, 3.0, 0.1, mu, 1.0); }, "coin 1", "a coin is in [0, 1)");
    check_refused([&] { return your_mirostat_v2_step(z, 3.0, 0.1, mu, -0.25); }, "coin -0.25", "a coin is in [0, 1)");
}

namespace {

// Mirostat's cut as the library makes it (llama.cpp compares in float): the ids of
// candidate_order(softmax(logits)) up to the first whose surprise -log2 p exceeds mu, at least one.
std::vector<int> mirostat_kept(const Vec& logits, double mu) {
    const Vec p = softmax(logits);
    std::vector<int> kept;
    for (int id : candidate_order(p)) {
        if (!kept.empty() && -std::log2(p(static_cast<size_t>(id))) > static_cast<float>(mu)) break;
        kept.push_back(id);
    }
    return kept;
}

// Whether a surprise lies so near mu (and not on it) that float and double disagree, or could.
bool mu_on_a_knife_edge(const Vec& logits, double mu) {
    for (float p : softmax(logits)) {
        if (!(p > 0.0f)) continue;
        const double bits = -std::log2(static_cast<double>(p));
        if ((bits > mu) != (-std::log2(p) > static_cast<float>(mu))) return true;
        if (bits != mu && std::abs(bits - mu) < 1e-6) return true;
    }
    return false;
}

// How far `coin` falls from a boundary between two kept tokens of the renormalised CDF.
double coin_margin(const Vec& logits, const std::vector<int>& kept, double coin) {
    const Vec p = softmax(logits);
    double total = 0, cumulative = 0, margin = 1.0;
    for (int id : kept) total += p(static_cast<size_t>(id));
    for (size_t r = 0; r + 1 < kept.size(); ++r) {
        cumulative += p(static_cast<size_t>(kept[r]));
        margin = std::min(margin, std::abs(coin - cumulative / total));
    }
    return margin;
}

// The cut and the draw in words: "mu 2.5 keeps ids 0 (1 bit), 1 (2 bits); renormalised [0.667, 0.333]".
std::string mirostat_hint(const Vec& logits, double mu, bool refused) {
    if (refused) return "tau <= 0 or eta <= 0 is refused with decodebook::Error";
    const Vec p = softmax(logits);
    const std::vector<int> kept = mirostat_kept(logits, mu);
    double total = 0;
    for (int id : kept) total += p(static_cast<size_t>(id));
    std::string s = "mu " + feedback::num(mu, 10) + " keeps, in candidate_order:";
    for (int id : kept)
        s += " id " + std::to_string(id) + " (" + feedback::num(-std::log2(p(static_cast<size_t>(id))), 6) + " bits, p " +
             feedback::num(p(static_cast<size_t>(id)) / total, 6) + " renormalised)";
    return s + " (surprise -log2 p <= mu, at least the first); the coin walks their renormalised running sum and takes "
               "the first token whose sum exceeds it; then mu -= eta * (-log2 q - tau), q that token's renormalised "
               "probability";
}

}  // namespace

TEST_CASE("ex10.3 on cases drawn when the test runs", "[ex10.3]") {
    // 300 steps on 1 to 8 logits: whole numbers from -2 to 2 (ties: equal surprises) or quarters
    // from -3 to 3, some -inf, or one case in 8 1, 2, 4 or 8 equal logits and the rest -inf with
    // a whole mu (a surprise exactly at mu); tau 0.25 to 5, eta 0.05 to 1.5, mu -1 to 8 and coins
    // in [0, 1), each either in quarters (twentieths for the coin) or with many digits; one case
    // in 25 a tau or eta of 0 or below (refused). A mu within 1e-6 of a
    // surprise, or a coin within 1e-6 of a boundary of the kept tokens' CDF, is drawn again (float
    // and double may fall on either side there). The expected token and mu are the library's
    // mirostat_v2_step; mu within 1e-5, as the other cases.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Vec logits;
        double tau = 0, eta = 0, mu = 0, coin = 0;
    };
    std::vector<Case> cases;
    while (cases.size() < 300) {
        Case c;
        const size_t n = static_cast<size_t>(drawn::between(rng, 1, 8));
        const uint64_t kind = rng.next_u64() % 8;  // 0: 1, 2, 4 or 8 equal logits, the rest -inf
        c.logits = Vec::from_shape({n});
        for (float& z : c.logits)
            z = rng.next_u64() % 6 == 0 ? -INFINITY
                                        : (kind < 4 ? static_cast<float>(drawn::between(rng, -2, 2))
                                                    : static_cast<float>(drawn::between(rng, -12, 12)) / 4.0f);
        if (kind == 0) {  // 1, 2, 4 or 8 equal logits (as many as fit) at random places, the rest -inf
            c.logits.fill(-INFINITY);
            std::vector<size_t> ids;
            for (size_t k = 0; k < n; ++k) ids.push_back(k);
            const size_t equal = std::min<size_t>(n, size_t{1} << drawn::between(rng, 0, 3));
            for (size_t k = 0; k < equal; ++k) {
                std::swap(ids[k], ids[k + rng.next_u64() % (n - k)]);
                c.logits(ids[k]) = 1.0f;
            }
        } else {
            c.logits(rng.next_u64() % n) = 0.0f;  // one finite at least
        }
        const bool digits = rng.next_u64() % 2;
        c.tau = digits ? drawn::uniform(rng, 0.25, 5.0) : drawn::between(rng, 1, 20) / 4.0;
        c.eta = digits ? drawn::uniform(rng, 0.05, 1.5) : drawn::between(rng, 1, 6) / 4.0;
        c.mu = rng.next_u64() % 2 ? drawn::uniform(rng, -1.0, 8.0) : drawn::between(rng, -4, 32) / 4.0;
        if (kind == 0) c.mu = drawn::between(rng, 0, 3);
        c.coin = rng.next_u64() % 2 ? rng.coin() : drawn::between(rng, 0, 19) / 20.0;
        if (rng.next_u64() % 25 == 0) (rng.next_u64() % 2 ? c.tau : c.eta) = -drawn::between(rng, 0, 4) / 4.0;
        if (mu_on_a_knife_edge(c.logits, c.mu) || coin_margin(c.logits, mirostat_kept(c.logits, c.mu), c.coin) < 1e-6)
            continue;
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<bool, int, double>>;  // (refused, token, mu afterwards)
    const Found found = sandbox::run<Found>("your_mirostat_v2_step", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases) {
            double mu = c.mu;
            try {
                const int token = your_mirostat_v2_step(c.logits, c.tau, c.eta, mu, c.coin);
                out.emplace_back(false, token, mu);
            } catch (const Error&) {
                out.emplace_back(true, -1, mu);
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        double mu = c.mu;
        bool refused = false;
        int token = -1;
        try {
            token = mirostat_v2_step(c.logits, c.tau, c.eta, mu, c.coin);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const int found_token = std::get<1>(found[i]);
        const double found_mu = std::get<2>(found[i]);
        const bool same =
            found_refused == refused && (refused || (found_token == token && found_mu == Approx(mu).margin(1e-5)));
        const auto show = [](bool r, int t, double m) {
            return r ? std::string("decodebook::Error (refused)")
                     : "token " + std::to_string(t) + ", mu afterwards " + feedback::num(m, 10);
        };
        FEEDBACK("a case drawn with seed " << seed << ": logits " << feedback::list(c.logits, 100, 9) << ", tau "
                                          << feedback::num(c.tau, 17) << ", eta " << feedback::num(c.eta, 17) << ", mu "
                                          << feedback::num(c.mu, 17) << ", coin " << feedback::num(c.coin, 17));
        FEEDBACK("expected: " << show(refused, token, mu) << " (the library's mirostat_v2_step)\nfound:    "
                              << show(found_refused, found_token, found_mu));
        FEEDBACK((same ? std::string() : "hint: " + mirostat_hint(c.logits, c.mu, refused)));
        REQUIRE(same);
    }
}
