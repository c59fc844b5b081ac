// The stage table (decoding/stages.hpp) and the chain's end (decoding/chain_end.hpp):
// - adding a processor is one pure function, one row and its place in the orders: a toy stage
//   proves it on a table of its own (the chain runs it, engine membership follows from the order);
// - "is it on" is written once: every row's switches are off at the knob table's defaults and at
//   the off value the knob's own rule text names, and on at another valid value;
// - the orders name only rows, and every row is in some order;
// - a stateful end (mirostat) keeps its state inside: clones are independent, reset starts over.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/chain_end.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/stages.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace {

using Z = xt::xtensor<float, 1>;

// 1. The toy's pure function: add `by` to token 0's logit.
void nudge_first(Z& z, float by) { z(0) += by; }

// 2. Its row: switched on by typical_p (a knob the vllm order does not otherwise use), a processor.
StageRow nudge_row() {
    return {"nudge",
            false,
            {{"typical_p", [](const GenerationConfig& c) { return c.typical_p < 1; }, "1"}},
            [](const GenerationConfig& c) -> std::optional<Processor> {
                return Processor{"nudge(" + knob_number(c.typical_p) + ")",
                                 [by = c.typical_p](Z& z, const DecodeContext&) { nudge_first(z, by); }};
            }};
}

// 3. Its place in the orders: first in vllm's chain, on a copy of the library's table.
StageTable table_with_nudge() {
    StageTable t = stage_table();
    t.rows.push_back(nudge_row());
    for (EngineOrder& e : t.orders)
        if (e.order == ChainOrder::Vllm) e.stages.insert(e.stages.begin(), "nudge");
    return t;
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

TEST_CASE("a toy stage is one function, one row and its place in an order", "[stages]") {
    const StageTable toy = table_with_nudge();
    GenerationConfig c;
    c.order = ChainOrder::Vllm;
    c.typical_p = 0.5f;
    // the library's own table refuses typical_p under vllm, naming the engines that have it
    CHECK_THAT(error_of([&] { LogitsChain chain(c); }),
               Catch::Contains("typical_p = 0.5 is a sampler of hf and llama.cpp, and --order is vllm"));
    // with the toy's row and place, vllm has a stage typical_p switches: membership is derived
    CHECK(toy.orders_with("typical_p") ==
          std::vector<ChainOrder>{ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm});
    CHECK_NOTHROW(toy.check_engine(c));
    const LogitsChain chain(c, {}, toy);
    CHECK(chain.describe() == "nudge(0.5) -> argmax");  // not a warper: it runs in greedy mode too
    const std::vector<int> prompt{1}, generated{};
    const Z z = chain.apply(Z{1.0f, 1.25f, 0.0f}, DecodeContext{prompt, generated, 0, {}});
    CHECK(z(0) == 1.5f);
    CHECK(chain.pick(Z{1.0f, 1.25f, 0.0f}, DecodeContext{prompt, generated, 0, {}}, 0.5) == 0);
    // the other orders are as before: hf runs the library's typical_p, not the toy
    c.order = ChainOrder::HuggingFace;
    c.do_sample = true;
    CHECK(LogitsChain(c, {}, toy).describe() == "typical_p(0.5) -> sample");
    // and a row whose switch is off makes nothing
    c.order = ChainOrder::Vllm;
    c.typical_p = 1.0f;
    CHECK(LogitsChain(c, {}, toy).describe() == "sample");
}

TEST_CASE("every stage switch is off at the knob table's defaults and at its own off value", "[stages]") {
    const std::regex off_in_rule(R"(\(([^()\s]+) = off\))");
    for (const StageRow& row : stage_table().rows) {
        for (const StageSwitch& s : row.switches) {
            INFO(row.name << " / " << s.knob);
            const Knob& k = find_knob(s.knob);  // a switch names a knob of the table
            CHECK_FALSE(s.on(GenerationConfig{}));
            GenerationConfig off;
            set_knob(off, s.knob, s.off);
            CHECK_FALSE(s.on(off));
            std::smatch m;  // where the knob's rule names its off value ("in (0, 1] (1 = off)"), it is this one
            if (std::regex_search(k.rule, m, off_in_rule)) CHECK(m[1].str() == s.off);
        }
    }
    // and on at a value that is not off
    const std::pair<const char*, const char*> on_values[] = {
        {"top_k", "40"}, {"top_p", "0.9"}, {"min_p", "0.1"}, {"typical_p", "0.9"}, {"epsilon_cutoff", "0.001"},
        {"eta_cutoff", "0.001"}, {"top_n_sigma", "1"}, {"xtc_probability", "0.5"}, {"dry_multiplier", "0.8"},
        {"repetition_penalty", "1.3"}, {"presence_penalty", "0.5"}, {"frequency_penalty", "-0.5"},
        {"no_repeat_ngram_size", "2"}, {"dynatemp_range", "0.5"}, {"logit_bias", "13:5"}, {"sequence_bias", "1 2:-1"},
        {"bad_words_ids", "1 2"}, {"suppress_tokens", "13"}, {"begin_suppress_tokens", "13"}, {"min_new_tokens", "2"},
        {"temperature", "0.7"}};
    for (const StageRow& row : stage_table().rows) {
        for (const StageSwitch& s : row.switches) {
            INFO(row.name << " / " << s.knob);
            const auto* v = std::find_if(std::begin(on_values), std::end(on_values),
                                         [&](const auto& p) { return std::string(p.first) == s.knob; });
            REQUIRE(v != std::end(on_values));
            GenerationConfig on;
            set_knob(on, s.knob, v->second);
            CHECK(s.on(on));
            CHECK(row.on(on));
        }
    }
}

TEST_CASE("the orders name only rows and every row is in an order", "[stages]") {
    const StageTable& t = stage_table();
    for (const EngineOrder& e : t.orders) {
        for (const std::string& name : e.stages) CHECK_NOTHROW(t.row(name));
        for (const std::string& name : e.mirostat_stages) CHECK_NOTHROW(t.row(name));
    }
    for (const StageRow& row : t.rows) {
        INFO(row.name);
        bool listed = false;
        for (const EngineOrder& e : t.orders) listed = listed || std::count(e.stages.begin(), e.stages.end(), row.name) > 0;
        CHECK(listed);
    }
    CHECK_THAT(error_of([&] { (void)t.row("watermark"); }), Catch::Contains("no logits stage is called 'watermark'"));
    // membership as the engines' code has it: mirostat and DRY are llama.cpp's, epsilon HF's
    CHECK(t.orders_with("mirostat") == std::vector<ChainOrder>{ChainOrder::LlamaCpp});
    CHECK(t.orders_with("dry_multiplier") == std::vector<ChainOrder>{ChainOrder::LlamaCpp});
    CHECK(t.orders_with("epsilon_cutoff") == std::vector<ChainOrder>{ChainOrder::HuggingFace});
    CHECK(t.orders_with("bad_words_ids") == std::vector<ChainOrder>{ChainOrder::HuggingFace, ChainOrder::Vllm});
    CHECK(t.orders_with("logit_bias") ==
          std::vector<ChainOrder>{ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm});
}

TEST_CASE("a chain's end: argmax and the draw hold nothing, mirostat keeps mu inside", "[stages][mirostat]") {
    GenerationConfig c;
    CHECK(make_chain_end(c)->name() == "argmax");
    CHECK_FALSE(ends_in_state(c));
    c.do_sample = true;
    CHECK(make_chain_end(c)->name() == "sample");
    c.temperature = 0.0f;
    CHECK(make_chain_end(c)->greedy());
    c.temperature = 1.0f;
    c.order = ChainOrder::LlamaCpp;
    c.mirostat = 2;
    c.mirostat_tau = 2.0f;
    CHECK(ends_in_state(c));
    const Z z{2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, -2.0f};
    const std::unique_ptr<ChainEnd> used = make_chain_end(c);
    const std::unique_ptr<ChainEnd> fresh = used->clone();
    // by hand: mirostat_v2_step with mu from 2 tau and coin i of Rng(7)
    Rng rng(7);
    double mu = 2.0 * c.mirostat_tau;
    std::vector<int> hand, picked;
    for (int i = 0; i < 12; ++i) {
        const double coin = rng.coin();
        hand.push_back(mirostat_v2_step(z, c.mirostat_tau, c.mirostat_eta, mu, coin));
        picked.push_back(used->pick(z, coin));
    }
    CHECK(picked == hand);
    // the clone made before kept the fresh mu: it repeats the run, and so does the used end after reset
    const std::unique_ptr<ChainEnd> later = used->clone();
    used->reset();
    Rng again(7), third(7);
    std::vector<int> from_fresh, from_reset;
    for (int i = 0; i < 12; ++i) {
        from_fresh.push_back(fresh->pick(z, again.coin()));
        from_reset.push_back(used->pick(z, third.coin()));
    }
    CHECK(from_fresh == hand);
    CHECK(from_reset == hand);
    // a clone carries the state it was cloned with: mu after 12 steps, so its first pick is step 13's
    double mu13 = mu;
    const double coin13 = 0.6;
    CHECK(later->pick(z, coin13) == mirostat_v2_step(z, c.mirostat_tau, c.mirostat_eta, mu13, coin13));
}
