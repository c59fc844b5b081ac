// Chapter 00: the decode loop. Chapter 01: greedy decoding.
#include "decodebook/decoding/naive_loop.hpp"

#include <chrono>
#include <cmath>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {

xt::xtensor<float, 1> last_position_logits(const xt::xtensor<float, 2>& logits) {
    const size_t T = logits.shape(0);
    return xt::view(logits, T - 1, xt::all());
}

void check_generation_request(const ModelConfig& config, const std::vector<int>& prompt, const StopRule& stop) {
    if (prompt.empty()) {
        throw Error("the prompt is empty: the model needs at least one token to condition on",
                    "pass a non-empty --prompt");
    }
    check_token_ids(config, prompt);
    if (stop.max_new_tokens < 1) {
        throw Error("max_new_tokens is " + std::to_string(stop.max_new_tokens) + "; it must be at least 1",
                    "pass --max-new-tokens N with N >= 1");
    }
    const long total = static_cast<long>(prompt.size()) + stop.max_new_tokens;
    if (total > config.n_positions) {
        throw Error("prompt (" + std::to_string(prompt.size()) + " tokens) + max_new_tokens (" +
                        std::to_string(stop.max_new_tokens) + ") = " + std::to_string(total) +
                        " exceeds the model's context of " + std::to_string(config.n_positions) + " tokens",
                    "shorten the prompt or lower --max-new-tokens to at most " +
                        std::to_string(config.n_positions - static_cast<long>(prompt.size())));
    }
    if (stop.eos_id >= config.vocab_size) {
        throw Error("eos_id " + std::to_string(stop.eos_id) + " is outside the vocabulary",
                    "use the model's eos_token_id");
    }
}

std::vector<int> generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                const Picker& pick, const StepCallback& on_step) {
    check_generation_request(model.config(), prompt, stop);
    std::vector<int> sequence = prompt;  // grows by one token per step
    std::vector<int> generated;
    for (int step = 0; step < stop.max_new_tokens; ++step) {
        const auto start = std::chrono::steady_clock::now();
        // 1. forward the whole sequence: (T, V), recomputing every earlier position
        const xt::xtensor<float, 2> logits = model.forward(sequence);
        // 2. only the last row predicts the next token: (V)
        const xt::xtensor<float, 1> next_logits = last_position_logits(logits);
        // 3. choose
        const int token = pick(next_logits);
        if (token < 0 || token >= model.config().vocab_size) {
            throw Error("the picker returned token id " + std::to_string(token) + ", outside the vocabulary",
                        "a picker must return an index into the logits it was given");
        }
        const auto end = std::chrono::steady_clock::now();
        // 4. append
        sequence.push_back(token);
        generated.push_back(token);
        if (on_step) {
            on_step({step, static_cast<int>(sequence.size()) - 1, token, next_logits(static_cast<size_t>(token)),
                     softmax(next_logits)(static_cast<size_t>(token)),
                     std::chrono::duration<double, std::milli>(end - start).count()});
        }
        // 5. stop at end-of-text; like HF, the EOS token stays in the output
        if (token == stop.eos_id) break;
    }
    return generated;
}

std::vector<int> greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                 const StepCallback& on_step) {
    return generate_naive(model, prompt, stop, argmax, on_step);
}

}  // namespace decodebook
