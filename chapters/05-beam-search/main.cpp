// Chapter 05 - Beam search, and why chat models dropped it.
//
// Greedy decoding commits to the best token at every step; beam search keeps the num_beams best
// partial sequences by their summed log-probability and finishes with the best complete one. It
// finds sequences the model rates higher than greedy's, and that is the problem for open-ended
// text: the sequences a model rates highest are bland, and short when scored by the raw sum. This program checks that
// num_beams = 1 is greedy, traces a two-step toy by hand, measures greedy, beam search and
// sampling on the embedded model, shows length_penalty choosing the winner, and the two
// engines' scores (Hugging Face and vLLM) disagreeing.
//
// Library code this chapter introduces: beam_step, beam_score, beam_search_done, beam_search,
// log_softmax (sampling/logprobs.hpp); one_line (course/terminal.hpp).
#include <cstdio>
#include <optional>
#include <iostream>

#include "chapter05.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;
using namespace chapter05;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-05", "Beam search, and why chat models dropped it.",
                                        "The best way to");
    info.knob_groups.push_back(KnobGroup::Beams);
    info.defaults.do_sample = false;  // beam search is deterministic: this chapter decodes without coins
    info.defaults.num_beams = 4;
    info.defaults.num_return_sequences = 2;  // at most --num-beams (read_command_line lowers it)
    info.show_steps = false;                 // several beams at once: part 2 draws them as a tree instead
    info.defaults.max_new_tokens = 20;
    info.steers = {{"parts 3 and 6", {"max-new-tokens"}}, {"part 6", knob_flags(KnobGroup::Beams)}};
    info.csv_columns = "length_penalty,rank,length,sum_logprobs,score,finish_reason";
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        MemoizedSearch search(model, tok, prompt, config);  // the prompt's rows, shared by parts 3, 4 and 6

        std::printf("== 1. One beam is greedy ==\n");
        one_beam_is_greedy(session, opt);

        std::printf("\n== 2. A toy traced by hand: greedy is not the best path ==\n");
        toy_by_hand();

        std::printf("\n== 3. Greedy, beam search and sampling on open-ended text (%d new tokens) ==\n",
                    config.max_new_tokens);
        open_ended(session, opt, search);

        std::printf("\n== 4. length_penalty picks the winner (num_beams 4, early_stopping never) ==\n");
        const PenaltyRuns by_penalty = length_penalty_winners(config, search);

        std::printf("\n== 5. Hugging Face's score against vLLM's (num_beams 2, length_penalty 1) ==\n");
        hf_against_vllm(session);

        std::printf("\n== 6. Your settings: %s ==\n", describe(config, {KnobGroup::Beams}).c_str());
        std::printf("  %s\n", opt.prompt.c_str());
        print_hypotheses(search.run(config.num_beams > 1 ? config : one_beam(config)));

        if (!opt.csv.empty()) {
            write_length_penalty_csv(opt.csv, info.csv_columns, by_penalty);
            std::printf("\n(wrote the finished hypotheses of part 4 to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 05 grades them):\n");
        report_exercises();
        return 0;
    });
}
