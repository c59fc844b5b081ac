// Chapter 11 - Reading the distribution back: logprobs and scoring.
//
// Every chapter so far turned logits into a token. An API user meets the reverse next: the
// `logprobs` of each token (which numbers: before the chain or after it?), the log-probability of
// a prompt, the perplexity of a text, and evaluation harnesses that score choices instead of
// sampling them. This program shows each on the embedded model: one drawn token in vLLM's four
// logprobs modes, a held-out fortune token by token (probability, surprise, entropy), perplexity
// with a sliding window and three strides, and a multiple-choice task scored by log-likelihood.
//
// Library code this chapter introduces: sampling/logprobs.hpp (log_softmax moved here from
// chapter 05, LogprobsMode, logprob_values, logprob_rank, top_logprobs), decoding/token_logprobs.hpp
// (step_logprobs, make_logprobs_sampler, LogprobsLog), decoding/scoring.hpp (prompt_logprobs,
// score_continuation, sliding_window_perplexity, transition_scores), course/logprobs_report.hpp.
#include <cstdio>
#include <optional>
#include <string>

#include "chapter11.hpp"
#include "decodebook/course/csv.hpp"

using namespace decodebook;
using namespace chapter11;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-11", "Reading the distribution back: logprobs and scoring.",
                                        "The best way to");
    info.defaults.temperature = 0.7f;  // part 1's chain: temperature 0.7, then top-p 0.9
    info.defaults.top_p = 0.9f;
    info.defaults.max_new_tokens = 12;  // part 1's run
    info.csv_columns = "series,x,y,label";
    info.show_steps = false;  // its parts are tables of their own
    info.show_chain = true;
    info.steers = {{"part 1", {"max-new-tokens", "do-sample", "temperature", "top-k", "top-p", "min-p", "seed"}}};
    info.extra = {{"items", "how many items of the author-choice task part 4 scores (1..200)", "24"}};
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const int items = opt.extra_int("items", 1, 200);  // checked before anything runs
        const Session session = open_session(opt);
        const std::vector<std::string> fortunes = held_out_fortunes();
        CsvRows csv;

        std::printf("== 1. One token, four numbers: vLLM's logprobs modes after \"%s\" ==\n", opt.prompt.c_str());
        four_modes(session, opt.show_chain);
        std::printf("\nThe run goes on for %d tokens with the same chain and seed, each token's logprob before and after it:\n",
                    session.config.max_new_tokens);
        a_run_in_two_modes(session);

        std::printf("\n== 2. A held-out fortune, token by token ==\n");
        surprise_along_a_text(session, fortunes.at(4), csv);

        std::printf("\n== 3. Perplexity by a sliding window ==\n");
        perplexity_by_strides(session, fortunes);

        std::printf("\n== 4. Scoring choices instead of sampling them: who wrote this fortune? ==\n");
        author_choice(session, items);

        if (!opt.csv.empty()) {
            write_labelled_csv(opt.csv, info.csv_columns, csv);
            std::printf("\n(wrote part 2's p, surprise and entropy per token to %s)\n", opt.csv.c_str());
        }
        std::printf("\nYour exercises (./grade 11 grades them):\n");
        report_exercises(session);
        return 0;
    });
}
