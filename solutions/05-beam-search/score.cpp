// Exercise 05.2 - Score and early stopping (worked solution; the library's twins are
// decodebook::beam_score and decodebook::beam_search_done).
#include <cmath>

#include "decodebook/exercises.hpp"

namespace decodebook {

double your_beam_score(double sum_logprobs, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                       BeamScoring scoring) {
    int length = generated_len;
    if (scoring == BeamScoring::Vllm) length = prompt_len + generated_len - (ends_with_eos ? 1 : 0);
    return sum_logprobs / std::pow(static_cast<double>(length), static_cast<double>(length_penalty));
}

bool your_beam_search_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                           int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping) {
    if (finished_count < num_beams) return false;
    if (early_stopping == EarlyStopping::Done) return true;
    int length = generated_len;
    if (early_stopping == EarlyStopping::Never && length_penalty > 0) length = max_new_tokens;
    const double bound = best_running_sum / std::pow(static_cast<double>(length), static_cast<double>(length_penalty));
    return bound <= worst_finished_score;
}

}  // namespace decodebook
