// Chapters 02-04: every processor on hand-computed cases, the chain, and parameter checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "golden.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using golden::finite_ids;
using golden::kept_ids;

}  // namespace

TEST_CASE("softmax is stable and gives removed tokens zero", "[sampling][ch02]") {
    const Vec p = softmax(Vec{0.0f, std::log(3.0f)});
    CHECK(p(0) == Approx(0.25));
    CHECK(p(1) == Approx(0.75));
    const Vec q = softmax(Vec{1000.0f, -kInf, 1000.0f});
    CHECK(q(0) == Approx(0.5));
    CHECK(q(1) == 0.0f);
    REQUIRE_THROWS_WITH(softmax(Vec{-kInf, -kInf}), Catch::Contains("every token has been removed"));
    CHECK(entropy(Vec{0.25f, 0.25f, 0.25f, 0.25f}) == Approx(std::log(4.0)));
    CHECK(entropy(Vec{1.0f, 0.0f}) == 0.0);
}

TEST_CASE("temperature divides the logits", "[sampling][ch02]") {
    Vec z{2.0f, -4.0f, 0.0f};
    apply_temperature(z, 2.0f);
    CHECK((z == Vec{1.0f, -2.0f, 0.0f}));
    // lower temperature sharpens: entropy falls as T falls
    const Vec base{1.0f, 2.0f, 3.0f};
    Vec cold = base, hot = base;
    apply_temperature(cold, 0.5f);
    apply_temperature(hot, 2.0f);
    CHECK(entropy(softmax(cold)) < entropy(softmax(base)));
    CHECK(entropy(softmax(base)) < entropy(softmax(hot)));
}

TEST_CASE("candidates are ordered by probability then id", "[sampling][ch02]") {
    CHECK(candidate_order(Vec{0.2f, 0.4f, 0.4f, 0.0f}) == std::vector<int>{1, 2, 0});
}

TEST_CASE("candidate_order is probability descending then id ascending on any vector", "[sampling]") {
    // Its integer keys must give exactly the order of comparing (p, id): ties, zeros, the
    // smallest positive floats and the whole embedded vocabulary's distribution.
    Rng rng(9);
    for (int trial = 0; trial < 200; ++trial) {
        const size_t n = 1 + static_cast<size_t>(rng.coin() * 3000);
        Vec p = xt::zeros<float>({n});
        for (size_t i = 0; i < n; ++i) {
            const double u = rng.coin();
            p(i) = u < 0.2 ? 0.0f : u < 0.4 ? 0.25f : u < 0.45 ? std::numeric_limits<float>::denorm_min()
                                                              : static_cast<float>(rng.coin());
        }
        std::vector<int> expected;
        for (size_t i = 0; i < n; ++i)
            if (p(i) > 0) expected.push_back(static_cast<int>(i));
        std::stable_sort(expected.begin(), expected.end(),
                         [&](int a, int b) { return p(static_cast<size_t>(a)) > p(static_cast<size_t>(b)); });
        INFO("trial " << trial << ", " << n << " tokens");
        REQUIRE(candidate_order(p) == expected);
    }
}

TEST_CASE("inverse-CDF sampling walks the sorted candidates", "[sampling][ch02]") {
    // order 1 (0.5), 0 (0.25), 2 (0.25): running sums 0.5, 0.75, 1.0 (all exact in binary)
    const Vec p{0.25f, 0.5f, 0.25f, 0.0f};
    CHECK(sample_inverse_cdf(p, 0.0) == 1);
    CHECK(sample_inverse_cdf(p, 0.4999) == 1);
    CHECK(sample_inverse_cdf(p, 0.5) == 0);  // a running sum must EXCEED coin * total
    CHECK(sample_inverse_cdf(p, 0.7499) == 0);
    CHECK(sample_inverse_cdf(p, 0.75) == 2);
    CHECK(sample_inverse_cdf(p, 0.999999) == 2);
    CHECK(sample_inverse_cdf(Vec{0.5f, 1.5f}, 0.3) == 1);  // unnormalised: 0.3 * 2 = 0.6 < 1.5
    CHECK(cdf_margin(p, 0.7) == Approx(0.05));
}

TEST_CASE("Gumbel-max and inverse-CDF sampling give the same distribution", "[sampling][ch02]") {
    const Vec logits{std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    const Vec p = softmax(logits);
    Rng rng(7);
    const int n = 30000;
    std::vector<int> cdf(3, 0), gumbel(3, 0);
    for (int i = 0; i < n; ++i) {
        ++cdf[static_cast<size_t>(sample_inverse_cdf(p, rng.coin()))];
        const std::vector<double> coins{rng.coin(), rng.coin(), rng.coin()};
        ++gumbel[static_cast<size_t>(sample_gumbel_max(logits, coins))];
    }
    for (size_t i = 0; i < 3; ++i) {
        INFO("token " << i << ": p = " << p(i) << ", inverse CDF " << cdf[i] / double(n) << ", Gumbel "
                      << gumbel[i] / double(n));
        CHECK(cdf[i] / double(n) == Approx(p(i)).margin(0.01));  // 0.01 is > 3 standard errors
        CHECK(gumbel[i] / double(n) == Approx(p(i)).margin(0.01));
    }
    REQUIRE_THROWS_WITH(sample_gumbel_max(logits, {0.5}), Catch::Contains("one coin per token"));
}

TEST_CASE("top-k keeps ties with the k-th value", "[sampling][ch03]") {
    Vec z{1.0f, 3.0f, 3.0f, 2.0f};
    apply_top_k(z, 2);
    CHECK(finite_ids(z) == std::vector<int>{1, 2});
    Vec ties{5.0f, 4.0f, 4.0f, 4.0f, 1.0f};
    apply_top_k(ties, 2);
    CHECK(finite_ids(ties) == std::vector<int>{0, 1, 2, 3});  // HF keeps all three 4s
    Vec off{1.0f, 2.0f};
    apply_top_k(off, 0);
    CHECK(finite_ids(off) == std::vector<int>{0, 1});
    Vec keep{1.0f, 2.0f, 3.0f, 4.0f};
    apply_top_k(keep, 1, 3);  // min_tokens_to_keep wins
    CHECK(finite_ids(keep) == std::vector<int>{1, 2, 3});
    Vec big{1.0f, 2.0f};
    apply_top_k(big, 50);  // k larger than V keeps all
    CHECK(finite_ids(big) == std::vector<int>{0, 1});
}

TEST_CASE("top-p keeps the crossing token and drops the next at an exact sum", "[sampling][ch03]") {
    const Vec p{0.5f, 0.3f, 0.1f, 0.1f};
    // HF: 0.1f + 0.1f = 0.2f <= float32(1 - 0.8) = 0.2f, so both 0.1s go: keeps 2
    CHECK(kept_ids(top_p_keep(p, 0.8)) == std::vector<int>{0, 1});
    CHECK(kept_ids(top_p_keep(p, 0.81)) == std::vector<int>{0, 1, 2});
    CHECK(kept_ids(top_p_keep(p, 0.79)) == std::vector<int>{0, 1});
    CHECK(kept_ids(top_p_keep(p, 0.5)) == std::vector<int>{0});
    CHECK(kept_ids(top_p_keep(p, 0.0)) == std::vector<int>{0});  // p = 0 keeps exactly one token
    CHECK(kept_ids(top_p_keep(p, 1.0)) == std::vector<int>{0, 1, 2, 3});
    CHECK(kept_ids(top_p_keep(p, 0.5, 3)) == std::vector<int>{0, 1, 2});  // min_tokens_to_keep
    CHECK(kept_ids(top_p_keep(p, 0.0, 0)) == std::vector<int>{0});        // min_keep 0 still keeps the top one
    CHECK(kept_ids(top_p_keep(Vec{0.1f, 0.3f, 0.5f, 0.1f}, 0.8)) == std::vector<int>{1, 2});  // order is by probability
    CHECK(kept_ids(top_p_keep(Vec{0.25f, 0.25f, 0.25f, 0.25f}, 0.5)) == std::vector<int>{0, 1});  // ties: lower ids stay
    // vLLM computes 1 - p in float32: 1 - 0.8f = 0.19999999f < 0.2f, so one 0.1 stays
    CHECK(kept_ids(top_p_keep(p, 0.8, 1, TopPRule::Vllm)) == std::vector<int>{0, 1, 2});
    // llama.cpp walks down: 0.5f + 0.3f = 0.8f >= 0.8f, stop
    CHECK(kept_ids(top_p_keep(p, 0.8, 1, TopPRule::LlamaCpp)) == std::vector<int>{0, 1});
    for (TopPRule rule : {TopPRule::HuggingFace, TopPRule::Vllm, TopPRule::LlamaCpp}) {
        CHECK(kept_ids(top_p_keep(p, 0.0, 3, rule)) == std::vector<int>{0, 1, 2});
        CHECK(kept_ids(top_p_keep(p, 1.0, 1, rule)) == std::vector<int>{0, 1, 2, 3});
        CHECK(kept_ids(top_p_keep(p, 0.81, 1, rule)) == std::vector<int>{0, 1, 2});
    }
}

TEST_CASE("top-p matches Hugging Face's own test case and llama.cpp keeps one more", "[sampling][ch03]") {
    // transformers tests/generation/test_logits_process.py, test_top_p_dist_warper: logits =
    // log([0.3, 0.1, 0.1, 0.5]) in float32, TopPLogitsWarper(0.8) keeps [0.3, 0, 0, 0.5].
    Vec hf{std::log(0.3f), std::log(0.1f), std::log(0.1f), std::log(0.5f)};
    const Vec probs = softmax(hf);
    INFO("softmax gives " << probs(0) << " for 0.3 (one float32 step below 0.3f: " << (probs(0) < 0.3f) << ")");
    Vec llama = hf;
    apply_top_p(hf, 0.8f);
    CHECK(finite_ids(hf) == std::vector<int>{0, 3});
    // llama.cpp's float walk: 0.5 + 0.29999998 rounds to 0.79999995 < 0.8f, so a 0.1 is kept too
    apply_top_p(llama, 0.8f, 1, TopPRule::LlamaCpp);
    CHECK(finite_ids(llama) == std::vector<int>{0, 1, 3});
    // the same test's second row: log([0.15, 0.3, 0.3, 0.25]) keeps [0, 0.3, 0.3, 0.25] in every rule
    for (TopPRule rule : {TopPRule::HuggingFace, TopPRule::Vllm, TopPRule::LlamaCpp}) {
        Vec row2{std::log(0.15f), std::log(0.3f), std::log(0.3f), std::log(0.25f)};
        apply_top_p(row2, 0.8f, 1, rule);
        CHECK(finite_ids(row2) == std::vector<int>{1, 2, 3});
    }
    // neighbours: away from the exact sum every rule agrees
    for (float p : {0.79f, 0.81f}) {
        Vec a{std::log(0.3f), std::log(0.1f), std::log(0.1f), std::log(0.5f)}, b = a;
        apply_top_p(a, p);
        apply_top_p(b, p, 1, TopPRule::LlamaCpp);
        INFO("p = " << p);
        CHECK(finite_ids(a) == finite_ids(b));
        CHECK(count_candidates(a) == (p < 0.8f ? 2 : 3));
    }
}

TEST_CASE("top-p rules match the reference at the boundary", "[sampling][ch03][golden]") {
    const nlohmann::json data = golden::load("top_p_rules.json");
    REQUIRE(data["cases"].size() > 50);
    int disagree = 0;
    for (const auto& c : data["cases"]) {
        std::vector<float> values;
        for (const auto& v : c["probs"]) values.push_back(v.get<float>());
        Vec probs = xt::adapt(values, {values.size()});
        const double p = c["top_p"].get<double>();
        const int mk = c["min_tokens_to_keep"].get<int>();
        const std::pair<const char*, TopPRule> rules[] = {
            {"hf", TopPRule::HuggingFace}, {"vllm", TopPRule::Vllm}, {"llama.cpp", TopPRule::LlamaCpp}};
        std::vector<std::vector<int>> got;
        for (const auto& [name, rule] : rules) {
            // the reference lists kept ids in candidate order; kept_ids gives them ascending
            std::vector<int> want = c["kept"][name].get<std::vector<int>>();
            std::sort(want.begin(), want.end());
            INFO(c["name"].get<std::string>() << ", top_p " << p << ", min_keep " << mk << ", rule " << name);
            got.push_back(kept_ids(top_p_keep(probs, p, mk, rule)));
            CHECK(got.back() == want);
        }
        disagree += got[0] != got[2] || got[1] != got[2];
    }
    CHECK(disagree >= 3);  // the file really exercises the boundary
}

TEST_CASE("top-p and min-p refuse values outside [0 1]", "[sampling][ch03]") {
    Vec z{1.0f, 2.0f};
    for (float bad : {-0.1f, 1.05f, std::nanf("")}) {
        INFO("value " << bad);
        REQUIRE_THROWS_WITH(apply_min_p(z, bad), Catch::Contains("min_p = ") && Catch::Contains("outside [0, 1]"));
        REQUIRE_THROWS_WITH(apply_top_p(z, bad), Catch::Contains("top_p = ") && Catch::Contains("outside [0, 1]"));
        REQUIRE_THROWS_WITH(top_p_keep(softmax(z), bad), Catch::Contains("outside [0, 1]"));
        REQUIRE_THROWS_WITH(min_p_keep(softmax(z), bad), Catch::Contains("outside [0, 1]"));
    }
    CHECK_NOTHROW(apply_min_p(z, 1.0f));
    CHECK_NOTHROW(apply_top_p(z, 0.0f));
    CHECK(typed_value(0.8f) == 0.8);  // the decimal the user typed, not 0.800000011920929
    CHECK(typed_value(0.95f) == 0.95);
}

TEST_CASE("top-p on a flat tail keeps thousands of tokens", "[sampling][ch03]") {
    // The classic exercise: logits [10, 9.9, 9.8, 5, 4] and 31995 zeros (V = 32000), p = 0.9.
    Vec z = xt::zeros<float>({32000});
    const double top[] = {10, 9.9, 9.8, 5, 4};
    for (size_t i = 0; i < 5; ++i) z(i) = static_cast<float>(top[i]);
    double total = 31995;
    for (double t : top) total += std::exp(t);
    double top_mass = 0;
    for (double t : top) top_mass += std::exp(t) / total;
    const double tail = 1.0 / total;  // each zero logit
    const int expected = 5 + static_cast<int>(std::ceil((0.9 - top_mass) / tail));  // crossing token kept
    apply_top_p(z, 0.9f);
    INFO("top-5 mass " << top_mass << ", each tail token " << tail);
    CHECK(count_candidates(z) == Approx(expected).margin(1));  // float32 softmax: +-1 at the edge
    CHECK(count_candidates(z) > 22000);
}

TEST_CASE("min-p keeps tokens above a fraction of the top probability", "[sampling][ch03]") {
    const Vec p{0.5f, 0.3f, 0.1f, 0.1f};
    CHECK(kept_ids(min_p_keep(p, 0.25)) == std::vector<int>{0, 1});  // threshold 0.125
    CHECK(kept_ids(min_p_keep(p, 0.7)) == std::vector<int>{0});      // threshold 0.35
    CHECK(kept_ids(min_p_keep(p, 0.0)) == std::vector<int>{0, 1, 2, 3});
    CHECK(kept_ids(min_p_keep(p, 1.0, 2)) == std::vector<int>{0, 1});  // min_tokens_to_keep
    Vec z{std::log(0.5f), std::log(0.3f), std::log(0.1f), std::log(0.1f)};
    apply_min_p(z, 0.25f);
    CHECK(finite_ids(z) == std::vector<int>{0, 1});
}

TEST_CASE("repetition penalty is sign-aware", "[sampling][ch04]") {
    Vec z{-2.0f, 2.0f, 0.0f, 5.0f};
    apply_repetition_penalty(z, {0, 1, 2, 1, 1}, 1.5f);
    CHECK(z(0) == -3.0f);               // negative: multiplied (a naive z / 1.5 would give -1.33)
    CHECK(z(1) == Approx(2.0f / 1.5f));  // positive: divided, once however often it was seen
    CHECK(z(2) == 0.0f);
    CHECK(z(3) == 5.0f);  // unseen
}

TEST_CASE("presence and frequency penalties subtract per count", "[sampling][ch04]") {
    Vec z{1.0f, 1.0f, 1.0f};
    apply_presence_frequency(z, {0, 0, 0, 2}, 0.5f, 0.25f);
    CHECK(z(0) == Approx(1.0f - 0.5f - 3 * 0.25f));
    CHECK(z(1) == 1.0f);
    CHECK(z(2) == Approx(1.0f - 0.5f - 0.25f));
}

TEST_CASE("no-repeat-ngram bans completions of earlier n-grams", "[sampling][ch04]") {
    const std::vector<int> seq{1, 2, 3, 1, 2};
    Vec z = xt::zeros<float>({5});
    apply_no_repeat_ngram(z, seq, 3);  // last two tokens (1, 2) were followed by 3
    CHECK(finite_ids(z) == std::vector<int>{0, 1, 2, 4});
    Vec bigram = xt::zeros<float>({5});
    apply_no_repeat_ngram(bigram, seq, 2);  // last token 2 was followed by 3
    CHECK(finite_ids(bigram) == std::vector<int>{0, 1, 2, 4});
    Vec unigram = xt::zeros<float>({5});
    apply_no_repeat_ngram(unigram, seq, 1);  // every seen token
    CHECK(finite_ids(unigram) == std::vector<int>{0, 4});
    Vec short_seq = xt::zeros<float>({5});
    apply_no_repeat_ngram(short_seq, {1, 2}, 4);
    CHECK(count_candidates(short_seq) == 5);
}

TEST_CASE("bad sampling parameters are refused with the valid range", "[sampling][errors]") {
    const auto error = [](GenerationConfig p) {
        try {
            validate(p);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    GenerationConfig p;
    CHECK(error(p) == "(no error)");
    p = {}; p.temperature = -0.5f;
    CHECK_THAT(error(p), Catch::Contains("temperature = -0.5 is invalid") && Catch::Contains("--temperature"));
    p = {}; p.top_p = 1.5f;
    CHECK_THAT(error(p), Catch::Contains("top_p = 1.5") && Catch::Contains("[0, 1]") && Catch::Contains("--top-p"));
    p = {}; p.top_p = -0.1f;
    CHECK_THAT(error(p), Catch::Contains("top_p"));
    p = {}; p.top_k = -1;
    CHECK_THAT(error(p), Catch::Contains("top_k = -1"));
    p = {}; p.min_p = 2.0f;
    CHECK_THAT(error(p), Catch::Contains("min_p = 2"));
    p = {}; p.repetition_penalty = 0.0f;
    CHECK_THAT(error(p), Catch::Contains("repetition_penalty = 0"));
    p = {}; p.no_repeat_ngram_size = -2;
    CHECK_THAT(error(p), Catch::Contains("no_repeat_ngram_size = -2"));
    p = {}; p.presence_penalty = 3.0f;
    CHECK_THAT(error(p), Catch::Contains("presence_penalty = 3"));
    REQUIRE_THROWS_WITH(parse_chain_order("ollama"), Catch::Contains("hf, llama.cpp, vllm"));
}

TEST_CASE("the chain runs in each engine's order", "[sampling][chain]") {
    GenerationConfig p;
    p.do_sample = true; p.temperature = 0.7f; p.top_k = 40; p.top_p = 0.9f; p.min_p = 0.05f; p.repetition_penalty = 1.3f;
    CHECK(LogitsChain(p).describe() ==
          "repetition_penalty(1.3) -> temperature(0.7) -> top_k(40) -> top_p(0.9) -> min_p(0.05) -> sample");
    p.order = ChainOrder::LlamaCpp;
    CHECK(LogitsChain(p).describe() ==
          "repetition_penalty(1.3) -> top_k(40) -> top_p(0.9) -> min_p(0.05) -> temperature(0.7) -> sample");
    p.order = ChainOrder::Vllm;
    CHECK(LogitsChain(p).describe() ==
          "repetition_penalty(1.3) -> temperature(0.7) -> min_p(0.05) -> top_k(40) -> top_p(0.9) -> sample");
    p.temperature = 0.0f;
    CHECK(LogitsChain(p).describe() == "repetition_penalty(1.3) -> argmax");
    p.temperature = 0.7f;
    p.do_sample = false;  // HF's default: the penalties, then argmax; the warpers do not run
    CHECK(LogitsChain(p).describe() == "repetition_penalty(1.3) -> argmax");
    CHECK(LogitsChain(GenerationConfig{}).describe() == "argmax");
    GenerationConfig sampling;
    sampling.do_sample = true;
    CHECK(LogitsChain(sampling).describe() == "sample");
}

TEST_CASE("temperature before or after top-p changes the candidate set", "[sampling][chain]") {
    // p = softmax(z) = [0.6, 0.2, 0.1, 0.1]. At T = 0.5 (HF order, T first) the top token alone
    // passes p = 0.8; at T = 1 (llama.cpp order, T last) the first two are needed.
    const Vec z{std::log(0.6f), std::log(0.2f), std::log(0.1f), std::log(0.1f)};
    GenerationConfig p;
    p.do_sample = true; p.temperature = 0.5f; p.top_p = 0.8f;
    const std::vector<int> none;
    const DecodeContext ctx{none, none};
    CHECK(count_candidates(LogitsChain(p).apply(z, ctx)) == 1);
    p.order = ChainOrder::LlamaCpp;
    CHECK(count_candidates(LogitsChain(p).apply(z, ctx)) == 2);
}

TEST_CASE("greedy equals top_k 1 equals top_p 0 on the model", "[sampling][chain]") {
    const Gpt2 model = Gpt2::load(golden::model_dir());
    const xt::xtensor<float, 2> all = model.forward({464, 1266, 835, 284});
    const std::vector<int> none;
    const DecodeContext ctx{none, none};
    GenerationConfig greedy, k1, p0;
    set_knob(greedy, "temperature", "0");
    set_knob(k1, "top_k", "1");
    set_knob(p0, "top_p", "0");
    Rng rng(3);
    for (size_t t = 0; t < all.shape(0); ++t) {
        const Vec z = xt::view(all, t, xt::all());
        const double coin = rng.coin();
        const int expected = argmax(z);
        CHECK(LogitsChain(greedy).pick(z, ctx, coin) == expected);
        CHECK(LogitsChain(k1).pick(z, ctx, coin) == expected);
        CHECK(LogitsChain(p0).pick(z, ctx, coin) == expected);
    }
}


TEST_CASE("seeded generations equal the independent reference token for token", "[sampling][reference]") {
    const Gpt2 model = Gpt2::load(golden::model_dir());
    const nlohmann::json g = golden::load("sampling.json");
    REQUIRE(g["cases"].size() >= 20);
    for (const auto& c : g["cases"]) {
        const GenerationConfig config = golden::config(c);
        INFO("case " << c["name"] << ": " << c["chain"] << ", seed " << c["seed"]);
        CHECK(LogitsChain(config).describe() == c["chain"].get<std::string>());
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        const Generation g = generate(model, golden::tokenizer(), c["prompt_ids"].get<std::vector<int>>(), config,
                                      make_sampler(config, config.seed));
        const std::vector<int>& found = g.ids;
        CHECK(g.text == c["text"].get<std::string>());
        CHECK(g.finish_reason == (c["stopped_by_eos"].get<bool>() ? FinishReason::Eos : FinishReason::Length));
        INFO("expected: " << golden::join(expected) << "\nfound:    " << golden::join(found));
        CHECK(found == expected);
    }
}

TEST_CASE("candidate sets after the chain equal the independent reference", "[sampling][reference]") {
    const Gpt2 model = Gpt2::load(golden::model_dir());
    const nlohmann::json g = golden::load("processors.json");
    REQUIRE(g["cases"].size() >= 8);
    for (const auto& c : g["cases"]) {
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> generated = c["generated"].get<std::vector<int>>();
        std::vector<int> context = prompt;
        context.insert(context.end(), generated.begin(), generated.end());
        const Vec z = last_position_logits(model.forward(context));
        const LogitsChain chain(golden::config(c));
        const Vec processed = chain.apply(z, {prompt, generated});
        const std::vector<int> expected = c["candidates"].get<std::vector<int>>();
        INFO("case " << c["name"] << ": " << c["chain"]);
        CHECK(chain.describe() == c["chain"].get<std::string>());
        REQUIRE(finite_ids(processed).size() == expected.size());
        CHECK(finite_ids(processed) == expected);
        const Vec p = softmax(processed);
        const std::vector<double> probs = c["probs"].get<std::vector<double>>();
        for (size_t i = 0; i < expected.size(); ++i) {
            INFO("id " << expected[i]);
            CHECK(p(static_cast<size_t>(expected[i])) == Approx(probs[i]).margin(c["tolerance"].get<double>()));
        }
    }
}

TEST_CASE("the watched sampler picks what make_sampler picks and records where the coin fell", "[sampling][ch02]") {
    GenerationConfig config;
    config.do_sample = true;
    config.temperature = 0.7f;
    config.top_k = 5;
    const std::vector<int> prompt{1, 2}, generated{};
    const DecodeContext context{prompt, generated};
    const Sampler plain = make_sampler(config, 7);
    std::vector<Draw> seen;
    const Sampler watched = make_watched_sampler(config, 7, seen);
    Rng noise(3);
    const LogitsChain chain(config);
    for (int step = 0; step < 50; ++step) {
        Vec z = xt::zeros<float>({12});
        for (float& v : z) v = static_cast<float>(4 * noise.coin());
        const int a = plain(z, context), b = watched(z, context);
        INFO("step " << step);
        REQUIRE(seen.size() == static_cast<size_t>(step + 1));
        const Draw& c = seen.back();
        CHECK(a == b);
        CHECK(c.token == b);
        CHECK_FALSE(c.greedy);
        CHECK(c.from <= c.coin);
        CHECK(c.coin < c.to);
        CHECK(c.processed == softmax(chain.apply(z, context))(static_cast<size_t>(b)));
        CHECK(c.raw == softmax(z)(static_cast<size_t>(b)));
        CHECK(c.to - c.from == Approx(c.processed).margin(1e-6));
    }
    config.temperature = 0.0f;  // greedy: the coin is drawn but not used
    std::vector<Draw> greedy_seen;
    const Sampler greedy_watched = make_watched_sampler(config, 7, greedy_seen);
    const Vec z{0.5f, 2.0f, 1.0f};
    CHECK(greedy_watched(z, context) == 1);
    REQUIRE(greedy_seen.size() == 1);
    CHECK(greedy_seen[0].greedy);
    CHECK(greedy_seen[0].raw == softmax(z)(1));
}
