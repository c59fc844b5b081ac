// Chapter 09: the chapter's examples through your exercises (exercises/09-constrained/).
#include <string>
#include <vector>

#include "chapter09.hpp"
#include "decodebook/constrain/regex.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter09 {
namespace {

std::string ids_text(const std::vector<int>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

}  // namespace

void report_exercises(const Session& s) {
    const Vocabulary model_vocabulary = s.tokenizer.vocabulary();
    // 09.1: every token of the model's vocabulary walked from every state of part 1's DFA (and
    // from kDead); the first walk that differs is shown
    const Dfa number = compile_regex(kNumberRegex);
    std::vector<int32_t> states{Dfa::kDead};
    for (int32_t st = 0; st < static_cast<int32_t>(number.states()); ++st) states.push_back(st);
    std::string yours_walk = "every walk the same", library_walk = yours_walk;
    const ExerciseAttempt a = try_exercise([&] {
        for (int32_t st : states)
            for (int id = 0; id < model_vocabulary.size(); ++id) {
                const std::string& bytes = model_vocabulary.bytes[static_cast<size_t>(id)];
                const int32_t yours = your_walk_token(number, st, bytes), library = number.walk(st, bytes);
                if (yours != library) {
                    const std::string where = "state " + std::to_string(st) + ", token " + std::to_string(id) + ": ";
                    yours_walk = where + std::to_string(yours);
                    library_walk = where + std::to_string(library);
                    return;
                }
            }
    });
    print_exercise_status(course_exercise("your_walk_token"), a, yours_walk == library_walk, yours_walk, library_walk);

    // 09.2: the stub's toy vocabulary in each state of the same DFA, then the person schema's
    // start state on the model's vocabulary
    const Vocabulary toy{{" ", " 1", "0", "12", "1a", "<eos>"}, {5}};
    const std::vector<int> eos{5}, model_eos = resolve_eos_ids(s.config, s.model.config().eos_token_id);
    const Dfa person = compile_regex(person_regex(false));
    std::string yours_sets, library_sets;
    for (int32_t st = 0; st < static_cast<int32_t>(number.states()); ++st)
        library_sets += ids_text(allowed_tokens(number, st, toy, eos)) + " ";
    library_sets += "and " + std::to_string(allowed_tokens(person, person.start, model_vocabulary, model_eos).size()) +
                    " tokens at the JSON's start";
    const ExerciseAttempt b = try_exercise([&] {
        for (int32_t st = 0; st < static_cast<int32_t>(number.states()); ++st)
            yours_sets += ids_text(your_allowed_tokens(number, st, toy, eos)) + " ";
        const std::vector<int> at_start = your_allowed_tokens(person, person.start, model_vocabulary, model_eos);
        yours_sets += "and " + std::to_string(at_start.size()) + " tokens at the JSON's start";
        if (at_start != allowed_tokens(person, person.start, model_vocabulary, model_eos)) yours_sets += " (other ids)";
    });
    print_exercise_status(course_exercise("your_allowed_tokens"), b, yours_sets == library_sets, yours_sets, library_sets);
}

}  // namespace chapter09
