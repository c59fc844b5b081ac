#pragma once
/// @file course/exercise_status.hpp
/// @brief The chapters' status line for each exercise: tried on one input, compared with the
/// library, found in `exercises/manifest.json` (chapter 00). Students never include it.
#include <functional>
#include <string>

namespace decodebook {

/// How a chapter found your exercise when it tried it. Introduced in chapter 00.
struct ExerciseAttempt {
    bool implemented = false;  ///< false: the stub still throws NotImplemented
    std::string error;         ///< what your code threw, if anything besides NotImplemented
};

/// Run `call` (which calls one of your exercise functions) and report how it went, never throwing.
/// Introduced in chapter 00.
ExerciseAttempt try_exercise(const std::function<void()>& call);

/// One exercise as `exercises/manifest.json` lists it. Introduced in chapter 00.
struct CourseExercise {
    std::string id;        ///< e.g. "01.1"
    std::string function;  ///< e.g. "your_argmax"
    std::string file;      ///< the stub to edit, e.g. "exercises/01-greedy/argmax.cpp"
};

/// The manifest's entry for the exercise whose function is `function` (the manifest of the
/// source tree the binary was configured from). Introduced in chapter 00.
/// @throws Error when the manifest cannot be read or lists no such function.
CourseExercise course_exercise(const std::string& function);

/// Print one status line for an exercise in a chapter: not started (with the file to edit),
/// "[~] looks right on this input — ./grade decides" (never a tick: one input cannot catch the
/// classic mistakes), or differs (with both results). Introduced in chapter 00.
/// @param exercise from course_exercise
/// @param attempt what try_exercise returned
/// @param same whether your result equals the library's (ignored unless implemented)
/// @param yours your result, printed when it differs
/// @param library the library's result, printed when yours differs
void print_exercise_status(const CourseExercise& exercise, const ExerciseAttempt& attempt, bool same,
                           const std::string& yours = "", const std::string& library = "");

}  // namespace decodebook
