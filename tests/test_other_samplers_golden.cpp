// Chapter 10: the chain with the field's other samplers against the independent reference
// (tests/data/other_samplers.json, written by tests/reference/make_goldens.py from
// tests/reference/other_samplers.py): whole seeded runs token for token, one chain step's
// survivors and probabilities, mirostat's mu step by step, and DRY's breakers bound to the tokenizer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "golden.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;

namespace {

const nlohmann::json& goldens() {
    static const nlohmann::json g = golden::load("other_samplers.json");
    return g;
}

// The golden's knobs, with DRY's breakers bound to the embedded tokenizer as a program binds them.
GenerationConfig bound_config(const nlohmann::json& c) {
    GenerationConfig config = golden::config(c);
    bind_to_tokenizer(config, golden::tokenizer(), {golden::model().config().eos_token_id});
    return config;
}

std::vector<std::vector<int>> sorted(std::vector<std::vector<int>> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_CASE("DRY's breakers bind to the reference's token sequences", "[other_samplers][reference]") {
    // llama.cpp's get_overlapping_token_sequences on the embedded vocabulary: the default breakers
    // (single bytes: every token containing one), and longer ones (a token ending in a prefix of a
    // breaker is a head whose tail is the rest's tokenization)
    REQUIRE(goldens()["dry_breakers"].size() == 2);
    for (const auto& b : goldens()["dry_breakers"]) {
        const auto strings = b["strings"].get<std::vector<std::string>>();
        const auto expected = b["sequences"].get<std::vector<std::vector<int>>>();
        INFO("breakers " << b["strings"].dump());
        REQUIRE(expected.size() > strings.size());  // each breaker is in several tokens of this vocabulary
        CHECK(sorted(dry_breaker_sequences(golden::tokenizer(), strings)) == expected);
    }
}

TEST_CASE("chapter 10 runs equal the independent reference token for token", "[other_samplers][reference]") {
    const Gpt2& model = golden::model();
    size_t runs = 0;
    for (const auto& c : goldens()["cases"]) {
        if (c["kind"] != "run") continue;
        ++runs;
        const GenerationConfig config = bound_config(c);
        INFO("case " << c["name"] << ": " << c["chain"] << ", seed " << c["seed"]);
        CHECK(LogitsChain(config).describe() == c["chain"].get<std::string>());
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        const Generation g = generate(model, golden::tokenizer(), c["prompt_ids"].get<std::vector<int>>(), config,
                                      make_sampler(config, config.seed));
        INFO("expected: " << golden::join(expected) << "\nfound:    " << golden::join(g.ids));
        CHECK(g.ids == expected);
        CHECK(g.text == c["text"].get<std::string>());
        CHECK(g.finish_reason == (c["stopped_by_eos"].get<bool>() ? FinishReason::Eos : FinishReason::Length));
    }
    CHECK(runs >= 20);
}

TEST_CASE("mirostat's mu follows the reference step by step", "[other_samplers][reference]") {
    // Replays each mirostat run one step at a time: the chain before mirostat (temperature), then
    // mirostat_vN_step with coin i of Rng(seed) and mu from 2 tau; mu after every step within 1e-4
    // of the reference's (the C++ computes the surprise from float32 probabilities).
    const Gpt2& model = golden::model();
    size_t runs = 0;
    for (const auto& c : goldens()["cases"]) {
        if (c["kind"] != "run" || !c.contains("mu")) continue;
        ++runs;
        const GenerationConfig config = bound_config(c);
        INFO("case " << c["name"]);
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> ids = c["ids"].get<std::vector<int>>();
        const std::vector<double> mus = c["mu"].get<std::vector<double>>();
        REQUIRE(mus.size() == ids.size());
        GenerationConfig before = config;  // the same chain without its end
        before.mirostat = 0;
        const LogitsChain chain(before);
        Rng rng(config.seed);
        double mu = 2.0 * config.mirostat_tau;
        std::vector<int> context = prompt, generated;
        for (size_t i = 0; i < ids.size(); ++i) {
            INFO("step " << i);
            const Vec z = chain.apply(last_position_logits(model.forward(context)), {prompt, generated});
            const int token = config.mirostat == 2
                                  ? mirostat_v2_step(z, config.mirostat_tau, config.mirostat_eta, mu, rng.coin())
                                  : mirostat_v1_step(z, config.mirostat_tau, config.mirostat_eta, 100, mu, rng.coin());
            REQUIRE(token == ids[i]);
            CHECK(mu == Approx(mus[i]).margin(1e-4));
            context.push_back(token);
            generated.push_back(token);
        }
    }
    CHECK(runs >= 3);
}

TEST_CASE("chapter 10 chain steps keep the reference's candidates and probabilities", "[other_samplers][reference]") {
    const Gpt2& model = golden::model();
    const std::vector<int> eos{model.config().eos_token_id};
    size_t steps = 0;
    for (const auto& c : goldens()["cases"]) {
        if (c["kind"] != "step") continue;
        ++steps;
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> generated = c["generated"].get<std::vector<int>>();
        std::vector<int> context = prompt;
        context.insert(context.end(), generated.begin(), generated.end());
        const Vec z = last_position_logits(model.forward(context));
        const LogitsChain chain(bound_config(c));
        const DecodeContext ctx{prompt, generated, static_cast<int>(generated.size()), eos};
        const Vec processed = chain.apply(z, ctx);
        const std::vector<int> expected = c["candidates"].get<std::vector<int>>();
        INFO("case " << c["name"] << ": " << c["chain"]);
        CHECK(chain.describe() == c["chain"].get<std::string>());
        INFO("expected: " << golden::join(expected) << "\nfound:    " << golden::join(golden::finite_ids(processed)));
        REQUIRE(golden::finite_ids(processed) == expected);
        const Vec p = softmax(processed);
        const std::vector<double> probs = c["probs"].get<std::vector<double>>();
        for (size_t i = 0; i < expected.size(); ++i) {
            INFO("id " << expected[i]);
            CHECK(p(static_cast<size_t>(expected[i])) == Approx(probs[i]).margin(c["tolerance"].get<double>()));
        }
    }
    CHECK(steps >= 15);
}
