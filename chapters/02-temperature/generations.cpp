// Chapter 02, part 3: seeded generations at several temperatures (the same seed gives the same
// text), then the first steps of a run with your settings: each step's coin and where it landed.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapter02.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter02 {
namespace {

// Generate with `config` (its seed gives the coins) and print the text on one line.
void seeded_run(const Gpt2& model, const Tokenizer& tok, const std::vector<int>& prompt, const GenerationConfig& config,
                const char* label) {
    const Generation g = generate(model, tok, prompt, config, make_sampler(config, config.seed));
    std::printf("  %-8s %s\n", label, visible_token(tok.decode(g.ids)).c_str());
}

}  // namespace

void seeded_generations(const Session& session) {
    const auto& [model, tok, prompt, config] = session;
    for (float t : {0.0f, 0.5f, 1.0f, 1.5f}) {
        GenerationConfig c = config;
        c.do_sample = true;
        c.temperature = t;
        if (t == 0.0f) c.mirostat = 0;  // T = 0 is greedy: mirostat (chapter 10) has nothing to draw from
        char label[32];
        std::snprintf(label, sizeof label, "T = %.1f", t);
        seeded_run(model, tok, prompt, c, t == 0.0f ? "T = 0" : label);
    }
    std::printf("  Run it again: the same seed gives the same text. Change --seed for another draw.\n");
}

void first_steps_with_coins(const Session& session, const CommandLine& opt) {
    const auto& [model, tok, prompt, config] = session;
    // The chosen settings, step by step: the coin and where it landed.
    const LogitsChain chain(config);
    if (opt.show_chain) std::printf("\nchain: %s\n", chain.describe().c_str());
    std::printf("\nYour settings (%s), the first steps with their coins:\n", chain.describe().c_str());
    GenerationConfig first_steps = config;
    first_steps.max_new_tokens = std::min(config.max_new_tokens, 6);
    std::vector<Draw> coins;  // make_sampler's coins and chain, watched
    const std::vector<StepRecord> steps =
        generate(model, tok, prompt, first_steps, make_watched_sampler(first_steps, config.seed, coins)).steps;
    for (size_t i = 0; i < coins.size(); ++i) {
        const Draw& c = coins[i];
        const std::string token = visible_token(tok.token_bytes(c.token));
        if (c.greedy) {
            std::printf("  step %zu: argmax -> %-12s (p after the chain %.3f; raw p %.3f)\n", i, token.c_str(), c.processed, c.raw);
        } else {
            std::printf("  step %zu: coin %.4f -> %-12s (p after the chain %.3f, CDF slice [%.4f, %.4f); raw p %.3f)\n", i,
                        c.coin, token.c_str(), c.processed, c.from, c.to, c.raw);
        }
    }
    if (opt.show_steps) print_steps(std::cout, steps, tok, coins);
}

}  // namespace chapter02
