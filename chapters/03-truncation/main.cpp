// Chapter 03 - Truncation: top-k, top-p and min-p.
//
// Sampling from the whole distribution lets the long tail of unlikely tokens in: thousands of
// tokens with tiny probabilities add up to a real chance of nonsense. Truncation removes the
// tail before sampling. Three rules, three different ideas of "the tail":
//   top-k  keeps a fixed number of tokens;
//   top-p  keeps the smallest set whose mass reaches p (it adapts to the distribution's shape);
//   min-p  keeps tokens at least min_p times as likely as the top one (it scales with confidence).
// This program shows them side by side on real steps of the embedded model, on a peaked and a
// flat step, works the classic top-p exercise, and shows that where temperature sits in the
// chain (Hugging Face vs llama.cpp vs vLLM) changes the candidate set.
//
// Library code this chapter introduces: apply_top_k, top_p_keep, apply_top_p, min_p_keep,
// apply_min_p, count_candidates (sampling/sampling.hpp); ChainOrder (decoding/generation_config.hpp).
#include <cstdio>
#include <optional>

#include "chapter03.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;
using namespace chapter03;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-03",
                                        "Truncation: top-k, top-p and min-p on the same step.",
                                        "A computer is");
    info.defaults.max_new_tokens = 24;
    info.csv_columns = "step,rank,id,token,probability,top_k,top_p,min_p,entropy";
    info.steers = {{"part 6", {"max-new-tokens", "do-sample", "temperature", "top-k", "top-p", "min-p", "min-tokens-to-keep",
                               "order", "seed"}}};
    info.lookahead = kScanned - 1;  // part 2 walks kScanned greedy steps: the prompt must leave room, whatever -n is
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const Vec logits = last_position_logits(model.forward(prompt));

        std::printf("== 1. Three truncations of the same step (after \"%s\") ==\n", opt.prompt.c_str());
        three_truncations(logits, tok);

        std::printf("\n== 2. Fixed size against adaptive: a peaked step and a flat step ==\n");
        const auto [peaked, flat] = peaked_and_flat(model, prompt, kScanned);
        print_peaked_and_flat(model, tok, peaked, flat);

        std::printf("\n== 3. The classic exercise: logits [10, 9.9, 9.8, 5, 4], 31995 more at 0, p = 0.9 ==\n");
        classic_exercise();

        std::printf("\n== 4. Where temperature sits changes the candidates (T 0.5, top_p 0.9, min_p 0.05) ==\n");
        temperature_placement(logits, tok);

        std::printf("\n== 5. Where the mass lands on p: one token of difference ==\n");
        mass_at_the_boundary();

        std::printf("\n== 6. Your settings: %s (seed %llu) ==\n", LogitsChain(config).describe().c_str(),
                    static_cast<unsigned long long>(config.seed));
        your_settings_run(session, opt);

        if (!opt.csv.empty()) {
            write_truncation_csv(opt.csv, model, tok, peaked, flat);
            std::printf("\n(wrote the peaked and the flat step of part 2, 40 tokens each, to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 03 grades them):\n");
        report_exercises(logits);
        return 0;
    });
}
