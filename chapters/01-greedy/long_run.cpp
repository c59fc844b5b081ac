// Chapter 01, part 2: a long greedy run. It is deterministic (a second run gives the same tokens),
// and on a long run it falls into a loop: once the context repeats, so does the argmax.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapter01.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter01 {
namespace {

// The repetition loop in `first`, if it has one (metrics.hpp's find_loop), and why greedy stays in it.
void print_loop(const std::vector<int>& first, const Tokenizer& tok) {
    const Loop loop = find_loop(first);
    if (loop.period > 0) {
        const std::vector<int> cycle(first.begin() + static_cast<long>(loop.start),
                                     first.begin() + static_cast<long>(loop.start + loop.period));
        std::printf("Repetition loop: from new token %zu on, a cycle of %zu tokens repeats %.1f times:\n  %s\n"
                    "Once the context repeats, the argmax tends to repeat too: greedy has no randomness to\n"
                    "leave the loop, so only a rare shift in the logits, the length limit or <|endoftext|> ends it.\n"
                    "(Chapters 02-04 break such loops with sampling and penalties.)\n",
                    loop.start, loop.period, static_cast<double>(loop.covered) / static_cast<double>(loop.period),
                    visible_token(tok.decode(cycle)).c_str());
    } else {
        std::printf("No repetition loop in this run (try a larger --max-new-tokens).\n");
    }
}

}  // namespace

Generation run_greedy(const Gpt2& model, const Tokenizer& tok, const std::string& prompt, int max_new_tokens) {
    std::cout << prompt << std::flush;
    GenerationConfig config;
    config.max_new_tokens = max_new_tokens;
    Generation g = generate(model, tok, tok.encode(prompt), config, greedy, print_text_to(std::cout));
    std::cout << "\n";
    return g;
}

std::vector<int> long_greedy_run(const Gpt2& model, const Tokenizer& tok, const CommandLine& opt) {
    const int max_new_tokens = opt.config.max_new_tokens;
    const int eos = model.config().eos_token_id;
    const Generation run = run_greedy(model, tok, opt.prompt, max_new_tokens);
    const std::vector<int>& first = run.ids;
    if (opt.show_steps) print_steps(std::cout, run.steps, tok);

    const StopRule stop{max_new_tokens, eos};
    const std::vector<int> second = greedy_generate(model, tok.encode(opt.prompt), stop);
    std::printf("\nDeterminism: a second run (greedy_generate, the naive loop with argmax) gives %s (%zu tokens).\n",
                first == second ? "exactly the same tokens" : "DIFFERENT tokens (this should never happen)",
                second.size());

    print_loop(first, tok);
    if (run.finish_reason == FinishReason::Eos) {
        std::printf("The run ended with <|endoftext|> (id %d) after %zu tokens; it stays in the output.\n", eos,
                    first.size());
    }
    return first;
}

}  // namespace chapter01
