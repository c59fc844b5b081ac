// Chapter 00: the chapter's input through your exercises (exercises/00-naive-loop/).
#include <vector>

#include "chapter00.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter00 {

void report_exercises(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt, const StopRule& stop) {
    const xt::xtensor<float, 2> logits = model.forward(prompt);
    xt::xtensor<float, 1> yours_last;
    const ExerciseAttempt last = try_exercise([&] { yours_last = your_last_position_logits(logits); });
    print_exercise_status(course_exercise("your_last_position_logits"), last,
                          yours_last == last_position_logits(logits), "a different vector", "the last row");
    std::vector<int> yours;
    const std::vector<int> library = generate_naive(model, prompt, stop, argmax);
    const ExerciseAttempt loop = try_exercise([&] { yours = your_generate_naive(model, prompt, stop, argmax); });
    print_exercise_status(course_exercise("your_generate_naive"), loop, yours == library,
                          visible_token(tokenizer.decode(yours)), visible_token(tokenizer.decode(library)));
}

}  // namespace chapter00
