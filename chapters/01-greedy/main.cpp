// Chapter 01 - Greedy decoding.
//
// Greedy decoding always takes the most likely next token (argmax; ties go to the lowest id).
// Three things follow, and this program shows each on the embedded model:
//   1. it is deterministic: the same prompt gives the same text every time;
//   2. on a long run it falls into a loop, repeating the same few tokens forever;
//   3. it stops when the model writes <|endoftext|>, and that token stays in the output (as in HF).
//
// Library code this chapter introduces: argmax and greedy_generate (decoding/naive_loop.hpp).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace {

// A prompt whose greedy continuation ends its fortune with <|endoftext|> quickly.
const char* const kEndingPrompt = "Murphy's Law:\n\t";

// Run greedy decoding with the general loop (chapter 02) and `greedy` as its sampler, streaming
// the text; returns the new tokens and why they ended.
Generation run_greedy(const Gpt2& model, const Tokenizer& tok, const std::string& prompt, int max_new_tokens) {
    std::cout << prompt << std::flush;
    GenerationConfig config;
    config.max_new_tokens = max_new_tokens;
    Generation g = generate(model, tok, tok.encode(prompt), config, greedy, print_text_to(std::cout));
    std::cout << "\n";
    return g;
}

// The five most likely next tokens after `prompt`, to show what argmax chooses from.
void show_first_choice(const Gpt2& model, const Tokenizer& tok, const std::string& prompt) {
    const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(prompt)));
    const xt::xtensor<float, 1> probs = softmax(logits);
    std::printf("The five most likely first tokens after the prompt:\n");
    const std::vector<int> ids = top_ids(probs, 5);
    for (size_t i = 0; i < ids.size(); ++i) {
        const size_t id = static_cast<size_t>(ids[i]);
        std::printf("  %-16s id %5zu  logit %7.3f  p %.3f%s\n", visible_token(tok.token_bytes(ids[i])).c_str(), id,
                    logits(id), probs(id), i == 0 ? "   <- argmax: greedy takes this" : "");
    }
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"chapter-01", "Greedy decoding: deterministic, loops on long runs, stops at <|endoftext|>.",
                     "The best way to"};
    info.defaults.max_new_tokens = 128;
    const CommandLine opt = parse_command_line(argc, argv, info);
    const int max_new_tokens = opt.config.max_new_tokens;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir, opt.dtype);
        const Tokenizer tok = Tokenizer::load(opt.model_dir);
        const int eos = model.config().eos_token_id;
        check_generation_request(model.config(), tok.encode(opt.prompt), {max_new_tokens, eos});  // fail early

        std::printf("== 1. Greedy takes the argmax ==\n");
        show_first_choice(model, tok, opt.prompt);

        std::printf("\n== 2. A long greedy run (%d new tokens at most) ==\n", max_new_tokens);
        const Generation run = run_greedy(model, tok, opt.prompt, max_new_tokens);
        const std::vector<int>& first = run.ids;
        if (opt.show_steps) print_steps(std::cout, run.steps, tok);

        const StopRule stop{max_new_tokens, eos};
        const std::vector<int> second = greedy_generate(model, tok.encode(opt.prompt), stop);
        std::printf("\nDeterminism: a second run (greedy_generate, the naive loop with argmax) gives %s (%zu tokens).\n",
                    first == second ? "exactly the same tokens" : "DIFFERENT tokens (this should never happen)",
                    second.size());

        const Loop loop = find_loop(first);  // metrics.hpp
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
        if (run.finish_reason == FinishReason::Eos) {
            std::printf("The run ended with <|endoftext|> (id %d) after %zu tokens; it stays in the output.\n", eos,
                        first.size());
        }

        std::printf("\n== 3. Stopping at <|endoftext|> ==\n");
        const Generation end_run = run_greedy(model, tok, kEndingPrompt, 48);
        const std::vector<int>& ending = end_run.ids;
        if (end_run.finish_reason == FinishReason::Eos) {
            std::printf("The model ended the fortune: the last of the %zu new tokens is <|endoftext|> (id %d), and\n"
                        "generation stopped there although 48 were allowed. Like HF generate, the EOS token is\n"
                        "kept in the returned ids: [..., %d].\n",
                        ending.size(), eos, ending.back());
        } else {
            std::printf("This run used all 48 tokens without producing <|endoftext|>.\n");
        }

        // Your turn: the same inputs through your exercises (exercises/01-greedy/).
        std::printf("\nYour exercises (./grade 01 grades them):\n");
        const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(opt.prompt)));
        int your_pick = -1;
        const ExerciseAttempt pick = try_exercise([&] { your_pick = your_argmax(logits); });
        print_exercise_status(course_exercise("your_argmax"), pick, your_pick == argmax(logits),
                              "id " + std::to_string(your_pick), "id " + std::to_string(argmax(logits)));
        std::vector<int> yours;
        const ExerciseAttempt yours_greedy =
            try_exercise([&] { yours = your_greedy_generate(model, tok.encode(opt.prompt), stop); });
        print_exercise_status(course_exercise("your_greedy_generate"), yours_greedy, yours == first,
                              visible_token(tok.decode(yours)), visible_token(tok.decode(first)));
        return 0;
    });
}
