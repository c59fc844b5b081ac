// Graded tests for chapter 08's exercises (see exercises/manifest.json). The cases are facts from
// the engines' own tests (the source is named beside each) or worked by hand.
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's accept_draft, residual
// and prompt_lookup_hf in this test program, which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;
using Ids = std::vector<int>;

namespace {

// ------------------------------------------------------------------------------------------ 08.1

// A row of V logits: `value` at the given ids, `rest` elsewhere (Hugging Face's test rows).
Vec logits_row(const std::map<int, float>& at, float rest, size_t V = 10) {
    Vec z = xt::zeros<float>({V});
    for (size_t i = 0; i < V; ++i) z(i) = rest;
    for (const auto& [id, value] : at) z(static_cast<size_t>(id)) = value;
    return z;
}

std::string num(double x, int digits = 7) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    return buf;
}

std::string show(const Vec& v, int digits = 7) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v(i), digits);
    return s + "]";
}

std::string distributions(const Vec& p, const Vec* q) {
    return "p " + show(p) + "\nq " + (q ? show(*q) : std::string("null (a deterministic draft: q(x) = 1)"));
}

// One call of your_verify_position, as the failure messages print it.
struct Call {
    Vec p;
    std::optional<Vec> q;  // none: a deterministic draft
    int x;
    double accept_coin, residual_coin;

    std::string text() const {
        return distributions(p, q ? &*q : nullptr) + "\nx " + std::to_string(x) + ", accept_coin " + num(accept_coin) +
               ", residual_coin " + num(residual_coin);
    }
    int run() const { return your_verify_position(p, q ? &*q : nullptr, x, accept_coin, residual_coin); }
};

void check_position(const Call& c, int expected, const std::string& why) {
    FEEDBACK(c.text());
    FEEDBACK(why);
    const int found = c.run();
    FEEDBACK("expected: " << expected << "\nfound:    " << found);
    CHECK(found == expected);
}

// The call must throw decodebook::Error (any other exception reaches Catch2, which prints it).
void check_refused(const Call& c, const std::string& why) {
    FEEDBACK(c.text());
    FEEDBACK(why);
    std::string found = "decodebook::Error";
    try {
        found = "no exception: it returned token " + std::to_string(c.run());
    } catch (const Error&) {
    }
    FEEDBACK("expected: decodebook::Error thrown\nfound:    " << found);
    CHECK(found == "decodebook::Error");
}

// Pearson's chi-squared statistic of `counts` against the probabilities `law` (every count of an
// id outside the law is a stray, reported by the caller).
double chi_squared(const std::map<int, int>& counts, const std::map<int, double>& law, int n) {
    double chi2 = 0;
    for (const auto& [id, p] : law) {
        const double expected = p * n, found = counts.count(id) ? counts.at(id) : 0;
        chi2 += (found - expected) * (found - expected) / expected;
    }
    return chi2;
}

std::string show_counts(const std::map<int, int>& counts) {
    std::string s;
    for (const auto& [id, n] : counts) s += (s.empty() ? "" : ", ") + std::to_string(id) + ": " + std::to_string(n);
    return "{" + s + "}";
}

std::string show_law(const std::map<int, double>& law, int n) {
    std::string s;
    for (const auto& [id, p] : law) s += (s.empty() ? "" : ", ") + std::to_string(id) + ": " + num(p * n, 4);
    return "{" + s + "}";
}

// ------------------------------------------------------------------------------------------ 08.2

std::string show(const Ids& ids) {
    std::string s = "[";  // appended, not "[" + ...: GCC 12 warns on const char* + std::string&&
    s += golden::join(ids);
    return s + "]";
}

void check_lookup(const Ids& sequence, int max_ngram, int num_tokens, const Ids& eos_ids, const Ids& expected,
                  const std::string& why) {
    FEEDBACK("sequence " << show(sequence) << "\nmax_ngram " << max_ngram << ", num_tokens " << num_tokens << ", eos_ids "
                     << show(eos_ids));
    FEEDBACK(why);
    const Ids found = your_prompt_lookup(sequence, max_ngram, num_tokens, eos_ids);
    FEEDBACK("expected: " << show(expected) << "\nfound:    " << show(found));
    CHECK(found == expected);
}

// Two wrong rules, to keep the cases below able to tell them from Hugging Face's: the rightmost
// earlier match, and the match with the longest (EOS-cut) continuation. Both try n from the
// longest down, as the right rule does.
Ids continuation(const Ids& seq, long start, int num_tokens, const Ids& eos_ids) {
    Ids out;
    for (long j = start; j < std::min<long>(start + num_tokens, static_cast<long>(seq.size())); ++j) {
        if (std::find(eos_ids.begin(), eos_ids.end(), seq[static_cast<size_t>(j)]) != eos_ids.end()) break;
        out.push_back(seq[static_cast<size_t>(j)]);
    }
    return out;
}

// longest false: the rightmost match; true: the match with the longest continuation
Ids mutant_lookup(const Ids& seq, int max_ngram, int num_tokens, const Ids& eos_ids, bool longest) {
    const long L = static_cast<long>(seq.size());
    for (long n = std::min<long>(max_ngram, L - 1); n >= 1; --n) {
        std::optional<Ids> chosen;
        for (long i = 0; i + n < L; ++i) {
            if (!std::equal(seq.end() - n, seq.end(), seq.begin() + i)) continue;
            Ids c = continuation(seq, i + n, num_tokens, eos_ids);
            if (!chosen || !longest || c.size() > chosen->size()) chosen = c;  // rightmost: the last match
        }
        if (chosen) return *chosen;
    }
    return {};
}

}  // namespace

// ------------------------------------------------------------------------- 08.1 verify one position

TEST_CASE("ex08.1 the stub's worked examples", "[ex08.1]") {
    const Vec p{0.5f, 0.25f, 0.25f}, q{0.25f, 0.25f, 0.5f};
    check_position({p, q, 0, 0.99, 0.5}, 0, "p(0) / q(0) = 2: kept whatever the coin");
    check_position({p, q, 1, 0.99, 0.5}, 1, "p(1) / q(1) = 1: kept by every coin in [0, 1)");
    check_position({p, q, 2, 0.4, 0.5}, 2, "p(2) / q(2) = 0.5 and the coin 0.4 is below it");
    check_position({p, q, 2, 0.5, 0.99}, 0, "p(2) / q(2) = 0.5 and the coin 0.5 is not below it: the residual");
    check_position({p, std::nullopt, 0, 0.75, 0.6}, 2,
                   "q null: the coin 0.75 is not below p(0) = 0.5; the residual is p without 0");
}

TEST_CASE("ex08.1 HF test_speculative_sampling: drafts 1 4 5 become 1 4 8", "[ex08.1]") {
    // huggingface/transformers tests/generation/test_utils.py, UtilsFunctionsTest.test_speculative_sampling:
    // vocab 10; the draft's rows are 10 at the drafted id and -10 elsewhere (q = their softmax); the
    // target's rows 10 at id 1 (rest -10), 10 at id 4 (rest -10), then -inf everywhere but 10 at
    // id 8. HF finds 2 matches and the tokens [1, 4, 8], whatever the coins.
    const Ids drafts{1, 4, 5}, expected{1, 4, 8};
    std::vector<Vec> p{softmax(logits_row({{1, 10.0f}}, -10.0f)), softmax(logits_row({{4, 10.0f}}, -10.0f)),
                       softmax(logits_row({{8, 10.0f}}, -INFINITY))};
    const char* why[] = {"position 0: the target's row equals the draft's (p(1) = q(1))",
                         "position 1: the target's row equals the draft's (p(4) = q(4))",
                         "position 2: the target gives 5 no probability (logit -inf)"};
    const Vec q2 = softmax(logits_row({{5, 10.0f}}, -10.0f));
    Rng rng(1);
    for (int run = 0; run < 100; ++run) {  // 100 rounds of seeded coins; the first that differs is reported
        const double residual_coin = rng.coin();
        for (size_t i = 0; i < 3; ++i) {
            const Call c{p[i], softmax(logits_row({{drafts[i], 10.0f}}, -10.0f)), drafts[i], rng.coin(), residual_coin};
            if (c.run() != expected[i]) {
                check_position(c, expected[i], std::string(why[i]) + " (round " + std::to_string(run) + ")");
                return;
            }
        }
    }
    check_position({p[2], q2, 5, 0.0, 0.5}, 8, why[2]);  // the position the round turns on, once more
}

TEST_CASE("ex08.1 HF's target-distribution case: the replacement follows the target's law", "[ex08.1]") {
    // transformers tests/generation/test_utils.py, test_speculative_sampling_target_distribution
    // (transformers#32867), its third position: target logits 2.0 at ids 1 and 8, 1.0 at id 3, -0.01
    // at id 7, -inf elsewhere; draft 5 drawn from q = softmax(10 at id 5, -10 elsewhere). p(5) = 0, so
    // 5 is never kept, and max(0, p - q) is p less q's crumbs of 2e-9: the replacement's law is the
    // softmax of that row. HF asserts the counts' order over 10,000 draws; here also chi-squared.
    const Vec p = softmax(logits_row({{1, 2.0f}, {8, 2.0f}, {3, 1.0f}, {7, -0.01f}}, -INFINITY));
    const Vec q = softmax(logits_row({{5, 10.0f}}, -10.0f));
    const std::map<int, double> law{{1, 0.399701}, {8, 0.399701}, {3, 0.147042}, {7, 0.053555}};
    Rng rng(2026);
    std::map<int, int> counts;
    const int n = 10000;
    std::vector<double> coins(2 * n);  // (accept, residual) per run
    for (double& c : coins) c = rng.coin();
    const std::vector<int> tokens = sandbox::run<std::vector<int>>("your_verify_position", [&] {
        std::vector<int> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (int run = 0; run < n; ++run) out.push_back(your_verify_position(p, &q, 5, coins[2 * run], coins[2 * run + 1]));
        return out;
    });
    for (int token : tokens) ++counts[token];
    int strays = 0;
    for (const auto& [id, count] : counts) strays += law.count(id) ? 0 : count;
    FEEDBACK(distributions(p, &q) << "\nx 5, " << n << " pairs of coins (accept, residual) from Rng(2026)");
    FEEDBACK("expected counts near " << show_law(law, n) << " (1 > 3 > 7 > 0 and 8 > 3, as HF asserts)\nfound:    "
                                 << show_counts(counts));
    CHECK(strays == 0);
    CHECK(counts[1] > counts[3]);
    CHECK(counts[3] > counts[7]);
    CHECK(counts[7] > 0);
    CHECK(counts[8] > counts[3]);
    CHECK(chi_squared(counts, law, n) < 16.27);  // 3 degrees of freedom, p = 0.001
}

TEST_CASE("ex08.1 a coin exactly at p over q does not keep the draft", "[ex08.1]") {
    // HF keeps when r <= p/q, vLLM when p/q >= u: they differ only on this coin; the rule here
    // (accept_draft's) is coin < p/q, kept with probability exactly min(1, p/q) over [0, 1)
    const Vec p{0.25f, 0.75f}, q{0.5f, 0.5f};
    check_position({p, q, 0, 0.0, 0.5}, 0, "p(0) / q(0) = 0.5 and the coin 0 is below it");
    check_position({p, q, 0, 0.4999, 0.5}, 0, "p(0) / q(0) = 0.5 and the coin 0.4999 is below it");
    check_position({p, q, 0, 0.5, 0.5}, 1, "p(0) / q(0) = 0.5 and the coin 0.5 is not below it");
    check_position({p, q, 1, 0.999, 0.5}, 1, "p(1) / q(1) = 1.5: kept whatever the coin");
    const Vec pd{0.5f, 0.25f, 0.25f};
    check_position({pd, std::nullopt, 0, 0.4999, 0.2}, 0,
                   "a deterministic draft: kept while the coin is below p(0) = 0.5");
    check_position({pd, std::nullopt, 0, 0.5, 0.2}, 1, "a deterministic draft: the coin 0.5 is not below p(0) = 0.5");
}

TEST_CASE("ex08.1 a rejected draft is replaced from the residual", "[ex08.1]") {
    // the residual keeps only what the target gives beyond the draft: [0, 0.3, 0.1, 0] here
    const Vec p{0.1f, 0.4f, 0.3f, 0.2f}, q{0.4f, 0.1f, 0.2f, 0.3f};
    check_position({p, q, 0, 0.5, 0.5}, 1, "p(0) / q(0) = 0.25: rejected; the residual coin 0.5");
    check_position({p, q, 0, 0.5, 0.8}, 2, "p(0) / q(0) = 0.25: rejected; the residual coin 0.8");
    check_position({p, q, 3, 0.7, 0.1}, 1, "p(3) / q(3) = 2/3: rejected; the residual coin 0.1");
    check_position({p, q, 3, 0.6, 0.1}, 3, "p(3) / q(3) = 2/3: kept");
    const Vec pw{0.5f, 0.25f, 0.25f}, qw{0.25f, 0.25f, 0.5f};
    check_position({pw, qw, 2, 0.9, 0.9}, 0, "p(2) / q(2) = 0.5: rejected; the residual coin 0.9");
}

TEST_CASE("ex08.1 a deterministic draft is replaced from p without x", "[ex08.1]") {
    const Vec p{0.5f, 0.3f, 0.2f};
    check_position({p, std::nullopt, 0, 0.49, 0.7}, 0, "q null: kept when the coin is below p(0) = 0.5");
    check_position({p, std::nullopt, 0, 0.51, 0.1}, 1, "q null: rejected; the residual coin 0.1");
    check_position({p, std::nullopt, 0, 0.51, 0.7}, 2, "q null: rejected; the residual coin 0.7");
    check_position({p, std::nullopt, 2, 0.3, 0.5}, 0, "q null: rejected (p(2) = 0.2); the residual coin 0.5");
    check_position({p, std::nullopt, 2, 0.3, 0.9}, 1, "q null: rejected (p(2) = 0.2); the residual coin 0.9");
}

TEST_CASE("ex08.1 a token the draft or the target gives no probability is never kept", "[ex08.1]") {
    check_position({Vec{0.3f, 0.5f, 0.2f}, Vec{0.0f, 0.4f, 0.6f}, 0, 0.0, 0.9}, 1,
                   "q(0) = 0: the draft could not have drawn 0; even the coin 0 does not keep it");
    check_position({Vec{0.0f, 0.5f, 0.5f}, Vec{0.2f, 0.4f, 0.4f}, 0, 0.0, 0.7}, 2,
                   "p(0) = 0: the target never says 0; even the coin 0 does not keep it");
    check_position({Vec{0.0f, 0.6f, 0.4f}, Vec{0.0f, 0.3f, 0.7f}, 0, 0.0, 0.5}, 1,
                   "p(0) = q(0) = 0: never kept");
    check_position({Vec{0.0f, 1.0f}, std::nullopt, 0, 0.0, 0.5}, 1, "q null and p(0) = 0: never kept");
}

TEST_CASE("ex08.1 tokens drafted from q then verified are distributed as p", "[ex08.1]") {
    // vllm-project/vllm tests/v1/sample/test_rejection_sampler.py,
    // test_rejection_sampling_approximates_target_distribution, as a chi-squared test: vocab 10, p
    // and q the softmax of random logits; x is drawn from q, then your verdict. The token returned
    // must follow p, and x must be kept at the rate sum_i min(p_i, q_i) (q null: p(x)).
    Rng rng(8);
    for (int trial = 0; trial < 6; ++trial) {
        const bool deterministic = trial >= 4;
        Vec zp = xt::zeros<float>({10}), zq = xt::zeros<float>({10});
        for (size_t i = 0; i < 10; ++i) {
            zp(i) = static_cast<float>(3 * rng.coin());
            zq(i) = static_cast<float>(3 * rng.coin());
        }
        const Vec p = softmax(zp), q = softmax(zq);
        std::map<int, double> law;
        for (int i = 0; i < 10; ++i) law[i] = p(static_cast<size_t>(i));
        const int fixed = trial % 10;  // the deterministic draft's token
        double keep_rate = p(static_cast<size_t>(fixed));
        if (!deterministic) {
            keep_rate = 0;
            for (size_t i = 0; i < 10; ++i) keep_rate += std::min(p(i), q(i));
        }
        std::map<int, int> counts;
        const int n = 20000;
        int kept = 0;
        std::vector<int> xs(n);
        std::vector<double> coins(2 * n);  // (accept, residual) per run
        for (int run = 0; run < n; ++run) {
            xs[static_cast<size_t>(run)] = deterministic ? fixed : sample_inverse_cdf(q, rng.coin());
            coins[2 * static_cast<size_t>(run)] = rng.coin();
            coins[2 * static_cast<size_t>(run) + 1] = rng.coin();
        }
        const std::vector<int> tokens = sandbox::run<std::vector<int>>("your_verify_position", [&] {
            std::vector<int> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
            for (size_t run = 0; run < xs.size(); ++run)
                out.push_back(your_verify_position(p, deterministic ? nullptr : &q, xs[run], coins[2 * run],
                                                   coins[2 * run + 1]));
            return out;
        });
        for (size_t run = 0; run < tokens.size(); ++run) {
            kept += tokens[run] == xs[run];  // a rejected x never comes back: the residual has nothing at x
            ++counts[tokens[run]];
        }
        FEEDBACK("trial " << trial << ", " << n << " draws, coins from Rng(8): p " << show(p, 3) << "\nq "
                      << (deterministic ? "null, x always " + std::to_string(fixed) : show(q, 3) + ", x drawn from q"));
        {
            FEEDBACK("expected x kept in a share " << num(keep_rate, 4) << " of the draws (sum of min(p, q); q null: p(x))"
                                               << "\nfound:    " << num(static_cast<double>(kept) / n, 4));
            CHECK(static_cast<double>(kept) / n == Approx(keep_rate).margin(0.015));
        }
        FEEDBACK("expected counts near " << show_law(law, n) << "\nfound:    " << show_counts(counts));
        CHECK(chi_squared(counts, law, n) < 27.88);  // 9 degrees of freedom, p = 0.001
    }
}

TEST_CASE("ex08.1 bad input is refused", "[ex08.1]") {
    const Vec p{0.5f, 0.25f, 0.25f}, q{0.25f, 0.25f, 0.5f};
    check_refused({p, q, 3, 0.1, 0.5}, "token 3 is outside a vocabulary of 3 ids");
    check_refused({p, q, -1, 0.1, 0.5}, "token -1 is outside the vocabulary");
    check_refused({p, std::nullopt, 3, 0.1, 0.5}, "token 3 is outside a vocabulary of 3 ids (q null)");
    check_refused({p, Vec{0.5f, 0.5f}, 0, 0.1, 0.5}, "q has 2 ids, p 3 (refuse it even when the coin would keep x)");
    check_refused({p, Vec{0.25f, 0.25f, 0.25f, 0.25f}, 0, 0.1, 0.5}, "q has 4 ids, p 3");
    check_refused({Vec{0.2f, 0.3f}, Vec{0.5f, 0.3f}, 0, 0.9, 0.5},
                  "rejected (0.9 >= 0.2 / 0.5), and max(0, p - q) is 0 everywhere: nothing to draw");
    check_refused({Vec{0.0f, 0.0f, 0.0f}, std::nullopt, 1, 0.5, 0.5}, "q null, p all 0: nothing to keep or draw");
}

TEST_CASE("ex08.1 on cases drawn when the test runs", "[ex08.1]") {
    // 300 positions: vocabularies of 2 to 8 ids, p and q in eighths (8 units dealt at random, so
    // zeros are common and every ratio p(x) / q(x) is exact), q null one time in 3; the accept coin
    // uniform, or one time in 4 exactly p(x) / q(x) where that ratio is exact in binary; the
    // residual coin uniform. One case in 15 meets a refusal: x outside the vocabulary (-1 or V), or
    // an empty residual (q equal to p and p(x) = 0, or p all 0 with q null). The expected token is
    // the library's: x when accept_draft keeps it, else sample_inverse_cdf of residual(p, q, x).
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Vec p = {};
        std::optional<Vec> q = {};
        int x = 0;
        double accept_coin = 0, residual_coin = 0;
    };
    const auto eighths = [&](size_t V) {  // 8 units dealt at random over V ids
        Vec v = xt::zeros<float>({V});
        for (int unit = 0; unit < 8; ++unit) v(static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(V) - 1))) += 0.125f;
        return v;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 300; ++i) {
        Case c;
        const int V = drawn::between(rng, 2, 8);
        c.p = eighths(static_cast<size_t>(V));
        if (drawn::between(rng, 0, 2)) c.q = eighths(static_cast<size_t>(V));
        c.x = drawn::between(rng, 0, V - 1);
        c.accept_coin = rng.coin();
        c.residual_coin = rng.coin();
        const double px = c.p(static_cast<size_t>(c.x)), qx = c.q ? (*c.q)(static_cast<size_t>(c.x)) : 1.0;
        const int eighths_q = static_cast<int>(qx * 8);
        if (drawn::between(rng, 0, 3) == 0 && px > 0 && (eighths_q == 1 || eighths_q == 2 || eighths_q == 4 || eighths_q == 8) &&
            px / qx < 1)
            c.accept_coin = px / qx;  // the coin exactly at the ratio: not kept
        if (drawn::between(rng, 0, 14) == 0) {
            switch (drawn::between(rng, 0, 2)) {
                case 0: c.x = drawn::between(rng, 0, 1) ? V : -1; break;
                case 1:  // q = p and p(x) = 0: never kept, and nothing left to draw
                    c.p(static_cast<size_t>(c.x)) = 0;
                    c.q = c.p;
                    break;
                default:
                    c.p.fill(0);
                    c.q.reset();
                    break;
            }
        }
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<bool, int>>;  // (refused with decodebook::Error, the token)
    const Found found = sandbox::run<Found>("your_verify_position", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) {
            try {
                out.emplace_back(false, your_verify_position(c.p, c.q ? &*c.q : nullptr, c.x, c.accept_coin, c.residual_coin));
            } catch (const Error&) {
                out.emplace_back(true, -1);
            }
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    const auto show_verdict = [](bool refused, int token) {
        return refused ? std::string("decodebook::Error thrown") : "token " + std::to_string(token);
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const Vec* q = c.q ? &*c.q : nullptr;
        bool refused = false, kept = false;
        int expected = -1;
        try {
            kept = accept_draft(c.p, q, c.x, c.accept_coin);
            expected = kept ? c.x : sample_inverse_cdf(residual(c.p, q, c.x), c.residual_coin);
        } catch (const Error&) {
            refused = true;
        }
        const bool found_refused = std::get<0>(found[i]);
        const int token = std::get<1>(found[i]);
        const Call call{c.p, c.q, c.x, c.accept_coin, c.residual_coin};
        FEEDBACK("a case drawn with seed " << seed << ":\n" << call.text());
        FEEDBACK("expected: " << show_verdict(refused, expected) << " (the library's accept_draft, residual and "
                              << "sample_inverse_cdf)\nfound:    " << show_verdict(found_refused, token));
        const bool same = found_refused == refused && (refused || token == expected);
        FEEDBACK((same ? std::string()
                  : refused || found_refused
                      ? "hint: refuse with decodebook::Error an x outside the vocabulary, and a rejection whose residual "
                        "has nothing left to draw (max(0, p - q) all 0; null q: p without x all 0)"
                  : kept ? "hint: x is kept when accept_coin < p(x) / q(x) (q(x) = 1 for a null q)"
                  : token == c.x
                      ? "hint: x is not kept here: it needs accept_coin < p(x) / q(x) strictly, and never when p(x) or "
                        "q(x) is 0"
                      : "hint: x is rejected; the replacement is what sample_inverse_cdf draws with residual_coin from "
                        "max(0, p - q) (null q: p with x removed)"));
        REQUIRE(same);
    }
}

// ----------------------------------------------------------------------------- 08.2 prompt lookup

TEST_CASE("ex08.2 HF test_prompt_lookup_decoding_stops_at_eos proposes nothing", "[ex08.2]") {
    // huggingface/transformers tests/generation/test_utils.py, test_prompt_lookup_decoding_stops_at_eos:
    // ids in 1..49 (HF draws them at random; these meet its constraints), 51 at positions 3 and 9
    // (the last), the EOS 0 at position 4; eos_token_id 0, num_output_tokens 4,
    // max_matching_ngram_size 1: no candidate, the continuation after the 51 at 3 starts with EOS.
    const Ids ids{17, 5, 33, 51, 0, 12, 44, 8, 29, 51};
    check_lookup(ids, 1, 4, {0}, {}, "HF's case: the match's continuation starts with the EOS");
    check_lookup(ids, 1, 4, {}, {0, 12, 44, 8}, "the same without an EOS id: the 4 tokens after the 51 at 3");
    check_lookup(ids, 2, 4, {0}, {}, "no earlier [29, 51]; then [51] as in HF's case");
}

TEST_CASE("ex08.2 vLLM's n-gram cases where HF's rule agrees", "[ex08.2]") {
    // vllm-project/vllm tests/v1/spec_decode/test_ngram.py (tokens, min_n = max_n = n or min_n..max_n,
    // k) -> proposal, the cases where Hugging Face's rule (max_ngram = max_n, num_tokens = k) gives the
    // same answer (it falls back to shorter n-grams where vLLM stops at min_n)
    check_lookup({1, 2, 3, 4, 1, 2, 3}, 2, 3, {}, {4, 1, 2}, "vLLM: n 2, k 3");
    check_lookup({1, 2, 3, 4, 1, 2, 3}, 2, 2, {}, {4, 1}, "vLLM: n 2, k 2");
    check_lookup({1, 2, 3, 4, 1, 2, 3}, 1, 3, {}, {4, 1, 2}, "vLLM: n 1, k 3");
    check_lookup({1, 3, 6, 2, 3, 4, 1, 2, 3}, 2, 3, {}, {4, 1, 2}, "vLLM: n 2, k 3");
    check_lookup({1, 3, 6, 2, 3, 4, 1, 2, 3}, 1, 2, {}, {6, 2}, "vLLM: n 1, k 2 (\"return on the first match\")");
    check_lookup({1, 2, 3, 4, 5}, 2, 2, {}, {}, "vLLM: n 2, k 2, no match");
    check_lookup({1, 2, 3, 4, 1, 2, 3, 5, 6}, 2, 2, {}, {}, "vLLM: n 2, k 2, no match for [5, 6] nor [6]");
    check_lookup({1, 2, 3, 4, 1, 2, 3}, 4, 2, {}, {4, 1}, "vLLM: n 3..4, k 2");
    check_lookup({2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3, 4}, 4, 2, {}, {1, 2}, "vLLM: n 3..4, k 2 (the 4-gram wins)");
    check_lookup({3, 4, 5, 2, 3, 4, 1, 2, 3, 4}, 4, 2, {}, {1, 2}, "vLLM: n 2..4, k 2");
    check_lookup({1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3, 300, 1, 2, 3}, 3, 2, {}, {100, 1},
                 "vLLM: n 3, k 2 (the earliest occurrence)");
}

TEST_CASE("ex08.2 the leftmost match wins over later ones", "[ex08.2]") {
    struct Case {
        Ids sequence;
        int max_ngram, num_tokens;
        Ids eos_ids, expected;
        std::string why;
    };
    const std::vector<Case> cases{
        {{1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3}, 2, 2, {}, {100, 1}, "[2, 3] occurs at 1, 5 and 9 (the suffix)"},
        {{4, 2, 6, 0, 4, 2, 7, 7, 7, 4, 2, 9, 4, 2}, 2, 4, {0}, {6},
         "[4, 2] at 0 (then 6, EOS), at 4 (then 7 7 7 4) and at 9 (then 9 4 2)"},
        {{1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3, 300, 1, 2, 3}, 3, 2, {}, {100, 1}, "[1, 2, 3] occurs four times"},
    };
    // the cases must tell the right rule from a rightmost-match and a longest-continuation rule
    const std::pair<const char*, bool> mutants[] = {{"the rightmost match", false}, {"the longest continuation", true}};
    for (const auto& [name, longest] : mutants) {
        bool caught = false;
        for (const Case& c : cases)
            caught = caught || mutant_lookup(c.sequence, c.max_ngram, c.num_tokens, c.eos_ids, longest) != c.expected;
        FEEDBACK("these cases do not tell Hugging Face's rule from " << name << ": the test itself is broken");
        REQUIRE(caught);
    }
    for (const Case& c : cases) check_lookup(c.sequence, c.max_ngram, c.num_tokens, c.eos_ids, c.expected, c.why);
}

TEST_CASE("ex08.2 the first match decides even when EOS cuts all of it", "[ex08.2]") {
    check_lookup({3, 51, 0, 12, 51, 44, 51}, 1, 3, {0}, {},
                 "[51] at 1 is followed by the EOS; the later match at 4 is not tried");
    check_lookup({51, 6, 7, 51, 0, 7, 51}, 2, 3, {0}, {},
                 "[7, 51] at 2 is followed by the EOS; a shorter n-gram is not tried");
    check_lookup({8, 9, 1, 0, 2, 8, 9}, 2, 5, {0}, {1}, "[8, 9] at 0: 1, then the EOS");
    check_lookup({8, 9, 1, 50, 2, 8, 9}, 2, 5, {0, 50}, {1}, "two EOS ids: 50 is one of them");
    check_lookup({8, 9, 1, 50, 2, 8, 9}, 2, 5, {0}, {1, 50, 2, 8, 9}, "50 is no EOS here");
}

TEST_CASE("ex08.2 n is tried from the longest down", "[ex08.2]") {
    check_lookup({1, 3, 6, 2, 3, 4, 1, 2, 3}, 2, 3, {}, {4, 1, 2}, "[2, 3] at 3 before [3] at 1");
    check_lookup({5, 1, 9, 2, 7, 1}, 2, 2, {}, {9, 2}, "no earlier [7, 1]: [1] at 1 (vLLM with min_n 2 stops here)");
    check_lookup({7, 7}, 3, 4, {}, {7}, "n = min(3, 2 - 1) = 1: [7] at 0");
    check_lookup({7, 7, 7}, 2, 3, {}, {7}, "[7, 7] at 0, then the one token after it");
    check_lookup({9, 8, 7, 6, 5, 9, 8, 7}, 5, 3, {}, {6, 5, 9}, "[9, 8, 7] at 0 (no earlier 4- or 5-gram)");
}

TEST_CASE("ex08.2 short sequences num_tokens and the end of the sequence", "[ex08.2]") {
    check_lookup({}, 2, 3, {}, {}, "an empty sequence");
    check_lookup({4}, 2, 3, {}, {}, "one token: nothing before it");
    check_lookup({1, 2, 1}, 1, 10, {}, {2, 1}, "the continuation stops at the end of the sequence");
    check_lookup({1, 2, 3, 4, 1}, 1, 1, {}, {2}, "num_tokens 1");
    check_lookup({1, 2, 3, 4, 1}, 2, 10, {}, {2, 3, 4, 1}, "no earlier [4, 1]; [1] at 0, up to the end");
}

TEST_CASE("ex08.2 on cases drawn when the test runs", "[ex08.2]") {
    // 300 lookups: sequences of 0 to 16 tokens over 0..3 (so n-grams repeat often), max_ngram 1 to
    // 5, num_tokens 1 to 6, 0 to 2 EOS ids from 0..4 (4 never occurs). The expected proposal is
    // the library's prompt_lookup_hf.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Ids sequence = {};
        int max_ngram = 1, num_tokens = 1;
        Ids eos_ids = {};
    };
    std::vector<Case> cases;
    for (int i = 0; i < 300; ++i) {
        Case c;
        for (int k = drawn::between(rng, 0, 16); k > 0; --k) c.sequence.push_back(drawn::between(rng, 0, 3));
        c.max_ngram = drawn::between(rng, 1, 5);
        c.num_tokens = drawn::between(rng, 1, 6);
        for (int k = drawn::between(rng, 0, 2); k > 0; --k) c.eos_ids.push_back(drawn::between(rng, 0, 4));
        cases.push_back(c);
    }
    const std::vector<Ids> found = sandbox::run<std::vector<Ids>>("your_prompt_lookup", [&] {
        std::vector<Ids> out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) out.push_back(your_prompt_lookup(c.sequence, c.max_ngram, c.num_tokens, c.eos_ids));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const Ids expected = prompt_lookup_hf(c.sequence, c.max_ngram, c.num_tokens, c.eos_ids);
        FEEDBACK("a case drawn with seed " << seed << ": sequence " << show(c.sequence) << "\nmax_ngram " << c.max_ngram
                                          << ", num_tokens " << c.num_tokens << ", eos_ids " << show(c.eos_ids));
        FEEDBACK("expected: " << show(expected) << " (the library's prompt_lookup_hf)\nfound:    " << show(found[i]));
        const bool same = found[i] == expected;
        FEEDBACK((same ? std::string()
                  : found[i] == mutant_lookup(c.sequence, c.max_ngram, c.num_tokens, c.eos_ids, false)
                      ? "hint: for each n the leftmost earlier occurrence of the last n tokens wins, not the rightmost"
                  : found[i] == mutant_lookup(c.sequence, c.max_ngram, c.num_tokens, c.eos_ids, true)
                      ? "hint: the first match decides, even when its continuation is shorter (or cut to nothing by an EOS)"
                      : "hint: try n from min(max_ngram, length - 1) down to 1, the starts from the left; the first match "
                        "proposes up to num_tokens of what follows it, stopping at the end of the sequence and before "
                        "the first EOS"));
        REQUIRE(same);
    }
}
