// Chapter 10's knobs and chain: each engine's order with the field's other samplers in it, greedy
// mode keeping the processors and dropping the warpers, the new knobs' ranges and JSON forms, a knob
// refused under an order whose engine lacks it, mirostat at the chain's end, XTC's per-step coin, and
// the binding of DRY's breakers and the knobs' ids to the tokenizer.
//
// The orders are the engines' code (cited in lib/src/decoding/sampler.cpp, kOrders):
//   hf         transformers src/transformers/generation/utils.py _get_logits_processor (000034a44ef8)
//   llama.cpp  common/sampling.cpp common_sampler_init + common/common.h `samplers` (00efb3e18426)
//   vllm       vllm/v1/sample/sampler.py Sampler.forward + logits_processor BUILTIN_LOGITS_PROCESSORS (02a6b06222ab)
// so the describe() strings below are those lists written out by hand, not the chain's own output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::tokenizer;

namespace {

// Every chapter-10 knob an engine has, on, with the classic ones, for `order`.
GenerationConfig everything_on(ChainOrder order) {
    GenerationConfig c;
    c.order = order;
    c.do_sample = true;
    c.temperature = 0.7f;
    c.top_k = 40;
    c.top_p = 0.9f;
    c.min_p = 0.05f;
    c.min_new_tokens = 2;
    c.repetition_penalty = 1.1f;
    c.presence_penalty = 0.5f;
    c.logit_bias = {{13, -100.0f}};
    if (order == ChainOrder::HuggingFace) {
        c.typical_p = 0.9f;
        c.epsilon_cutoff = 3e-4f;
        c.eta_cutoff = 3e-4f;
        c.sequence_bias = {{{464, 3290}, -5.0f}};
        c.bad_words_ids = {{464, 3290}};
        c.suppress_tokens = {13};
        c.begin_suppress_tokens = {198};
    } else if (order == ChainOrder::LlamaCpp) {
        c.penalty_scope = PenaltyScope::LastN;
        c.typical_p = 0.9f;
        c.top_n_sigma = 1.0f;
        c.xtc_probability = 0.5f;
        c.dry_multiplier = 0.8f;
        c.dynatemp_range = 0.5f;
        c.dry_breaker_ids = std::make_shared<const std::vector<std::vector<int>>>(std::vector<std::vector<int>>{{198}});
    } else {
        c.bad_words_ids = {{464, 3290}};
    }
    return c;
}

// Two logits vectors equal element by element (-inf equals -inf).
bool same(const xt::xtensor<float, 1>& a, const xt::xtensor<float, 1>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!(a(i) == b(i))) return false;
    return true;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("each engine's order with every chapter-10 sampler on", "[chain10][sampler]") {
    CHECK(LogitsChain(everything_on(ChainOrder::HuggingFace)).describe() ==
          "sequence_bias(13:-100, 464 3290:-5) -> repetition_penalty(1.1) -> presence_frequency(0.5, 0) -> "
          "bad_words(464 3290) -> min_new_tokens(2) -> suppress_tokens(13) -> begin_suppress_tokens(198) -> "
          "temperature(0.7) -> top_k(40) -> top_p(0.9) -> min_p(0.05) -> typical_p(0.9) -> epsilon_cutoff(0.0003) -> "
          "eta_cutoff(0.0003) -> sample");
    CHECK(LogitsChain(everything_on(ChainOrder::LlamaCpp)).describe() ==
          "logit_bias(13:-100) -> min_new_tokens(2) -> repetition_penalty(1.1, last_n=64) -> presence_frequency(0.5, 0) -> "
          "dry(0.8, 1.75, 2, -1) -> top_n_sigma(1) -> top_k(40) -> typical_p(0.9) -> top_p(0.9) -> min_p(0.05) -> "
          "xtc(0.5, 0.1) -> dynatemp(0.7, 0.5, 1) -> sample");
    CHECK(LogitsChain(everything_on(ChainOrder::Vllm)).describe() ==
          "bad_words(464 3290) -> min_new_tokens(2) -> logit_bias(13:-100) -> repetition_penalty(1.1) -> "
          "presence_frequency(0.5, 0) -> temperature(0.7) -> min_p(0.05) -> top_k(40) -> top_p(0.9) -> sample");
    // HF has no presence/frequency penalty: ours sits beside repetition; llama.cpp's penalties are one
    // sampler (repeat, freq, present), then DRY
}

TEST_CASE("greedy mode keeps the processors and drops the warpers", "[chain10][sampler]") {
    for (const ChainOrder order : {ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm}) {
        GenerationConfig c = everything_on(order);
        c.do_sample = false;
        INFO(to_string(order));
        const std::string greedy = LogitsChain(c).describe();
        const std::string sampled = LogitsChain(everything_on(order)).describe();
        // the greedy chain is the sampled one cut before its first warper
        const size_t cut = std::min({sampled.find("temperature("), sampled.find("top_n_sigma("), sampled.find("dynatemp(")});
        CHECK(greedy == sampled.substr(0, cut) + "argmax");
        CHECK((greedy.find("bad_words") != std::string::npos || order == ChainOrder::LlamaCpp));
    }
    GenerationConfig c = everything_on(ChainOrder::LlamaCpp);
    c.do_sample = false;
    CHECK(LogitsChain(c).describe() ==
          "logit_bias(13:-100) -> min_new_tokens(2) -> repetition_penalty(1.1, last_n=64) -> presence_frequency(0.5, 0) -> "
          "dry(0.8, 1.75, 2, -1) -> argmax");
}

// Issue 42: llama.cpp has no greedy shortcut. common_sampler_init (common/sampling.cpp, 00efb3e18426)
// builds the same chain at every temperature and ends it in `dist`; at temperature 0
// llama_sampler_temp_impl keeps the largest logit the earlier samplers left, and temp_ext with a
// range > 0 divides by a temperature in [0, range]. So typical-p and XTC can remove the argmax, and
// dynamic temperature samples. Worked by hand: p = (0.5, 0.21, 0.19, 0.025 x 4) has entropy 1.360
// nats; the surprises' distances to it are 0.67, 0.20, 0.30, 2.33, so typical-p 0.3 keeps ids 1 and 2
// (0.21 + 0.19 = 0.40 > 0.3) and temperature 0 then takes id 1; XTC (probability 1, threshold 0.1)
// on (0.5, 0.3, 0.2) removes every token above the threshold but the least likely, id 2.
TEST_CASE("temperature 0 under llama.cpp's order runs the whole chain as common_sampler_init does", "[chain10][sampler]") {
    const std::vector<int> prompt{0}, none{};
    const DecodeContext context{prompt, none, 0, {}};
    const auto logs = [](std::initializer_list<double> p) {
        xt::xtensor<float, 1> z = xt::zeros<float>({p.size()});
        size_t i = 0;
        for (double v : p) z(i++) = static_cast<float>(std::log(v));
        return z;
    };
    GenerationConfig typical;
    typical.order = ChainOrder::LlamaCpp;
    typical.do_sample = true;
    typical.temperature = 0.0f;
    typical.typical_p = 0.3f;
    const xt::xtensor<float, 1> peaked = logs({0.5, 0.21, 0.19, 0.025, 0.025, 0.025, 0.025});
    CHECK(LogitsChain(typical).describe() == "typical_p(0.3) -> temperature(0) -> argmax");
    CHECK(LogitsChain(typical).pick(peaked, context, 0.0) == 1);
    GenerationConfig hf = typical;  // HF's greedy search skips its warpers: the argmax of the logits
    hf.order = ChainOrder::HuggingFace;
    CHECK(LogitsChain(hf).describe() == "argmax");
    CHECK(LogitsChain(hf).pick(peaked, context, 0.0) == 0);

    GenerationConfig xtc;
    xtc.order = ChainOrder::LlamaCpp;
    xtc.do_sample = true;
    xtc.temperature = 0.0f;
    xtc.xtc_probability = 1.0f;
    xtc.xtc_threshold = 0.1f;
    CHECK(LogitsChain(xtc).pick(logs({0.5, 0.3, 0.2}), context, 0.0) == 2);

    GenerationConfig dynamic;  // T in [0, 1] by the normalised entropy: 1 for a uniform distribution
    dynamic.order = ChainOrder::LlamaCpp;
    dynamic.do_sample = true;
    dynamic.temperature = 0.0f;
    dynamic.dynatemp_range = 1.0f;
    const LogitsChain uniform(dynamic);
    CHECK(uniform.describe() == "dynatemp(0, 1, 1) -> sample");
    const xt::xtensor<float, 1> flat = xt::zeros<float>({4});
    CHECK(uniform.pick(flat, context, 0.1) == 0);
    CHECK(uniform.pick(flat, context, 0.9) == 3);
    // a confident step: entropy near 0, so T near 0, and the largest logit takes the whole mass
    CHECK(uniform.pick(xt::xtensor<float, 1>{0, 0, 30, 0}, context, 0.99) == 2);

    GenerationConfig greedy = typical;  // do_sample false is greedy search under every order
    greedy.do_sample = false;
    CHECK(LogitsChain(greedy).describe() == "argmax");
    CHECK(LogitsChain(greedy).pick(peaked, context, 0.0) == 0);
}

TEST_CASE("mirostat ends llama.cpp's mirostat chain", "[chain10][sampler][mirostat]") {
    GenerationConfig c;
    c.order = ChainOrder::LlamaCpp;
    c.do_sample = true;
    c.mirostat = 2;
    c.temperature = 0.7f;
    c.logit_bias = {{13, -100.0f}};
    c.min_new_tokens = 2;
    const LogitsChain chain(c);
    // common_sampler_init: logit_bias, temp, mirostat_v2 (min_new_tokens is ours, before the warpers)
    CHECK(chain.describe() == "logit_bias(13:-100) -> min_new_tokens(2) -> temperature(0.7) -> mirostat_v2(tau=5, eta=0.1)");
    CHECK(chain.end().stateful());
    CHECK(chain.end().name() == "mirostat_v2(tau=5, eta=0.1)");
    c.mirostat = 1;
    c.mirostat_tau = 3.0f;
    CHECK(LogitsChain(c).describe() == "logit_bias(13:-100) -> min_new_tokens(2) -> temperature(0.7) -> mirostat(tau=3, eta=0.1)");
    // its distribution depends on mu: refused, not guessed
    const std::vector<int> prompt{1}, generated{};
    const DecodeContext context{prompt, generated, 0, {}};
    const xt::xtensor<float, 1> z = xt::zeros<float>({32});
    CHECK_THAT(error_of([&] { (void)chain.distribution(z, context); }), Catch::Contains("mirostat truncates by its mu"));
    CHECK_THAT(error_of([&] { (void)chain.choose(z, 0.5); }), Catch::Contains("mirostat truncates by its mu"));
    CHECK_THAT(error_of([&] { (void)chain.draw(z, context, 0.5); }), Catch::Contains("record the steps with make_watched_sampler"));
}

TEST_CASE("a watched mirostat sampler records where each coin fell in mu's truncation", "[chain10][sampler][mirostat]") {
    for (const int version : {1, 2}) {
        GenerationConfig c;
        c.order = ChainOrder::LlamaCpp;
        c.do_sample = true;
        c.mirostat = version;
        c.mirostat_tau = 2.0f;
        const xt::xtensor<float, 1> logits{3.0f, 2.5f, 1.0f, 0.5f, 0.0f, -1.0f, -2.0f, -4.0f};
        const std::vector<int> prompt{0};
        std::vector<int> plain, watched;
        std::vector<Draw> seen;
        const Sampler s = make_sampler(c, 3);
        const Sampler w = make_watched_sampler(c, 3, seen);
        for (int step = 0; step < 30; ++step) {
            plain.push_back(s(logits, DecodeContext{prompt, plain, step, {}}));
            watched.push_back(w(logits, DecodeContext{prompt, watched, step, {}}));
        }
        INFO("mirostat " << version);
        CHECK(watched == plain);  // watching changes nothing: the same coins, the same mu
        REQUIRE(seen.size() == 30u);
        // by hand: mu from 2 tau, the same coins; each slice holds its coin, draws its token at both
        // ends, and its width is the token's share of the truncation (1 when one token is left)
        Rng rng(3);
        double mu = 2.0 * c.mirostat_tau;
        for (const Draw& d : seen) {
            const double coin = rng.coin();
            CHECK(d.coin == coin);
            CHECK(d.from <= d.coin);
            CHECK(d.coin < d.to);
            CHECK(d.processed == Approx(d.to - d.from));
            CHECK_FALSE(d.greedy);
            double probe = mu;
            CHECK((version == 1 ? mirostat_v1_step(logits, c.mirostat_tau, c.mirostat_eta, 100, probe, d.from)
                                : mirostat_v2_step(logits, c.mirostat_tau, c.mirostat_eta, probe, d.from)) == d.token);
            const int drawn = version == 1 ? mirostat_v1_step(logits, c.mirostat_tau, c.mirostat_eta, 100, mu, coin)
                                           : mirostat_v2_step(logits, c.mirostat_tau, c.mirostat_eta, mu, coin);
            CHECK(drawn == d.token);
        }
    }
}

TEST_CASE("make_sampler keeps mirostat's mu from 2 tau and draws one coin per step", "[chain10][sampler][mirostat]") {
    GenerationConfig c;
    c.order = ChainOrder::LlamaCpp;
    c.do_sample = true;
    c.mirostat = 2;
    c.temperature = 0.8f;
    // the same steps by hand: mirostat_v2_step on the chain's logits with mu from 2 tau and coin i of Rng(seed)
    const xt::xtensor<float, 1> logits{3.0f, 2.5f, 1.0f, 0.5f, 0.0f, -1.0f, -2.0f, -4.0f};
    const std::vector<int> prompt{0};
    std::vector<int> generated;
    const Sampler s = make_sampler(c, 11);
    Rng rng(11);
    double mu = 2.0 * c.mirostat_tau;
    std::vector<int> hand;
    for (int step = 0; step < 20; ++step) {
        const DecodeContext context{prompt, generated, step, {}};
        xt::xtensor<float, 1> z = logits;
        for (float& v : z) v /= c.temperature;
        hand.push_back(mirostat_v2_step(z, c.mirostat_tau, c.mirostat_eta, mu, rng.coin()));
        generated.push_back(s(logits, context));
    }
    CHECK(generated == hand);
}

TEST_CASE("mirostat is refused with what its chain would ignore and with beams or a drafter", "[chain10][mirostat][errors]") {
    GenerationConfig base;
    base.order = ChainOrder::LlamaCpp;
    base.do_sample = true;
    base.mirostat = 2;
    validate(base);
    struct Case {
        std::function<void(GenerationConfig&)> change;
        std::string problem, fix;
    };
    const Case cases[] = {
        {[](GenerationConfig& c) { c.top_k = 40; }, "top_k = 40 has no effect with mirostat = 2", "drop --top-k (or pass --top-k 0), or drop --mirostat"},
        {[](GenerationConfig& c) { c.top_p = 0.9f; }, "top_p = 0.9 has no effect with mirostat = 2", "drop --top-p"},
        {[](GenerationConfig& c) { c.min_p = 0.1f; }, "min_p = 0.1 has no effect", "drop --min-p"},
        {[](GenerationConfig& c) { c.typical_p = 0.5f; }, "typical_p = 0.5 has no effect", "drop --typical-p"},
        {[](GenerationConfig& c) { c.top_n_sigma = 1; }, "top_n_sigma = 1 has no effect", "drop --top-n-sigma"},
        {[](GenerationConfig& c) { c.xtc_probability = 0.5f; }, "xtc_probability = 0.5 has no effect", "drop --xtc-probability"},
        {[](GenerationConfig& c) { c.dry_multiplier = 0.8f; }, "dry_multiplier = 0.8 has no effect", "drop --dry-multiplier"},
        {[](GenerationConfig& c) { c.repetition_penalty = 1.3f; }, "repetition_penalty = 1.3 has no effect", "drop --repetition-penalty"},
        {[](GenerationConfig& c) { c.presence_penalty = 1; }, "presence_penalty = 1 has no effect", "drop --presence-penalty"},
        {[](GenerationConfig& c) { c.frequency_penalty = 1; }, "frequency_penalty = 1 has no effect", "drop --frequency-penalty"},
        {[](GenerationConfig& c) { c.no_repeat_ngram_size = 3; }, "no_repeat_ngram_size = 3 has no effect", "drop --no-repeat-ngram-size"},
        {[](GenerationConfig& c) { c.dynatemp_range = 0.5f; }, "dynatemp_range = 0.5 has no effect", "drop --dynatemp-range"},
        {[](GenerationConfig& c) { c.prompt_lookup_num_tokens = 4; }, "mirostat = 2 with speculative decoding", "drop --prompt-lookup-num-tokens"},
        {[](GenerationConfig& c) { c.do_sample = false; }, "mirostat = 2 with do_sample false", "drop --do-sample false"},
        {[](GenerationConfig& c) { c.temperature = 0; }, "mirostat = 2 with temperature 0", "--temperature > 0"},
        {[](GenerationConfig& c) { c.order = ChainOrder::HuggingFace; }, "mirostat = 2 is llama.cpp's sampler, and --order is hf",
         "add --order llama.cpp, or drop --mirostat"},
    };
    for (const Case& k : cases) {
        GenerationConfig c = base;
        k.change(c);
        const std::string what = error_of([&] { validate(c); });
        INFO(what);
        CHECK_THAT(what, Catch::Contains(k.problem));
        CHECK_THAT(what, Catch::Contains(k.fix));
    }
    GenerationConfig beams = base;  // beams: mirostat's own refusal comes before "beam search with sampling"
    beams.num_beams = 2;
    CHECK_THAT(error_of([&] { validate(beams); }), Catch::Contains("mirostat = 2 with beam search"));
    GenerationConfig drafted = base;  // a draft model is known only where the drafter is made
    CHECK_THAT(error_of([&] { (void)make_drafter(drafted, &model(), {}, 64); }),
               Catch::Contains("mirostat = 2 with speculative decoding is not offered"));
}

TEST_CASE("mirostat with beams or prompt lookup under another order is refused for the loop and not sent to --order", "[chain10][mirostat][errors]") {
    GenerationConfig base;  // --order hf: mirostat alone would be told to add --order llama.cpp
    base.do_sample = true;
    base.mirostat = 2;
    CHECK_THAT(error_of([&] { validate(base); }), Catch::Contains("add --order llama.cpp"));
    GenerationConfig lookup = base;  // no order fixes these: the loop's refusal comes first
    lookup.prompt_lookup_num_tokens = 3;
    const std::string looked = error_of([&] { validate(lookup); });
    CHECK_THAT(looked, Catch::Contains("mirostat = 2 with speculative decoding"));
    CHECK_THAT(looked, !Catch::Contains("--order"));
    GenerationConfig beams = base;
    beams.num_beams = 2;
    const std::string beamed = error_of([&] { validate(beams); });
    CHECK_THAT(beamed, Catch::Contains("mirostat = 2 with beam search"));
    CHECK_THAT(beamed, !Catch::Contains("--order"));
}

TEST_CASE("a chapter-10 knob under an order whose engine lacks it is refused naming the orders that have it", "[chain10][errors]") {
    struct Case {
        std::function<void(GenerationConfig&)> set;
        ChainOrder order;
        std::string problem, fix;
    };
    const Case cases[] = {
        {[](GenerationConfig& c) { c.dry_multiplier = 0.8f; }, ChainOrder::HuggingFace,
         "dry_multiplier = 0.8 is llama.cpp's sampler, and --order is hf", "add --order llama.cpp, or drop --dry-multiplier"},
        {[](GenerationConfig& c) { c.typical_p = 0.9f; }, ChainOrder::Vllm,
         "typical_p = 0.9 is a sampler of hf and llama.cpp, and --order is vllm",
         "add --order hf or --order llama.cpp, or drop --typical-p"},
        {[](GenerationConfig& c) { c.epsilon_cutoff = 3e-4f; }, ChainOrder::LlamaCpp, "epsilon_cutoff = 0.0003 is hf's sampler",
         "add --order hf"},
        {[](GenerationConfig& c) { c.eta_cutoff = 3e-4f; }, ChainOrder::Vllm, "eta_cutoff = 0.0003 is hf's sampler", "add --order hf"},
        {[](GenerationConfig& c) { c.top_n_sigma = 1; }, ChainOrder::HuggingFace, "top_n_sigma = 1 is llama.cpp's sampler",
         "add --order llama.cpp"},
        {[](GenerationConfig& c) { c.xtc_probability = 0.5f; }, ChainOrder::Vllm, "xtc_probability = 0.5 is llama.cpp's",
         "add --order llama.cpp"},
        {[](GenerationConfig& c) { c.dynatemp_range = 0.5f; }, ChainOrder::HuggingFace, "dynatemp_range = 0.5 is llama.cpp's",
         "add --order llama.cpp"},
        {[](GenerationConfig& c) { c.sequence_bias = {{{1, 2}, 1.0f}}; }, ChainOrder::LlamaCpp,
         "sequence_bias = [[[1,2],1.0]] is hf's sampler", "add --order hf"},
        {[](GenerationConfig& c) { c.bad_words_ids = {{1, 2}}; }, ChainOrder::LlamaCpp,
         "bad_words_ids = [[1,2]] is a sampler of hf and vllm", "add --order hf or --order vllm"},
        {[](GenerationConfig& c) { c.suppress_tokens = {5}; }, ChainOrder::Vllm, "suppress_tokens = [5] is hf's", "add --order hf"},
        {[](GenerationConfig& c) { c.begin_suppress_tokens = {5}; }, ChainOrder::LlamaCpp, "begin_suppress_tokens = [5] is hf's",
         "add --order hf"},
    };
    for (const Case& k : cases) {
        GenerationConfig c;
        c.do_sample = true;
        c.order = k.order;
        k.set(c);
        const std::string what = error_of([&] { validate(c); });
        INFO(what);
        CHECK_THAT(what, Catch::Contains(k.problem));
        CHECK_THAT(what, Catch::Contains(k.fix));
    }
    // logit_bias is in every engine: HF runs it as a sequence_bias of one token
    for (const ChainOrder order : {ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm}) {
        GenerationConfig c;
        c.order = order;
        c.logit_bias = {{2, 5.0f}, {3, -INFINITY}};
        const std::vector<int> prompt{0}, generated{};
        const xt::xtensor<float, 1> z = LogitsChain(c).apply(xt::zeros<float>({6}), DecodeContext{prompt, generated, 0, {}});
        CHECK(same(z, xt::xtensor<float, 1>{0, 0, 5, -INFINITY, 0, 0}));
    }
}

TEST_CASE("each new knob's bad values name the knob the value and the range", "[chain10][knobs][errors]") {
    struct Bad {
        std::string knob, value, message;
    };
    const Bad cases[] = {
        {"typical-p", "1.5", "typical_p = 1.5 is invalid: it must be in (0, 1] (1 = off)"},
        {"typical-p", "0", "typical_p = 0 is invalid: it must be in (0, 1] (1 = off)"},
        {"epsilon-cutoff", "1", "epsilon_cutoff = 1 is invalid: it must be in [0, 1) (0 = off)"},
        {"eta-cutoff", "-0.1", "eta_cutoff = -0.1 is invalid: it must be in [0, 1) (0 = off)"},
        {"top-n-sigma", "nan", "top_n_sigma = nan is invalid: it must be a number; <= 0 = off (llama.cpp's -1)"},
        {"xtc-probability", "1.5", "xtc_probability = 1.5 is invalid: it must be in [0, 1] (0 = off)"},
        {"xtc-threshold", "-1", "xtc_threshold = -1 is invalid: it must be in [0, 1]; above 0.5 XTC is off"},
        {"mirostat", "3", "mirostat = 3 is invalid: it must be 0, 1 or 2 (0 = off)"},
        {"mirostat-tau", "0", "mirostat_tau = 0 is invalid: it must be > 0"},
        {"mirostat-eta", "-1", "mirostat_eta = -1 is invalid: it must be > 0"},
        {"dynatemp-range", "-0.5", "dynatemp_range = -0.5 is invalid: it must be >= 0 (0 = off)"},
        {"dynatemp-exponent", "0", "dynatemp_exponent = 0 is invalid: it must be > 0"},
        {"dry-multiplier", "-1", "dry_multiplier = -1 is invalid: it must be >= 0 (0 = off)"},
        {"dry-base", "0.5", "dry_base = 0.5 is invalid: it must be >= 1"},
        {"dry-allowed-length", "-1", "dry_allowed_length = -1 is invalid: it must be >= 0"},
        {"dry-penalty-last-n", "-2", "dry_penalty_last_n = -2 is invalid: it must be >= -1 (-1 = all, 0 = off)"},
        {"dry-sequence-breakers", "[\"\"]", "dry_sequence_breakers = \"\" is invalid"},
        {"dry-sequence-breakers", "\\q", "dry_sequence_breakers = \\q has the unknown escape \\q"},
        {"dry-sequence-breakers", std::string(41, 'x'), "dry_sequence_breakers = \"" + std::string(41, 'x') +
                                                            "\" is invalid: it must be non-empty text of at most 40 bytes"},
        {"logit-bias", "5:101", "logit_bias = 5:101 is invalid: it must be ID:BIAS with ID >= 0 and BIAS in [-100, 100]"},
        {"logit-bias", "5", "logit_bias = 5 is invalid"},
        {"logit-bias", "-1:5", "logit_bias = -1:5 is invalid"},
        {"logit-bias", "5:abc", "--logit-bias needs a number, got 'abc'"},
        {"logit-bias", "{\"5\": 200}", "logit_bias = 200 is invalid"},
        {"sequence-bias", ":5", "sequence_bias = \"\" is invalid"},
        {"sequence-bias", "1 2:inf", "sequence_bias = inf is invalid: it is beyond a float's range"},
        {"bad-words-ids", "[[]]", "bad_words_ids = [] is invalid"},
        {"bad-words-ids", "1 x", "--bad-words-ids needs a whole number, got 'x'"},
        {"suppress-tokens", "-3", "suppress_tokens = -3 is invalid: it must be ID >= 0"},
        {"begin-suppress-tokens", "[1, \"a\"]", "--begin-suppress-tokens needs a whole number, got 'a'"},
    };
    for (const Bad& b : cases) {
        GenerationConfig c;
        INFO(b.knob << " " << b.value);
        const Knob& k = find_knob(b.knob);
        const std::string what = error_of([&] { k.repeatable ? k.add(c, b.value) : set_knob(c, b.knob, b.value); });
        CHECK_THAT(what, Catch::Contains(b.message));
        CHECK(describe(c) == describe(GenerationConfig{}));  // nothing was kept
    }
}

TEST_CASE("the list knobs take the engines' JSON forms and one value per flag", "[chain10][knobs]") {
    GenerationConfig c;
    set_knob(c, "logit_bias", "{\"50\": -100, \"7\": 2.5}");  // OpenAI's and vLLM's form
    CHECK(c.logit_bias == std::vector<std::pair<int, float>>{{50, -100.0f}, {7, 2.5f}});
    set_knob(c, "logit_bias", "[[50, \"-inf\"], [7, 1]]");  // llama.cpp's list; -inf as text
    CHECK(c.logit_bias == std::vector<std::pair<int, float>>{{50, -INFINITY}, {7, 1.0f}});
    CHECK(find_knob("logit_bias").get(c) == "{\"50\":\"-inf\",\"7\":1.0}");
    set_knob(c, "sequence_bias", "[[[464, 3290], -5], [[13], 2]]");  // HF's list of [sequence, bias]
    CHECK(c.sequence_bias == std::vector<std::pair<std::vector<int>, float>>{{{464, 3290}, -5.0f}, {{13}, 2.0f}});
    set_knob(c, "bad_words_ids", "[[464, 3290], [13]]");
    CHECK(c.bad_words_ids == std::vector<std::vector<int>>{{464, 3290}, {13}});
    set_knob(c, "suppress_tokens", "[13, 14]");
    CHECK(c.suppress_tokens == std::vector<int>{13, 14});
    set_knob(c, "begin_suppress_tokens", "[198]");
    CHECK(c.begin_suppress_tokens == std::vector<int>{198});
    set_knob(c, "dry_sequence_breakers", "[\"\\n\", \":\"]");
    CHECK(c.dry_sequence_breakers == std::vector<std::string>{"\n", ":"});
    // what --show-config prints, set reads back
    for (const char* name : {"logit_bias", "sequence_bias", "bad_words_ids", "suppress_tokens", "begin_suppress_tokens",
                             "dry_sequence_breakers"}) {
        GenerationConfig back;
        set_knob(back, name, find_knob(name).get(c));
        CHECK(find_knob(name).get(back) == find_knob(name).get(c));
    }
    // the flag forms: each adds one entry
    GenerationConfig f;
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"logit-bias", "50256:-100"}, {"logit-bias", "13:-inf"}, {"sequence-bias", "464 3290:-5"},
             {"bad-words-ids", "464 3290"}, {"bad-words-ids", "13"}, {"suppress-tokens", "13"},
             {"begin-suppress-tokens", "198"}}) {
        find_knob(name).add(f, value);
    }
    CHECK(f.logit_bias == std::vector<std::pair<int, float>>{{50256, -100.0f}, {13, -INFINITY}});
    CHECK(f.sequence_bias == std::vector<std::pair<std::vector<int>, float>>{{{464, 3290}, -5.0f}});
    CHECK(f.bad_words_ids == std::vector<std::vector<int>>{{464, 3290}, {13}});
    CHECK(f.suppress_tokens == std::vector<int>{13});
    CHECK(f.begin_suppress_tokens == std::vector<int>{198});
    // the breakers' escapes are --stop's; the command line starts from an empty list ("[]"), so the
    // first --dry-sequence-breakers replaces llama.cpp's defaults, as its --dry-sequence-breaker does
    GenerationConfig b;
    CHECK(b.dry_sequence_breakers == std::vector<std::string>{"\n", ":", "\"", "*"});
    const Knob& breakers = find_knob("dry-sequence-breakers");
    breakers.set(b, "[]");
    breakers.add(b, "\\n");
    breakers.add(b, "User:");
    CHECK(b.dry_sequence_breakers == std::vector<std::string>{"\n", "User:"});
    CHECK(describe(b, {KnobGroup::Penalties}).find("dry_sequence_breakers [\"\\n\",\"User:\"]") != std::string::npos);
    // the chapter-10 sampling knobs turn sampling on, the biases and DRY do not (HF's processors)
    for (const char* name : {"typical_p", "epsilon_cutoff", "eta_cutoff", "top_n_sigma", "xtc_probability", "mirostat",
                             "dynatemp_range"})
        CHECK(find_knob(name).implies_sampling);
    for (const char* name : {"dry_multiplier", "logit_bias", "sequence_bias", "bad_words_ids", "suppress_tokens"})
        CHECK_FALSE(find_knob(name).implies_sampling);
}

TEST_CASE("begin_suppress_tokens applies at the first new token only", "[chain10][sampler]") {
    GenerationConfig c;
    c.begin_suppress_tokens = {1, 2};
    c.suppress_tokens = {4};
    const LogitsChain chain(c);
    const std::vector<int> prompt{0, 0, 0}, none{}, one{3};
    const xt::xtensor<float, 1> z = xt::zeros<float>({6});
    // HF's begin_index is the prompt's length (decoder-only): step 0 of the output
    CHECK(same(chain.apply(z, DecodeContext{prompt, none, 0, {}}), xt::xtensor<float, 1>{0, -INFINITY, -INFINITY, 0, -INFINITY, 0}));
    CHECK(same(chain.apply(z, DecodeContext{prompt, one, 1, {}}), xt::xtensor<float, 1>{0, 0, 0, 0, -INFINITY, 0}));
}

// Issue 42: banning every id named each of them, twice: an 18 KB message for 2048 ids.
TEST_CASE("a chain that bans every token names the processor and how many ids it lists", "[chain10][sampler][errors]") {
    constexpr int V = 2048;
    GenerationConfig suppress;
    GenerationConfig bias;
    for (int id = 0; id < V; ++id) {
        suppress.suppress_tokens.push_back(id);
        bias.logit_bias.push_back({id, -INFINITY});
    }
    const std::vector<int> prompt{0}, none{};
    const DecodeContext context{prompt, none, 0, {}};
    const xt::xtensor<float, 1> z = xt::zeros<float>({static_cast<size_t>(V)});
    const std::string all_suppressed = error_of([&] { (void)LogitsChain(suppress).apply(z, context); });
    INFO(all_suppressed.substr(0, 400));
    CHECK_THAT(all_suppressed, Catch::StartsWith("no token is left after suppress_tokens(2048 ids) at step 0"));
    CHECK(all_suppressed.size() < 300);
    const std::string all_biased = error_of([&] { (void)LogitsChain(bias).apply(z, context); });
    INFO(all_biased.substr(0, 400));
    CHECK_THAT(all_biased, Catch::StartsWith("no token is left after sequence_bias(2048 entries) at step 0"));  // hf's order
    CHECK(all_biased.size() < 300);
    GenerationConfig few;  // a short list is still written out
    few.suppress_tokens = {0, 1, 2};
    CHECK_THAT(error_of([&] { (void)LogitsChain(few).apply(xt::xtensor<float, 1>{0, 0, 0}, context); }),
               Catch::StartsWith("no token is left after suppress_tokens(0 1 2) at step 0"));
}

TEST_CASE("XTC's coin is a pure function of the seed and the step", "[chain10][sampler][xtc]") {
    GenerationConfig c;
    c.order = ChainOrder::LlamaCpp;
    c.do_sample = true;
    c.xtc_probability = 0.5f;
    c.xtc_threshold = 0.1f;
    c.seed = 1234;
    const LogitsChain chain(c);
    const xt::xtensor<float, 1> z{2.0f, 1.8f, 1.5f, 0.0f, -1.0f};  // three tokens above p = 0.1
    const std::vector<int> prompt{0}, history_a{1, 2, 3}, history_b{4, 4, 0};
    int removed = 0, kept = 0;
    for (int step = 0; step < 40; ++step) {
        // two runs that reached the same step by different tokens see the same coin
        const xt::xtensor<float, 1> a = chain.apply(z, DecodeContext{prompt, history_a, step, {}});
        const xt::xtensor<float, 1> b = chain.apply(z, DecodeContext{prompt, history_b, step, {}});
        CHECK(same(a, b));
        xt::xtensor<float, 1> expected = z;
        apply_xtc(expected, c.xtc_probability, c.xtc_threshold, c.min_tokens_to_keep, xtc_coin(c.seed, step));
        CHECK(same(a, expected));
        (std::isinf(a(0)) ? removed : kept) += 1;
    }
    CHECK(removed > 0);  // the coin decides: both outcomes happen over 40 steps at probability 0.5
    CHECK(kept > 0);
}

TEST_CASE("seeded runs with the chapter-10 samplers repeat exactly", "[chain10][generate]") {
    const std::vector<int> prompt = tokenizer().encode("The best way to");
    GenerationConfig c;
    c.max_new_tokens = 16;
    c.order = ChainOrder::LlamaCpp;
    c.do_sample = true;
    c.typical_p = 0.95f;
    c.top_n_sigma = 2.0f;
    c.xtc_probability = 0.5f;
    c.dry_multiplier = 0.8f;
    c.dynatemp_range = 0.3f;
    GenerationConfig miro;
    miro.max_new_tokens = 16;
    miro.order = ChainOrder::LlamaCpp;
    miro.do_sample = true;
    miro.mirostat = 2;
    GenerationConfig hf;
    hf.max_new_tokens = 16;
    hf.do_sample = true;
    hf.typical_p = 0.9f;
    hf.epsilon_cutoff = 3e-4f;
    hf.eta_cutoff = 3e-4f;
    for (GenerationConfig config : {c, miro, hf}) {
        bind_to_tokenizer(config, tokenizer(), {model().config().eos_token_id});
        INFO(LogitsChain(config).describe());
        const Generation a = generate(model(), tokenizer(), prompt, config, make_sampler(config, 5));
        const Generation b = generate(model(), tokenizer(), prompt, config, make_sampler(config, 5));
        CHECK(a.ids == b.ids);
        CHECK(!a.ids.empty());
        bool differs = false;  // and the seed matters
        for (uint64_t seed : {6, 7, 8}) differs = differs || generate(model(), tokenizer(), prompt, config, make_sampler(config, seed)).ids != a.ids;
        CHECK(differs);
    }
}

TEST_CASE("bind_to_tokenizer checks the ids the knobs name and binds DRY's breakers", "[chain10][bind][errors]") {
    const int vocab = tokenizer().vocab_size();
    struct Case {
        std::function<void(GenerationConfig&)> set;
        std::string knob;
    };
    const Case cases[] = {
        {[&](GenerationConfig& c) { c.logit_bias = {{1, 1.0f}, {vocab, 1.0f}}; }, "logit_bias"},
        {[&](GenerationConfig& c) { c.sequence_bias = {{{1, vocab + 5}, 1.0f}}; }, "sequence_bias"},
        {[&](GenerationConfig& c) { c.bad_words_ids = {{vocab}}; }, "bad_words_ids"},
        {[&](GenerationConfig& c) { c.suppress_tokens = {99999}; }, "suppress_tokens"},
        {[&](GenerationConfig& c) { c.begin_suppress_tokens = {vocab}; }, "begin_suppress_tokens"},
    };
    for (const Case& k : cases) {
        GenerationConfig c;
        k.set(c);
        const std::string what = error_of([&] { bind_to_tokenizer(c, tokenizer(), {}); });
        INFO(what);
        CHECK_THAT(what, Catch::StartsWith(k.knob + " names token "));
        CHECK_THAT(what, Catch::Contains("outside the vocabulary of " + std::to_string(vocab) + " tokens"));
        CHECK_THAT(what, Catch::Contains("fix: pass --" + find_knob(k.knob).flag + " with ids below " + std::to_string(vocab)));
        // check_request refuses it too, for a caller that skipped the binding
        CHECK_THAT(error_of([&] { (void)check_request(model().config(), {1, 2}, c); }), Catch::Contains(k.knob + " names token"));
    }
    // DRY: breakers bound only when DRY is on; unbound breakers are refused by the chain
    GenerationConfig c;
    c.order = ChainOrder::LlamaCpp;
    bind_to_tokenizer(c, tokenizer(), {});
    CHECK(c.dry_breaker_ids == nullptr);
    c.dry_multiplier = 0.8f;
    CHECK_THAT(error_of([&] { LogitsChain chain(c); }), Catch::Contains("that were not bound to a tokenizer"));
    bind_to_tokenizer(c, tokenizer(), {});
    REQUIRE(c.dry_breaker_ids != nullptr);
    CHECK(*c.dry_breaker_ids == dry_breaker_sequences(tokenizer(), c.dry_sequence_breakers));
    CHECK_NOTHROW(LogitsChain(c));
    c.dry_sequence_breakers.clear();  // no breakers: nothing to bind, nothing refused
    c.dry_breaker_ids.reset();
    CHECK_NOTHROW(LogitsChain(c));
}

TEST_CASE("dry_breaker_sequences follows llama.cpp's get_overlapping_token_sequences", "[chain10][bind]") {
    const Tokenizer& tok = tokenizer();
    // the rule restated token by token (src/llama-sampler.cpp): a token containing the breaker is a
    // breaker alone; a token whose text ends with the breaker's first n bytes (0 < n < size) heads a
    // breaker whose tail is the tokenization of the rest, cut to 20 tokens
    for (const std::string& breaker : {std::string("\n"), std::string(":"), std::string("User:"), std::string("\n\n---")}) {
        INFO(breaker);
        std::vector<std::vector<int>> expected;
        for (int id = 0; id < tok.vocab_size(); ++id) {
            const std::string& w = tok.token_bytes(id);
            if (w.find(breaker) != std::string::npos) {
                expected.push_back({id});
                continue;
            }
            for (size_t n = std::min(w.size(), breaker.size() - 1); n >= 1; --n) {
                if (w.compare(w.size() - n, n, breaker, 0, n) != 0) continue;
                std::vector<int> seq{id};
                std::vector<int> tail = tok.encode(breaker.substr(n));
                if (tail.size() > 20) tail.resize(20);
                seq.insert(seq.end(), tail.begin(), tail.end());
                expected.push_back(seq);
            }
        }
        std::vector<std::vector<int>> found = dry_breaker_sequences(tok, {breaker});
        std::sort(found.begin(), found.end());
        std::sort(expected.begin(), expected.end());
        CHECK(found == expected);
        CHECK(!found.empty());
    }
    // the newline's own token is a single-token breaker
    const std::vector<int> newline = tok.encode("\n");
    REQUIRE(newline.size() == 1u);
    const std::vector<std::vector<int>> found = dry_breaker_sequences(tok, {"\n"});
    CHECK(std::find(found.begin(), found.end(), newline) != found.end());
    // a breaker longer than 40 bytes is cut to 40 (llama.cpp's MAX_CHAR_LEN)
    const std::string long_breaker(50, 'a');
    CHECK(dry_breaker_sequences(tok, {long_breaker}) == dry_breaker_sequences(tok, {long_breaker.substr(0, 40)}));
}

TEST_CASE("bad words look at the prompt in hf and at the output only in vllm", "[chain10][sampler]") {
    // HF NoBadWordsLogitsProcessor reads input_ids (prompt and output), skips an EOS-only entry and a
    // word longer than input_ids; vLLM's _apply_bad_words_single_batch (vllm/v1/sample/ops/bad_words.py)
    // is called with output_token_ids, bans whatever the entry names, and skips a word only when it is
    // longer than the output plus one. Hand-worked: prompt [0 1], words [1 2] and [5], EOS 5.
    GenerationConfig c;
    c.bad_words_ids = {{1, 2}, {5}};
    const std::vector<int> prompt{0, 1}, none{}, eos{5};
    const xt::xtensor<float, 1> z = xt::zeros<float>({6});
    const DecodeContext first{prompt, none, 0, eos};
    c.order = ChainOrder::HuggingFace;
    CHECK(same(LogitsChain(c).apply(z, first), xt::xtensor<float, 1>{0, 0, -INFINITY, 0, 0, 0}));
    c.order = ChainOrder::Vllm;
    CHECK(same(LogitsChain(c).apply(z, first), xt::xtensor<float, 1>{0, 0, 0, 0, 0, -INFINITY}));
    const std::vector<int> out{1};  // output [1]: vLLM bans 2 (one token of output suffices)
    CHECK(same(LogitsChain(c).apply(z, DecodeContext{prompt, out, 1, eos}),
               xt::xtensor<float, 1>{0, 0, -INFINITY, 0, 0, -INFINITY}));
    c.order = ChainOrder::HuggingFace;  // HF: the input [0 1 1] ends with 1, so 2 is banned; EOS is spared
    CHECK(same(LogitsChain(c).apply(z, DecodeContext{prompt, out, 1, eos}), xt::xtensor<float, 1>{0, 0, -INFINITY, 0, 0, 0}));
    const std::vector<int> short_prompt{1};  // HF skips a word longer than the input: [1] is one token
    c.bad_words_ids = {{1, 2}};
    CHECK(same(LogitsChain(c).apply(z, DecodeContext{short_prompt, none, 0, eos}), z));
    c.order = ChainOrder::Vllm;  // vLLM: no output yet, so [1 2] cannot match
    CHECK(same(LogitsChain(c).apply(z, DecodeContext{short_prompt, none, 0, eos}), z));
}
