// The decode loop (chapter 00) and greedy decoding (chapter 01).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "golden.hpp"

using namespace decodebook;

using golden::model;
using golden::scripted;

TEST_CASE("argmax takes the largest logit and the lowest id on ties", "[decode][greedy]") {
    CHECK(argmax(xt::xtensor<float, 1>{0.5f, 2.0f, -1.0f}) == 1);
    CHECK(argmax(xt::xtensor<float, 1>{1.0f, 3.0f, 3.0f, 2.0f}) == 1);
    CHECK(argmax(xt::xtensor<float, 1>{7.0f, 7.0f, 7.0f}) == 0);
    CHECK(argmax(xt::xtensor<float, 1>{-5.0f, -2.0f, -3.0f}) == 1);
    CHECK(argmax(xt::xtensor<float, 1>{-INFINITY, -INFINITY, 0.0f}) == 2);
    CHECK(argmax(xt::xtensor<float, 1>{4.0f}) == 0);
}

TEST_CASE("last_position_logits returns the last row", "[decode]") {
    const xt::xtensor<float, 2> z{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    CHECK((last_position_logits(z) == xt::xtensor<float, 1>{7, 8, 9}));
    CHECK((last_position_logits(xt::xtensor<float, 2>{{3, 1}}) == xt::xtensor<float, 1>{3, 1}));
}

TEST_CASE("generation makes exactly max_new_tokens when EOS never comes", "[decode]") {
    const std::vector<int> out = generate_naive(model(), {10, 20}, {7, model().config().eos_token_id}, scripted({5, 6}));
    CHECK(out == std::vector<int>{5, 6, 5, 6, 5, 6, 5});
}

TEST_CASE("EOS stops generation and stays in the output", "[decode]") {
    const int eos = model().config().eos_token_id;
    std::vector<StepRecord> steps;
    const std::vector<int> out =
        generate_naive(model(), {10}, {50, eos}, scripted({3, 4, eos, 9}), [&](const StepRecord& s) { steps.push_back(s); });
    CHECK(out == std::vector<int>{3, 4, eos});
    REQUIRE(steps.size() == 3);
    CHECK(steps[2].token == eos);
    CHECK(steps[0].context_length == 1);
    CHECK(steps[2].context_length == 3);
    // without an EOS rule the same script runs on
    CHECK(generate_naive(model(), {10}, {5, -1}, scripted({3, 4, eos, 9})) == std::vector<int>{3, 4, eos, 9, 3});
}

TEST_CASE("greedy decoding is deterministic", "[decode][greedy]") {
    const StopRule stop{24, model().config().eos_token_id};
    CHECK(greedy_generate(model(), {100, 200, 300}, stop) == greedy_generate(model(), {100, 200, 300}, stop));
}

TEST_CASE("greedy continuations equal the independent reference token for token", "[decode][greedy][reference]") {
    const Tokenizer tok = Tokenizer::load(golden::model_dir());
    const nlohmann::json g = golden::load("greedy.json");
    REQUIRE(g["cases"].size() >= 10);
    int eos_cases = 0;
    for (const auto& c : g["cases"]) {
        const std::string prompt = c["prompt"].get<std::string>();
        const std::vector<int> prompt_ids = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        INFO("case '" << c["name"].get<std::string>() << "'");
        CHECK(tok.encode(prompt) == prompt_ids);
        const std::vector<int> found =
            greedy_generate(model(), prompt_ids, {c["max_new_tokens"].get<int>(), model().config().eos_token_id});
        INFO("expected: " << golden::join(expected) << "\nfound:    " << golden::join(found));
        CHECK(found == expected);
        CHECK(to_valid_utf8(tok.decode(found)) == c["text"].get<std::string>());
        if (c["stopped_by_eos"].get<bool>()) {
            ++eos_cases;
            CHECK(found.back() == model().config().eos_token_id);
        } else {
            CHECK(found.size() == c["max_new_tokens"].get<size_t>());
        }
    }
    CHECK(eos_cases >= 1);
}

TEST_CASE("bad generation requests are refused with a fix", "[decode][errors]") {
    const ModelConfig& c = model().config();
    const StopRule ok{8, c.eos_token_id};
    REQUIRE_THROWS_WITH(greedy_generate(model(), {}, ok), Catch::Contains("prompt is empty") && Catch::Contains("--prompt"));
    REQUIRE_THROWS_WITH(greedy_generate(model(), {1, c.vocab_size + 5}, ok),
                        Catch::Contains("token id " + std::to_string(c.vocab_size + 5)));
    REQUIRE_THROWS_WITH(greedy_generate(model(), {1}, {0, c.eos_token_id}), Catch::Contains("at least 1"));
    const std::vector<int> long_prompt(static_cast<size_t>(c.n_positions) - 3, 1);
    REQUIRE_THROWS_WITH(greedy_generate(model(), long_prompt, ok),
                        Catch::Contains("exceeds the model's context of " + std::to_string(c.n_positions)) &&
                            Catch::Contains("at most 3"));
    CHECK(greedy_generate(model(), long_prompt, {3, -1}).size() == 3);  // exactly fills the context
    REQUIRE_THROWS_WITH(generate_naive(model(), {1}, ok, scripted({c.vocab_size})),
                        Catch::Contains("picker returned token id"));
}

TEST_CASE("find_loop finds the longest repeated cycle anywhere", "[decode][report]") {
    const std::vector<int> loop_inside{5, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 7};
    const Loop a = find_loop(loop_inside);
    CHECK(a.period == 2);
    CHECK(a.start == 1);
    CHECK(a.covered == 12);
    std::vector<int> counting(20);
    std::iota(counting.begin(), counting.end(), 0);
    CHECK(find_loop(counting).period == 0);
    CHECK(find_loop({3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}).period == 0);  // 11 tokens: too short to call a loop
    const Loop c = find_loop({3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3});
    CHECK((c.period == 1 && c.covered == 12));
}

TEST_CASE("distinct_n counts unique n-grams", "[decode][report]") {
    CHECK(distinct_n({1, 2, 1, 2}, 2) == Approx(2.0 / 3.0));  // (1,2) (2,1) (1,2)
    CHECK(distinct_n({1, 2, 3}, 1) == 1.0);
    CHECK(distinct_n({4, 4, 4, 4}, 1) == 0.25);
    CHECK(distinct_n({1}, 2) == 0.0);
}
