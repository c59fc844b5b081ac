// Chapter 10 - The field's other samplers: typical-p, epsilon and eta, top-n-sigma, XTC, DRY,
// mirostat, dynamic temperature and the biases.
//
// Chapters 02-04 taught the classic samplers. The engines readers run ship more, and readers meet
// them as flags: llama.cpp's default chain has DRY, top-n-sigma, typical-p, XTC and dynamic
// temperature; Hugging Face has typical_p, epsilon_cutoff, eta_cutoff, sequence_bias,
// bad_words_ids and suppress_tokens; llama.cpp and Ollama expose mirostat. This program shows
// each idea on the embedded model: what the new truncations keep on a peaked and a flat step,
// DRY against the repetition penalty on chapter 01's loop, mirostat's mu over a run, and the
// biases on one short run. decodebook-diversity measures them all against each other (the lab).
//
// Library code this chapter introduces (sampling/other_samplers.hpp): TypicalRule, typical_keep,
// apply_typical_p, apply_epsilon_cutoff, eta_threshold, apply_eta_cutoff, apply_top_n_sigma,
// xtc_coin, apply_xtc, dry_repeat_length, dry_penalty, apply_dry, mirostat_v2_step,
// mirostat_v1_step, apply_dynamic_temperature, apply_logit_bias, apply_sequence_bias,
// apply_bad_words, apply_suppress_tokens; the knobs of GenerationConfig's chapter 10 block.
#include <cstdio>
#include <optional>
#include <string>

#include "chapter10.hpp"
#include "decodebook/course/csv.hpp"

using namespace decodebook;
using namespace chapter10;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-10", "The field's other samplers: typical-p, epsilon, eta, top-n-sigma, XTC, DRY, mirostat, biases.",
                                        "A computer is");
    info.defaults.max_new_tokens = 64;  // part 3's mirostat runs
    info.csv_columns = "series,x,y,label";
    // every other sampler's setting is the part's own: part 1 compares fixed settings, part 4 fixed biases
    info.steers = {{"part 3", {"max-new-tokens", "seed", "mirostat-tau", "mirostat-eta"}}};  // its mirostat runs
    info.show_steps = false;  // its runs are tables of their own; part 3's mirostat has no coin-in-CDF step table
    info.lookahead = kScanned - 1;  // part 1 walks kScanned greedy steps: the prompt must leave room, whatever -n is
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(opt);
        CsvRows csv;

        std::printf("== 1. What each truncation keeps: the first step, a peaked and a flat step (after \"%s\") ==\n", opt.prompt.c_str());
        truncations_side_by_side(session, csv);

        std::printf("\n== 2. DRY against the repetition penalty, on chapter 01's loop ==\n");
        dry_against_repetition(session);

        std::printf("\n== 3. Adaptive samplers: mirostat's mu steers the surprise toward tau (seed %llu); dynamic temperature ==\n",
                    static_cast<unsigned long long>(session.config.seed));
        mirostat_run(session, csv);

        std::printf("\n== 4. The biases: fixed edits of the logits, on a greedy run ==\n");
        biases_demo(session);

        if (!opt.csv.empty()) {
            write_labelled_csv(opt.csv, info.csv_columns, csv);
            std::printf("\n(wrote part 1's kept counts and masses and part 3's mu and surprise per step to %s)\n", opt.csv.c_str());
        }
        std::printf("\nYour exercises (./grade 10 grades them):\n");
        report_exercises(session);
        return 0;
    });
}
