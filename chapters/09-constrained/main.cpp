// Chapter 09 - Constrained decoding: the output must match a regex or a JSON schema, so each step
// masks every token that would leave the language.
//
// A regex is compiled to a DFA over bytes; the text so far puts it in a state; a token is allowed
// when its bytes walk from that state to a live one, and the EOS only where the text is a whole
// match. This program prints a small DFA, shows the allowed set step by step (a toy vocabulary,
// then the model under a JSON schema), samples with and without a constraint (valid rate, and
// the model's own log-probability of what it was made to write), lets JSON's whitespace run away
// when it is unbounded, and times the naive mask (a regex engine asked about every token) against
// the DFA's.
//
// Library code this chapter introduces (constrain/regex.hpp, json_schema.hpp, token_index.hpp;
// decoding/constraint.hpp): Dfa, compile_regex, build_regex, escape_regex, choice_regex,
// json_schema_regex, JsonWhitespace, TokenTrie, TokenIndex, allowed_tokens, keep_only, Constraint,
// make_constraint, constraint_mask, dead_end_criterion; the knobs regex, choice, json_schema.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "chapter09.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"

using namespace decodebook;
using namespace chapter09;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-09", "Constrained decoding: a regex or a JSON schema as a mask on every step.",
                                        "It happened on");
    info.defaults.max_new_tokens = 40;  // every generation's budget: enough for the JSON and a runaway
    info.knob_groups.push_back(KnobGroup::Constraint);
    info.extra.push_back({"samples", "sampled outputs per row of part 3 (8-10000); part 4 takes an eighth", "200"});
    info.show_steps = false;  // part 2 prints its own table of the allowed tokens, state by state
    info.steers = {{"parts 2-4", {"max-new-tokens"}},
                   {"part 3, the row 'yours'", knob_flags(KnobGroup::Constraint)},
                   {"part 3", {"temperature"}}};  // its samples are seeded 0, 1, ... per row: no --seed
    info.csv_columns = "series,x,y,label";
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    int samples = 0;
    try {  // a bad value is a bad option: exit 2, as read_command_line's own
        samples = opt.extra_int("samples", 8, 10000);
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    return run_program([&] {
        const Session session = open_session(opt);
        CsvRows csv;

        std::printf("== 1. A regex compiled to a DFA over bytes ==\n");
        draw_dfa(kNumberRegex, csv);

        std::printf("\n== 2. The allowed tokens, state by state ==\n");
        const std::vector<int> run = allowed_step_by_step(session, csv);

        std::printf("\n== 3. Valid outputs, and what the mask costs the model ==\n");
        valid_and_distortion(session, samples, csv);

        std::printf("\n== 4. JSON's whitespace: bounded against unbounded ==\n");
        whitespace_runaway(session, samples / 8, csv);

        std::printf("\n== 5. The naive mask against the DFA's ==\n");
        naive_against_index(session, run);

        if (!opt.csv.empty()) {
            write_labelled_csv(opt.csv, info.csv_columns, csv);
            std::printf("\n(wrote part 1's DFA, part 2's allowed counts, part 3's log-probabilities and part 4's lengths to %s)\n",
                        opt.csv.c_str());
        }
        std::printf("\nYour exercises (./grade 09 grades them):\n");
        report_exercises(session);
        return 0;
    });
}
