// Chapter 00: how chapters report on your exercises.
#include "decodebook/exercises.hpp"

#include <cstdio>

#include "decodebook/error.hpp"

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

void print_exercise_status(const std::string& id, const std::string& file, const ExerciseAttempt& attempt, bool same,
                           const std::string& yours, const std::string& library) {
    if (!attempt.implemented) {
        std::printf("  [ ] exercise %s: not started. Edit %s, then rebuild and run ./grade %s\n", id.c_str(),
                    file.c_str(), id.substr(0, 2).c_str());
    } else if (!attempt.error.empty()) {
        std::printf("  [x] exercise %s: your code threw: %s\n", id.c_str(), attempt.error.c_str());
    } else if (same) {
        std::printf("  [v] exercise %s: your result matches the library's on this input.\n", id.c_str());
    } else {
        std::printf("  [x] exercise %s: your result differs from the library's on this input:\n"
                    "        yours:   %s\n        library: %s\n",
                    id.c_str(), yours.c_str(), library.c_str());
    }
}

}  // namespace decodebook
