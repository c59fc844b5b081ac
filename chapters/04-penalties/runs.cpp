// Chapter 04, parts 1 and 4: whole runs. The same greedy run with each penalty and scope, its
// distinct-2 and whether it loops; then a sampled run with your settings.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapter04.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter04 {
namespace {

// Run greedy decoding (do_sample off: the penalties, then argmax) and describe the result.
std::vector<int> run(const Gpt2& model, const Tokenizer& tok, const std::vector<int>& prompt, GenerationConfig config,
                     int max_new_tokens, const char* label) {
    config.do_sample = false;
    config.max_new_tokens = max_new_tokens;
    const std::vector<int> out = generate(model, tok, prompt, config, make_sampler(config, 0)).ids;
    const Loop loop = find_loop(out);
    std::printf("  %-28s distinct-2 %.2f  %s\n", label, distinct_n(out, 2),
                loop.period ? ("LOOP of " + std::to_string(loop.period) + " tokens x" +
                               std::to_string(loop.covered / loop.period)).c_str()
                            : "no loop");
    std::printf("      %s\n", visible_token(tok.decode(out)).c_str());
    return out;
}

}  // namespace

std::vector<int> each_penalty(const Session& session) {
    const auto& [model, tok, prompt, config] = session;
    const int max_new_tokens = config.max_new_tokens;
    const std::vector<int> plain = run(model, tok, prompt, {}, max_new_tokens, "no penalty");
    GenerationConfig rep; rep.repetition_penalty = 1.5f;
    run(model, tok, prompt, rep, max_new_tokens, "repetition_penalty 1.5");
    GenerationConfig out_only = rep; out_only.penalty_scope = PenaltyScope::OutputOnly;
    run(model, tok, prompt, out_only, max_new_tokens, "  ... over the output only");
    GenerationConfig window = rep; window.penalty_scope = PenaltyScope::LastN; window.penalty_last_n = 8;
    run(model, tok, prompt, window, max_new_tokens, "  ... over the last 8 tokens");
    GenerationConfig pf; pf.presence_penalty = 0.3f; pf.frequency_penalty = 0.3f;
    run(model, tok, prompt, pf, max_new_tokens, "presence 0.3 frequency 0.3");
    GenerationConfig ngram; ngram.no_repeat_ngram_size = 3;
    run(model, tok, prompt, ngram, max_new_tokens, "no_repeat_ngram_size 3");
    return plain;
}

void sampling_with_penalty(const Session& session, const CommandLine& opt) {
    const auto& [model, tok, prompt, config] = session;
    std::printf("  chain: %s\n", LogitsChain(config).describe().c_str());
    std::vector<Draw> coins;  // make_sampler's coins and chain, watched for --show-steps
    const Generation sampled = generate(model, tok, prompt, config, make_watched_sampler(config, config.seed, coins));
    std::printf("  %s%s\n  distinct-2 %.2f\n", opt.prompt.c_str(), sampled.text.c_str(), distinct_n(sampled.ids, 2));
    if (opt.show_steps) print_steps(std::cout, sampled.steps, tok, coins);
    std::printf("  (decodebook-diversity measures distinct-n and the model's own loss across samplers)\n");
}

}  // namespace chapter04
