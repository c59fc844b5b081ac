// Chapter 10: the field's other samplers on their engines' own test cases, ported as facts (each
// names the repository, file, commit and test it comes from), plus hand-computed cases where an
// engine has none (mirostat, dynamic temperature with a range) with the arithmetic shown.
//
//   HF    huggingface/transformers tests/generation/test_logits_process.py @ 019af3ac65298aae51038a941c54a038a505bd57
//   HF-TF huggingface/transformers tests/generation/test_tf_logits_process.py (the suppress-tokens
//         cases exist only there; the TF processors mirror the PyTorch ones)
//   LC    ggml-org/llama.cpp tests/test-sampling.cpp @ f0817df540977d3e3bd9038e7e108fa4f3b4bbde
//
// llama.cpp's sampler_tester turns probabilities into logits with logf(p) and checks the
// probabilities left after the sampler (and, for most samplers, a final softmax); HF's tests do
// torch.log(p) and exp() of the result. The same is done here with probs_to_logits.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include <xtensor/xmath.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// logf(p) per entry, as llama.cpp's sampler_tester and HF's torch.log(dist) do (log 0 = -inf).
Vec probs_to_logits(const std::vector<float>& probs) {
    Vec z = xt::xtensor<float, 1>::from_shape({probs.size()});
    for (size_t i = 0; i < probs.size(); ++i) z(i) = std::log(probs[i]);
    return z;
}

// The ids whose logit is still finite.
std::vector<int> kept(const Vec& logits) {
    std::vector<int> ids;
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits(i) != -kInf) ids.push_back(static_cast<int>(i));
    return ids;
}

// HF's ramp: arange(10) - 5, the second row times 100 (test_typical/epsilon/eta_dist_warper).
Vec hf_ramp(int row) {
    Vec z = xt::xtensor<float, 1>::from_shape({10});
    for (int i = 0; i < 10; ++i) z(i) = static_cast<float>(i - 5) * (row == 1 ? 100.0f : 1.0f);
    return z;
}

// exp(logits): what HF's tests compare (exp(-inf) = 0).
std::vector<float> exp_of(const Vec& logits) {
    std::vector<float> out;
    for (float z : logits) out.push_back(std::exp(z));
    return out;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(tol));
}

}  // namespace

// ------------------------------------------------------------------------------------ typical-p

TEST_CASE("typical-p HF test_typical_dist_warper", "[other_samplers][ch10]") {
    // HF test_typical_dist_warper: TypicalLogitsWarper(0.5) on log of two rows, compared with
    // rtol=atol=1e-3 after exp.
    Vec a = probs_to_logits({0.97f, 0.01f, 0.01f, 0.01f});
    apply_typical_p(a, 0.5f);
    check_close(exp_of(a), {0.97f, 0.0f, 0.0f, 0.0f}, 1e-3);
    Vec b = probs_to_logits({0.4f, 0.2f, 0.2f, 0.2f});
    apply_typical_p(b, 0.5f);
    check_close(exp_of(b), {0.0f, 0.2f, 0.2f, 0.2f}, 1e-3);

    // "uniform dist is not changed": mass 0.5, min_tokens_to_keep 3, five equal logits.
    Vec uniform = xt::zeros<float>({5});
    apply_typical_p(uniform, 0.5f, 3);
    CHECK(kept(uniform).size() == 5);

    // The ramp, mass 0.7, min_tokens_to_keep 2: HF counts [2, 2] kept (row 1 would keep one token,
    // min_tokens_to_keep makes it two); with a ramp these are the two largest logits.
    for (int row = 0; row < 2; ++row) {
        Vec z = hf_ramp(row);
        apply_typical_p(z, 0.7f, 2);
        CHECK(kept(z) == std::vector<int>{8, 9});
    }
}

TEST_CASE("typical-p llama.cpp test_typical", "[other_samplers][ch10]") {
    // LC test_typical(probs, expected, p) with min_keep 0: {0.97, 0.01 x3}, 0.5 -> {0.97};
    // {0.4, 0.2 x3}, 0.5 -> {0.2, 0.2, 0.2}. By hand: H = 1.3322 nats for the second row;
    // |-ln p - H| = 0.416 for 0.4 and 0.277 for each 0.2, so the 0.2s come first and their running
    // sum 0.2, 0.4, 0.6 first exceeds 0.5 at the third.
    Vec a = probs_to_logits({0.97f, 0.01f, 0.01f, 0.01f});
    apply_typical_p(a, 0.5f, 0, TypicalRule::LlamaCpp);
    CHECK(kept(a) == std::vector<int>{0});
    Vec b = probs_to_logits({0.4f, 0.2f, 0.2f, 0.2f});
    apply_typical_p(b, 0.5f, 0, TypicalRule::LlamaCpp);
    CHECK(kept(b) == std::vector<int>{1, 2, 3});
}

TEST_CASE("typical-p boundary differs between HF and llama.cpp", "[other_samplers][ch10]") {
    // Hand-computed: p = {0.4, 0.2, 0.2, 0.2}, mass 0.3. As in test_typical the three 0.2s come
    // first (distance 0.277 < 0.416) and tie with each other. HF: the cumulative sums 0.2, 0.4,
    // 0.6, 1.0 are < 0.3 once, last_ind = 1, and every token whose distance is <= that of the
    // second 0.2 stays: all three 0.2s. llama.cpp: the running sum first exceeds 0.3 at the second
    // token (0.4), so two stay (ids 1 and 2: ties in candidate order, lower id first).
    const Vec p{0.4f, 0.2f, 0.2f, 0.2f};
    CHECK(typical_keep(p, 0.3, 1, TypicalRule::HuggingFace) == std::vector<bool>{false, true, true, true});
    CHECK(typical_keep(p, 0.3, 1, TypicalRule::LlamaCpp) == std::vector<bool>{false, true, true, false});
    // min_keep counts in typical order: the two most typical (two 0.2s), then the crossing rule
    CHECK(typical_keep(p, 0.1, 2, TypicalRule::LlamaCpp) == std::vector<bool>{false, true, true, false});
    // mass 1 keeps every candidate; zeros are never kept
    CHECK(typical_keep(Vec{0.5f, 0.5f, 0.0f}, 1.0) == std::vector<bool>{true, true, false});
}

TEST_CASE("typical-p rejects a mass outside zero to one", "[other_samplers][ch10]") {
    REQUIRE_THROWS_WITH(typical_keep(Vec{0.5f, 0.5f}, 0.0), Catch::Contains("typical_p = 0 is outside (0, 1]"));
    Vec z{0.0f, 1.0f};
    REQUIRE_THROWS_WITH(apply_typical_p(z, 1.5f), Catch::Contains("pass a typical_p in (0, 1]"));
}

// ------------------------------------------------------------------------------ epsilon and eta

TEST_CASE("epsilon cutoff HF test_epsilon_dist_warper", "[other_samplers][ch10]") {
    // HF test_epsilon_dist_warper: EpsilonLogitsWarper(0.1), rtol=atol=1e-3 after exp.
    Vec a = probs_to_logits({0.87f, 0.099f, 0.001f, 0.03f});
    apply_epsilon_cutoff(a, 0.1f);
    check_close(exp_of(a), {0.87f, 0.0f, 0.0f, 0.0f}, 1e-3);
    Vec b = probs_to_logits({0.4f, 0.299f, 0.101f, 0.2f});
    apply_epsilon_cutoff(b, 0.1f);
    check_close(exp_of(b), {0.4f, 0.299f, 0.101f, 0.2f}, 1e-3);
    // The ramp, epsilon 5e-2, min_tokens_to_keep 2: HF counts [3, 2].
    Vec r0 = hf_ramp(0), r1 = hf_ramp(1);
    apply_epsilon_cutoff(r0, 5e-2f, 2);
    apply_epsilon_cutoff(r1, 5e-2f, 2);
    CHECK(kept(r0) == std::vector<int>{7, 8, 9});
    CHECK(kept(r1) == std::vector<int>{8, 9});
    Vec off = probs_to_logits({0.9f, 0.1f});
    apply_epsilon_cutoff(off, 0.0f);  // 0 disables
    CHECK(kept(off).size() == 2);
    REQUIRE_THROWS_WITH(apply_epsilon_cutoff(off, -0.1f), Catch::Contains("epsilon_cutoff = -0.1 is outside [0, 1)"));
}

TEST_CASE("eta cutoff HF test_eta_dist_warper", "[other_samplers][ch10]") {
    // HF test_eta_dist_warper: EtaLogitsWarper(0.0625); the test's comment gives the cutoffs
    // min(0.0625, 0.1320) and min(0.0625, 0.1644), from H = 0.6390 and 0.4194 nats
    // (sqrt(0.0625) e^-0.6390 = 0.25 x 0.5278 = 0.1320).
    const Vec pa{0.0f, 0.1f, 0.8f, 0.1f}, pb{0.01f, 0.04f, 0.9f, 0.05f};
    CHECK(entropy(pa) == Approx(0.6390).margin(1e-4));
    CHECK(std::sqrt(0.0625) * std::exp(-entropy(pa)) == Approx(0.1320).margin(1e-4));
    CHECK(std::sqrt(0.0625) * std::exp(-entropy(pb)) == Approx(0.1644).margin(1e-4));
    CHECK(eta_threshold(pa, 0.0625) == 0.0625);
    Vec a = probs_to_logits({0.0f, 0.1f, 0.8f, 0.1f});
    apply_eta_cutoff(a, 0.0625f);
    check_close(exp_of(a), {0.0f, 0.1f, 0.8f, 0.1f}, 1e-3);
    Vec b = probs_to_logits({0.01f, 0.04f, 0.9f, 0.05f});
    apply_eta_cutoff(b, 0.0625f);
    check_close(exp_of(b), {0.0f, 0.0f, 0.9f, 0.0f}, 1e-3);
    // The ramp, epsilon 0.1, min_tokens_to_keep 2: HF counts [2, 2].
    for (int row = 0; row < 2; ++row) {
        Vec z = hf_ramp(row);
        apply_eta_cutoff(z, 0.1f, 2);
        CHECK(kept(z) == std::vector<int>{8, 9});
    }
    REQUIRE_THROWS_WITH(eta_threshold(pa, 1.0), Catch::Contains("eta_cutoff = 1 is outside [0, 1)"));
}

// --------------------------------------------------------------------------------- top-n-sigma

TEST_CASE("top-n-sigma llama.cpp test_top_n_sigma", "[other_samplers][ch10]") {
    // LC test_top_n_sigma on {0.1, 0.2, 0.3, 0.4} then a softmax: n 1 -> 0.3 and 0.4 renormalised
    // to 0.428571 and 0.571429 (the test lists them most likely first); n 0 (a no-op since
    // PR #13345) and n 3 keep all four. By hand: ln p = -2.3026, -1.6094, -1.2040, -0.9163; mean
    // -1.5081, population sigma 0.5206, cut at -0.9163 - 0.5206 = -1.4369.
    Vec one = probs_to_logits({0.1f, 0.2f, 0.3f, 0.4f});
    apply_top_n_sigma(one, 1.0f);
    CHECK(kept(one) == std::vector<int>{2, 3});
    const Vec p = softmax(one);
    CHECK(p(3) == Approx(0.571429).margin(1e-5));
    CHECK(p(2) == Approx(0.428571).margin(1e-5));
    for (float n : {0.0f, 3.0f}) {
        Vec z = probs_to_logits({0.1f, 0.2f, 0.3f, 0.4f});
        apply_top_n_sigma(z, n);
        const Vec pz = softmax(z);
        check_close(std::vector<float>(pz.begin(), pz.end()), {0.1f, 0.2f, 0.3f, 0.4f}, 1e-5);
    }
    // -inf logits are left out of the mean and sigma (hand: finite {0, 1} -> mean 0.5, sigma 0.5,
    // n 1 keeps logits >= 0.5: only id 2).
    Vec with_removed{-kInf, 0.0f, 1.0f};
    apply_top_n_sigma(with_removed, 1.0f);
    CHECK(kept(with_removed) == std::vector<int>{2});
}

// ---------------------------------------------------------------------------------------- XTC

TEST_CASE("XTC llama.cpp test_xtc", "[other_samplers][ch10]") {
    // LC test_xtc({0.4, 0.3, 0.2, 0.1}, expected, p 0.99, t), min_keep 0, seed 0: llama.cpp's
    // mt19937 draw was below 0.99; our coin is an argument, 0.5 here. The expected values are the
    // survivors' original probabilities (XTC only shortens the array).
    const std::vector<float> probs{0.4f, 0.3f, 0.2f, 0.1f};
    struct Case {
        float threshold;
        std::vector<int> survivors;
    };
    for (const Case& c : {Case{0.09f, {3}}, Case{0.19f, {2, 3}}, Case{0.29f, {1, 2, 3}},
                          Case{0.39f, {0, 1, 2, 3}}}) {  // 0.39: only one token above, no-op
        Vec z = probs_to_logits(probs);
        apply_xtc(z, 0.99f, c.threshold, 0, 0.5);
        CHECK(kept(z) == c.survivors);
    }
}

TEST_CASE("XTC off switches and min_keep", "[other_samplers][ch10]") {
    const std::vector<float> probs{0.4f, 0.3f, 0.2f, 0.1f};
    auto run = [&](float probability, float threshold, int min_keep, double coin) {
        Vec z = probs_to_logits(probs);
        apply_xtc(z, probability, threshold, min_keep, coin);
        return kept(z);
    };
    const std::vector<int> all{0, 1, 2, 3};
    CHECK(run(0.5f, 0.09f, 0, 0.6) == all);           // coin above the probability: not this step
    CHECK(run(0.5f, 0.09f, 0, 0.5) == std::vector<int>{3});  // coin == probability applies (llama: chance > p returns)
    CHECK(run(0.0f, 0.09f, 0, 0.0) == all);           // probability 0 disables
    CHECK(run(1.0f, 0.6f, 0, 0.0) == all);            // threshold > 0.5 disables
    CHECK(run(1.0f, 0.09f, 2, 0.0) == all);           // one survivor < min_keep 2: llama.cpp keeps all
    CHECK(run(1.0f, 0.19f, 2, 0.0) == std::vector<int>{2, 3});  // two survivors satisfy min_keep 2
    Vec single{0.0f, -kInf};
    apply_xtc(single, 1.0f, 0.1f, 0, 0.0);  // fewer than two candidates
    CHECK(kept(single) == std::vector<int>{0});
    Vec z = probs_to_logits(probs);
    REQUIRE_THROWS_WITH(apply_xtc(z, 1.5f, 0.1f, 1, 0.0), Catch::Contains("xtc_probability = 1.5 is outside [0, 1]"));
}

TEST_CASE("XTC coin is a pure function of seed and step", "[other_samplers][ch10]") {
    // Computed from the header's definition with tests/reference/rng.py (independent Python):
    // Rng(seed ^ splitmix64(0x5854430000000000 + step)).coin().
    CHECK(xtc_coin(0, 0) == 0.765252459782983);
    CHECK(xtc_coin(0, 1) == 0.0945579540221968);
    CHECK(xtc_coin(42, 7) == 0.16909097606317014);
    CHECK(xtc_coin(42, 7) == xtc_coin(42, 7));
}

// ---------------------------------------------------------------------------------------- DRY

namespace {

// LC test_dry(probs, last_tokens, expected, multiplier, base, allowed_length, last_n, breakers):
// DRY, then a softmax over all tokens.
void lc_test_dry(const std::vector<float>& probs, const std::vector<int>& last_tokens,
                 const std::vector<float>& expected, float multiplier, float base, int allowed_length,
                 int last_n, const std::vector<std::vector<int>>& breakers) {
    Vec z = probs_to_logits(probs);
    apply_dry(z, last_tokens, multiplier, base, allowed_length, last_n, breakers);
    const Vec p = softmax(z);
    check_close(std::vector<float>(p.begin(), p.end()), expected, 1e-5);  // LC checks |p - expected| < 1e-5
}

}  // namespace

TEST_CASE("DRY llama.cpp test_dry", "[other_samplers][ch10]") {
    // The five cases of LC test_dry (sampler made with context size 1024, the tokens accepted one
    // by one). Case 2 by hand: "0 1" repeats, followed by 2: L = 2 = allowed, penalty 1 x 1.1^0 = 1;
    // p(2) = e^-1 / (3 + e^-1) = 0.109232. Case 4: penalty 2, e^-2 / (4 + e^-2) = 0.032727.
    lc_test_dry({0.25f, 0.25f, 0.25f, 0.25f}, {0, 1}, {0.25f, 0.25f, 0.25f, 0.25f}, 1.0f, 1.1f, 2, 4, {});
    lc_test_dry({0.25f, 0.25f, 0.25f, 0.25f}, {0, 1, 2, 0, 1}, {0.296923f, 0.296923f, 0.109232f, 0.296923f}, 1.0f,
                1.1f, 2, 5, {});
    lc_test_dry({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 3, 4, 0, 1}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1.0f, 1.1f, 2, 6,
                {{3}});
    lc_test_dry({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 0, 1}, {0.241818f, 0.241818f, 0.032727f, 0.241818f, 0.241818f},
                2.0f, 1.1f, 2, 5, {});
    lc_test_dry({0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, {0, 1, 2, 3, 4, 0, 1}, {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, 1.0f, 1.1f, 4, 7,
                {});
}

TEST_CASE("DRY multi-token breakers cap the repeat", "[other_samplers][ch10]") {
    // Hand-computed: context 7 8 0 1 2 3 7 8 0 1 (10 tokens). The suffix "7 8 0 1" occurred at
    // positions 0-3, followed by 2, so without breakers token 2 extends a repeat of 4: penalty
    // 1 x 2^(4-2) = 4. With the breaker sequence (7, 8) the repeat stops after its latest complete
    // occurrence (positions 6-7): 2 tokens, penalty 2^0 = 1. With the single-token breaker 7 it
    // stops after position 6: 3 tokens (8 0 1), penalty 2^1 = 2. A head whose tail does not follow
    // (7, 9) limits nothing. No other token follows a repeat of length >= 2.
    const std::vector<int> context{7, 8, 0, 1, 2, 3, 7, 8, 0, 1};
    auto penalty_of_2 = [&](const std::vector<std::vector<int>>& breakers) {
        Vec z = xt::zeros<float>({10});
        apply_dry(z, context, 1.0f, 2.0f, 2, -1, breakers);
        for (size_t i = 0; i < 10; ++i)
            if (i != 2) CHECK(z(i) == 0.0f);
        return -z(2);
    };
    CHECK(penalty_of_2({}) == 4.0f);
    CHECK(penalty_of_2({{7, 8}}) == 1.0f);
    CHECK(penalty_of_2({{7}}) == 2.0f);
    CHECK(penalty_of_2({{7, 9}}) == 4.0f);
    CHECK(penalty_of_2({{7, 9}, {7, 8}}) == 1.0f);  // of a head's tails, the one that matches counts
    // last_n 6 sees 2 3 7 8 0 1 only: "0 1" never occurred before in it, nothing to penalise
    Vec z = xt::zeros<float>({10});
    apply_dry(z, context, 1.0f, 2.0f, 2, 6, {});
    CHECK(kept(z).size() == 10);
    CHECK(xt::amin(z)() == 0.0f);
}

TEST_CASE("DRY never penalises a single-token breaker", "[other_samplers][ch10]") {
    // Hand-computed: context 0 1 5 0 1 with breaker 5 at position 2: the repeat "0 1" (2 tokens
    // after the breaker) is followed by 5 at position 2, but 5 is a single-token breaker, so
    // llama.cpp skips it (is_single_token_breaker); dry_repeat_length says -1.
    const std::vector<int> context{0, 1, 5, 0, 1};
    Vec z = xt::zeros<float>({6});
    apply_dry(z, context, 1.0f, 2.0f, 2, -1, {{5}});
    CHECK(xt::amin(z)() == 0.0f);
    const std::vector<int> breakers{5};
    CHECK(dry_repeat_length(context, 5, breakers) == -1);
    // the same context without the breaker: 5 follows "0 1", a repeat of 2 (penalty 2^0 = 1)
    CHECK(dry_repeat_length(context, 5, {}) == 2);
    Vec w = xt::zeros<float>({6});
    apply_dry(w, context, 1.0f, 2.0f, 2, -1, {});
    CHECK(w(5) == -1.0f);
}

TEST_CASE("DRY penalty and exponent clamp", "[other_samplers][ch10]") {
    // multiplier * base^(L - allowed) for L >= allowed, else 0
    CHECK(dry_penalty(1, 0.8f, 1.75f, 2) == 0.0f);
    CHECK(dry_penalty(2, 0.8f, 1.75f, 2) == Approx(0.8));
    CHECK(dry_penalty(5, 0.8f, 1.75f, 2) == Approx(0.8 * 1.75 * 1.75 * 1.75));
    // llama.cpp's clamp: max_exponent = int(88.7228391 / ln 1.75) = int(158.55) = 158, so a
    // repeat of 1000 costs 0.8 x 1.75^158 (finite), not inf.
    CHECK(static_cast<int>(88.7228391f / std::log(1.75f)) == 158);
    CHECK(dry_penalty(1000, 0.8f, 1.75f, 2) == dry_penalty(160, 0.8f, 1.75f, 2));
    CHECK(std::isfinite(dry_penalty(1000, 0.8f, 1.75f, 2)));
    // base 1 (<= 1.000001) is never clamped: 1^n = 1
    CHECK(dry_penalty(100000, 0.5f, 1.0f, 2) == 0.5f);
}

TEST_CASE("DRY apply agrees with the plain definition on random contexts", "[other_samplers][ch10]") {
    // apply_dry (llama.cpp's Z-algorithm, rep_limit, max per token) against dry_repeat_length and
    // dry_penalty (the plain definition), with single-token breakers and the whole context.
    Rng rng(2024);
    auto draw = [&](int n) { return static_cast<int>(rng.coin() * n); };
    int penalised = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        const int vocab = 2 + draw(5);
        std::vector<int> context(static_cast<size_t>(draw(40)));
        for (int& t : context) t = draw(vocab);
        std::vector<int> single;
        std::vector<std::vector<int>> breakers;
        for (int b = draw(3); b > 0; --b) {
            single.push_back(draw(vocab));
            breakers.push_back({single.back()});
        }
        const int allowed = draw(4);
        const float multiplier = 0.8f, base = 1.75f;
        Vec z = xt::zeros<float>({static_cast<size_t>(vocab)});
        apply_dry(z, context, multiplier, base, allowed, -1, breakers);
        for (int t = 0; t < vocab; ++t) {
            const int length = dry_repeat_length(context, t, single);
            const float want = -dry_penalty(length, multiplier, base, allowed);
            INFO("trial " << trial << " token " << t << " length " << length);
            CHECK(z(static_cast<size_t>(t)) == want);
            penalised += want != 0.0f;
        }
    }
    CHECK(penalised > 1000);  // the comparison is not vacuous
}

TEST_CASE("DRY off switches and bad arguments", "[other_samplers][ch10]") {
    const std::vector<int> context{0, 1, 2, 0, 1};
    for (auto [multiplier, base, last_n] : {std::tuple{0.0f, 1.1f, -1}, std::tuple{1.0f, 0.9f, -1},
                                            std::tuple{1.0f, 1.1f, 0}}) {
        Vec z = xt::zeros<float>({4});
        apply_dry(z, context, multiplier, base, 2, last_n, {});
        CHECK(xt::amin(z)() == 0.0f);
    }
    Vec z = xt::zeros<float>({4});
    REQUIRE_THROWS_WITH(apply_dry(z, context, 1.0f, 1.1f, -1, -1, {}), Catch::Contains("dry_allowed_length = -1"));
    REQUIRE_THROWS_WITH(apply_dry(z, context, -1.0f, 1.1f, 2, -1, {}), Catch::Contains("dry_multiplier = -1"));
}

// ----------------------------------------------------------------------------------- mirostat

TEST_CASE("mirostat v2 hand-computed steps", "[other_samplers][ch10]") {
    // p = {0.5, 0.25, 0.125, 0.125}: surprises -log2 p = 1, 2, 3, 3 bits. tau 3, eta 0.1.
    const Vec logits = probs_to_logits({0.5f, 0.25f, 0.125f, 0.125f});
    // mu 2.5: ids 0 and 1 survive (3 > 2.5 stops the walk), renormalised to 2/3 and 1/3.
    // coin 0.7 >= 2/3 -> id 1; surprise log2 3 = 1.5849625; mu = 2.5 - 0.1 (1.5849625 - 3) = 2.64150375.
    double mu = 2.5;
    CHECK(mirostat_v2_step(logits, 3.0, 0.1, mu, 0.7) == 1);
    CHECK(mu == Approx(2.64150375).epsilon(1e-6));
    // coin 0.5 < 2/3 -> id 0; surprise log2 1.5 = 0.5849625; mu = 2.5 + 0.1 x 2.4150375 = 2.74150375.
    mu = 2.5;
    CHECK(mirostat_v2_step(logits, 3.0, 0.1, mu, 0.5) == 0);
    CHECK(mu == Approx(2.74150375).epsilon(1e-6));
    // mu 0.5: even the top token's 1 bit is too much; it stays alone (p 1, surprise 0): mu = 0.5 + 0.3 = 0.8.
    mu = 0.5;
    CHECK(mirostat_v2_step(logits, 3.0, 0.1, mu, 0.99) == 0);
    CHECK(mu == Approx(0.8));
    // mu 6 = 2 tau (the start): all four stay; CDF 0.5, 0.75, 0.875, 1; coin 0.9 -> id 3 (the tie
    // 0.125 goes by id); surprise 3 = tau, so mu stays 6.
    mu = 6.0;
    CHECK(mirostat_v2_step(logits, 3.0, 0.1, mu, 0.9) == 3);
    CHECK(mu == Approx(6.0));
    REQUIRE_THROWS_WITH(mirostat_v2_step(logits, 0.0, 0.1, mu, 0.5), Catch::Contains("mirostat_tau = 0"));
    for (double coin : {-0.25, 1.0, 1.5})  // exercise 10.3's rule: the coin lies in [0, 1)
        REQUIRE_THROWS_WITH(mirostat_v2_step(logits, 3.0, 0.1, mu, coin), Catch::Contains("outside [0, 1)"));
    CHECK(mu == Approx(6.0));  // a refusal changes nothing
}

TEST_CASE("mirostat v1 hand-computed steps", "[other_samplers][ch10]") {
    // An exact Zipf distribution with s = 2 over V = 4: p_i ~ 1/(i+1)^2 = 1, 1/4, 1/9, 1/16.
    // Then b_i = ln(p_i/p_{i+1}) = 2 t_i, so s_hat = 2, epsilon_hat = 1 and
    // k = (2^mu / (1 - 4^-1))^(1/2) = sqrt(2^mu / 0.75). tau 3, eta 0.1, m 100.
    std::vector<float> zipf{1.0f, 1.0f / 4, 1.0f / 9, 1.0f / 16};
    float total = 0;
    for (float w : zipf) total += w;
    for (float& w : zipf) w /= total;
    const Vec logits = probs_to_logits(zipf);
    // mu 1: k = sqrt(2.667) = 1.63 -> 1 token; id 0 with p 1, surprise 0: mu = 1 + 0.3 = 1.3.
    double mu = 1.0;
    CHECK(mirostat_v1_step(logits, 3.0, 0.1, 100, mu, 0.99) == 0);
    CHECK(mu == Approx(1.3));
    // mu 2: k = sqrt(5.333) = 2.31 -> 2 tokens, renormalised 0.8 and 0.2; coin 0.85 -> id 1;
    // surprise log2 5 = 2.3219281; mu = 2 - 0.1 (2.3219281 - 3) = 2.0678072.
    mu = 2.0;
    CHECK(mirostat_v1_step(logits, 3.0, 0.1, 100, mu, 0.85) == 1);
    CHECK(mu == Approx(2.0678072).epsilon(1e-6));
    // mu 3: k = sqrt(10.667) = 3.27 -> 3 tokens: 36/49, 9/49, 4/49 (CDF 0.7347, 0.9184, 1);
    // coin 0.95 -> id 2; surprise log2(49/4) = 3.6147098; mu = 3 - 0.06147098 = 2.93852902.
    mu = 3.0;
    CHECK(mirostat_v1_step(logits, 3.0, 0.1, 100, mu, 0.95) == 2);
    CHECK(mu == Approx(2.93852902).epsilon(1e-6));
    // mu 5: k = sqrt(42.67) = 6.5 -> all 4 (k beyond the candidates keeps them all); coin 0.999 -> id 3.
    mu = 5.0;
    CHECK(mirostat_v1_step(logits, 3.0, 0.1, 100, mu, 0.999) == 3);
    // a single candidate: s_hat = 0/0, llama.cpp ends with top-k 1
    double mu1 = 6.0;
    CHECK(mirostat_v1_step(Vec{-kInf, 0.0f, -kInf}, 3.0, 0.1, 100, mu1, 0.5) == 1);
    CHECK(mu1 == Approx(6.3));
}

TEST_CASE("mirostat holds the observed surprise at tau over a long run", "[other_samplers][ch10]") {
    // Property: a Zipf-like distribution (p_i ~ 1/(i+1)^1.1, V = 1000), tau 3 bits, eta 0.1, mu
    // starting at 2 tau, 5000 steps with coins from Rng(7). The controller's fixed point is mean
    // surprise = tau; mu itself settles where truncation makes that so (about 2 tau here; a Python
    // simulation of the same rule gave mu in [5.6, 7.7] after step 1000), not at tau. For v2 each
    // step's surprise is recomputed independently: the kept set is {p: -log2 p <= mu} (or the top
    // token), surprise = -log2(p_chosen / mass of the kept set).
    const size_t V = 1000;
    std::vector<float> w(V);
    double total = 0;
    for (size_t i = 0; i < V; ++i) total += w[i] = static_cast<float>(1.0 / std::pow(static_cast<double>(i + 1), 1.1));
    std::vector<float> probs(V);
    for (size_t i = 0; i < V; ++i) probs[i] = static_cast<float>(w[i] / total);
    const Vec logits = probs_to_logits(probs);
    const double tau = 3.0, eta = 0.1;
    for (int version : {1, 2}) {
        INFO("mirostat v" << version);
        Rng rng(7);
        double mu = 2 * tau, surprise_sum = 0, mu_min = 1e9, mu_max = -1e9;
        int counted = 0;
        for (int step = 0; step < 5000; ++step) {
            const double mu_before = mu;
            const int token = version == 1 ? mirostat_v1_step(logits, tau, eta, 100, mu, rng.coin())
                                           : mirostat_v2_step(logits, tau, eta, mu, rng.coin());
            const double surprise = (mu_before - mu) / eta + tau;  // the update, inverted
            if (version == 2) {
                const Vec p = softmax(logits);
                double mass = 0;
                for (size_t i = 0; i < V; ++i)
                    if (-std::log2(p(i)) <= static_cast<float>(mu_before)) mass += p(i);
                if (mass == 0) mass = p(0);  // nothing under mu: the top token alone
                CHECK(surprise == Approx(-std::log2(p(token) / mass)).margin(1e-4));
            }
            if (step >= 1000) {
                surprise_sum += surprise;
                ++counted;
                mu_min = std::min(mu_min, mu);
                mu_max = std::max(mu_max, mu);
            }
        }
        CHECK(surprise_sum / counted == Approx(tau).margin(0.05));
        CHECK(mu_min > tau);
        CHECK(mu_max < 4 * tau);
    }
}

// ------------------------------------------------------------------------ dynamic temperature

TEST_CASE("dynamic temperature llama.cpp test_temp_ext", "[other_samplers][ch10]") {
    // LC test_temp_ext(probs, expected, temp, delta, exponent), then a softmax: (1, 0, 1) leaves
    // {0.1, 0.2, 0.3, 0.4}; (0, 0, 1) is greedy: {0, 0, 0, 1}.
    Vec a = probs_to_logits({0.1f, 0.2f, 0.3f, 0.4f});
    apply_dynamic_temperature(a, 1.0f, 0.0f, 1.0f);
    const Vec pa = softmax(a);
    check_close(std::vector<float>(pa.begin(), pa.end()), {0.1f, 0.2f, 0.3f, 0.4f}, 1e-5);
    Vec b = probs_to_logits({0.1f, 0.2f, 0.3f, 0.4f});
    apply_dynamic_temperature(b, 0.0f, 0.0f, 1.0f);
    const Vec pb = softmax(b);
    check_close(std::vector<float>(pb.begin(), pb.end()), {0.0f, 0.0f, 0.0f, 1.0f}, 1e-5);
}

TEST_CASE("dynamic temperature with a range hand-computed", "[other_samplers][ch10]") {
    // p = {0.5, 0.25, 0.125, 0.125}: H = 1.75 bits, max ln 4 = 2 bits, normalised entropy 0.875.
    const Vec base = probs_to_logits({0.5f, 0.25f, 0.125f, 0.125f});
    auto temperature_used = [&](float t, float range, float exponent) {
        Vec z = base;
        apply_dynamic_temperature(z, t, range, exponent);
        return base(1) / z(1);  // logits were divided by T_dyn
    };
    // T 1, range 0.5, exponent 1: T_dyn = 0.5 + (1.5 - 0.5) x 0.875 = 1.375
    CHECK(temperature_used(1.0f, 0.5f, 1.0f) == Approx(1.375).epsilon(1e-5));
    // exponent 2: 0.5 + 0.875^2 = 1.265625
    CHECK(temperature_used(1.0f, 0.5f, 2.0f) == Approx(1.265625).epsilon(1e-5));
    // T 0.3, range 0.5: T_min = max(0, -0.2) = 0, T_max = 0.8: T_dyn = 0.8 x 0.875 = 0.7
    CHECK(temperature_used(0.3f, 0.5f, 1.0f) == Approx(0.7).epsilon(1e-5));
    // a uniform distribution has normalised entropy 1: T_dyn = T_max = 2
    Vec uniform = xt::zeros<float>({4}) + 1.0f;
    apply_dynamic_temperature(uniform, 1.5f, 0.5f, 1.0f);
    CHECK(uniform(0) == Approx(0.5));
    // one candidate: llama.cpp returns before any temperature
    Vec single{3.0f, -kInf, -kInf};
    apply_dynamic_temperature(single, 2.0f, 1.0f, 1.0f);
    CHECK(single(0) == 3.0f);
    // entropy 0 in float (p = e^-200 underflows) and T_min 0: T_dyn = 0, llama.cpp's greedy
    Vec peaked{0.0f, -200.0f, -kInf};
    apply_dynamic_temperature(peaked, 0.5f, 0.5f, 1.0f);
    CHECK(kept(peaked) == std::vector<int>{0});
    Vec z = base;
    REQUIRE_THROWS_WITH(apply_dynamic_temperature(z, 1.0f, -0.5f, 1.0f), Catch::Contains("dynatemp_range = -0.5"));
}

TEST_CASE("dynamic temperature never overflows on a confident step", "[other_samplers][ch10]") {
    // T 0.5, range 0.5: T_min = 0. softmax(30, 0, 0, 0) has normalised entropy about 6e-12, so with
    // exponent 3.5 T_dyn is about 6e-40: a subnormal float, not 0, and 30 / T_dyn overflows to inf
    // (then softmax's inf - inf is NaN). Divided as the chain's temperature divides
    // (divide_by_temperature), the step is greedy in effect, as T -> 0 is.
    Vec z{30.0f, 0.0f, 0.0f, 0.0f};
    apply_dynamic_temperature(z, 0.5f, 0.5f, 3.5f);
    for (float v : z) CHECK((std::isfinite(v) || v == -kInf));
    CHECK(softmax(z)(0) == 1.0f);
    // the same guard as plain temperature: a T that overflows z / T keeps the distribution's shape
    Vec t{30.0f, 29.0f, -kInf};
    divide_by_temperature(t, 2e-38f);
    CHECK(t(0) == 0.0f);
    CHECK(t(1) == Approx(-1.0 / 2e-38).epsilon(1e-6));  // (29 - 30) / T: far below the largest
    CHECK(t(2) == -kInf);
}

// --------------------------------------------------------------------------------------- biases

TEST_CASE("logit bias adds per token", "[other_samplers][ch10]") {
    Vec z{0.0f, 1.0f, -kInf};
    apply_logit_bias(z, {{0, 2.0f}, {1, -1.0f}, {0, 0.5f}, {2, 5.0f}});  // llama.cpp: each entry adds
    CHECK(z(0) == 2.5f);
    CHECK(z(1) == 0.0f);
    CHECK(z(2) == -kInf);
    REQUIRE_THROWS_WITH(apply_logit_bias(z, {{3, 1.0f}}), Catch::Contains("outside the vocabulary [0, 3)"));
}

TEST_CASE("sequence bias HF test_bias_dist_processor", "[other_samplers][ch10]") {
    // HF test_bias_dist_processor: V 5, input rows [0 1 3 1] and [0 1 0 1], biases (1,): 100,
    // (4,): 100, (1, 0): -100, (0, 1, 2): -100, (1, 3, 1, 3): -100, (1, 3, 1, 3, 1, 3): -100, on
    // zeros -> [-100, 100, 0, -100, 100] and [-100, 100, -100, 0, 100].
    const std::vector<std::pair<std::vector<int>, float>> bias{
        {{1}, 100.0f}, {{4}, 100.0f}, {{1, 0}, -100.0f}, {{0, 1, 2}, -100.0f}, {{1, 3, 1, 3}, -100.0f},
        {{1, 3, 1, 3, 1, 3}, -100.0f}};
    Vec a = xt::zeros<float>({5});
    apply_sequence_bias(a, std::vector<int>{0, 1, 3, 1}, bias);
    CHECK(std::vector<float>(a.begin(), a.end()) == std::vector<float>{-100, 100, 0, -100, 100});
    Vec b = xt::zeros<float>({5});
    apply_sequence_bias(b, std::vector<int>{0, 1, 0, 1}, bias);
    CHECK(std::vector<float>(b.begin(), b.end()) == std::vector<float>{-100, 100, -100, 0, 100});
    // HF skips a sequence longer than the input even when its prefix would fit (len 2 vs 1 token)
    Vec c = xt::zeros<float>({5});
    apply_sequence_bias(c, std::vector<int>{1}, {{{1, 0}, -100.0f}});
    CHECK(c(0) == 0.0f);
    REQUIRE_THROWS_WITH(apply_sequence_bias(c, std::vector<int>{1}, {{{}, 1.0f}}), Catch::Contains("empty"));
    REQUIRE_THROWS_WITH(apply_sequence_bias(c, std::vector<int>{1}, {{{5}, 1.0f}}), Catch::Contains("token 5"));
}

TEST_CASE("bad words HF test_no_bad_words_dist_processor", "[other_samplers][ch10]") {
    // HF test_no_bad_words_dist_processor: V 5, EOS 4, input rows [0 1 3 1] and [0 1 0 1], bad words
    // [1], [4], [1, 0], [0, 1, 2], [1, 3, 1, 3] -> isinf [T T F T F] and [T T T F F] ([4] is the
    // EOS alone: ignored); bad words [[4]] alone change nothing.
    const std::vector<std::vector<int>> bad{{1}, {4}, {1, 0}, {0, 1, 2}, {1, 3, 1, 3}};
    const std::vector<int> eos{4};
    auto isinf_row = [&](const std::vector<int>& input, const std::vector<std::vector<int>>& words) {
        Vec z = xt::zeros<float>({5});
        apply_bad_words(z, input, words, eos);
        std::vector<bool> out;
        for (float v : z) out.push_back(std::isinf(v));
        return out;
    };
    CHECK(isinf_row({0, 1, 3, 1}, bad) == std::vector<bool>{true, true, false, true, false});
    CHECK(isinf_row({0, 1, 0, 1}, bad) == std::vector<bool>{true, true, true, false, false});
    CHECK(isinf_row({0, 1, 3, 1}, {{4}}) == std::vector<bool>(5, false));
    Vec z = xt::zeros<float>({5});
    REQUIRE_THROWS_WITH(apply_bad_words(z, std::vector<int>{0}, {{7}}, eos), Catch::Contains("bad_words_ids names token 7"));
}

TEST_CASE("suppress tokens HF-TF test_suppress_tokens_logits_processor", "[other_samplers][ch10]") {
    // HF-TF test_suppress_tokens_logits_processor: V 20, suppress [1, 3, 5]: those are -inf, the
    // rest finite. (test_suppress_tokens_at_begin_logits_processor's timing, begin_index, is the
    // chain's business; the suppression itself is this function.)
    Vec z = xt::zeros<float>({20});
    apply_suppress_tokens(z, {1, 3, 5});
    for (size_t i = 0; i < 20; ++i) CHECK(std::isinf(z(i)) == (i == 1 || i == 3 || i == 5));
    apply_suppress_tokens(z, {25});  // torch.isin: an id outside the vocabulary matches nothing
    CHECK(kept(z).size() == 17);
}
