// Solution 00.2 - The naive decode loop.                    Chapter 00: the naive decode loop
#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                const Picker& pick, const StepCallback& on_step) {
    check_generation_request(model.config(), prompt, stop);
    std::vector<int> sequence = prompt;
    std::vector<int> generated;
    for (int step = 0; step < stop.max_new_tokens; ++step) {
        const xt::xtensor<float, 2> logits = model.forward(sequence);    // (T, V)
        const xt::xtensor<float, 1> next = your_last_position_logits(logits);  // (V)
        const int token = pick(next);
        if (on_step) {
            on_step({step, static_cast<int>(sequence.size()), token, next(static_cast<size_t>(token)),
                     softmax(next)(static_cast<size_t>(token)), 0.0});
        }
        sequence.push_back(token);
        generated.push_back(token);
        if (token == stop.eos_id) break;  // EOS stays in the output
    }
    return generated;
}

}  // namespace decodebook
