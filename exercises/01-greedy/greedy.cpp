// Exercise 01.2 - Greedy generation with the EOS rule.      Chapter 01: greedy decoding
//
// Greedy decoding is the naive loop (exercise 00.2) with argmax (exercise 01.1) as the picker.
// Put them together so that:
//   - the result is deterministic: the same prompt always gives the same tokens;
//   - generation stops right after <|endoftext|> (stop.eos_id), which stays in the output;
//   - otherwise exactly stop.max_new_tokens tokens come out.
// The graders compare your tokens with the independent Python reference, token for token.
//
// This builds on your exercises 00.2 and 01.1 (your_generate_naive, your_argmax);
// finish those first. Do not call decodebook::greedy_generate: that is the answer.
// Graded by: ./grade 01   (tests in tests/exercises/test_01_greedy.cpp)
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop) {
    // TODO: run your naive loop with your argmax as the picker.
    (void)model, (void)prompt, (void)stop;
    throw NotImplemented("01.2 (your_greedy_generate)", "exercises/01-greedy/greedy.cpp");
}

}  // namespace decodebook
