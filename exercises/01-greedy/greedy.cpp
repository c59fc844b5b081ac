// Exercise 01.2 - Greedy generation with the EOS rule.      Chapter 01: greedy decoding
//
// Contract: greedy decoding of `prompt`: at every step the most likely token (ties to the
// lowest id), stopping right after stop.eos_id (which stays in the output) or after
// stop.max_new_tokens tokens. Same prompt, same tokens, every time.
// It builds on your exercises 00.2 and 01.1 (your_generate_naive, your_argmax): finish those first.
// Tests (./grade 01, tests/exercises/test_01_greedy.cpp): token for token against the
// independent Python reference on every case of tests/data/greedy.json; EOS at the end of a run;
// two runs agree.
// Do not call decodebook::greedy_generate: that is the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop) {
    // TODO: greedy decoding as the contract above says, from your 00.2 and 01.1.
    (void)model, (void)prompt, (void)stop;
    throw NotImplemented("01.2 (your_greedy_generate)", "exercises/01-greedy/greedy.cpp");
}

}  // namespace decodebook
