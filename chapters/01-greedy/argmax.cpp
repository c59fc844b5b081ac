// Chapter 01, part 1: greedy takes the argmax. The five most likely first tokens after the prompt,
// the first of them marked: the only one greedy ever looks at.
#include <cstdio>
#include <string>
#include <vector>

#include "chapter01.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter01 {

void show_first_choice(const Gpt2& model, const Tokenizer& tok, const std::string& prompt) {
    const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(prompt)));
    const xt::xtensor<float, 1> probs = softmax(logits);
    std::printf("The five most likely first tokens after the prompt:\n");
    const std::vector<int> ids = top_ids(probs, 5);
    for (size_t i = 0; i < ids.size(); ++i) {
        const size_t id = static_cast<size_t>(ids[i]);
        std::printf("  %-16s id %5zu  logit %7.3f  p %.3f%s\n", visible_token(tok.token_bytes(ids[i])).c_str(), id,
                    logits(id), probs(id), i == 0 ? "   <- argmax: greedy takes this" : "");
    }
}


}  // namespace chapter01
