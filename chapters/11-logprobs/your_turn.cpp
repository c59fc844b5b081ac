// Chapter 11: the chapter's examples through your exercises (exercises/11-logprobs/).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter11.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/scoring.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/logprobs.hpp"

using namespace decodebook;

namespace chapter11 {
namespace {

// "4 entries: 262 (-1.3063, rank 1) ..." for a status line
std::string entries_text(const std::vector<LogprobEntry>& entries) {
    std::string text = std::to_string(entries.size()) + " entries:";
    for (const LogprobEntry& e : entries) {
        char one[64];
        std::snprintf(one, sizeof one, " %d (%.4f, rank %d)", e.token, static_cast<double>(e.value), e.rank);
        text += one;
    }
    return text;
}

std::string perplexity_text(const Perplexity& p) {
    char text[96];
    std::snprintf(text, sizeof text, "%.4f over %zu windows", p.value(), p.windows);
    return text;
}

}  // namespace

void report_exercises(const Session& s) {
    // 11.1: the top 3 of part 1's step in processed_logprobs (top-p's -inf included), with a token
    // the chain removed as the drawn one: 3 entries, then the fourth with its rank
    const std::vector<int> eos = resolve_eos_ids(s.config, s.model.config().eos_token_id);
    const Vec raw = last_position_logits(s.model.forward(s.prompt));
    const Vec values = logprob_values(raw, LogitsChain(s.config).apply(raw, DecodeContext{s.prompt, {}, 0, eos}),
                                      LogprobsMode::ProcessedLogprobs);
    const int drawn = top_ids(raw, 200).back();  // far down the list: outside the top 3
    std::vector<LogprobEntry> yours_top;
    const ExerciseAttempt a = try_exercise([&] { yours_top = your_top_logprobs(values, 3, drawn); });
    const std::vector<LogprobEntry> library_top = top_logprobs(values, 3, drawn);
    print_exercise_status(course_exercise("your_top_logprobs"), a, yours_top == library_top, entries_text(yours_top),
                          entries_text(library_top));

    // 11.2: the first 5 held-out fortunes in windows of 64 sliding by 32 (to 1e-9 relative: the
    // same forwards, summed in another order, may differ in the last bits)
    const std::vector<std::string> fortunes = held_out_fortunes();
    const std::vector<int> ids = held_out_ids(s, std::vector<std::string>(fortunes.begin(), fortunes.begin() + 5));
    Perplexity yours_ppl;
    const ExerciseAttempt b = try_exercise([&] { yours_ppl = your_sliding_window_perplexity(s.model, ids, 64, 32); });
    const Perplexity library_ppl = sliding_window_perplexity(s.model, ids, 64, 32);
    const bool same = yours_ppl.windows == library_ppl.windows && yours_ppl.tokens == library_ppl.tokens &&
                      std::abs(yours_ppl.value() - library_ppl.value()) <= 1e-9 * library_ppl.value();
    print_exercise_status(course_exercise("your_sliding_window_perplexity"), b, same, perplexity_text(yours_ppl),
                          perplexity_text(library_ppl));
}

}  // namespace chapter11
