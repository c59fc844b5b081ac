// Chapter 01 - Greedy decoding.
//
// Greedy decoding always takes the most likely next token (argmax; ties go to the lowest id).
// Three things follow, and this program shows each on the embedded model:
//   1. it is deterministic: the same prompt gives the same text every time;
//   2. on a long run it falls into a loop, repeating the same few tokens forever;
//   3. it stops when the model writes <|endoftext|>, and that token stays in the output (as in HF).
//
// Library code this chapter introduces: argmax and greedy_generate (decode.hpp).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "decodebook/cli.hpp"
#include "decodebook/decode.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model.hpp"
#include "decodebook/report.hpp"
#include "decodebook/tokenizer.hpp"
#include "decodebook/utf8.hpp"

using namespace decodebook;

namespace {

// A prompt whose greedy continuation ends its fortune with <|endoftext|> quickly.
const char* const kEndingPrompt = "Murphy's Law:\n\t";

// Run greedy decoding, streaming the text; returns the new tokens.
std::vector<int> run_greedy(const Gpt2& model, const Tokenizer& tok, const std::string& prompt, int max_new_tokens,
                            std::vector<StepRecord>* steps = nullptr) {
    Utf8Stream stream;
    std::cout << prompt << std::flush;
    const StopRule stop{max_new_tokens, model.config().eos_token_id};
    std::vector<int> out = greedy_generate(model, tok.encode(prompt), stop, [&](const StepRecord& s) {
        if (steps) steps->push_back(s);
        std::cout << stream.push(tok.token_bytes(s.token)) << std::flush;
    });
    std::cout << stream.flush() << "\n";
    return out;
}

// The five most likely next tokens after `prompt`, to show what argmax chooses from.
void show_first_choice(const Gpt2& model, const Tokenizer& tok, const std::string& prompt) {
    const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(prompt)));
    std::vector<int> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + 5, ids.end(), [&](int a, int b) {
        return logits(static_cast<size_t>(a)) > logits(static_cast<size_t>(b)) ||
               (logits(static_cast<size_t>(a)) == logits(static_cast<size_t>(b)) && a < b);
    });
    std::printf("The five most likely first tokens after the prompt:\n");
    for (int i = 0; i < 5; ++i) {
        const size_t id = static_cast<size_t>(ids[static_cast<size_t>(i)]);
        std::printf("  %-16s id %5zu  logit %7.3f  p %.3f%s\n", visible_token(tok.token_bytes(static_cast<int>(id))).c_str(), id,
                    logits(id), probability_of(logits, static_cast<int>(id)), i == 0 ? "   <- argmax: greedy takes this" : "");
    }
}

}  // namespace

int main(int argc, char** argv) {
    const ChapterInfo info{"chapter-01", "Greedy decoding: deterministic, loops on long runs, stops at <|endoftext|>.",
                           "The best way to", 128};
    const ChapterOptions opt = parse_chapter_options(argc, argv, info);
    return run_chapter([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir);
        const Tokenizer tok = Tokenizer::load(opt.model_dir);
        const int eos = model.config().eos_token_id;
        check_generation_request(model.config(), tok.encode(opt.prompt), {opt.max_new_tokens, eos});  // fail early

        std::printf("== 1. Greedy takes the argmax ==\n");
        show_first_choice(model, tok, opt.prompt);

        std::printf("\n== 2. A long greedy run (%d new tokens at most) ==\n", opt.max_new_tokens);
        std::vector<StepRecord> steps;
        const std::vector<int> first = run_greedy(model, tok, opt.prompt, opt.max_new_tokens, &steps);
        if (opt.show_steps) print_steps(std::cout, steps, tok);

        const StopRule stop{opt.max_new_tokens, eos};
        const std::vector<int> second = greedy_generate(model, tok.encode(opt.prompt), stop);
        std::printf("\nDeterminism: a second run gives %s (%zu tokens).\n",
                    first == second ? "exactly the same tokens" : "DIFFERENT tokens (this should never happen)",
                    second.size());

        const Loop loop = find_loop(first);  // report.hpp
        if (loop.period > 0) {
            const std::vector<int> cycle(first.begin() + static_cast<long>(loop.start),
                                         first.begin() + static_cast<long>(loop.start + loop.period));
            std::printf("Repetition loop: from new token %zu on, a %zu-token cycle repeats %.1f times:\n  %s\n"
                        "Once the context repeats, the argmax tends to repeat too: greedy has no randomness to\n"
                        "leave the loop, so only a rare shift in the logits, the length limit or <|endoftext|> ends it.\n"
                        "(Chapters 02-04 break such loops with sampling and penalties.)\n",
                        loop.start, loop.period, static_cast<double>(loop.covered) / static_cast<double>(loop.period),
                        visible_token(tok.decode(cycle)).c_str());
        } else {
            std::printf("No repetition loop in this run (try a larger --max-new-tokens).\n");
        }
        if (!first.empty() && first.back() == eos) {
            std::printf("The run ended with <|endoftext|> (id %d) after %zu tokens; it stays in the output.\n", eos,
                        first.size());
        }

        std::printf("\n== 3. Stopping at <|endoftext|> ==\n");
        const std::vector<int> ending = run_greedy(model, tok, kEndingPrompt, 48);
        if (!ending.empty() && ending.back() == eos) {
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
        const ExerciseAttempt pick = try_exercise([&] { your_pick = exercises::argmax(logits); });
        print_exercise_status("01.1", "exercises/01-greedy/argmax.cpp", pick, your_pick == argmax(logits),
                              "id " + std::to_string(your_pick), "id " + std::to_string(argmax(logits)));
        std::vector<int> yours;
        const ExerciseAttempt greedy =
            try_exercise([&] { yours = exercises::greedy_generate(model, tok.encode(opt.prompt), stop); });
        print_exercise_status("01.2", "exercises/01-greedy/greedy.cpp", greedy, yours == first,
                              visible_token(tok.decode(yours)), visible_token(tok.decode(first)));
        return 0;
    });
}
