// Chapter 11: log-softmax, the four modes, a token's rank and a step's top-K entries, on cases
// worked by hand and on vLLM's own test facts (vllm-project/vllm at 75162ed0be35,
// tests/v1/sample/test_batched_count_greater_than.py); prompt logprobs, continuation scores and
// sliding-window perplexity on the embedded model against the float64 reference
// (tests/data/logprobs.json, tests/reference/logprobs.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/logprobs_report.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/scoring.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/sampling/logprobs.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

double exp_sum(const xt::xtensor<float, 1>& logprobs) {
    double s = 0;
    for (float v : logprobs) s += std::exp(static_cast<double>(v));
    return s;
}

}  // namespace

TEST_CASE("log_softmax by hand keeps -inf and sums to one", "[logprobs]") {
    // z = (ln 3, 0, -inf): p = (3/4, 1/4, 0)
    const xt::xtensor<float, 1> z{static_cast<float>(std::log(3.0)), 0.0f, -INFINITY};
    const xt::xtensor<float, 1> lp = log_softmax(z);
    CHECK(lp(0) == Approx(std::log(0.75)).margin(1e-6));
    CHECK(lp(1) == Approx(std::log(0.25)).margin(1e-6));
    CHECK(lp(2) == -INFINITY);
    // adding a constant to every logit changes nothing; large logits do not overflow
    const xt::xtensor<float, 1> shifted = log_softmax(xt::xtensor<float, 1>{1000.0f + static_cast<float>(std::log(3.0)), 1000.0f, -INFINITY});
    CHECK(shifted(0) == Approx(lp(0)).margin(1e-4));
    CHECK(shifted(1) == Approx(lp(1)).margin(1e-4));
    Rng rng(7);
    xt::xtensor<float, 1> big = xt::zeros<float>({2048});
    for (float& v : big) v = static_cast<float>(20.0 * rng.coin() - 10.0);
    CHECK(exp_sum(log_softmax(big)) == Approx(1.0).margin(1e-6));
    CHECK_THROWS_AS(log_softmax(xt::xtensor<float, 1>{-INFINITY, -INFINITY}), Error);
}

TEST_CASE("a token's rank counts the values at least its own as vLLM's batched_count_greater_than", "[logprobs]") {
    // vLLM test_batched_count_greater_than_correctness: x = [[1, 2, 3], [4, 5, 6]], values [[2], [5]] -> [2, 2]
    CHECK(logprob_rank(xt::xtensor<float, 1>{1, 2, 3}, 1) == 2);
    CHECK(logprob_rank(xt::xtensor<float, 1>{4, 5, 6}, 1) == 2);
    // the largest is rank 1; a tie counts against the token; -inf is last
    CHECK(logprob_rank(xt::xtensor<float, 1>{1, 2, 3}, 2) == 1);
    CHECK(logprob_rank(xt::xtensor<float, 1>{2, 2, 1}, 0) == 2);
    CHECK(logprob_rank(xt::xtensor<float, 1>{2, 2, 1}, 1) == 2);
    CHECK(logprob_rank(xt::xtensor<float, 1>{0, -INFINITY, -INFINITY}, 1) == 3);
    CHECK_THROWS_WITH(logprob_rank(xt::xtensor<float, 1>{1, 2}, 2), Catch::Contains("outside the vocabulary of 2"));
}

TEST_CASE("top_logprobs lists the top K and appends the sampled token only from outside them", "[logprobs]") {
    const xt::xtensor<float, 1> v{-2.0f, -0.5f, -1.0f, -0.5f, -3.0f};
    // top 2: ids 1 and 3 tie at -0.5 (the lower id first); id 2 was sampled: K + 1 entries, its rank 3
    CHECK(top_logprobs(v, 2, 2) ==
          std::vector<LogprobEntry>{{1, -0.5f, 1}, {3, -0.5f, 2}, {2, -1.0f, 3}});
    // the sampled token among the top K: K entries
    CHECK(top_logprobs(v, 2, 3) == std::vector<LogprobEntry>{{1, -0.5f, 1}, {3, -0.5f, 2}});
    // K = 0: the sampled token alone, with its rank (vLLM's logprobs=0)
    CHECK(top_logprobs(v, 0, 4) == std::vector<LogprobEntry>{{4, -3.0f, 5}});
    // a sampled token tied with the last one kept but after it in id order is appended, ranked
    // by how many values are >= its own
    CHECK(top_logprobs(v, 1, 3) == std::vector<LogprobEntry>{{1, -0.5f, 1}, {3, -0.5f, 2}});
    // K beyond the vocabulary lists it all
    CHECK(top_logprobs(xt::xtensor<float, 1>{0.0f, -1.0f}, 20, 1).size() == 2);
    CHECK_THROWS_WITH(top_logprobs(v, 21, 0), Catch::Contains("logprobs = 21 is outside 0..20"));
    CHECK_THROWS_WITH(top_logprobs(v, -1, 0), Catch::Contains("logprobs = -1 is outside 0..20"));
    CHECK_THROWS_WITH(top_logprobs(v, 2, 5), Catch::Contains("token id 5 is outside the vocabulary of 5"));
}

TEST_CASE("the four logprobs modes take vLLM's names and values", "[logprobs]") {
    const xt::xtensor<float, 1> raw{2.0f, 1.0f, 0.0f};
    const xt::xtensor<float, 1> processed{4.0f, 2.0f, -INFINITY};  // temperature 0.5, then top-k 2
    const xt::xtensor<float, 1> raw_lp = logprob_values(raw, processed, LogprobsMode::RawLogprobs);
    CHECK(raw_lp(2) == Approx(-std::log(1 + std::exp(1.0) + std::exp(2.0))).margin(1e-6));
    CHECK(logprob_values(raw, processed, LogprobsMode::RawLogits)(1) == 1.0f);
    const xt::xtensor<float, 1> processed_lp = logprob_values(raw, processed, LogprobsMode::ProcessedLogprobs);
    CHECK(processed_lp(0) == Approx(-std::log(1 + std::exp(-2.0))).margin(1e-6));
    CHECK(processed_lp(2) == -INFINITY);  // removed by the chain
    CHECK(exp_sum(processed_lp) == Approx(1.0).margin(1e-6));
    CHECK(logprob_values(raw, processed, LogprobsMode::ProcessedLogits)(0) == 4.0f);
    for (const char* name : {"raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"})
        CHECK(to_string(parse_logprobs_mode(name)) == name);
    CHECK_THROWS_WITH(parse_logprobs_mode("raw"), Catch::Contains("pass raw_logprobs (the default)"));
}

// The float32 forward against the float64 reference: log-probabilities within kLogprobTolerance
// (issue 36's figure; they differ by 1e-6 to 1e-5 here), sums and perplexities within 1e-6
// relative; a rank or a top-K order is compared only where the reference's values are further than
// twice the tolerance from reordering it (top_margin, rank_margin).
constexpr double kLogprobTolerance = 1e-5;

TEST_CASE("prompt logprobs equal the reference's log_softmax and leave the first token null", "[logprobs][golden]") {
    const nlohmann::json file = golden::load("logprobs.json");
    size_t compared = 0;
    for (const auto& c : file["cases"]) {
        if (c["kind"] != "prompt") continue;
        const std::vector<int> ids = c["prompt_ids"].get<std::vector<int>>();
        const int k = c["k"].get<int>();
        const auto found = prompt_logprobs(golden::model(), ids, k);
        INFO("case " << c["name"].get<std::string>() << " (tests/data/logprobs.json)");
        REQUIRE(found.size() == ids.size());
        CHECK_FALSE(found[0].has_value());
        for (size_t i = 1; i < ids.size(); ++i) {
            const auto& want = c["entries"][i];
            INFO("token " << i);
            REQUIRE(found[i].has_value());
            CHECK(found[i]->token == ids[i]);
            CHECK(std::abs(found[i]->logprob - want["logprob"].get<double>()) < kLogprobTolerance);
            if (want["rank_margin"].get<double>() > 2 * kLogprobTolerance) CHECK(found[i]->rank == want["rank"].get<int>());
            if (want["top_margin"].get<double>() <= 2 * kLogprobTolerance) continue;
            REQUIRE(found[i]->top.size() == want["top"].size());
            for (size_t e = 0; e < found[i]->top.size(); ++e) {
                CHECK(found[i]->top[e].token == want["top"][e][0].get<int>());
                CHECK(std::abs(found[i]->top[e].value - want["top"][e][1].get<double>()) < kLogprobTolerance);
                CHECK(found[i]->top[e].rank == want["top"][e][2].get<int>());
            }
            ++compared;
        }
    }
    CHECK(compared >= 40);
}

TEST_CASE("a continuation's score and is_greedy equal the reference's", "[logprobs][golden]") {
    const nlohmann::json file = golden::load("logprobs.json");
    int seen = 0;
    for (const auto& c : file["cases"]) {
        if (c["kind"] != "continuation") continue;
        INFO("case " << c["name"].get<std::string>() << " (tests/data/logprobs.json)");
        const ContinuationScore s = score_continuation(golden::model(), c["context_ids"].get<std::vector<int>>(),
                                                       c["continuation_ids"].get<std::vector<int>>());
        CHECK(s.tokens == c["tokens"].get<size_t>());
        const double want = c["logprob"].get<double>();
        CHECK(std::abs(s.logprob - want) < 1e-6 * std::abs(want));
        if (c["min_gap"].get<double>() > 1e-3) CHECK(s.greedy == c["greedy"].get<bool>());
        ++seen;
    }
    CHECK(seen == 8);
}

TEST_CASE("sliding-window perplexity of held-out fortunes equals the reference's with two strides", "[logprobs][golden]") {
    const nlohmann::json file = golden::load("logprobs.json");
    int seen = 0;
    for (const auto& c : file["cases"]) {
        if (c["kind"] != "perplexity") continue;
        INFO("case " << c["name"].get<std::string>() << " (tests/data/logprobs.json)");
        const Perplexity p = sliding_window_perplexity(golden::model(), c["ids"].get<std::vector<int>>(),
                                                       c["max_length"].get<int>(), c["stride"].get<int>());
        CHECK(p.windows == c["windows"].get<size_t>());
        CHECK(p.tokens == c["tokens"].get<size_t>());
        const double want = c["perplexity"].get<double>();
        INFO("perplexity " << p.value() << ", reference " << want);
        CHECK(std::abs(p.value() - want) / want < 1e-6);
        ++seen;
    }
    CHECK(seen == 2);
}

TEST_CASE("scoring refuses what it cannot score with the fix", "[logprobs]") {
    const Gpt2& m = golden::model();
    CHECK_THROWS_WITH(prompt_logprobs(m, {}, 1), Catch::Contains("the prompt is empty"));
    CHECK_THROWS_WITH(prompt_logprobs(m, std::vector<int>(257, 1), 1), Catch::Contains("more than the model's context of 256"));
    CHECK_THROWS_WITH(prompt_logprobs(m, {1, 2}, 21), Catch::Contains("prompt_logprobs = 21 is outside 0..20"));
    CHECK_THROWS_WITH(score_continuation(m, {}, {1}), Catch::Contains("the context to score is empty"));
    CHECK_THROWS_WITH(score_continuation(m, {1}, {}), Catch::Contains("the continuation to score is empty"));
    CHECK_THROWS_WITH(sliding_window_perplexity(m, {1}, 256, 128), Catch::Contains("has no perplexity"));
    CHECK_THROWS_WITH(sliding_window_perplexity(m, {1, 2, 3}, 257, 128), Catch::Contains("outside 2..256"));
    CHECK_THROWS_WITH(sliding_window_perplexity(m, {1, 2, 3}, 8, 9), Catch::Contains("the stride of 9 is outside 1..8"));
}

namespace {

GenerationConfig sampled_config() {
    GenerationConfig c;
    c.do_sample = true;
    c.temperature = 0.7f;
    c.top_p = 0.9f;
    c.max_new_tokens = 16;
    return c;
}

}  // namespace

TEST_CASE("the logprobs sampler picks make_sampler's tokens and records raw logprobs of the prompt's kind", "[logprobs]") {
    const std::vector<int> prompt = golden::tokenizer().encode("Q: What do you call");
    for (const bool sample : {false, true}) {
        GenerationConfig c = sample ? sampled_config() : GenerationConfig{};
        c.max_new_tokens = 16;
        INFO((sample ? "sampled" : "greedy"));
        std::vector<StepLogprobs> steps;
        const Generation plain = generate(golden::model(), golden::tokenizer(), prompt, c, make_sampler(c, 5));
        const Generation recorded = generate(golden::model(), golden::tokenizer(), prompt, c,
                                             make_logprobs_sampler(c, 5, {3, LogprobsMode::RawLogprobs}, steps));
        REQUIRE(recorded.ids == plain.ids);
        REQUIRE(steps.size() == recorded.ids.size());
        // a raw logprob is the model's log p before any processor: the prompt logprob of the same
        // position in prompt + output (prompt_logprobs is checked against the reference above)
        std::vector<int> all = prompt;
        all.insert(all.end(), recorded.ids.begin(), recorded.ids.end());
        const auto as_prompt = prompt_logprobs(golden::model(), all, 3);
        for (size_t i = 0; i < steps.size(); ++i) {
            const auto& want = *as_prompt[prompt.size() + i];
            INFO("step " << i);
            CHECK(steps[i].token == recorded.ids[i]);
            CHECK(std::abs(steps[i].value - want.logprob) < 1e-5);
            CHECK(steps[i].top.size() == (steps[i].rank <= 3 ? 3u : 4u));  // the K + 1 rule
            if (!sample) CHECK(steps[i].rank == 1);  // greedy chose the argmax of the raw logits
        }
    }
}

TEST_CASE("processed logprobs are -inf where the chain removed a token and sum to one over the rest", "[logprobs]") {
    const GenerationConfig c = sampled_config();  // temperature 0.7, then top-p 0.9 (hf's order)
    const std::vector<int> prompt = golden::tokenizer().encode("A fortune:");
    std::vector<StepLogprobs> logits_steps, logprob_steps;
    (void)generate(golden::model(), golden::tokenizer(), prompt, c,
                   make_logprobs_sampler(c, 9, {20, LogprobsMode::ProcessedLogprobs}, logprob_steps));
    const LogitsChain chain(c);
    std::vector<int> generated;
    for (const StepLogprobs& s : logprob_steps) {
        // the step again, by hand: the chain's output and its log-softmax
        std::vector<int> all = prompt;
        all.insert(all.end(), generated.begin(), generated.end());
        const xt::xtensor<float, 1> raw = last_position_logits(golden::model().forward(all));
        const xt::xtensor<float, 1> z = chain.apply(raw, DecodeContext{prompt, generated, static_cast<int>(generated.size()), {}});
        const xt::xtensor<float, 1> lp = logprob_values(raw, z, LogprobsMode::ProcessedLogprobs);
        double kept = 0;
        size_t removed = 0;
        for (size_t i = 0; i < lp.size(); ++i) {
            if (z(i) == -INFINITY) {
                CHECK(lp(i) == -INFINITY);
                ++removed;
            } else {
                kept += std::exp(static_cast<double>(lp(i)));
            }
        }
        CHECK(kept == Approx(1.0).margin(1e-6));
        CHECK(removed > 0);  // top-p 0.9 cut the tail
        CHECK(s.value == Approx(lp(static_cast<size_t>(s.token))).margin(1e-6));
        // an entry beyond the kept set shows as -inf: K = 20 reaches past the nucleus on some steps
        for (const LogprobEntry& e : s.top) CHECK((e.value > -INFINITY) == (z(static_cast<size_t>(e.token)) > -INFINITY));
        generated.push_back(s.token);
    }
    CHECK(!logprob_steps.empty());
    CHECK_THROWS_WITH(make_logprobs_sampler(c, 1, {21, LogprobsMode::RawLogprobs}, logits_steps),
                      Catch::Contains("logprobs = 21 is outside 0..20"));
}

namespace {

// Chapter 08's draft model (models/fortunes-draft), beside the embedded one.
const Gpt2& draft_model() {
    static const Gpt2 m = Gpt2::load((std::filesystem::path(golden::model_dir()).parent_path() / "fortunes-draft").string());
    return m;
}

}  // namespace

TEST_CASE("speculative decoding records the target's logprobs at every emitted position and never the draft's", "[logprobs]") {
    const std::vector<int> prompt = golden::tokenizer().encode("Q: What do you call");
    for (const bool sample : {false, true}) {
        GenerationConfig c = sample ? sampled_config() : GenerationConfig{};
        c.max_new_tokens = 16;
        c.num_assistant_tokens = 4;
        INFO((sample ? "sampled" : "greedy"));
        const std::vector<int> eos = resolve_eos_ids(c, golden::model().config().eos_token_id);
        const Drafter drafter = model_drafter(draft_model(), c, prompt.size() + 16, 4, draft_seed(c.seed));
        std::vector<StepLogprobs> raw, processed;
        const LogprobsLog raw_log{{2, LogprobsMode::RawLogprobs}, &raw};
        const Generation g = generate_speculative(golden::model(), golden::tokenizer(), prompt, c, drafter, nullptr, {}, &raw_log);
        const Drafter again = model_drafter(draft_model(), c, prompt.size() + 16, 4, draft_seed(c.seed));
        const LogprobsLog processed_log{{2, LogprobsMode::ProcessedLogprobs}, &processed};
        const Generation h = generate_speculative(golden::model(), golden::tokenizer(), prompt, c, again, nullptr, {}, &processed_log);
        REQUIRE(h.ids == g.ids);  // recording changes nothing
        REQUIRE(raw.size() == g.ids.size());
        REQUIRE(processed.size() == g.ids.size());
        std::vector<int> all = prompt;
        all.insert(all.end(), g.ids.begin(), g.ids.end());
        const auto target = prompt_logprobs(golden::model(), all, 2);
        const auto draft = prompt_logprobs(draft_model(), all, 2);
        const LogitsChain chain(c);
        size_t differs_from_draft = 0;
        for (size_t i = 0; i < raw.size(); ++i) {
            INFO("token " << i);
            const auto& want = *target[prompt.size() + i];
            CHECK(raw[i].token == g.ids[i]);
            CHECK(std::abs(raw[i].value - want.logprob) < 1e-5);
            CHECK(raw[i].rank == want.rank);
            differs_from_draft += std::abs(raw[i].value - draft[prompt.size() + i]->logprob) > 1e-3;
            // processed: the target's chain output at this position, recomputed by hand
            const std::span<const int> before = std::span<const int>(g.ids).first(i);
            std::vector<int> context = prompt;
            context.insert(context.end(), before.begin(), before.end());
            const xt::xtensor<float, 1> z = last_position_logits(golden::model().forward(context));
            const xt::xtensor<float, 1> lp = logprob_values(
                z, chain.apply(z, DecodeContext{prompt, before, static_cast<int>(i), eos}), LogprobsMode::ProcessedLogprobs);
            CHECK(processed[i].value == Approx(lp(static_cast<size_t>(g.ids[i]))).margin(1e-5));
        }
        CHECK(differs_from_draft > raw.size() / 2);  // the two models do differ: the check can tell them apart
    }
}

TEST_CASE("a beam's transition scores sum to its score with length_penalty 0 as in transformers' test", "[logprobs]") {
    // huggingface/transformers tests/generation/test_utils.py, test_transition_scores_beam_search_encoder_decoder:
    // length_penalty 0.0, compute_transition_scores(sequences, scores, beam_indices) summed over the
    // steps equals sequences_scores (atol 1e-3). Here with a repetition penalty, so the processed
    // rows differ from the model's own log-softmax.
    const std::vector<int> prompt = golden::tokenizer().encode("The best way to");
    GenerationConfig c;
    c.num_beams = 4;
    c.num_return_sequences = 3;
    c.max_new_tokens = 10;
    c.length_penalty = 0.0f;
    c.repetition_penalty = 1.3f;
    const std::vector<Hypothesis> hyps = beam_search(golden::model(), golden::tokenizer(), prompt, c);
    REQUIRE(hyps.size() == 3u);
    size_t changed = 0;
    for (const Hypothesis& h : hyps) {
        const std::vector<StepLogprobs> rows = transition_scores(golden::model(), prompt, h.ids, c, {0, LogprobsMode::ProcessedLogits});
        const std::vector<StepLogprobs> own = transition_scores(golden::model(), prompt, h.ids, c, {0, LogprobsMode::RawLogprobs});
        REQUIRE(rows.size() == h.ids.size());
        double sum = 0;
        for (size_t t = 0; t < rows.size(); ++t) {
            CHECK(rows[t].token == h.ids[t]);
            CHECK(rows[t].top.size() == 1u);  // K = 0: the chosen token alone
            sum += rows[t].value;
            changed += std::abs(rows[t].value - own[t].value) > 1e-4;
        }
        CHECK(sum == Approx(h.sum_logprobs).margin(1e-4));
        CHECK(sum == Approx(h.score).margin(1e-4));  // length_penalty 0: the score is the sum
    }
    CHECK(changed > 0);  // the penalty acted on some step, so raw and processed differ there
    // and the cached search (chapter 07), the one decodebook-generate runs, returns the same rows' sums
    const std::vector<Hypothesis> cached = beam_search_cached(golden::model(), golden::tokenizer(), prompt, c);
    REQUIRE(cached.size() == hyps.size());
    for (size_t i = 0; i < hyps.size(); ++i) CHECK(cached[i].ids == hyps[i].ids);
    CHECK_THROWS_WITH(transition_scores(golden::model(), prompt, {}, c, {}), Catch::Contains("hypothesis to rebuild scores for is empty"));
}

TEST_CASE("the completions logprobs object writes null for the first prompt token and -9999 for -inf", "[logprobs]") {
    const Tokenizer& tok = golden::tokenizer();
    const std::vector<int> prompt = tok.encode("A cat");
    REQUIRE(prompt.size() == 2u);
    const std::vector<int> ids{prompt[1]};  // " cat" again
    std::vector<LogprobsRow> rows = prompt_rows(prompt, prompt_logprobs(golden::model(), prompt, 1));
    const StepLogprobs removed{ids[0], -INFINITY, 7, {{prompt[0], 0.0f, 1}, {ids[0], -INFINITY, 7}}};
    const std::vector<LogprobsRow> generated = generated_rows(ids, {removed});
    rows.insert(rows.end(), generated.begin(), generated.end());
    const nlohmann::ordered_json lp = openai_logprobs(rows, tok);
    CHECK(lp["tokens"] == nlohmann::ordered_json({"A", " cat", " cat"}));
    CHECK(lp["token_logprobs"][0].is_null());
    CHECK(lp["top_logprobs"][0].is_null());
    CHECK(lp["token_logprobs"][2] == -9999.0);  // vLLM's max(logprob, -9999.0): JSON has no -inf
    CHECK(lp["top_logprobs"][2][" cat"] == -9999.0);
    CHECK(lp["top_logprobs"][2]["A"] == 0.0);
    CHECK(lp["text_offset"] == nlohmann::ordered_json({0, 1, 5}));  // the running sum of the tokens' lengths
    CHECK(api_token(tok, tok.encode("é")[0]).size() >= 1u);
    CHECK_THROWS_WITH(generated_rows({1, 2}, {removed}), Catch::Contains("1 logprobs records for 2 tokens"));
}

TEST_CASE("a constraint's mask shows as processed -inf and the chosen token stays first", "[logprobs]") {
    // issue 36: "a constraint's mask shows as processed -inf". Greedy under a regex of three digits:
    // the chain's head masks every token that cannot continue a match (chapter 09).
    GenerationConfig c;
    c.regex = "[0-9]{3}";
    c.max_new_tokens = 4;
    bind_to_tokenizer(c, golden::tokenizer(), resolve_eos_ids(c, golden::model().config().eos_token_id));
    const std::vector<int> prompt = golden::tokenizer().encode("The year was");
    std::vector<StepLogprobs> processed, raw;
    (void)generate(golden::model(), golden::tokenizer(), prompt, c,
                   make_logprobs_sampler(c, 0, {20, LogprobsMode::ProcessedLogprobs}, processed));
    (void)generate(golden::model(), golden::tokenizer(), prompt, c, make_logprobs_sampler(c, 0, {20, LogprobsMode::RawLogprobs}, raw));
    REQUIRE(!processed.empty());
    REQUIRE(raw.size() == processed.size());
    const auto digits = [](int token) {
        const std::string text(golden::tokenizer().text_bytes(token, false));
        return !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    size_t raw_non_digits = 0;
    for (size_t i = 0; i < processed.size(); ++i) {
        INFO("step " << i);
        CHECK(processed[i].rank == 1);  // greedy takes the best token the mask leaves
        CHECK(std::isfinite(processed[i].value));
        // every finite processed entry is a token the mask can allow (digits, or EOS); the model's
        // own top 20 hold other tokens, which the processed values must not show as finite
        for (const LogprobEntry& e : processed[i].top)  // EOS too, once three digits are written
            if (std::isfinite(e.value)) CHECK((digits(e.token) || e.token == golden::model().config().eos_token_id));
        for (const LogprobEntry& e : raw[i].top) raw_non_digits += !digits(e.token);
    }
    CHECK(raw_non_digits > 0);  // the check above could fail: the model's favourites were not all digits
}
