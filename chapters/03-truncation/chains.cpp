// Chapter 03, parts 4 and 6: where temperature sits in the chain (Hugging Face, llama.cpp, vLLM)
// changes the candidate set; then a run with your settings.
#include <cstdio>
#include <iostream>
#include <vector>

#include "chapter03.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter03 {

void temperature_placement(const Vec& logits, const Tokenizer& tok) {
    GenerationConfig mix;
    mix.do_sample = true; mix.temperature = 0.5f; mix.top_p = 0.9f; mix.min_p = 0.05f;
    for (ChainOrder order : {ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm}) {
        mix.order = order;
        std::printf("  %-10s %s\n", to_string(order).c_str(), LogitsChain(mix).describe().c_str());
        print_survivors("", filtered(logits, mix), tok);
    }
    std::printf("  llama.cpp truncates at T = 1 and cools afterwards, so it keeps more tokens.\n");
}

void your_settings_run(const Session& session, const CommandLine& opt) {
    const auto& [model, tok, prompt, config] = session;
    std::printf("  %s", opt.prompt.c_str());
    std::vector<Draw> coins;  // make_sampler's coins and chain, watched for --show-steps
    const Generation out =
        generate(model, tok, prompt, config, make_watched_sampler(config, config.seed, coins), print_text_to(std::cout));
    std::printf("\n");
    if (opt.show_steps) print_steps(std::cout, out.steps, tok, coins);
}

}  // namespace chapter03
