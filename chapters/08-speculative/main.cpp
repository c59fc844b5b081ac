// Chapter 08 - Speculative decoding: a cheap drafter proposes k tokens, the model checks them all in
// one decode call, and a rule keeps a prefix so the output is exactly what the model alone would
// give (greedy: token for token; sampling: in distribution).
//
// Chapter 07 showed that a decode step reads every weight to produce one token. Reading them once
// for k + 1 tokens costs little more than for one, so if something cheap can guess the next tokens,
// the model can check several guesses for the price of about one step. This program shows a round
// step by step, predicts the speed-up from what it measures before speculating (acceptance, the
// draft's cost, the cost of a verification call) and then measures it (and why, on a model that
// fits in the processor's cache, it is slower), shows acceptance against temperature (and why
// llama.cpp's sample-and-compare keeps fewer drafts), prompt lookup where the text repeats and
// where it does not, and Hugging Face's target-distribution case counted.
//
// Library code this chapter introduces (decoding/speculative.hpp): Verdict, coins_per_round,
// accept_draft, residual, verify_drafts, prompt_lookup_hf, prompt_lookup_vllm, Draft, Drafter,
// prompt_lookup_drafter, model_drafter, make_drafter, drafts_per_round, next_drafts_per_round,
// SpeculativeStats, generate_speculative, expected_tokens_per_round, predicted_speedup; the knobs
// num_assistant_tokens, num_assistant_tokens_schedule, prompt_lookup_num_tokens,
// max_matching_ngram_size, prompt_lookup_min (generation_config.hpp); --assistant-model (cli.hpp).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "chapter08.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;
using namespace chapter08;

// The weights of a GPT-2 of this shape (V vocabulary, P positions, C wide, L layers): the token and
// position tables (V + P) C, ln_f 2C, and per block 12 C^2 + 13 C (as gpt2_decode_bytes counts them,
// with the whole position table): what the page's "2.2 million against 445,056" is.
static uint64_t parameter_count(const ModelConfig& c) {
    const uint64_t C = static_cast<uint64_t>(c.n_embd);
    return (static_cast<uint64_t>(c.vocab_size) + static_cast<uint64_t>(c.n_positions)) * C + 2 * C +
           static_cast<uint64_t>(c.n_layer) * (12 * C * C + 13 * C);
}

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-08", "Speculative decoding: draft, verify in one call, keep a prefix.",
                                        "The best way to");
    info.defaults.do_sample = false;    // part 1 is greedy; parts 2-3 set their own temperatures
    info.defaults.max_new_tokens = 48;  // every part runs at this length: the whole chapter within ~3 s
    info.knob_groups.push_back(KnobGroup::Speculative);
    info.draft_by_default = true;
    info.show_steps = false;  // a run is rounds of several tokens: part 1 shows them round by round
    info.defaults.num_assistant_tokens = 4;      // part 1's k
    info.defaults.prompt_lookup_num_tokens = 4;  // part 4's row "yours" (parts 1-3 draft with the draft model)
    info.steers = {{"part 1", {"num-assistant-tokens"}},
                   {"parts 2-4", {"max-new-tokens"}},
                   {"parts 2-3", {"seed"}},
                   {"part 4, the row 'yours'", {"prompt-lookup-num-tokens", "max-matching-ngram-size", "prompt-lookup-min"}}};
    info.lookahead = 2 * (4 + 1);  // part 1 shows two rounds of k drafts and a bonus token, whatever -n is
    info.csv_columns = "series,x,y";
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    const int k = opt.config.num_assistant_tokens;
    opt.lookahead = 2 * (k + 1);
    const GenerationConfig lookup = opt.config;  // part 4's row "yours"
    opt.config.prompt_lookup_num_tokens = 0;     // parts 1-3 draft with the draft model
    return run_program([&] {
        Session target = open_session(opt);
        std::optional<Gpt2> draft = open_assistant(opt, target);
        if (!draft)
            throw Error("chapter 08 needs a draft model", "pass --assistant-model DIR (default: " + builtin_draft_dir() + ")");
        const Speculation session{std::move(target), std::move(*draft)};
        CsvRows csv;
        const ModelConfig &t = session.model.config(), &d = session.draft.config();
        std::printf("Target: %s, %d layers x %d wide, %s parameters (%.1f MB in float32).\n"
                    "Draft: %s, %d layers x %d wide, %s parameters. The same tokenizer: %s tokens.\n",
                    display_model_dir(opt.model_dir).c_str(), t.n_layer, t.n_embd, with_commas(parameter_count(t)).c_str(),
                    static_cast<double>(parameter_count(t)) * 4 / 1e6, display_model_dir(opt.assistant_model_dir).c_str(),
                    d.n_layer, d.n_embd, with_commas(parameter_count(d)).c_str(),
                    with_commas(static_cast<uint64_t>(t.vocab_size)).c_str());

        std::printf("\n== 1. One round at a time (greedy, k = %d drafts) ==\n", k);
        one_round_at_a_time(session, k, 2);

        std::printf("\n== 2. Predict the speed-up, then measure it (k = 1..%d, %d new tokens) ==\n", kMaxK,
                    session.config.max_new_tokens);
        const Costs costs = predicted_against_measured(session, csv);

        std::printf("\n== 3. Acceptance against temperature ==\n");
        acceptance_against_temperature(session, csv);

        std::printf("\n== 4. Prompt lookup: drafts copied from the text itself ==\n");
        prompt_lookup(session, costs, lookup);

        std::printf("\n== 5. Hugging Face's target-distribution case, counted ==\n");
        target_distribution_case();

        if (!opt.csv.empty()) {
            write_series_csv(opt.csv, info.csv_columns, csv);
            std::printf("\n(wrote part 2's speed-ups and verify costs and part 3's acceptance to %s)\n", opt.csv.c_str());
        }
        std::printf("\nYour exercises (./grade 08 grades them):\n");
        report_exercises();
        return 0;
    });
}
