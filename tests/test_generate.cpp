// The general loop (chapter 02): samplers with context, stopping criteria, finish reasons, the
// text stream, and the knob table every program's flags come from.
#include <catch2/catch.hpp>

#include <memory>
#include <utility>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/sampling/sampling.hpp"
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

// The ids of the single-byte tokens C3 and A9, which together make "é" (-1 where there is none).
std::pair<int, int> e_acute_bytes(const Tokenizer& tok) {
    int lead = -1, cont = -1;
    for (int id = 0; id < tok.vocab_size(); ++id) {
        if (tok.token_bytes(id) == "\xC3") lead = id;
        if (tok.token_bytes(id) == "\xA9") cont = id;
    }
    return {lead, cont};
}

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
    const auto [lead, cont] = e_acute_bytes(tok);
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

TEST_CASE("skip_special_tokens leaves <|endoftext|> out of the text and keeps it in the ids", "[generate][special]") {
    // A scripted run that writes <|endoftext|> (2047, special) between two byte tokens and goes on
    // (no EOS ids). Hand-computed as Python's bytes.decode(errors="replace") would: kept, the lone
    // lead byte C3 before "<" and the lone continuation A9 after it are each U+FFFD; skipped, as
    // HF's decode(skip_special_tokens=True) joins the bytes around it, C3 A9 is one character.
    const Tokenizer& tok = tokenizer();
    const int eot = tok.eot_id();
    REQUIRE(eot == 2047);
    REQUIRE(tok.is_special(eot));
    const auto [lead, cont] = e_acute_bytes(tok);
    REQUIRE(lead >= 0);
    REQUIRE(cont >= 0);
    GenerationConfig c = with_length(3);
    c.eos_token_id = std::vector<int>{};
    Script kept_script{{lead, eot, cont}, {}, {}};
    const Generation kept = generate(model(), tok, {10}, c, kept_script.sampler());
    c.skip_special_tokens = true;
    Script skipped_script{{lead, eot, cont}, {}, {}};
    const Generation skipped = generate(model(), tok, {10}, c, skipped_script.sampler());
    CHECK(kept.ids == std::vector<int>{lead, eot, cont});
    CHECK(skipped.ids == kept.ids);
    CHECK(kept.text == "\xEF\xBF\xBD<|endoftext|>\xEF\xBF\xBD");
    CHECK(skipped.text == "\xC3\xA9");
    CHECK(tok.decode(kept.ids, true) == "\xC3\xA9");
    CHECK(tok.decode(kept.ids, false) == tok.decode(kept.ids));
    CHECK(tok.text_bytes(eot, true).empty());
    CHECK(tok.text_bytes(eot, false) == "<|endoftext|>");
    CHECK(tok.text_bytes(lead, true) == "\xC3");  // an ordinary token is never skipped
}

TEST_CASE("skip_special_tokens holds in every loop that makes text", "[generate][special]") {
    // The reference's greedy case 'never_trust' ends with <|endoftext|>: its text with that name cut
    // off by hand is what every loop must give with skip_special_tokens, with the same ids.
    const nlohmann::json g = golden::load("greedy.json");
    const nlohmann::json* found = nullptr;
    for (const auto& c : g["cases"])
        if (c["name"] == "never_trust") found = &c;
    REQUIRE(found != nullptr);
    const std::vector<int> prompt = (*found)["prompt_ids"].get<std::vector<int>>();
    const std::vector<int> ids = (*found)["ids"].get<std::vector<int>>();
    const std::string text = (*found)["text"].get<std::string>();
    const std::string name = "<|endoftext|>";
    REQUIRE(text.size() > name.size());
    REQUIRE(text.substr(text.size() - name.size()) == name);
    const std::string without = text.substr(0, text.size() - name.size());
    GenerationConfig config = with_length((*found)["max_new_tokens"].get<int>());
    config.skip_special_tokens = true;
    SECTION("generate, generate_cached and generate_speculative") {
        GenerationConfig spec = config;
        spec.prompt_lookup_num_tokens = 3;
        const Drafter drafter = prompt_lookup_drafter(false, 1, 2, {tokenizer().eot_id()});
        const std::vector<std::pair<std::string, Generation>> runs = {
            {"generate", generate(model(), tokenizer(), prompt, config, greedy)},
            {"generate_cached", generate_cached(model(), tokenizer(), prompt, config, greedy)},
            {"generate_speculative", generate_speculative(model(), tokenizer(), prompt, spec, drafter)}};
        for (const auto& [loop, out] : runs) {
            INFO(loop);
            CHECK(out.ids == ids);
            CHECK(out.text == without);
        }
    }
    SECTION("beam search, plain and cached") {
        GenerationConfig beams = config;
        beams.num_beams = 2;
        beams.num_return_sequences = 2;
        GenerationConfig kept = beams;
        kept.skip_special_tokens = false;
        for (bool cached : {false, true}) {
            INFO("cached " << cached);
            const auto run = [&](const GenerationConfig& c) {
                return cached ? beam_search_cached(model(), tokenizer(), prompt, c) : beam_search(model(), tokenizer(), prompt, c);
            };
            const std::vector<Hypothesis> with = run(kept), skipped = run(beams);
            REQUIRE(with.size() == skipped.size());
            bool any_eos = false;
            for (size_t i = 0; i < with.size(); ++i) {
                CHECK(skipped[i].ids == with[i].ids);
                std::string expected = with[i].text;  // the kept text with every special name taken out
                for (size_t at; (at = expected.find(name)) != std::string::npos;) expected.erase(at, name.size());
                CHECK(skipped[i].text == expected);
                any_eos = any_eos || with[i].text.find(name) != std::string::npos;
            }
            CHECK(any_eos);  // else this section tests nothing
        }
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
    const std::vector<int> eos{7, 9};
    CHECK(chain.pick(z, {prompt, generated, 2, eos}, 0.5) == 2);  // 2 new tokens < 3: EOS masked
    generated.push_back(2);
    CHECK(chain.pick(z, {prompt, generated, 3, eos}, 0.5) == 7);  // 3 reached: EOS allowed
}

namespace {
// A caller's processor as chapter 09's masks are: every id outside `allowed` gets -inf.
Processor allow_only(std::vector<int> allowed, const std::string& name) {
    return {name, [allowed](xt::xtensor<float, 1>& z, const DecodeContext&) {
                for (size_t i = 0; i < z.size(); ++i)
                    if (std::find(allowed.begin(), allowed.end(), static_cast<int>(i)) == allowed.end()) z(i) = -INFINITY;
            }};
}
bool all_in(const std::vector<int>& ids, const std::vector<int>& allowed) {
    return std::all_of(ids.begin(), ids.end(),
                       [&](int id) { return std::find(allowed.begin(), allowed.end(), id) != allowed.end(); });
}
}  // namespace

TEST_CASE("the distribution a chain draws from: its softmax or all the mass on the argmax", "[generate][sampler]") {
    GenerationConfig c;
    c.do_sample = true;
    c.temperature = 0.7f;
    c.top_k = 3;
    c.repetition_penalty = 1.3f;
    const std::vector<int> prompt{1, 4}, generated{4};
    const DecodeContext context{prompt, generated, 1};
    const xt::xtensor<float, 1> z{0.1f, 2.0f, -1.0f, 0.5f, 1.9f, 0.0f};
    const LogitsChain sampling(c);
    const xt::xtensor<float, 1> p = sampling.distribution(z, context);
    CHECK(bool(p == softmax(sampling.apply(z, context))));  // the same bits: one body
    GenerationConfig no_penalty = c;
    no_penalty.repetition_penalty = 1.0f;
    CHECK(p(4) < LogitsChain(no_penalty).distribution(z, context)(4));  // the penalty did run
    for (double coin = 0.005; coin < 1; coin += 0.01) {
        const int token = sampling.choose(p, coin);
        CHECK(token == sampling.pick(z, context, coin));
        const Draw d = sampling.draw(z, context, coin);
        CHECK(d.token == token);
        CHECK(d.processed == p(static_cast<size_t>(token)));
    }
    c.do_sample = false;
    const LogitsChain greedy_chain(c);
    const xt::xtensor<float, 1> one_hot = greedy_chain.distribution(z, context);
    CHECK(bool(one_hot == xt::xtensor<float, 1>{0, 1, 0, 0, 0, 0}));  // argmax after the penalty: id 1, not 4
    CHECK(greedy_chain.choose(one_hot, 0.99) == 1);
    // ties: the lowest id, as argmax
    CHECK(bool(greedy_chain.distribution(xt::xtensor<float, 1>{3, 5, 5}, DecodeContext{}) == xt::xtensor<float, 1>{0, 1, 0}));
}

TEST_CASE("a tiny temperature samples all but greedily and never gives NaN", "[generate][sampler]") {
    GenerationConfig c;
    c.do_sample = true;
    const float inf = std::numeric_limits<float>::infinity();
    const xt::xtensor<float, 1> z{10.0f, 30.0f, 29.5f, -inf};
    const DecodeContext context{};
    // no overflow: the processed logits are z / T exactly, as Hugging Face divides
    c.temperature = 1e-6f;
    const xt::xtensor<float, 1> divided = LogitsChain(c).apply(z, context);
    for (size_t i = 0; i < 3; ++i) CHECK(divided(i) == z(i) / 1e-6f);
    CHECK(divided(3) == -inf);
    // 30 / 2e-38 overflows a float: plain division would give softmax inf - inf = NaN
    for (float t : {2e-38f, 1e-30f, 5e-4f}) {
        INFO("T = " << t);
        c.temperature = t;
        const xt::xtensor<float, 1> p = LogitsChain(c).distribution(z, context);
        double sum = 0;
        for (float v : p) {
            CHECK(std::isfinite(v));
            sum += v;
        }
        CHECK(sum == Approx(1.0));
        CHECK(p(1) == 1.0f);  // all the mass on the argmax
        CHECK(p(3) == 0.0f);
        for (double coin : {0.0, 0.5, 0.999}) CHECK(LogitsChain(c).pick(z, context, coin) == 1);
    }
    xt::xtensor<float, 1> plain = z;
    apply_temperature(plain, 2e-38f);
    CHECK(std::isinf(plain(1)));  // the case the stable path exists for
    // a tie at the top keeps both, half and half, however small T is
    c.temperature = 2e-38f;
    const xt::xtensor<float, 1> tie = LogitsChain(c).distribution(xt::xtensor<float, 1>{30.0f, 1.0f, 30.0f}, context);
    CHECK(tie(0) == 0.5f);
    CHECK(tie(2) == 0.5f);
}

TEST_CASE("a caller's processor runs first in greedy and sampling and beam search", "[generate][sampler]") {
    GenerationConfig c;
    c.min_new_tokens = 2;
    c.repetition_penalty = 1.2f;
    const Processor only = allow_only({5, 9}, "only(5, 9)");
    // HF's _get_logits_processor puts min_new_tokens after the repetition penalty (chapter 10's orders)
    CHECK(LogitsChain(c, {only}).describe() == "only(5, 9) -> repetition_penalty(1.2) -> min_new_tokens(2) -> argmax");
    c.do_sample = true;
    c.top_k = 50;
    CHECK(LogitsChain(c, {only}).describe() ==
          "only(5, 9) -> repetition_penalty(1.2) -> min_new_tokens(2) -> top_k(50) -> sample");
    c.order = ChainOrder::LlamaCpp;  // everywhere else it comes before the penalties
    CHECK(LogitsChain(c, {only}).describe() ==
          "only(5, 9) -> min_new_tokens(2) -> repetition_penalty(1.2) -> top_k(50) -> sample");
    c.order = ChainOrder::HuggingFace;
    // on the model: every token it chooses is one the processor allows
    const std::vector<int> prompt = tokenizer().encode("The cat");
    const std::vector<int> allowed{262, 11, 13, 290};
    GenerationConfig run;
    run.max_new_tokens = 6;
    for (const bool sample : {false, true}) {
        run.do_sample = sample;
        INFO((sample ? "sampling" : "greedy"));
        const Generation g = generate(model(), tokenizer(), prompt, run, make_sampler(run, 3, nullptr, {allow_only(allowed, "mask")}));
        CHECK(g.ids.size() == 6u);
        CHECK(all_in(g.ids, allowed));
    }
    GenerationConfig beams = run;
    beams.do_sample = false;
    beams.num_beams = 3;
    beams.num_return_sequences = 3;
    const std::vector<int> eos = {model().config().eos_token_id};
    const std::vector<Hypothesis> found = beam_search(model_log_probs(model(), prompt, beams, eos, {allow_only(allowed, "mask")}),
                                                      eos, static_cast<int>(prompt.size()), beams);
    REQUIRE(found.size() == 3u);
    for (const Hypothesis& h : found) CHECK(all_in(h.ids, allowed));
    KvCache cache(model().config(), 3, 32);
    const std::vector<Hypothesis> cached = beam_search(
        cached_log_probs(model(), prompt, beams, eos, cache, {allow_only(allowed, "mask")}), eos,
        static_cast<int>(prompt.size()), beams);
    REQUIRE(cached.size() == 3u);
    for (size_t i = 0; i < 3; ++i) CHECK(cached[i].ids == found[i].ids);
}

TEST_CASE("a step where no token is left names the processor and never says loosen top-p", "[generate][sampler][errors]") {
    GenerationConfig c;
    c.min_new_tokens = 3;
    c.eos_token_id = std::vector<int>{7};
    const std::vector<int> prompt{1}, generated{2};
    const std::vector<int> eos{7};
    const DecodeContext context{prompt, generated, 1, eos};
    const xt::xtensor<float, 1> z = xt::zeros<float>({12});
    // a constraint that allows only EOS, while min_new_tokens still masks it
    for (const bool sample : {false, true}) {
        c.do_sample = sample;
        c.top_p = sample ? 0.9f : 1.0f;
        const LogitsChain chain(c, {allow_only({7}, "only_eos")});
        INFO((sample ? "sampling" : "greedy"));
        try {
            chain.pick(z, context, 0.5);
            FAIL("a chain with no token left picked one");
        } catch (const Error& e) {
            const std::string what = e.what();
            CHECK_THAT(what, Catch::Contains("no token is left after min_new_tokens(3) at step 1 (after only_eos)"));
            CHECK_THAT(what, !Catch::Contains("top_p") && !Catch::Contains("top_k"));
        }
    }
    // a constraint that allows nothing is named as the constraint
    const LogitsChain none(c, {allow_only({}, "dead_state")});
    CHECK_THROWS_WITH(none.distribution(z, context), Catch::Contains("the constraint 'dead_state' allows no token here"));
}

TEST_CASE("append_token is the one step a loop takes for each chosen token", "[generate][append]") {
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size);
    const std::vector<int> prompt = tokenizer().encode("The");
    xt::xtensor<float, 1> logits = xt::zeros<float>({V});
    logits(5) = 2.0f;
    GenerationConfig c;
    c.max_new_tokens = 3;
    GenerationState s(mc, &tokenizer(), prompt, c, check_request(mc, prompt, c));
    CHECK(s.context().step == 0);
    CHECK_FALSE(append_token(s, 5, logits, 1.5));
    REQUIRE(s.out.steps.size() == 1u);
    CHECK(s.out.steps[0].context_length == static_cast<int>(prompt.size()));  // the prompt was fed
    CHECK(s.out.steps[0].logit == 2.0f);
    CHECK(s.out.steps[0].probability == Approx(softmax(logits)(5)));
    CHECK(s.context().step == 1);
    CHECK(s.context().generated.size() == 1u);
    CHECK_THROWS_WITH(append_token(s, mc.vocab_size, logits, 0), Catch::Contains("outside the vocabulary"));
    CHECK(s.out.ids.size() == 1u);  // refused before it was appended
    CHECK_FALSE(append_token(s, 6, logits, 0));
    CHECK(append_token(s, 7, logits, 0) == FinishReason::Length);
    CHECK(s.out.finish_reason == FinishReason::Length);
    CHECK(s.out.stopped_by == "max_new_tokens(3)");
    CHECK(s.out.text == tokenizer().decode({5, 6, 7}));
    // EOS ends with reason eos; a callback's Stop ends with reason callback
    GenerationState e(mc, &tokenizer(), prompt, c, {mc.eos_token_id});
    CHECK(append_token(e, mc.eos_token_id, logits, 0) == FinishReason::Eos);
    GenerationState cb(mc, &tokenizer(), prompt, c, {mc.eos_token_id});
    const StepObserver stop = [](const StepRecord&) { return StepAction::Stop; };
    CHECK(append_token(cb, 5, logits, 0, stop) == FinishReason::Callback);
    CHECK(cb.out.stopped_by == "callback");
    // the last token cuts a UTF-8 character: the end flushes it as U+FFFD
    int lead = -1;
    for (int id = 0; id < mc.vocab_size && lead < 0; ++id)
        if (tokenizer().token_bytes(id) == "\xe2") lead = id;
    REQUIRE(lead >= 0);
    c.max_new_tokens = 1;
    GenerationState cut(mc, &tokenizer(), prompt, c, {mc.eos_token_id});
    CHECK(append_token(cut, lead, logits, 0) == FinishReason::Length);
    CHECK(cut.out.text == "\xef\xbf\xbd");
    CHECK(cut.out.steps.back().text == "\xef\xbf\xbd");
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
    set_knob(c, "temperature", "2e-38");  // HF takes any T > 0: issue 23 lifted the old floor 0.001
    CHECK(c.temperature == 2e-38f);
    set_knob(c, "temperature", "0.0005");
    CHECK(c.temperature == 0.0005f);
    CHECK_FALSE(c.skip_special_tokens);  // HF's decode default: today's text, <|endoftext|> in it
    set_knob(c, "skip-special-tokens", "true");
    CHECK(c.skip_special_tokens);
    CHECK(find_knob("skip_special_tokens").get(c) == "true");

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
    CHECK_THAT(message("temperature", "1e-39"), Catch::Contains("temperature = 1e-39 is invalid: it is too close to 0 for a float"));
    // issue 23: an int knob beyond int names the bound it passes, not only its own rule (which it meets)
    CHECK_THAT(message("top-k", "99999999999"),
               Catch::Contains("top_k = 99999999999 is invalid: it must be at most 2147483647") &&
                   Catch::Contains("fix: pass --top-k with a value >= 0 (0 = off), at most 2147483647"));
    CHECK_THAT(message("max-new-tokens", "1000000000000"),
               Catch::Contains("max_new_tokens = 1000000000000 is invalid: it must be at most 2147483647"));
    CHECK_THAT(message("max-new-tokens", "99999999999999999999999"), Catch::Contains("it must be at most 2147483647"));
    CHECK_THAT(message("min-new-tokens", "-3000000000"), Catch::Contains("it must be at least -2147483648"));
    CHECK_THAT(message("eos-token-id", "5,3000000000"), Catch::Contains("it must be at most 2147483647"));
    CHECK_THAT(message("seed", "18446744073709551616"), Catch::Contains("it must be in [0, 2^64)"));
    CHECK_THAT(message("top-k", "-1"), Catch::Contains("top_k = -1 is invalid: it must be >= 0"));
    CHECK_THAT(message("top-k", "0.7"), Catch::Contains("fix: e.g. --top-k 0"));
    CHECK_THAT(message("order", "ollama"), Catch::Contains("hf, llama.cpp, vllm"));
    CHECK_THAT(message("penalty-scope", "output"), Catch::Contains("prompt_and_output, output_only, last_n"));
    CHECK_THAT(message("do-sample", "yes"), Catch::Contains("true or false"));
    CHECK_THAT(message("skip-special-tokens", "yes"),
               Catch::Contains("--skip-special-tokens needs true or false, got 'yes'"));
    CHECK_THAT(message("eos-token-id", "3,-1"), Catch::Contains("eos_token_id = 3,-1 is invalid"));
    CHECK_THAT(message("top-q", "1"), Catch::Contains("unknown parameter 'top-q'"));
    CHECK(find_knob("top_p").get(c) == find_knob("top_p").get(before));  // a refused value changes nothing

    GenerationConfig lengths;
    lengths.max_new_tokens = 4;
    lengths.min_new_tokens = 5;
    REQUIRE_THROWS_WITH(validate(lengths), Catch::Contains("min_new_tokens (5) exceeds max_new_tokens (4)"));
    // issue 23: beam search does not apply stop strings, so the pair is refused, not ignored
    GenerationConfig beams;
    beams.num_beams = 2;
    CHECK_NOTHROW(validate(beams));
    beams.stop = {"man"};
    REQUIRE_THROWS_WITH(validate(beams), Catch::Contains("stop strings with beam search are not offered") &&
                                             Catch::Contains("fix: drop --stop, or pass --num-beams 1"));
    beams.num_beams = 1;
    CHECK_NOTHROW(validate(beams));
}

TEST_CASE("stop takes escapes or a JSON array and refuses what could never match", "[config][stop]") {
    // issue 23: --stop '\n' was the two characters backslash and n, a stop that never matched
    GenerationConfig c;
    set_knob(c, "stop", "\\n");
    CHECK(c.stop == std::vector<std::string>{"\n"});
    set_knob(c, "stop", "a\\tb\\r\\\\n");
    CHECK(c.stop == std::vector<std::string>{"a\tb\r\\n"});
    set_knob(c, "stop", "[\"User:\", \"\\n--\"]");  // JSON's own escapes
    CHECK(c.stop == std::vector<std::string>{"User:", "\n--"});
    // a command line adds each --stop to the list; a JSON array adds each of its strings
    const Knob& stop = find_knob("stop");
    REQUIRE(stop.repeatable);
    stop.add(c, "x\\n");
    stop.add(c, "[\"y\", \"z\"]");
    CHECK(c.stop == std::vector<std::string>{"User:", "\n--", "x\n", "y", "z"});
    CHECK(stop.get(c) == "[\"User:\",\"\\n--\",\"x\\n\",\"y\",\"z\"]");
    const auto message = [&](const std::string& value) {
        GenerationConfig d;
        try {
            set_knob(d, "stop", value);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    CHECK_THAT(message("\\q"), Catch::Contains("unknown escape \\q") && Catch::Contains("\\n \\t \\r \\\\") &&
                                   Catch::Contains("fix:"));
    CHECK_THAT(message("ab\\"), Catch::Contains("a backslash at its end"));
    CHECK_THAT(message("[\"a\", 1]"), Catch::Contains("is not a JSON array of strings"));
    CHECK_THAT(message(""), Catch::Contains("stop = \"\" is invalid"));
    CHECK_THAT(message("[\"a\", \"\"]"), Catch::Contains("stop = \"\" is invalid"));
    CHECK_THAT(message("\xC3("), Catch::Contains("is not valid UTF-8, so it can never match"));
    CHECK(message("plain text: no escape") == "(no error)");
}

TEST_CASE("every enum spelling parses back to its value", "[config]") {
    for (PenaltyScope s : {PenaltyScope::PromptAndOutput, PenaltyScope::OutputOnly, PenaltyScope::LastN})
        CHECK(parse_penalty_scope(to_string(s)) == s);
    for (ChainOrder o : {ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm})
        CHECK(parse_chain_order(to_string(o)) == o);
    for (StopMatch m : {StopMatch::Earliest, StopMatch::Vllm, StopMatch::ListOrder, StopMatch::TokenOverlap})
        CHECK(parse_stop_match(to_string(m)) == m);
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
          "do_sample true, temperature 0.7, top_k 0, top_p 1, min_p 0, min_tokens_to_keep 1, order hf, seed 42, "
          "typical_p 1, epsilon_cutoff 0, eta_cutoff 0, top_n_sigma -1, xtc_probability 0, xtc_threshold 0.1, "
          "mirostat 0, mirostat_tau 5, mirostat_eta 0.1, dynatemp_range 0, dynatemp_exponent 1");  // chapter 10's
    CHECK(describe(c, {KnobGroup::Penalties}).ends_with(
        "dry_multiplier 0, dry_base 1.75, dry_allowed_length 2, dry_penalty_last_n -1, dry_sequence_breakers "
        "[\"\\n\",\":\",\"\\\"\",\"*\"], logit_bias {}, sequence_bias [], bad_words_ids [], suppress_tokens [], "
        "begin_suppress_tokens []"));
}
