// Chapter 01 - Greedy decoding.
//
// Greedy decoding always takes the most likely next token (argmax; ties go to the lowest id).
// Three things follow, and this program shows each on the embedded model:
//   1. it is deterministic: the same prompt gives the same text every time;
//   2. on a long run it falls into a loop, repeating the same few tokens forever;
//   3. it stops when the model writes <|endoftext|>, and that token stays in the output (as in HF);
//      skip_special_tokens leaves it out of the text, never out of the ids.
// With --reference FILE (tests/data/greedy.json) it prints instead this program's greedy tokens
// beside the independent reference's (tests/reference/, Python in float64), case by case.
//
// Library code this chapter introduces: argmax and greedy_generate (decoding/naive_loop.hpp);
// Tokenizer::decode with skip_special_tokens and the knob of that name.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "chapter01.hpp"

using namespace decodebook;
using namespace chapter01;

int main(int argc, char** argv) {
    ProgramInfo info{"chapter-01", "Greedy decoding: deterministic, loops on long runs, stops at <|endoftext|>.",
                     "The best way to"};
    info.defaults.max_new_tokens = 128;
    info.steers = {{"part 2", {"max-new-tokens"}}};
    info.extra.push_back({"reference", "print only greedy here beside the independent reference's goldens in FILE "
                                       "(tests/data/greedy.json), and the case whose prompt is --prompt step by step", ""});
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    const int max_new_tokens = opt.config.max_new_tokens;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir, opt.dtype);
        const Tokenizer tok = Tokenizer::load(opt.model_dir);
        const int eos = model.config().eos_token_id;
        if (!opt.extra.at("reference").empty()) {
            compare_with_reference(model, tok, opt.extra.at("reference"), opt.prompt);
            return 0;
        }
        check_generation_request(model.config(), tok.encode(opt.prompt), {max_new_tokens, eos});  // fail early

        std::printf("== 1. Greedy takes the argmax ==\n");
        show_first_choice(model, tok, opt.prompt);

        std::printf("\n== 2. A long greedy run (%d new tokens at most) ==\n", max_new_tokens);
        const std::vector<int> first = long_greedy_run(model, tok, opt);

        std::printf("\n== 3. Stopping at <|endoftext|> ==\n");
        stopping_at_eos(model, tok);

        std::printf("\nYour exercises (./grade 01 grades them):\n");
        report_exercises(model, tok, opt.prompt, {max_new_tokens, eos}, first);
        return 0;
    });
}
