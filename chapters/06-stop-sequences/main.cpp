// Chapter 06 - EOS and stop sequences.
//
// A generation ends in one of three ways: the length limit, an end-of-sequence token, or a stop
// string in the text. EOS is a token id (a list of them, in fact), decided before the text
// exists; min_new_tokens forbids it for a while. A stop string is text: it may begin inside one
// token and end inside a later one, several may match, and a program that streams must not show
// text that a stop string is about to claim. This program shows each rule on small scripted
// streams, then cuts a real fortune before its attribution with the stop "\n\t\t--", step by step.
//
// Library code this chapter introduces: find_stop, stop_holdback, scan_stops, StopStringStream
// (decoding/stop_strings.hpp); make_text_stream (decoding/stopping.hpp) returns the
// StopStringStream when config.stop is set.
#include <cstdio>
#include <optional>

#include "chapter06.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;
using namespace chapter06;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-06", "EOS and stop sequences: ending a generation on a token or on text.",
                                        kFortunePrompt);
    info.defaults.max_new_tokens = 48;
    info.defaults.stop = {kAttribution};
    info.steers = {{"part 6", knob_flags(KnobGroup::Stopping)}};
    info.steers[0].flags.insert(info.steers[0].flags.end(), {"max-new-tokens", "do-sample", "temperature", "top-k", "top-p", "seed"});
    info.csv_columns = "step,token,shown,held,held_chars";
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;

        std::printf("== 1. EOS is a list of ids, and it stays in the output (greedy, \"%s\") ==\n", kFortunePrompt);
        const EosRuns eos = eos_rules(model, tok);

        std::printf("\n== 2. A stop string is text: \"DE\" starts inside one token and ends inside the next ==\n");
        stop_across_tokens();

        std::printf("\n== 3. Several stops: which one wins (stop_match), and include_stop_str_in_output ==\n");
        several_stops();

        std::printf("\n== 4. Streaming: hold back only what may still become a stop (\"User:\") ==\n");
        streaming_holdback();

        std::printf("\n== 5. A fortune cut before its attribution: stop %s (greedy, \"%s\") ==\n",
                    visible_token(kAttribution).c_str(), kFortunePrompt);
        const FortuneCut cut = fortune_cut(model, tok, eos.plain);

        std::printf("\n== 6. Your settings: %s (seed %llu) ==\n", describe(config, {KnobGroup::Stopping}).c_str(),
                    static_cast<unsigned long long>(config.seed));
        your_settings_run(session, opt);

        if (!opt.csv.empty()) {
            write_hold_csv(opt.csv, cut.rows);
            std::printf("\n(wrote the %zu steps of part 5 to %s)\n", cut.rows.size(), opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 06 grades them):\n");
        report_exercises(model, tok, eos, cut.run);
        return 0;
    });
}
