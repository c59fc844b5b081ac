// Chapter 02: the first step's logits through your exercises (exercises/02-temperature/).
#include <string>

#include <xtensor/xtensor.hpp>

#include "chapter02.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter02 {

void report_exercises(const Vec& logits) {
    const Vec probs = softmax(logits);
    Vec yours_p;
    const ExerciseAttempt sm = try_exercise([&] { yours_p = your_softmax(logits); });
    print_exercise_status(course_exercise("your_softmax"), sm,
                          yours_p.size() == probs.size() && xt::allclose(yours_p, probs, 1e-4, 1e-6),
                          "different probabilities", "softmax(logits)");
    Vec yours_t = logits;
    const ExerciseAttempt temp = try_exercise([&] { your_apply_temperature(yours_t, 0.5f); });
    print_exercise_status(course_exercise("your_apply_temperature"), temp,
                          xt::allclose(yours_t, with_temperature(logits, 0.5f)), "different logits", "logits / 0.5");
    int yours_s = -1;
    const ExerciseAttempt smp = try_exercise([&] { yours_s = your_sample_inverse_cdf(probs, 0.5); });
    print_exercise_status(course_exercise("your_sample_inverse_cdf"), smp, yours_s == sample_inverse_cdf(probs, 0.5),
                          "id " + std::to_string(yours_s), "id " + std::to_string(sample_inverse_cdf(probs, 0.5)));
}

}  // namespace chapter02
