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
#include <cmath>
#include <set>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/course/cli.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace {

using Vec = xt::xtensor<float, 1>;

// Run greedy decoding (do_sample off: the penalties, then argmax) and describe the result.
std::vector<int> run(const Gpt2& model, const Tokenizer& tok, const std::vector<int>& prompt, GenerationConfig config,
                     int max_new_tokens, const char* label) {
    config.do_sample = false;
    config.max_new_tokens = max_new_tokens;
    const std::vector<int> out = generate(model, tok, prompt, config, make_sampler(config, 0)).ids;
    const Loop loop = find_loop(out);
    std::printf("  %-28s distinct-2 %.2f  %s\n", label, distinct_n(out, 2),
                loop.period ? ("LOOP of " + std::to_string(loop.period) + " tokens x" +
                               std::to_string(loop.covered / loop.period)).c_str()
                            : "no loop");
    std::printf("      %s\n", visible_token(tok.decode(out)).c_str());
    return out;
}

// The rank of `id` in `z` (1 = the largest logit; ties go to the lower id, as candidate_order).
int rank_of(const Vec& z, int id) {
    int r = 1;
    const float v = z(static_cast<size_t>(id));
    for (size_t j = 0; j < z.size(); ++j) {
        if (z(j) > v || (z(j) == v && static_cast<int>(j) < id)) ++r;
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-04",
                                        "Penalties: repetition, presence/frequency and no-repeat-ngram break greedy loops.",
                                        "A computer is");
    info.defaults.max_new_tokens = 48;
    info.defaults.temperature = 0.8f;          // part 4 samples with typical chat settings
    info.defaults.repetition_penalty = 1.3f;   // ... and a penalty, the subject of the chapter
    const CommandLine opt = parse_command_line(argc, argv, info);
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const int max_new_tokens = config.max_new_tokens;

        std::printf("== 1. The same greedy run with each penalty (\"%s\", %d tokens) ==\n", opt.prompt.c_str(),
                    max_new_tokens);
        const std::vector<int> plain = run(model, tok, prompt, {}, max_new_tokens, "no penalty");
        GenerationConfig rep; rep.repetition_penalty = 1.5f;
        run(model, tok, prompt, rep, max_new_tokens, "repetition_penalty 1.5");
        GenerationConfig out_only = rep; out_only.penalty_scope = PenaltyScope::OutputOnly;
        run(model, tok, prompt, out_only, max_new_tokens, "  ... over the output only");
        GenerationConfig window = rep; window.penalty_scope = PenaltyScope::LastN; window.penalty_last_n = 8;
        run(model, tok, prompt, window, max_new_tokens, "  ... over the last 8 tokens");
        GenerationConfig pf; pf.presence_penalty = 0.3f; pf.frequency_penalty = 0.3f;
        run(model, tok, prompt, pf, max_new_tokens, "presence 0.3 frequency 0.3");
        GenerationConfig ngram; ngram.no_repeat_ngram_size = 3;
        run(model, tok, prompt, ngram, max_new_tokens, "no_repeat_ngram_size 3");

        std::printf("\n== 2. The sign trap ==\n");
        // At the end of the looping run, every token seen so far is penalised, by the naive rule and
        // by the sign-aware one. Show the seen token with a negative logit that the naive rule lifts
        // past the most other tokens.
        std::vector<int> context = prompt;
        context.insert(context.end(), plain.begin(), plain.end());
        const Vec z = last_position_logits(model.forward(context));
        const float theta = 1.5f;
        Vec naive = z, right = z;
        for (int id : std::set<int>(context.begin(), context.end())) naive(static_cast<size_t>(id)) /= theta;  // the bug
        apply_repetition_penalty(right, context, theta);  // the sign-aware rule
        int trap = -1, best_gain = 0;
        for (int id : std::set<int>(context.begin(), context.end())) {
            if (z(static_cast<size_t>(id)) >= 0) continue;
            const int gain = rank_of(z, id) - rank_of(naive, id);
            if (gain > best_gain) trap = id, best_gain = gain;
        }
        if (trap < 0) {
            std::printf("  (no token seen has a negative logit that the naive rule lifts; try another --prompt)\n");
        } else {
            const size_t t = static_cast<size_t>(trap);
            std::printf("  every token seen is penalised with theta = %.1f. Token %s was seen; its logit is %.3f (negative).\n",
                        theta, visible_token(tok.token_bytes(trap)).c_str(), z(t));
            std::printf("  %-28s %8s %10s %6s\n", "", "logit", "p", "rank");
            std::printf("  %-28s %8.3f %10.6f %6d\n", "no penalty", z(t), softmax(z)(t), rank_of(z, trap));
            std::printf("  %-28s %8.3f %10.6f %6d   <- up %d places: the penalty rewards the repeat\n", "naive z / 1.5", naive(t),
                        softmax(naive)(t), rank_of(naive, trap), rank_of(z, trap) - rank_of(naive, trap));
            std::printf("  %-28s %8.3f %10.6f %6d   <- down, as intended\n", "sign-aware z * 1.5 (z < 0)", right(t),
                        softmax(right)(t), rank_of(right, trap));
        }

        std::printf("\n== 3. How strong: the seen token the model likes most next, under growing theta ==\n");
        int liked = -1;
        for (int id : std::set<int>(context.begin(), context.end())) {
            if (liked < 0 || z(static_cast<size_t>(id)) > z(static_cast<size_t>(liked))) liked = id;
        }
        std::printf("  token %s (seen; logit %.3f with no penalty)\n", visible_token(tok.token_bytes(liked)).c_str(),
                    z(static_cast<size_t>(liked)));
        std::printf("  %8s %10s %6s\n", "theta", "p", "rank");
        for (float th : {1.0f, 1.05f, 1.1f, 1.3f, 2.0f, 5.0f}) {
            Vec pen = z;
            apply_repetition_penalty(pen, context, th);
            std::printf("  %8.2f %10.6f %6d\n", th, softmax(pen)(static_cast<size_t>(liked)), rank_of(pen, liked));
        }
        std::printf("  Typical values are 1.05 to 1.3. Far above that every token already used sinks like this one,\n"
                    "  the words a sentence needs again included, and the text has to avoid them.\n");

        std::printf("\n== 4. Penalties with sampling: your settings, seed %llu ==\n",
                    static_cast<unsigned long long>(config.seed));
        std::printf("  chain: %s\n", LogitsChain(config).describe().c_str());
        std::vector<Draw> coins;  // make_sampler's coins and chain, watched for --show-steps
        const Generation sampled = generate(model, tok, prompt, config, make_watched_sampler(config, config.seed, coins));
        std::printf("  %s%s\n  distinct-2 %.2f\n", opt.prompt.c_str(), sampled.text.c_str(), distinct_n(sampled.ids, 2));
        if (opt.show_steps) print_steps(std::cout, sampled.steps, tok, coins);
        std::printf("  (decodebook-diversity measures distinct-n and the model's own loss across samplers)\n");

        std::printf("\nYour exercises (./grade 04 grades them):\n");
        Vec a = z, b = z;
        const ExerciseAttempt r = try_exercise([&] { your_apply_repetition_penalty(a, context, 1.5f); });
        apply_repetition_penalty(b, context, 1.5f);
        print_exercise_status(course_exercise("your_apply_repetition_penalty"), r, a == b, "different logits", "the library's");
        Vec c = z, d = z;
        const ExerciseAttempt pfx = try_exercise([&] { your_apply_presence_frequency(c, plain, 0.8f, 0.5f); });
        apply_presence_frequency(d, plain, 0.8f, 0.5f);
        print_exercise_status(course_exercise("your_apply_presence_frequency"), pfx, xt::allclose(c, d),
                              "different logits", "the library's");
        Vec e = z, f = z;
        const ExerciseAttempt ng = try_exercise([&] { your_apply_no_repeat_ngram(e, context, 3); });
        apply_no_repeat_ngram(f, context, 3);
        print_exercise_status(course_exercise("your_apply_no_repeat_ngram"), ng, e == f,
                              std::to_string(count_candidates(e)) + " candidates", std::to_string(count_candidates(f)) + " candidates");
        return 0;
    });
}
