// The general loop (chapter 02): samplers with context, stopping criteria, finish reasons, the
// text stream, and the knob table every program's flags come from.
#include <catch2/catch.hpp>

#include <memory>

#include "decodebook/decoding/sampler.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "decodebook/base/utf8.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::tokenizer;

namespace {

// A sampler that ignores the logits and replays `script` (cycling), recording what it was shown.
struct Script {
    std::vector<int> ids;
    std::vector<int> steps_seen, generated_sizes;
    Sampler sampler() {
        return [this](const xt::xtensor<float, 1>&, const DecodeContext& c) {
            steps_seen.push_back(c.step);
            generated_sizes.push_back(static_cast<int>(c.generated.size()));
            return ids[static_cast<size_t>(c.step) % ids.size()];
        };
    }
};

GenerationConfig with_length(int n) {
    GenerationConfig c;
    c.max_new_tokens = n;
    return c;
}

}  // namespace

TEST_CASE("generate runs to max_new_tokens and says so", "[generate]") {
    Script s{{5, 6}, {}, {}};
    const Generation g = generate(model(), tokenizer(), {10, 20}, with_length(7), s.sampler());
    CHECK(g.ids == std::vector<int>{5, 6, 5, 6, 5, 6, 5});
    CHECK(g.finish_reason == FinishReason::Length);
    CHECK(g.stopped_by == "max_new_tokens(7)");
    CHECK(g.steps.size() == 7);
    // the sampler sees the loop's own ids: step i has i ids before it
    CHECK(s.steps_seen == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
    CHECK(s.generated_sizes == std::vector<int>{0, 1, 2, 3, 4, 5, 6});
}

TEST_CASE("generate stops at any of several EOS ids and keeps it", "[generate]") {
    GenerationConfig c = with_length(50);
    c.eos_token_id = std::vector<int>{9, 4};
    Script s{{3, 4, 9}, {}, {}};
    const Generation g = generate(model(), tokenizer(), {10}, c, s.sampler());
    CHECK(g.ids == std::vector<int>{3, 4});
    CHECK(g.finish_reason == FinishReason::Eos);
    CHECK(g.stopped_by == "eos(9, 4)");
    // the model's own EOS by default; none at all with an empty list
    const int eos = model().config().eos_token_id;
    Script t{{3, eos, 8}, {}, {}};
    CHECK(generate(model(), tokenizer(), {10}, with_length(9), t.sampler()).ids == std::vector<int>{3, eos});
    c.eos_token_id = std::vector<int>{};
    Script u{{3, eos, 8}, {}, {}};
    const Generation none = generate(model(), tokenizer(), {10}, with_length(5), u.sampler());
    CHECK(none.ids.size() == 2);  // stopped by the model's eos: with_length leaves eos_token_id unset
    GenerationConfig never = with_length(5);
    never.eos_token_id = std::vector<int>{};
    Script v{{3, eos, 8}, {}, {}};
    CHECK(generate(model(), tokenizer(), {10}, never, v.sampler()).ids == std::vector<int>{3, eos, 8, 3, eos});
}

TEST_CASE("an EOS at the last allowed step ends with reason eos", "[generate]") {
    const int eos = model().config().eos_token_id;
    Script s{{1, eos}, {}, {}};
    const Generation g = generate(model(), tokenizer(), {10}, with_length(2), s.sampler());
    CHECK(g.finish_reason == FinishReason::Eos);
    CHECK(to_string(g.finish_reason) == "eos");
}

TEST_CASE("a step callback can stop the loop", "[generate]") {
    Script s{{5, 6, 7}, {}, {}};
    int calls = 0;
    const Generation g = generate(model(), tokenizer(), {10}, with_length(20), s.sampler(), [&](const StepRecord& r) {
        ++calls;
        return r.token == 6 ? StepAction::Stop : StepAction::Continue;
    });
    CHECK(g.ids == std::vector<int>{5, 6});
    CHECK(calls == 2);
    CHECK(g.finish_reason == FinishReason::Callback);
    CHECK(to_string(g.finish_reason) == "callback");
}

TEST_CASE("the loop streams text without splitting a UTF-8 character", "[generate]") {
    // Find two byte tokens that together make "é" (C3 A9), if the vocabulary has them.
    const Tokenizer& tok = tokenizer();
    const std::vector<int> e_acute = tok.encode("\xC3\xA9");
    int lead = -1, cont = -1;
    for (int id = 0; id < tok.vocab_size(); ++id) {
        if (tok.token_bytes(id) == "\xC3") lead = id;
        if (tok.token_bytes(id) == "\xA9") cont = id;
    }
    REQUIRE(lead >= 0);
    REQUIRE(cont >= 0);
    Script s{{lead, cont, lead}, {}, {}};
    GenerationConfig c = with_length(3);
    c.eos_token_id = std::vector<int>{};
    std::vector<std::string> pieces;
    const Generation g = generate(model(), tok, {10}, c, s.sampler(), [&](const StepRecord& r) {
        pieces.push_back(r.text);
        return StepAction::Continue;
    });
    // step 0 holds the lead byte back, step 1 releases the character, the last step flushes the
    // cut-off lead byte as U+FFFD
    CHECK(pieces == std::vector<std::string>{"", "\xC3\xA9", "\xEF\xBF\xBD"});
    CHECK(g.text == "\xC3\xA9\xEF\xBF\xBD");
    CHECK(g.text == to_valid_utf8(tok.decode(g.ids)));
}

TEST_CASE("greedy through the general loop equals the naive loop and the reference", "[generate][reference]") {
    const nlohmann::json g = golden::load("greedy.json");
    for (const auto& c : g["cases"]) {
        INFO("case '" << c["name"].get<std::string>() << "'");
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const GenerationConfig config = with_length(c["max_new_tokens"].get<int>());
        const Generation found = generate(model(), tokenizer(), prompt, config, greedy);
        CHECK(found.ids == c["ids"].get<std::vector<int>>());
        CHECK(found.text == c["text"].get<std::string>());
        CHECK(found.finish_reason == (c["stopped_by_eos"].get<bool>() ? FinishReason::Eos : FinishReason::Length));
        // the config's own sampler (do_sample false: argmax after no processors) agrees
        CHECK(generate(model(), tokenizer(), prompt, config, make_sampler(config, 1)).ids == found.ids);
    }
}

TEST_CASE("min_new_tokens masks every EOS id until it is reached", "[generate]") {
    GenerationConfig c = with_length(6);
    c.min_new_tokens = 3;
    c.eos_token_id = std::vector<int>{7, 9};
    const LogitsChain chain(c);
    CHECK(chain.describe() == "min_new_tokens(3) -> argmax");
    xt::xtensor<float, 1> z = xt::zeros<float>({12});
    z(7) = 5.0f;  // EOS would win
    z(9) = 4.0f;
    z(2) = 1.0f;
    const std::vector<int> prompt{1};
    std::vector<int> generated{2, 2};
    CHECK(chain.pick(z, {prompt, generated, 2, {7, 9}}, 0.5) == 2);  // 2 new tokens < 3: EOS masked
    generated.push_back(2);
    CHECK(chain.pick(z, {prompt, generated, 3, {7, 9}}, 0.5) == 7);  // 3 reached: EOS allowed
}

TEST_CASE("bad requests to the general loop are refused before any work", "[generate][errors]") {
    Script s{{1}, {}, {}};
    REQUIRE_THROWS_WITH(generate(model(), tokenizer(), {}, with_length(4), s.sampler()), Catch::Contains("prompt is empty"));
    GenerationConfig far = with_length(4);
    far.eos_token_id = std::vector<int>{model().config().vocab_size};
    REQUIRE_THROWS_WITH(generate(model(), tokenizer(), {1}, far, s.sampler()), Catch::Contains("outside the vocabulary"));
    GenerationConfig bad = with_length(4);
    bad.top_p = 2.0f;
    REQUIRE_THROWS_WITH(generate(model(), tokenizer(), {1}, bad, s.sampler()), Catch::Contains("top_p = 2 is invalid"));
    Script out{{model().config().vocab_size}, {}, {}};
    REQUIRE_THROWS_WITH(generate(model(), tokenizer(), {1}, with_length(4), out.sampler()),
                        Catch::Contains("sampler returned token id"));
}

TEST_CASE("make_sampler draws one coin per step from its own stream", "[generate]") {
    GenerationConfig c = with_length(12);
    set_knob(c, "temperature", "1.5");
    const std::vector<int> prompt{464, 1266, 835};
    const std::vector<int> a = generate(model(), tokenizer(), prompt, c, make_sampler(c, 7)).ids;
    const std::vector<int> b = generate(model(), tokenizer(), prompt, c, make_sampler(c, 7)).ids;
    CHECK(a == b);  // a fresh stream per make_sampler
    CHECK(a != generate(model(), tokenizer(), prompt, c, make_sampler(c, 8)).ids);
}

TEST_CASE("the knob table parses and checks every knob from text", "[config]") {
    GenerationConfig c;
    set_knob(c, "top-p", "0.9");  // the flag spelling
    set_knob(c, "top_k", "40");   // the HF spelling
    CHECK(c.top_p == 0.9f);
    CHECK(c.top_k == 40);
    CHECK(c.do_sample);  // a sampling knob turns sampling on
    set_knob(c, "do_sample", "false");
    CHECK_FALSE(c.do_sample);
    set_knob(c, "penalty_scope", "last_n");
    CHECK(c.penalty_scope == PenaltyScope::LastN);
    set_knob(c, "order", "llama.cpp");
    CHECK(c.order == ChainOrder::LlamaCpp);
    set_knob(c, "eos-token-id", "3,5");
    CHECK(c.eos_token_id == std::vector<int>{3, 5});
    CHECK(find_knob("eos_token_id").get(c) == "3,5");
    set_knob(c, "eos_token_id", "none");
    CHECK(find_knob("eos_token_id").get(c) == "none");
    set_knob(c, "eos_token_id", "model");
    CHECK_FALSE(c.eos_token_id.has_value());
    set_knob(c, "seed", "18446744073709551615");
    CHECK(c.seed == 18446744073709551615ull);

    const GenerationConfig before = c;
    const auto message = [&](const std::string& name, const std::string& value) {
        try {
            set_knob(c, name, value);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    CHECK_THAT(message("top-p", "1.5"), Catch::Contains("top_p = 1.5 is invalid: it must be in [0, 1]") &&
                                            Catch::Contains("fix: pass --top-p"));
    CHECK_THAT(message("temperature", "hot"), Catch::Contains("--temperature needs a number, got 'hot'"));
    CHECK_THAT(message("temperature", "nan"), Catch::Contains("temperature = nan is invalid"));
    CHECK_THAT(message("top-k", "2.5"), Catch::Contains("--top-k needs a whole number"));
    CHECK_THAT(message("seed", "-1"), Catch::Contains("seed = -1 is invalid: it must be in [0, 2^64)"));
    CHECK_THAT(message("seed", "5 extra"), Catch::Contains("--seed needs a whole number, got '5 extra'"));
    CHECK_THAT(message("temperature", "1e39"), Catch::Contains("temperature = 1e39 is invalid: it is beyond a float's range"));
    CHECK_THAT(message("temperature", "2e-38"), Catch::Contains("temperature = 2e-38 is invalid: it must be 0 (greedy) or a number >= 0.001"));
    CHECK_THAT(message("top-k", "0.7"), Catch::Contains("fix: e.g. --top-k 0"));
    CHECK_THAT(message("order", "ollama"), Catch::Contains("hf, llama.cpp, vllm"));
    CHECK_THAT(message("penalty-scope", "output"), Catch::Contains("prompt_and_output, output_only, last_n"));
    CHECK_THAT(message("do-sample", "yes"), Catch::Contains("true or false"));
    CHECK_THAT(message("eos-token-id", "3,-1"), Catch::Contains("eos_token_id = 3,-1 is invalid"));
    CHECK_THAT(message("top-q", "1"), Catch::Contains("unknown parameter 'top-q'"));
    CHECK(find_knob("top_p").get(c) == find_knob("top_p").get(before));  // a refused value changes nothing

    GenerationConfig lengths;
    lengths.max_new_tokens = 4;
    lengths.min_new_tokens = 5;
    REQUIRE_THROWS_WITH(validate(lengths), Catch::Contains("min_new_tokens (5) exceeds max_new_tokens (4)"));
}

TEST_CASE("every enum spelling parses back to its value", "[config]") {
    for (PenaltyScope s : {PenaltyScope::PromptAndOutput, PenaltyScope::OutputOnly, PenaltyScope::LastN})
        CHECK(parse_penalty_scope(to_string(s)) == s);
    for (ChainOrder o : {ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm})
        CHECK(parse_chain_order(to_string(o)) == o);
    // every knob prints a value its own parser accepts, and every default is valid
    const GenerationConfig defaults;
    for (const Knob& k : knobs()) {
        INFO(k.name);
        GenerationConfig c;
        CHECK_NOTHROW(k.set(c, k.get(defaults)));
        CHECK(k.valid(defaults));
    }
}

TEST_CASE("describe lists the knobs of the groups asked for", "[config]") {
    GenerationConfig c;
    set_knob(c, "temperature", "0.7");
    CHECK(describe(c, {KnobGroup::Length}) == "max_new_tokens 32");
    CHECK(describe(c, {KnobGroup::Sampling}) ==
          "do_sample true, temperature 0.7, top_k 0, top_p 1, min_p 0, min_tokens_to_keep 1, order hf, seed 42");
}
