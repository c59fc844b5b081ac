// Chapter 04: part 2's step through your exercises (exercises/04-penalties/).
#include <string>
#include <vector>

#include "chapter04.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter04 {

void report_exercises(const Vec& z, const std::vector<int>& context, const std::vector<int>& plain) {
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
}

}  // namespace chapter04
