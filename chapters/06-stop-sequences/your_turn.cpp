// Chapter 06: part 5's tokens and part 1's min_new_tokens run through your exercises
// (exercises/06-stop-sequences/).
#include <string>
#include <vector>

#include "chapter06.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter06 {
namespace {

// Your 06.1 as a stream: keep what was not shown, show what your_scan_stops says is safe.
std::string your_stream(const std::vector<std::string>& tokens, const std::vector<std::string>& stops) {
    std::string pending, shown;
    for (const std::string& t : tokens) {
        pending += t;
        const StopScan scan = your_scan_stops(pending, stops);
        shown += pending.substr(0, scan.safe);
        if (scan.stop) return shown;
        pending.erase(0, scan.safe);
    }
    return shown + to_valid_utf8(pending);
}

}  // namespace

void report_exercises(const Gpt2& model, const Tokenizer& tok, const EosRuns& part1, const Generation& f) {
    const std::vector<int> fortune = tok.encode(kFortunePrompt);
    const GenerationConfig plain = greedy_config(48);
    const std::vector<std::string> stops{kAttribution};  // part 5's
    const Generation& c = part1.held_open;
    std::vector<std::string> tokens;
    for (int id : f.ids) tokens.push_back(tok.token_bytes(id));
    std::string yours_text;
    const ExerciseAttempt s = try_exercise([&] { yours_text = your_stream(tokens, stops); });
    print_exercise_status(course_exercise("your_scan_stops"), s, yours_text == f.text, visible_token(yours_text),
                          visible_token(f.text));
    std::vector<int> yours_ids;
    const ExerciseAttempt m = try_exercise([&] {
        GenerationConfig no_min = plain;  // your processor instead of the library's, then argmax
        const Sampler yours = [&](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
            xt::xtensor<float, 1> z = logits;
            const std::vector<int> eos_ids(context.eos_ids.begin(), context.eos_ids.end());
            your_apply_min_new_tokens(z, eos_ids, static_cast<int>(context.generated.size()), part1.min_new_tokens);
            return argmax(z);
        };
        yours_ids = generate(model, tok, fortune, no_min, yours).ids;
    });
    print_exercise_status(course_exercise("your_apply_min_new_tokens"), m, yours_ids == c.ids,
                          std::to_string(yours_ids.size()) + " tokens", std::to_string(c.ids.size()) + " tokens");
}

}  // namespace chapter06
