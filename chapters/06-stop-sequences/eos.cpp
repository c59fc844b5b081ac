// Chapter 06, part 1: EOS is a list of ids, decided before the text exists, and it stays in the
// output; min_new_tokens masks it (-inf) until enough tokens exist.
#include <cstdio>
#include <string>
#include <vector>

#include "chapter06.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter06 {
namespace {

std::string ids_tail(const std::vector<int>& ids, size_t n) {
    std::string out = ids.size() > n ? "... " : "";
    for (size_t i = ids.size() > n ? ids.size() - n : 0; i < ids.size(); ++i) out += std::to_string(ids[i]) + " ";
    return out;
}

void print_run(const char* label, const Generation& g) {
    std::printf("  %-34s %s\n", label, visible_token(g.text).c_str());
    std::printf("  %-34s %zu tokens, ids %s-> finish_reason %s\n", "", g.ids.size(), ids_tail(g.ids, 3).c_str(),
                to_string(g.finish_reason).c_str());
}

}  // namespace

GenerationConfig greedy_config(int max_new_tokens) {
    GenerationConfig c;  // do_sample false: argmax after the processors (here: min_new_tokens)
    c.max_new_tokens = max_new_tokens;
    return c;
}

EosRuns eos_rules(const Gpt2& model, const Tokenizer& tok) {
    const std::vector<int> fortune = tok.encode(kFortunePrompt);
    const int eos = model.config().eos_token_id;
    GenerationConfig plain = greedy_config(48);
    const Generation a = generate(model, tok, fortune, plain, make_sampler(plain, 0));
    print_run("eos_token_id model (2047):", a);
    GenerationConfig two = plain;
    const std::vector<int> period = tok.encode(".");
    two.eos_token_id = std::vector<int>{eos, period.at(0)};
    const Generation b = generate(model, tok, fortune, two, make_sampler(two, 0));
    const std::string two_label = "eos_token_id [" + std::to_string(eos) + ", " + std::to_string(period[0]) + " \".\"]:";
    print_run(two_label.c_str(), b);
    std::printf("  %-34s %zu tokens earlier than with the model's EOS alone\n", "", a.ids.size() - b.ids.size());
    GenerationConfig longer = plain;
    longer.min_new_tokens = static_cast<int>(a.ids.size()) + 6;
    const Generation c = generate(model, tok, fortune, longer, make_sampler(longer, 0));
    const std::string min_label = "min_new_tokens " + std::to_string(longer.min_new_tokens) + ":";
    print_run(min_label.c_str(), c);
    std::printf("  chain: %s. The EOS the model wanted at step %zu is masked (-inf) until %d tokens\n"
                "  exist; the stop strings below are not delayed by it (Hugging Face's rule).\n",
                LogitsChain(longer).describe().c_str(), a.ids.size() - 1, longer.min_new_tokens);
    return {a, c, longer.min_new_tokens};
}

}  // namespace chapter06
