// Exercise 00.2 - The naive decode loop.                    Chapter 00: the naive decode loop
//
// Contract: continue `prompt` with the model, one token per step, choosing each token with
// `pick` from the last position's logits, and return only the new tokens.
//   - Before any work, refuse a bad request the way decodebook::check_generation_request
//     (decoding/naive_loop.hpp) does: it throws decodebook::Error for an empty prompt, unknown ids,
//     max_new_tokens < 1, or prompt + max_new_tokens beyond the context.
//   - Stop after stop.max_new_tokens tokens, or right after the token stop.eos_id, which stays
//     in the output (as in Hugging Face's generate).
//   - If on_step is set, call it once per step with a StepRecord: step (0, 1, ...),
//     context_length (tokens fed to the model) and token at least.
// Tests (./grade 00, tests/exercises/test_00_naive_loop.cpp): exactly max_new_tokens tokens; EOS
// stops and stays; the model sees the growing sequence at every step (context_length); bad
// requests are refused. Do not call decodebook::generate_naive: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                const Picker& pick, const StepCallback& on_step) {
    // TODO: refuse a bad request, then generate as the contract above says.
    (void)model, (void)prompt, (void)stop, (void)pick, (void)on_step;
    throw NotImplemented("00.2 (your_generate_naive)", "exercises/00-naive-loop/generate.cpp");
}

}  // namespace decodebook
