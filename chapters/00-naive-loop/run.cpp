// Chapter 00: the model and the prompt, then the naive loop itself, streaming the text as it grows.
#include <cstdio>
#include <iostream>
#include <vector>

#include "chapter00.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter00 {

std::vector<int> show_model_and_prompt(const Gpt2& model, const Tokenizer& tokenizer, const CommandLine& opt) {
    const ModelConfig& c = model.config();
    std::printf("model: %s\n  GPT-2, %d layers, %d heads, width %d, vocabulary %d, context %d tokens\n",
                display_model_dir(opt.model_dir).c_str(), c.n_layer, c.n_head, c.n_embd, c.vocab_size, c.n_positions);

    const std::vector<int> prompt = tokenizer.encode(opt.prompt);
    std::printf("prompt: %zu tokens:", prompt.size());
    for (int id : prompt) std::printf(" %d=%s", id, visible_token(tokenizer.token_bytes(id)).c_str());
    std::printf("\n\n");
    return prompt;
}

std::vector<StepRecord> stream_continuation(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                                            const CommandLine& opt) {
    const ModelConfig& c = model.config();
    // The loop needs a rule to pick a token; this chapter takes the most likely one
    // (chapter 01 looks at that rule closely, chapters 02-04 replace it).
    // [ch00:stream]
    std::vector<StepRecord> steps;
    Utf8Stream stream;
    std::cout << "--- continuation ---\n" << opt.prompt << std::flush;
    const StopRule stop{opt.config.max_new_tokens, c.eos_token_id};
    generate_naive(model, prompt, stop, argmax, [&](const StepRecord& s) {
        steps.push_back(s);
        std::cout << stream.push(tokenizer.token_bytes(s.token)) << std::flush;
    });
    std::cout << stream.flush() << "\n--- end (" << steps.size() << " new tokens) ---\n";
    // [/ch00:stream]
    return steps;
}

}  // namespace chapter00
