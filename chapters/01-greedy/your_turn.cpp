// Chapter 01: the chapter's inputs through your exercises (exercises/01-greedy/).
#include <string>
#include <vector>

#include "chapter01.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter01 {

void report_exercises(const Gpt2& model, const Tokenizer& tok, const std::string& prompt, const StopRule& stop,
                      const std::vector<int>& first) {
    const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(prompt)));
    int your_pick = -1;
    const ExerciseAttempt pick = try_exercise([&] { your_pick = your_argmax(logits); });
    print_exercise_status(course_exercise("your_argmax"), pick, your_pick == argmax(logits),
                          "id " + std::to_string(your_pick), "id " + std::to_string(argmax(logits)));
    std::vector<int> yours;
    const ExerciseAttempt yours_greedy =
        try_exercise([&] { yours = your_greedy_generate(model, tok.encode(prompt), stop); });
    print_exercise_status(course_exercise("your_greedy_generate"), yours_greedy, yours == first,
                          visible_token(tok.decode(yours)), visible_token(tok.decode(first)));
}

}  // namespace chapter01
