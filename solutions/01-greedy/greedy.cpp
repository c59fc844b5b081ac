// Solution 01.2 - Greedy generation with the EOS rule.      Chapter 01: greedy decoding
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop) {
    // A function is a Picker: argmax already takes the logits and returns an id.
    // Qualified names: decodebook::generate_naive would also match (argument-dependent lookup).
    return your_generate_naive(model, prompt, stop, your_argmax);
}

}  // namespace decodebook
