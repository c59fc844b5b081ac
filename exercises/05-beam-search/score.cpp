// Exercise 05.2 - The length-normalised score and the early-stopping test.   Chapter 05
//
// your_beam_score: a finished hypothesis scores sum_logprobs / length ^ length_penalty, where
//   HuggingFace: length = generated_len (the prompt not counted, a final EOS counted);
//   Vllm:        length = prompt_len + generated_len, minus 1 when it ends with EOS.
//   sum -6, 3 generated with EOS, prompt 4, penalty 1:  HF -2,  vLLM -6 / 6 = -1
//
// your_beam_search_done: after a step, does Hugging Face's beam search stop?
//   - never while finished_count < num_beams;
//   - EarlyStopping::Done ("true"): yes, as soon as num_beams are finished;
//   - otherwise compare the best score a running beam could still reach with the worst finished
//     score, and stop unless it is strictly greater. That bound is best_running_sum divided by
//     L ^ length_penalty, with L = generated_len (Heuristic, "false"), or for Never with a positive
//     length_penalty L = max_new_tokens (a running sum only falls, so that is the best it can do).
//
// Tested by: "ex05.2 ..." in tests/exercises/test_05_beam_search.cpp (hand-computed scores for both
// scorings and for length penalties -1, 0, 1, 2, and the three stopping rules at their edges).
// Do not call decodebook::beam_score or beam_search_done: they are the answer.
// Graded by: ./grade 05
#include "decodebook/exercises.hpp"

namespace decodebook {

double your_beam_score(double sum_logprobs, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                       BeamScoring scoring) {
    // TODO: divide the sum by the right length raised to length_penalty.
    (void)sum_logprobs, (void)generated_len, (void)ends_with_eos, (void)prompt_len, (void)length_penalty, (void)scoring;
    throw NotImplemented("05.2 (your_beam_score)", "exercises/05-beam-search/score.cpp");
}

bool your_beam_search_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                           int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping) {
    // TODO: the three stopping rules.
    (void)num_beams, (void)finished_count, (void)worst_finished_score, (void)best_running_sum, (void)generated_len,
        (void)max_new_tokens, (void)length_penalty, (void)early_stopping;
    throw NotImplemented("05.2 (your_beam_search_done)", "exercises/05-beam-search/score.cpp");
}

}  // namespace decodebook
