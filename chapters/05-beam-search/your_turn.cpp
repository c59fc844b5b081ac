// Chapter 05: part 2's toy through your exercises (exercises/05-beam-search/).
#include <string>
#include <vector>

#include "chapter05.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter05 {

void report_exercises() {
    const std::vector<Beam> start{Beam{}};
    const std::vector<Vec> rows = toy_rows(start);
    BeamStep step_yours;
    const ExerciseAttempt a = try_exercise([&] { step_yours = your_beam_step(start, rows, {2}, 2, false); });
    const BeamStep step_lib = beam_step(start, rows, {2}, 2, false);
    auto ids_of = [](const std::vector<Beam>& bs) {
        std::string t;
        for (const Beam& b : bs) {
            if (!t.empty()) t += ' ';
            t += toy_text(b.ids);
        }
        return t.empty() ? std::string("none") : t;
    };
    bool same = step_yours.running.size() == step_lib.running.size() && step_yours.finished.size() == step_lib.finished.size();
    for (size_t i = 0; same && i < step_lib.running.size(); ++i) same = step_yours.running[i].ids == step_lib.running[i].ids;
    print_exercise_status(course_exercise("your_beam_step"), a, same, "running " + ids_of(step_yours.running),
                          "running " + ids_of(step_lib.running));
    double score_yours = 0;
    bool done_yours = false;
    const ExerciseAttempt b = try_exercise([&] {
        score_yours = your_beam_score(-6.0, 3, true, 4, 1.0f, BeamScoring::HuggingFace);
        done_yours = your_beam_search_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic);
    });
    const double score_lib = beam_score(-6.0, 3, true, 4, 1.0f, BeamScoring::HuggingFace);
    const bool done_lib = beam_search_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic);
    print_exercise_status(course_exercise("your_beam_score"), b, score_yours == score_lib && done_yours == done_lib,
                          "score " + std::to_string(score_yours) + (done_yours ? ", done" : ", not done"),
                          "score " + std::to_string(score_lib) + (done_lib ? ", done" : ", not done"));
}

}  // namespace chapter05
