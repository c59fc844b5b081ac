// Chapter 04 - Penalties: breaking repetition loops.
//
// Chapter 01 showed greedy decoding falling into a loop. Penalties change the logits of tokens
// that already appeared, so the loop's argmax stops winning:
//   repetition penalty (CTRL's, with HF's sign fix): z / theta for positive logits, z * theta for negative ones;
//   presence / frequency (OpenAI, vLLM): subtract a flat fee and a per-count fee;
//   no-repeat-ngram (HF): forbid completing any n-gram that already occurred.
// This program runs the same greedy loop with each penalty and scope, shows the sign trap (a naive
// z / theta on a negative logit makes the repeat MORE likely: it moves up the ranking), how the
// strength of the penalty matters, and samples with a penalty.
//
// Library code this chapter introduces: apply_repetition_penalty, apply_presence_frequency,
// apply_no_repeat_ngram (sampling/sampling.hpp); PenaltyScope (decoding/generation_config.hpp);
// distinct_n (course/metrics.hpp).
#include <cstdio>
#include <optional>
#include <vector>

#include "chapter04.hpp"
#include "decodebook/decoding/naive_loop.hpp"

using namespace decodebook;
using namespace chapter04;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-04",
                                        "Penalties: repetition, presence/frequency and no-repeat-ngram break greedy loops.",
                                        "A computer is");
    info.defaults.max_new_tokens = 48;
    info.defaults.temperature = 0.8f;          // part 4 samples with typical chat settings
    info.defaults.repetition_penalty = 1.3f;   // ... and a penalty, the subject of the chapter
    info.steers = {{"parts 1 and 4", {"max-new-tokens"}},
                   {"part 4", {"do-sample", "temperature", "top-k", "top-p", "seed", "repetition-penalty", "penalty-scope",
                               "penalty-last-n", "presence-penalty", "frequency-penalty", "no-repeat-ngram-size"}}};
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;

        std::printf("== 1. The same greedy run with each penalty (\"%s\", %d tokens) ==\n", opt.prompt.c_str(),
                    config.max_new_tokens);
        const std::vector<int> plain = each_penalty(session);

        std::printf("\n== 2. The sign trap ==\n");
        // At the end of the looping run, every token seen so far is penalised, by the naive rule and
        // by the sign-aware one.
        std::vector<int> context = prompt;
        context.insert(context.end(), plain.begin(), plain.end());
        const Vec z = last_position_logits(model.forward(context));
        sign_trap(z, context, tok);

        std::printf("\n== 3. How strong: the seen token the model likes most next, under growing theta ==\n");
        penalty_strength(z, context, tok);

        std::printf("\n== 4. Penalties with sampling: your settings, seed %llu ==\n",
                    static_cast<unsigned long long>(config.seed));
        sampling_with_penalty(session, opt);

        std::printf("\nYour exercises (./grade 04 grades them):\n");
        report_exercises(z, context, plain);
        return 0;
    });
}
