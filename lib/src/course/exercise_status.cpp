// Chapter 00: how chapters report on your exercises.
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"

namespace decodebook {

NotImplemented::NotImplemented(const std::string& exercise, const std::string& file)
    : std::logic_error("exercise " + exercise + " is not implemented yet\n  fix: edit " + file +
                       " (look for the TODO)") {}

ExerciseAttempt try_exercise(const std::function<void()>& call) {
    try {
        call();
        return {true, ""};
    } catch (const NotImplemented&) {
        return {false, ""};
    } catch (const std::exception& e) {
        return {true, e.what()};
    } catch (...) {
        return {true, "an exception that is not a std::exception"};
    }
}

CourseExercise course_exercise(const std::string& function) {
    const std::string path = DECODEBOOK_MANIFEST;
    std::ifstream in(path);
    if (!in) throw Error("cannot read the exercise manifest " + path, "run the chapter from the build of a decodebook checkout");
    nlohmann::json manifest;
    try {
        manifest = nlohmann::json::parse(in);
        for (const auto& e : manifest.at("exercises")) {
            if (e.at("function").get<std::string>() == function) {
                return {e.at("id").get<std::string>(), function, e.at("files").at(0).get<std::string>()};
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error("the exercise manifest " + path + " is malformed: " + e.what(), "restore exercises/manifest.json from git");
    }
    throw Error("the exercise manifest lists no exercise for " + function, "restore exercises/manifest.json from git");
}

void print_exercise_status(const CourseExercise& ex, const ExerciseAttempt& attempt, bool same, const std::string& yours,
                           const std::string& library) {
    const char* id = ex.id.c_str();
    if (!attempt.implemented) {
        std::printf("  [ ] exercise %s: not started. Edit %s, then rebuild and run ./grade %s\n", id, ex.file.c_str(),
                    ex.id.substr(0, 2).c_str());
    } else if (!attempt.error.empty()) {
        std::printf("  [x] exercise %s: your code threw: %s\n", id, attempt.error.c_str());
    } else if (same) {
        // never a tick: one input cannot catch the classic mistakes (a tie, EOS at the last step)
        std::printf("  [~] exercise %s: looks right on this input \u2014 ./grade %s decides.\n", id, ex.id.substr(0, 2).c_str());
    } else {
        std::printf("  [x] exercise %s: your result differs from the library's on this input:\n"
                    "        yours:   %s\n        library: %s\n",
                    id, yours.c_str(), library.c_str());
    }
}

}  // namespace decodebook
