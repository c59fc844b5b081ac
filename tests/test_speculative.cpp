// Chapter 08: speculative decoding's rules without a model. Each case is a fact ported from an
// engine's own tests (inputs and expected outputs; the source is named beside it) or worked by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::Threads;
using golden::tokenizer;
using Vec = xt::xtensor<float, 1>;

namespace {

// A vocabulary-10 row of logits: `value` at the given ids, `rest` elsewhere.
Vec logits_row(std::map<int, float> at, float rest, size_t V = 10) {
    Vec z = xt::zeros<float>({V});
    for (size_t i = 0; i < V; ++i) z(i) = rest;
    for (const auto& [id, value] : at) z(static_cast<size_t>(id)) = value;
    return z;
}

// A greedy target's distribution: all the mass on the argmax (LogitsChain::distribution when greedy).
Vec one_hot(int id, size_t V = 10) {
    Vec p = xt::zeros<float>({V});
    p(static_cast<size_t>(id)) = 1.0f;
    return p;
}

// The verdict as vLLM's tests print it: the kept drafts, the next token, then -1 up to k + 1.
std::vector<int> as_vllm_row(const Verdict& v, const std::vector<int>& drafts) {
    std::vector<int> row(drafts.begin(), drafts.begin() + v.accepted);
    row.push_back(v.next);
    row.resize(drafts.size() + 1, -1);
    return row;
}

// Pearson's chi-squared statistic of `counts` against the probabilities `law`.
double chi_squared(const std::map<int, int>& counts, const std::map<int, double>& law, int n) {
    double chi2 = 0;
    for (const auto& [id, p] : law) {
        const double expected = p * n, found = counts.count(id) ? counts.at(id) : 0;
        chi2 += (found - expected) * (found - expected) / expected;
    }
    return chi2;
}

}  // namespace

TEST_CASE("Leviathan's rule on a worked example gives back p exactly", "[speculative]") {
    // p = [0.6, 0.3, 0.1], q = [0.2, 0.3, 0.5]: keep with min(1, p/q) = [1, 1, 0.2]; the rejected
    // mass 1 - sum q a = 0.4 goes to the residual max(0, p - q) = [0.4, 0, 0] -> [1, 0, 0]
    const Vec p{0.6f, 0.3f, 0.1f}, q{0.2f, 0.3f, 0.5f};
    CHECK(accept_draft(p, &q, 0, 0.999));
    CHECK(accept_draft(p, &q, 1, 0.999));
    CHECK(accept_draft(p, &q, 2, 0.19));
    CHECK_FALSE(accept_draft(p, &q, 2, 0.21));
    const Vec r = residual(p, &q, 2);
    CHECK(r(0) == Approx(0.4f));
    CHECK(r(1) == 0.0f);
    CHECK(r(2) == 0.0f);
    const double kept[] = {1.0, 1.0, 0.2};
    double rejected = 1;
    for (int x = 0; x < 3; ++x) rejected -= q(x) * kept[x];
    CHECK(rejected == Approx(0.4));
    for (int x = 0; x < 3; ++x) CHECK(q(x) * kept[x] + rejected * (r(x) / 0.4) == Approx(p(x)).margin(1e-6));
}

TEST_CASE("a deterministic draft is kept with probability p(x) and its residual is p without x", "[speculative]") {
    const Vec p{0.5f, 0.3f, 0.2f};
    CHECK(accept_draft(p, nullptr, 0, 0.49));
    CHECK_FALSE(accept_draft(p, nullptr, 0, 0.51));
    const Vec r = residual(p, nullptr, 0);
    CHECK(r(0) == 0.0f);
    CHECK(r(1) == 0.3f);
    CHECK(r(2) == 0.2f);
    // a token the target never gives, or the draft could not draw, is never kept
    const Vec zero{0.0f, 1.0f, 0.0f}, q{0.0f, 0.5f, 0.5f};
    CHECK_FALSE(accept_draft(zero, nullptr, 0, 0.0));
    CHECK_FALSE(accept_draft(p, &q, 0, 0.0));
    CHECK_THROWS_WITH(accept_draft(p, nullptr, 3, 0.5), Catch::Contains("outside a distribution of 3 ids"));
}

TEST_CASE("HF test_speculative_sampling: drafts [1, 4, 5] give [1, 4, 8] with 2 matches", "[speculative][hf]") {
    // huggingface/transformers tests/generation/test_utils.py, UtilsFunctionsTest.test_speculative_sampling
    // (cf63921b): vocab 10, candidate logits 10 at the drafted id and -10 elsewhere; target rows 10 at
    // id 1, 10 at id 4, -inf everywhere but 10 at id 8, then all -10.
    const std::vector<int> drafts{1, 4, 5};
    std::vector<Vec> q, p;
    for (int id : drafts) q.push_back(softmax(logits_row({{id, 10.0f}}, -10.0f)));
    p.push_back(softmax(logits_row({{1, 10.0f}}, -10.0f)));
    p.push_back(softmax(logits_row({{4, 10.0f}}, -10.0f)));
    p.push_back(softmax(logits_row({{8, 10.0f}}, -INFINITY)));
    p.push_back(softmax(logits_row({}, -10.0f)));
    Rng rng(1);
    for (int run = 0; run < 100; ++run) {  // any coins: the verdict here does not depend on them
        std::vector<double> coins;
        for (int i = 0; i < coins_per_round(3); ++i) coins.push_back(rng.coin());
        const Verdict v = verify_drafts(p, drafts, q, coins);
        INFO("run " << run);
        CHECK(v.accepted == 2);
        CHECK(v.next == 8);  // 5 is rejected (p(5) = 0) and the residual is a point mass on 8
    }
}

TEST_CASE("HF test_speculative_sampling_target_distribution: the third token follows the target's law", "[speculative][hf]") {
    // Same candidates; target rows 10 at id 1, 10 at id 4, then logits 2.0 at ids 1 and 8, 1.0 at id
    // 3, -0.01 at id 7 and -inf elsewhere (transformers#32867). HF asserts an ordering of the counts
    // over 10,000 draws; the exact law of the third token is softmax of that row (q(5) ~ 1 - 2e-8, so
    // the residual is that row to 1e-8): {1: 0.399701, 8: 0.399701, 3: 0.147042, 7: 0.053555}.
    const std::vector<int> drafts{1, 4, 5};
    std::vector<Vec> q, p;
    for (int id : drafts) q.push_back(softmax(logits_row({{id, 10.0f}}, -10.0f)));
    p.push_back(softmax(logits_row({{1, 10.0f}}, -INFINITY)));
    p.push_back(softmax(logits_row({{4, 10.0f}}, -INFINITY)));
    p.push_back(softmax(logits_row({{1, 2.0f}, {8, 2.0f}, {3, 1.0f}, {7, -0.01f}}, -INFINITY)));
    p.push_back(softmax(logits_row({}, -10.0f)));
    const std::map<int, double> law{{1, 0.399701}, {8, 0.399701}, {3, 0.147042}, {7, 0.053555}};
    Rng rng(2026);
    std::map<int, int> counts;
    const int n = 10000;
    for (int run = 0; run < n; ++run) {
        std::vector<double> coins;
        for (int i = 0; i < coins_per_round(3); ++i) coins.push_back(rng.coin());
        const Verdict v = verify_drafts(p, drafts, q, coins);
        REQUIRE(v.accepted == 2);
        REQUIRE(law.count(v.next) == 1);
        ++counts[v.next];
    }
    INFO("counts 1: " << counts[1] << ", 8: " << counts[8] << ", 3: " << counts[3] << ", 7: " << counts[7]);
    CHECK(counts[1] > counts[3]);  // HF's own assertions
    CHECK(counts[3] > counts[7]);
    CHECK(counts[7] > 0);
    CHECK(counts[8] > counts[3]);
    CHECK(chi_squared(counts, law, n) < 16.27);  // 3 degrees of freedom, p = 0.001
}

TEST_CASE("vLLM's greedy rejection cases: keep while the draft is the argmax", "[speculative][vllm]") {
    // vllm-project/vllm tests/v1/sample/test_rejection_sampler.py (004fce2d): target logits 100 at the
    // wanted id, -100 elsewhere, greedy (the target's distribution is one-hot at its argmax); the
    // output row is the kept drafts, the target's token, then -1 (PLACEHOLDER_TOKEN_ID).
    struct Case {
        std::vector<int> spec, target, expected;
    };
    const std::vector<Case> cases{
        {{1, 2, 3}, {1, 2, 3, 4}, {1, 2, 3, 4}},      // test_perfect_match
        {{1, 2, 3}, {1, 5, 3, 4}, {1, 5, -1, -1}},    // test_early_mismatch
        {{1, 2}, {1, 2, 5}, {1, 2, 5}},               // test_multiple_sequences, row 0
        {{3}, {3, 4}, {3, 4}},                        // test_multiple_sequences, row 1 (no padding)
        {{1}, {1, 2}, {1, 2}},                        // test_single_token_sequence
        {{}, {5}, {5}},                               // test_empty_sequence
        {{1, 2, 3}, {1, 2, 7, 6}, {1, 2, 7, -1}},     // test_multiple_mismatches, row 0
        {{4, 5, 6}, {4, 8, 6, 9}, {4, 8, -1, -1}},    // test_multiple_mismatches, row 1
        {{1, 2}, {1, 2, 3}, {1, 2, 3}},               // test_parametrized_cases
        {{1}, {2, 3}, {2, -1}},
        {{1, 2}, {1, 5, 6}, {1, 5, -1}},
        {{3, 4}, {3, 4, 7}, {3, 4, 7}},
    };
    for (const Case& c : cases) {
        std::vector<Vec> p;
        for (int id : c.target) p.push_back(softmax(logits_row({{id, 100.0f}}, -100.0f)));
        const std::vector<double> coins(static_cast<size_t>(coins_per_round(static_cast<int>(c.spec.size()))), 0.5);
        const Verdict v = verify_drafts(p, c.spec, {}, coins);
        INFO("spec " << c.spec.size() << " tokens, target " << c.target[0] << "...");
        CHECK(as_vllm_row(v, c.spec) == c.expected);
        // the same with the exact one-hot a greedy chain hands out
        std::vector<Vec> hot;
        for (int id : c.target) hot.push_back(one_hot(id));
        CHECK(as_vllm_row(verify_drafts(hot, c.spec, {}, coins), c.spec) == c.expected);
    }
}

namespace {

// A target p and a draft q over 10 tokens: the softmax of uniform random logits in [0, 3)
// (vLLM's test_rejection_sampling_approximates_target_distribution).
std::pair<Vec, Vec> random_pair(Rng& rng) {
    Vec zp = xt::zeros<float>({10}), zq = xt::zeros<float>({10});
    for (size_t i = 0; i < 10; ++i) {
        zp(i) = static_cast<float>(3 * rng.coin());
        zq(i) = static_cast<float>(3 * rng.coin());
    }
    return {softmax(zp), softmax(zq)};
}

// n rounds of one draft: x drawn from q with one coin, then `verify` on rows {p, p} with two
// coins. How often each token came out first, and how many drafts were kept.
struct OneDraftRuns {
    std::map<int, int> counts;
    int kept = 0;
};
template <class Verify>
OneDraftRuns one_draft_runs(const Vec& p, const Vec& q, Rng& rng, int n, Verify verify) {
    OneDraftRuns out;
    const std::vector<Vec> rows{p, p};
    for (int run = 0; run < n; ++run) {
        const int x = sample_inverse_cdf(q, rng.coin());  // the draft samples from q
        const double coins[] = {rng.coin(), rng.coin()};
        const Verdict v = verify(rows, x, coins);
        out.kept += v.accepted;
        ++out.counts[v.accepted == 1 ? x : v.next];
    }
    return out;
}

std::map<int, double> law_of(const Vec& p) {
    std::map<int, double> law;
    for (int i = 0; i < static_cast<int>(p.size()); ++i) law[i] = p(static_cast<size_t>(i));
    return law;
}

}  // namespace

TEST_CASE("sampled speculative output has the target's distribution on a toy vocabulary", "[speculative]") {
    // vLLM's test_rejection_sampling_approximates_target_distribution, as a chi-squared test: vocab 10,
    // draft and target softmax of uniform random logits; the draft token is drawn from q, then verified.
    Rng rng(7);
    for (int trial = 0; trial < 5; ++trial) {
        const std::pair<Vec, Vec> pq = random_pair(rng);
        const Vec &p = pq.first, &q = pq.second;
        const int n = 40000;
        const OneDraftRuns r = one_draft_runs(p, q, rng, n, [&](const std::vector<Vec>& rows, int x, const double* coins) {
            const Vec qs[] = {q};
            return verify_drafts(rows, std::vector<int>{x}, qs, std::span<const double>(coins, 2));
        });
        INFO("trial " << trial);
        CHECK(chi_squared(r.counts, law_of(p), n) < 27.88);  // 9 degrees of freedom, p = 0.001
        // the acceptance rate is sum min(p, q) = 1 - TV(p, q)
        double beta = 0;
        for (size_t i = 0; i < 10; ++i) beta += std::min(p(i), q(i));
        CHECK(static_cast<double>(r.kept) / n == Approx(beta).margin(0.01));
    }
}

TEST_CASE("llama.cpp's sample-and-compare keeps the target's law and a draft with probability sum p q", "[speculative]") {
    // llama.cpp common/sampling.cpp, common_sampler_sample_and_accept_n: the target samples its own
    // token at each position and the draft survives only if it is the same token
    Rng rng(11);
    for (int trial = 0; trial < 3; ++trial) {
        const std::pair<Vec, Vec> pq = random_pair(rng);
        const Vec &p = pq.first, &q = pq.second;
        const int n = 40000;
        const OneDraftRuns r = one_draft_runs(p, q, rng, n, [](const std::vector<Vec>& rows, int x, const double* coins) {
            return verify_sample_and_compare(rows, std::vector<int>{x}, std::span<const double>(coins, 2));
        });
        double product = 0, overlap = 0;
        for (size_t i = 0; i < 10; ++i) {
            product += p(i) * q(i);
            overlap += std::min(p(i), q(i));
        }
        INFO("trial " << trial << ": sum p q " << product << ", sum min(p, q) " << overlap);
        CHECK(chi_squared(r.counts, law_of(p), n) < 27.88);  // 9 degrees of freedom, p = 0.001
        CHECK(static_cast<double>(r.kept) / n == Approx(product).margin(0.01));
        CHECK(product < overlap - 0.05);  // why it keeps fewer drafts than Leviathan's rule
    }
    // greedy rows (one-hot p): the same verdicts as Leviathan's rule, on vLLM's early-mismatch case
    const std::vector<Vec> rows{one_hot(1), one_hot(5), one_hot(3), one_hot(4)};
    const double coins[] = {0.3, 0.6, 0.9, 0.1};
    const std::vector<int> drafts{1, 2, 3};
    const Verdict a = verify_sample_and_compare(rows, drafts, coins);
    const Verdict b = verify_drafts(rows, drafts, {}, coins);
    CHECK(a.accepted == 1);
    CHECK(a.next == 5);
    CHECK(b.accepted == a.accepted);
    CHECK(b.next == a.next);
    CHECK_THROWS_WITH(verify_sample_and_compare(rows, drafts, std::vector<double>{0.5}), Catch::Contains("k + 1 coins"));
    GenerationConfig c;
    set_knob(c, "verify-rule", "sample_and_compare");
    CHECK(c.verify_rule == VerifyRule::SampleAndCompare);
    CHECK_THROWS_WITH(set_knob(c, "verify_rule", "typical"), Catch::Contains("leviathan, sample_and_compare"));
}

TEST_CASE("vLLM's n-gram proposer cases", "[speculative][vllm][prompt-lookup]") {
    // vllm-project/vllm tests/v1/spec_decode/test_ngram.py (016e8ede): (tokens, min_n, max_n, k) -> proposal
    struct Case {
        std::vector<int> tokens;
        int min_n, max_n, k;
        std::vector<int> expected;
    };
    const std::vector<Case> cases{
        {{1, 2, 3, 4, 1, 2, 3, 5, 6}, 2, 2, 2, {}},
        {{1, 2, 3, 4, 1, 2, 3}, 2, 2, 3, {4, 1, 2}},
        {{1, 2, 3, 4, 1, 2, 3}, 2, 2, 2, {4, 1}},
        {{1, 2, 3, 4, 1, 2, 3}, 1, 1, 3, {4, 1, 2}},
        {{1, 3, 6, 2, 3, 4, 1, 2, 3}, 2, 2, 3, {4, 1, 2}},
        {{1, 3, 6, 2, 3, 4, 1, 2, 3}, 1, 1, 2, {6, 2}},  // "return on the first match"
        {{1, 2, 3, 4, 5}, 2, 2, 2, {}},
        {{1, 2, 3, 4, 1, 2, 3}, 4, 4, 2, {}},
        {{1, 2, 3, 4, 1, 2, 3}, 3, 4, 2, {4, 1}},
        {{2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3, 4}, 3, 4, 2, {1, 2}},  // the 4-gram wins, not [5, 1]
        {{3, 4, 5, 2, 3, 4, 1, 2, 3, 4}, 2, 4, 2, {1, 2}},
        {{1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3, 300, 1, 2, 3}, 3, 3, 2, {100, 1}},  // the earliest occurrence
    };
    for (const Case& c : cases) {
        INFO("tokens of length " << c.tokens.size() << ", n " << c.min_n << ".." << c.max_n << ", k " << c.k);
        CHECK(prompt_lookup_vllm(c.tokens, c.min_n, c.max_n, c.k) == c.expected);
    }
}

TEST_CASE("HF's prompt lookup: leftmost match, n from the maximum down, cut before EOS", "[speculative][hf][prompt-lookup]") {
    // huggingface/transformers tests/generation/test_utils.py, test_prompt_lookup_decoding_stops_at_eos
    // (cf63921b): ids in 1..49 (HF draws them at random; these meet its constraints), 51 at
    // positions 3 and 9 (the last), EOS 0 at position 4;
    // max_matching_ngram_size 1, num_output_tokens 4: no candidate (the continuation starts with EOS).
    const std::vector<int> ids{17, 5, 33, 51, 0, 12, 44, 8, 29, 51};
    const std::vector<int> eos{0};
    CHECK(prompt_lookup_hf(ids, 1, 4, eos).empty());
    CHECK(prompt_lookup_hf(ids, 1, 4) == std::vector<int>{0, 12, 44, 8});  // without EOS: the 4 that follow
    // candidate_generator.py (00a11b6a): n from min(max_ngram, len - 1) down to 1, the leftmost match
    CHECK(prompt_lookup_hf(std::vector<int>{1, 2, 3, 4, 1, 2, 3}, 2, 3) == std::vector<int>{4, 1, 2});
    CHECK(prompt_lookup_hf(std::vector<int>{1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3}, 2, 2) == std::vector<int>{100, 1});
    // where vLLM honours min_n, HF falls back to n = 1
    const std::vector<int> short_match{5, 1, 9, 2, 7, 1};
    CHECK(prompt_lookup_vllm(short_match, 2, 2, 2).empty());
    CHECK(prompt_lookup_hf(short_match, 2, 2) == std::vector<int>{9, 2});
    CHECK(prompt_lookup_hf(std::vector<int>{4}, 2, 3).empty());  // nothing before the last token
}

TEST_CASE("expected tokens per round and the predicted speed-up match Leviathan's formula", "[speculative]") {
    // (1 - a^(k+1)) / (1 - a), and that over (k c + 1): values worked by hand from the formula
    CHECK(expected_tokens_per_round(0.6, 1) == Approx(1.600));
    CHECK(expected_tokens_per_round(0.6, 3) == Approx(2.176));
    CHECK(expected_tokens_per_round(0.8, 7) == Approx(4.161).margin(5e-4));
    CHECK(predicted_speedup(0.6, 3, 0.1) == Approx(1.674).margin(5e-4));
    CHECK(predicted_speedup(0.8, 5, 0.05) == Approx(2.951).margin(5e-4));
    CHECK(predicted_speedup(0.8, 7, 0.2) == Approx(1.734).margin(5e-4));
    CHECK(expected_tokens_per_round(1.0, 4) == 5.0);
    CHECK(expected_tokens_per_round(0.0, 4) == 1.0);
}

namespace {

// A model of the embedded model's shape with random weights: a draft that almost never agrees.
const Gpt2& random_draft() {
    static const Gpt2 m = Gpt2::from_tensors(model().config(), random_gpt2_tensors(model().config(), 7));
    return m;
}

// Chapter 08's draft model, models/fortunes-draft (trained on the target's corpus and tokenizer).
const Gpt2& trained_draft() {
    static const Gpt2 m = Gpt2::load((std::filesystem::path(golden::model_dir()).parent_path() / "fortunes-draft").string());
    return m;
}

// Every drafter the chapter compares, by name, for a config.
std::vector<std::pair<std::string, Drafter>> drafters(const GenerationConfig& config, const std::vector<int>& prompt) {
    const size_t capacity = prompt.size() + static_cast<size_t>(config.max_new_tokens);
    const std::vector<int> eos{model().config().eos_token_id};
    return {{"prompt lookup (HF)", prompt_lookup_drafter(false, 1, 2, eos)},
            {"prompt lookup (vLLM)", prompt_lookup_drafter(true, 1, 3, eos)},
            {"draft model", model_drafter(trained_draft(), config, capacity, 8, 99)},
            {"draft = target", model_drafter(model(), config, capacity, 8, 99)},
            {"random draft", model_drafter(random_draft(), config, capacity, 8, 99)}};
}

}  // namespace

TEST_CASE("speculative greedy equals plain greedy token for token on every golden prompt", "[speculative][model]") {
    // HF's test_assisted_decoding_matches_greedy_search ("same" and "random" assistants) and
    // test_prompt_lookup_decoding_matches_greedy_search, with chapter 08's trained draft model
    // beside them, on every prompt of tests/data/greedy.json
    // (on two threads, the first three prompts: a busy second core makes every step wait)
    const nlohmann::json g = golden::load("greedy.json");
    for (const int threads : {1, 2}) {
        Threads scope(threads);
        int case_index = 0;
        for (const auto& c : g["cases"]) {
            if (threads == 2 && case_index++ >= 3) break;
            const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
            GenerationConfig config;
            config.max_new_tokens = c["max_new_tokens"].get<int>();
            const Generation plain = generate_cached(model(), tokenizer(), prompt, config, make_sampler(config, 1));
            for (const int k : {1, 4}) {
                for (const auto& [name, drafter] : drafters(config, prompt)) {
                    // k = 1 and two threads: the drafts that do agree (time: the random draft is slow)
                    if ((k == 1 || threads == 2) && (name == "random draft" || name == "prompt lookup (vLLM)")) continue;
                    INFO("case '" << c["name"].get<std::string>() << "', " << name << ", k " << k << ", " << threads << " thread(s)");
                    SpeculativeStats st;
                    GenerationConfig ck = config;
                    ck.num_assistant_tokens = k;
                    const Generation spec = generate_speculative(model(), tokenizer(), prompt, ck, drafter, &st);
                    CHECK(spec.ids == plain.ids);
                    CHECK(spec.text == plain.text);
                    CHECK(spec.finish_reason == plain.finish_reason);
                    CHECK(st.emitted == static_cast<int>(plain.ids.size()));
                    if (name == "draft = target") CHECK(st.accepted == st.drafted);  // every draft kept
                    if (name == "draft = target") CHECK(st.rejected == 0);
                    CHECK(st.rejected <= st.rounds);
                    CHECK(st.accepted + st.rejected <= st.drafted);
                    if (name == "random draft") CHECK(st.accepted * 4 <= st.drafted);
                }
            }
        }
    }
}

TEST_CASE("speculative decoding stops mid-round where plain decoding does", "[speculative][model]") {
    const std::vector<int> prompt = tokenizer().encode("The best way to");
    GenerationConfig config;
    config.max_new_tokens = 40;
    const Generation free_run = generate_cached(model(), tokenizer(), prompt, config, make_sampler(config, 1));
    REQUIRE(free_run.text.size() > 20);
    // a stop string from the middle of the text, min_new_tokens with EOS masked, and a length limit
    GenerationConfig stop = config;
    stop.stop = {free_run.text.substr(10, 4)};
    GenerationConfig at_least = config;
    at_least.min_new_tokens = 12;
    GenerationConfig short_run = config;
    short_run.max_new_tokens = 3;
    for (const GenerationConfig& c : {stop, at_least, short_run}) {
        const Generation plain = generate_cached(model(), tokenizer(), prompt, c, make_sampler(c, 1));
        for (const auto& [name, drafter] : drafters(c, prompt)) {
            INFO(name << ", stop '" << (c.stop.empty() ? "" : c.stop[0]) << "', min_new_tokens " << c.min_new_tokens
                      << ", max_new_tokens " << c.max_new_tokens);
            GenerationConfig c5 = c;
            c5.num_assistant_tokens = 5;
            const Generation spec = generate_speculative(model(), tokenizer(), prompt, c5, drafter);
            CHECK(spec.ids == plain.ids);
            CHECK(spec.text == plain.text);
            CHECK(spec.finish_reason == plain.finish_reason);
            CHECK(spec.matched_stop == plain.matched_stop);
        }
    }
}

TEST_CASE("sampling with the target as its own draft keeps every draft", "[speculative][model]") {
    // q is then p bit for bit (the same logits: one decode call per token or k at once), so
    // min(1, p/q) = 1: a check that the draft's q is exactly what it sampled from
    GenerationConfig config;
    config.do_sample = true;
    config.temperature = 0.8f;
    config.top_k = 40;
    config.max_new_tokens = 30;
    config.num_assistant_tokens = 4;
    const std::vector<int> prompt = tokenizer().encode("A fortune:");
    SpeculativeStats st;
    const Generation g = generate_speculative(model(), tokenizer(), prompt, config,
                                              model_drafter(model(), config, 64, 4, 5), &st);
    CHECK(st.drafted > 0);
    CHECK(st.accepted == st.drafted);
    CHECK(st.rounds < static_cast<int>(g.ids.size()));
}

TEST_CASE("the number of drafts per round follows HF's schedules", "[speculative]") {
    // HF's AssistedCandidateGenerator.update_candidate_strategy: "heuristic" adds 2 when every
    // candidate matched, else takes 1 away (never below 1); "constant" and prompt lookup never move
    GenerationConfig c;
    c.num_assistant_tokens = 5;
    CHECK(drafts_per_round(c) == 5);
    CHECK(next_drafts_per_round(c, 5, 5, 5) == 5);  // constant: HF's default
    c.num_assistant_tokens_schedule = AssistantSchedule::Heuristic;
    CHECK(next_drafts_per_round(c, 5, 5, 5) == 7);
    CHECK(next_drafts_per_round(c, 5, 5, 4) == 4);
    CHECK(next_drafts_per_round(c, 1, 1, 0) == 1);
    CHECK(next_drafts_per_round(c, 5, 3, 3) == 7);   // fewer drafted (EOS, the limit), all kept
    CHECK(next_drafts_per_round(c, 5, 0, 0) == 5);   // nothing drafted: nothing learnt
    CHECK(next_drafts_per_round(c, kMaxDraftsPerRound, 9, 9) == kMaxDraftsPerRound);
    c.prompt_lookup_num_tokens = 3;                  // prompt lookup: num_output_tokens, no schedule
    CHECK(drafts_per_round(c) == 3);
    CHECK(next_drafts_per_round(c, 3, 3, 3) == 3);
    CHECK(parse_assistant_schedule("heuristic") == AssistantSchedule::Heuristic);
    CHECK_THROWS_WITH(parse_assistant_schedule("dynamic"), Catch::Contains("constant, heuristic"));
}

TEST_CASE("the speculative knobs are checked and a drafter is required", "[speculative]") {
    GenerationConfig c;
    CHECK_THROWS_WITH(set_knob(c, "num-assistant-tokens", "0"), Catch::Contains("in [1, 64]"));
    CHECK_THROWS_WITH(set_knob(c, "prompt_lookup_num_tokens", "-1"), Catch::Contains("in [0, 64]"));
    set_knob(c, "prompt-lookup-min", "3");
    CHECK_THROWS_WITH(validate(c), Catch::Contains("prompt_lookup_min (3) exceeds max_matching_ngram_size (2)"));
    const std::vector<int> eos{model().config().eos_token_id};
    CHECK_THROWS_WITH(make_drafter(GenerationConfig{}, nullptr, eos, 64), Catch::Contains("--assistant-model DIR"));
    // prompt lookup by the config's rule: HF's finds the 1-gram [3] -> [4, 1]; vLLM's with min 2 nothing
    GenerationConfig lookup;
    lookup.prompt_lookup_num_tokens = 2;
    const std::vector<int> seq{1, 3, 4, 1, 2, 7, 3};
    const std::vector<int> none;
    const DecodeContext ctx{seq, none, 0, eos};
    CHECK(make_drafter(lookup, nullptr, eos, 64)(ctx, 2).ids == std::vector<int>{4, 1});
    lookup.prompt_lookup_min = 2;
    CHECK(make_drafter(lookup, nullptr, eos, 64)(ctx, 2).ids.empty());
}

// Issue 42: a draft model with prompt lookup was dropped without a word (HF's generate does the
// same), and mirostat with a draft model was refused only by make_drafter, after the prompt was
// printed; a draft whose context was too small spoke of "the model's context".
TEST_CASE("decode_loop refuses a draft model with prompt lookup or mirostat and make_drafter a short draft context", "[speculative][errors]") {
    GenerationConfig lookup;
    lookup.prompt_lookup_num_tokens = 3;
    CHECK(decode_loop(lookup, false) == DecodeLoop::Speculative);
    CHECK_THROWS_WITH(decode_loop(lookup, true),
                      Catch::Contains("a draft model and prompt lookup (prompt_lookup_num_tokens 3) are both given") &&
                          Catch::Contains("drop --assistant-model"));
    GenerationConfig mirostat;
    mirostat.order = ChainOrder::LlamaCpp;
    mirostat.do_sample = true;
    mirostat.mirostat = 2;
    CHECK(decode_loop(mirostat, false) == DecodeLoop::Plain);
    CHECK_THROWS_WITH(decode_loop(mirostat, true), Catch::Contains("mirostat = 2 with speculative decoding is not offered"));
    const std::vector<int> eos{model().config().eos_token_id};
    const int held = trained_draft().config().n_positions;
    CHECK_NOTHROW(make_drafter(GenerationConfig{}, &trained_draft(), eos, static_cast<size_t>(held)));
    CHECK_THROWS_WITH(make_drafter(GenerationConfig{}, &trained_draft(), eos, static_cast<size_t>(held) + 1),
                      Catch::Contains("the draft model's context holds " + std::to_string(held) + " positions, fewer than the " +
                                      std::to_string(held + 1)));
}

TEST_CASE("speculative runs equal the independent reference round for round", "[speculative][reference]") {
    // tests/data/speculative.json (tests/reference/speculative.py, float64): whole runs with the
    // prompt-lookup drafters (HF's and vLLM's rules) and, when it is there, the draft model, greedy
    // and sampled; every decision of every round is at least min_margin from flipping, so float32
    // must give the same drafts, the same verdicts and the same ids
    const nlohmann::json g = golden::load("speculative.json");
    REQUIRE(g["cases"].size() >= 6);
    const std::vector<int> eos{model().config().eos_token_id};
    std::map<std::string, std::unique_ptr<Gpt2>> assistants;  // each draft model loaded once
    for (const auto& c : g["cases"]) {
        const GenerationConfig config = golden::config(c);
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::string kind = c["drafter"].get<std::string>();
        INFO("case " << c["name"] << ": " << kind << ", " << c["chain"] << ", seed " << c["seed"]);
        CHECK(LogitsChain(config).describe() == c["chain"].get<std::string>());
        const Gpt2* assistant = nullptr;
        if (kind == "draft_model") {
            REQUIRE(config.prompt_lookup_num_tokens == 0);
            const std::string dir = c["assistant"].get<std::string>();  // relative to the source tree
            std::unique_ptr<Gpt2>& m = assistants[dir];
            const std::filesystem::path root = std::filesystem::path(golden::model_dir()).parent_path().parent_path();
            if (!m) m = std::make_unique<Gpt2>(Gpt2::load((root / dir).string()));
            assistant = m.get();
        } else {
            REQUIRE(config.prompt_lookup_num_tokens > 0);
            CHECK((config.prompt_lookup_min > 0) == (kind == "prompt_lookup_vllm"));
        }
        // the drafter the config asks for, watched: where each round starts, k, the drafts
        struct Call {
            size_t start;
            int k;
            std::vector<int> ids;
        };
        std::vector<Call> calls;
        const Drafter inner = make_drafter(config, assistant, eos, prompt.size() + static_cast<size_t>(config.max_new_tokens));
        const Drafter watched = [&](const DecodeContext& context, int k) {
            Draft d = inner(context, k);
            calls.push_back({context.generated.size(), k, d.ids});
            return d;
        };
        SpeculativeStats st;
        const Generation out = generate_speculative(model(), tokenizer(), prompt, config, watched, &st);
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        INFO("expected: " << golden::join(expected) << "\nfound:    " << golden::join(out.ids));
        CHECK(out.ids == expected);
        CHECK(out.text == c["text"].get<std::string>());
        CHECK(out.finish_reason == (c["stopped_by_eos"].get<bool>() ? FinishReason::Eos : FinishReason::Length));
        const nlohmann::json& stats = c["stats"];
        CHECK(st.rounds == stats["rounds"].get<int>());
        CHECK(st.drafted == stats["drafted"].get<int>());
        CHECK(st.accepted == stats["accepted"].get<int>());
        CHECK(st.emitted == stats["emitted"].get<int>());
        // round for round: a round starts after the previous one's accepted drafts and next token, so
        // equal starts mean equal accepted counts; each round emits a prefix of drafts[:accepted] + [next]
        size_t start = 0, call = 0;
        for (size_t r = 0; r < c["rounds"].size(); ++r) {
            const nlohmann::json& round = c["rounds"][r];
            const int k = round[0].get<int>();
            const std::vector<int> drafts = round[1].get<std::vector<int>>();
            const int accepted = round[2].get<int>(), next = round[3].get<int>();
            INFO("round " << r << " from token " << start << ": k " << k << ", drafts " << golden::join(drafts)
                          << ", " << accepted << " kept, next " << next);
            if (k > 0) {  // k = 0: one token left, the drafter is not asked
                REQUIRE(call < calls.size());
                CHECK(calls[call].start == start);
                CHECK(calls[call].k == k);
                CHECK(calls[call].ids == drafts);
                ++call;
            }
            std::vector<int> emitted(drafts.begin(), drafts.begin() + accepted);
            emitted.push_back(next);
            REQUIRE(start < out.ids.size());
            const size_t n = std::min(emitted.size(), out.ids.size() - start);
            CHECK(std::vector<int>(out.ids.begin() + static_cast<long>(start), out.ids.begin() + static_cast<long>(start + n)) ==
                  std::vector<int>(emitted.begin(), emitted.begin() + static_cast<long>(n)));
            start += emitted.size();
        }
        CHECK(call == calls.size());
        CHECK(start >= out.ids.size());
    }
}
