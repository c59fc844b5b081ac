// Chapter 01, part 3: stopping at <|endoftext|>. The model ends a fortune with it, generation stops
// there, and the token stays in the returned ids (as in Hugging Face's generate);
// skip_special_tokens leaves it out of the text, never out of the ids.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter01.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter01 {
namespace {

// A prompt whose greedy continuation ends its fortune with <|endoftext|> quickly.
const char* const kEndingPrompt = "Murphy's Law:\n\t";

}  // namespace

void stopping_at_eos(const Gpt2& model, const Tokenizer& tok) {
    const int eos = model.config().eos_token_id;
    const Generation end_run = run_greedy(model, tok, kEndingPrompt, 48);
    const std::vector<int>& ending = end_run.ids;
    if (end_run.finish_reason == FinishReason::Eos) {
        std::printf("The model ended the fortune: the last of the %zu new tokens is <|endoftext|> (id %d), and\n"
                    "generation stopped there although 48 were allowed. Like HF generate, the EOS token is\n"
                    "kept in the returned ids: [..., %d].\n",
                    ending.size(), eos, ending.back());
        // The same run with skip_special_tokens (HF's decode flag, vLLM's default): the same ids,
        // and <|endoftext|> left out of the text.
        GenerationConfig skip;
        skip.max_new_tokens = 48;
        skip.skip_special_tokens = true;
        const Generation skipped = generate(model, tok, tok.encode(kEndingPrompt), skip, greedy);
        std::printf("With skip_special_tokens true (HF's tok.decode(ids, skip_special_tokens=True); vLLM's default)\n"
                    "the ids are %s, and the text ends %s instead of %s.\n",
                    skipped.ids == ending ? "the same" : "DIFFERENT (this should never happen)",
                    visible_token(skipped.text.substr(skipped.text.size() - std::min<size_t>(skipped.text.size(), 12))).c_str(),
                    visible_token(end_run.text.substr(end_run.text.size() - std::min<size_t>(end_run.text.size(), 25))).c_str());
    } else {
        std::printf("This run used all 48 tokens without producing <|endoftext|>.\n");
    }
}

}  // namespace chapter01
