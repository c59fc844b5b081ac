// Chapter 03: the first step and part 5's case through your exercises (exercises/03-truncation/).
#include <string>
#include <vector>

#include "chapter03.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter03 {

void report_exercises(const Vec& logits) {
    const Vec hf_case = hf_top_p_case();
    Vec yours_k = logits;
    const ExerciseAttempt k = try_exercise([&] { your_apply_top_k(yours_k, 5, 1); });
    print_exercise_status(course_exercise("your_apply_top_k"), k, count_candidates(yours_k) == 5 &&
                          yours_k == filtered(logits, only_k(5)), std::to_string(count_candidates(yours_k)) + " candidates", "5 candidates");
    const Vec probs = softmax(logits);
    std::vector<bool> yours_p, yours_boundary;  // this step, and part 5's boundary case (catches the top-down walk)
    const ExerciseAttempt p = try_exercise([&] {
        yours_p = your_top_p_keep(probs, 0.9, 1);
        yours_boundary = your_top_p_keep(hf_case, 0.8, 1);
    });
    const bool same_p = yours_p == top_p_keep(probs, 0.9, 1) && yours_boundary == top_p_keep(hf_case, 0.8, 1);
    print_exercise_status(course_exercise("your_top_p_keep"), p, same_p, "a different set (here or on part 5's case)",
                          std::to_string(count_candidates(filtered(logits, only_p(0.9f)))) + " candidates here, " +
                              std::to_string(kept_by(hf_case, 0.8, TopPRule::HuggingFace)) + " on part 5's case");
    std::vector<bool> yours_m;
    const ExerciseAttempt m = try_exercise([&] { yours_m = your_min_p_keep(probs, 0.1, 1); });
    print_exercise_status(course_exercise("your_min_p_keep"), m, yours_m == min_p_keep(probs, 0.1, 1),
                          "a different set", std::to_string(count_candidates(filtered(logits, only_min_p(0.1f)))) + " candidates");
}

}  // namespace chapter03
