// Exercise 00.2 - The naive decode loop.                    Chapter 00: the naive decode loop
//
// Write the loop every language model runs. Starting from the prompt, repeat:
//   1. logits = model.forward(sequence)          -- the WHOLE sequence, shape (T, V)
//   2. next   = the last position's logits       -- shape (V); your exercise 00.1 does this
//   3. token  = pick(next)
//   4. append token to the sequence and to the output; call on_step (if set) with a StepRecord
//   5. stop after stop.max_new_tokens tokens, or right after `token == stop.eos_id`
//      (the EOS token stays in the output, as in Hugging Face's generate)
// Return only the NEW tokens, not the prompt.
//
// Before the loop, refuse bad requests: call decodebook::check_generation_request(model.config(),
// prompt, stop) (chapter 00, decode.hpp). It throws a decodebook::Error for an empty prompt,
// unknown ids, max_new_tokens < 1, or prompt + max_new_tokens > the context length.
//
// For on_step, fill at least StepRecord::step (0, 1, ...), context_length (tokens fed to
// forward) and token; logit, probability (decodebook::softmax(next)(token), sampling.hpp) and milliseconds are nice.
// Do not call decodebook::generate_naive: that is the answer.
// Graded by: ./grade 00   (tests in tests/exercises/test_00_naive_loop.cpp)
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                const Picker& pick, const StepCallback& on_step) {
    // TODO: validate the request, then run the loop described above.
    (void)model, (void)prompt, (void)stop, (void)pick, (void)on_step;
    throw NotImplemented("00.2 (your_generate_naive)", "exercises/00-naive-loop/generate.cpp");
}

}  // namespace decodebook
