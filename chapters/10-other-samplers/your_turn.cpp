// Chapter 10: the chapter's examples through your exercises (exercises/10-other-samplers/).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {
namespace {

int kept(const std::vector<bool>& keep) {
    int n = 0;
    for (bool k : keep) n += k;
    return n;
}

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", v);
    return text;
}

}  // namespace

void report_exercises(const Session& s) {
    // 10.1: HF's typical-p at 0.9 on the prompt's step (part 1's first step)
    const Vec probs = softmax(next_logits(s, s.prompt));
    std::vector<bool> yours_keep;
    const ExerciseAttempt a = try_exercise([&] { yours_keep = your_typical_keep(probs, 0.9, 1); });
    const std::vector<bool> library_keep = typical_keep(probs, 0.9, 1, TypicalRule::HuggingFace);
    print_exercise_status(course_exercise("your_typical_keep"), a, yours_keep == library_keep,
                          std::to_string(kept(yours_keep)) + " kept", std::to_string(kept(library_keep)) + " kept");

    // 10.2: DRY's penalty (multiplier 0.8, base 1.75, allowed length 2) of every token that ever
    // follows in chapter 01's loop, at its end; "\n" as the one breaker
    const std::vector<int> prompt = s.tokenizer.encode(kLoopPrompt);
    GenerationConfig loop;
    loop.max_new_tokens = 40;
    std::vector<int> context = prompt;
    const std::vector<int> out = generate(s.model, s.tokenizer, prompt, loop, greedy).ids;
    context.insert(context.end(), out.begin(), out.end());
    const std::vector<int> breakers = s.tokenizer.encode("\n");
    std::string yours_dry, library_dry;
    const ExerciseAttempt b = try_exercise([&] {
        for (int candidate : std::vector<int>(context.begin(), context.end())) {
            const float yours = your_dry_penalty(context, candidate, breakers, 0.8f, 1.75f, 2);
            const float library = dry_penalty(dry_repeat_length(context, candidate, breakers), 0.8f, 1.75f, 2);
            if (yours != library) {
                yours_dry = "token " + std::to_string(candidate) + ": " + number(yours);
                library_dry = "token " + std::to_string(candidate) + ": " + number(library);
                return;
            }
        }
        yours_dry = library_dry = "every penalty the same";
    });
    print_exercise_status(course_exercise("your_dry_penalty"), b, yours_dry == library_dry, yours_dry, library_dry);

    // 10.3: one mirostat 2.0 step on the prompt's step: tau 5, eta 0.1, mu 10, coin 0.5 (mu the same
    // to 1e-6: a float sum may differ in the last bits)
    double yours_mu = 10, library_mu = 10;
    int yours_token = -1;
    const Vec logits = next_logits(s, s.prompt);
    const ExerciseAttempt c = try_exercise([&] { yours_token = your_mirostat_v2_step(logits, 5.0, 0.1, yours_mu, 0.5); });
    const int library_token = mirostat_v2_step(logits, 5.0, 0.1, library_mu, 0.5);
    print_exercise_status(course_exercise("your_mirostat_v2_step"), c,
                          yours_token == library_token && std::abs(yours_mu - library_mu) < 1e-6,
                          "token " + std::to_string(yours_token) + ", mu " + number(yours_mu),
                          "token " + std::to_string(library_token) + ", mu " + number(library_mu));
}

}  // namespace chapter10
