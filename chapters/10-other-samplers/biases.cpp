// Chapter 10, part 4: the biases on one short greedy run. Each is a fixed edit of the logits the
// caller writes down in advance: logit_bias adds to one token, bad_words_ids bans the last token
// of a word right after the rest of it, suppress_tokens bans a token everywhere and
// begin_suppress_tokens only at the first new token. The tokens they name come from the run itself.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {
namespace {

constexpr int kTokens = 16;

std::vector<int> run(const Session& s, const GenerationConfig& c, const std::string& label, const std::string& why) {
    const Generation g = generate_cached(s.model, s.tokenizer, s.prompt, c, make_sampler(c, 0));
    std::printf("  %-36s %s\n  %-36s   %s\n", label.c_str(), visible_token(g.text).c_str(), "", why.c_str());
    return g.ids;
}

std::string shown(const Session& s, int id) { return visible_token(s.tokenizer.token_bytes(id)); }

// The token the run repeats most (the first of them), for suppress_tokens.
int most_repeated(const std::vector<int>& ids) {
    std::map<int, int> count;
    for (int id : ids) ++count[id];
    int best = ids[0];
    for (int id : ids)
        if (count[id] > count[best]) best = id;
    return best;
}

}  // namespace

void biases_demo(const Session& s) {
    GenerationConfig plain;
    plain.max_new_tokens = kTokens;
    plain.eos_token_id = std::vector<int>{};  // the demo wants all kTokens tokens
    const std::vector<int> base = run(s, plain, "greedy", "(no bias)");
    if (base.size() < 3) return;
    const int first = base[0], second = base[1], third = base[2], often = most_repeated(base);
    const int runner_up = top_ids(softmax(next_logits(s, s.prompt)), 2)[1];  // the first step's second choice

    GenerationConfig bias = plain;
    bias.logit_bias = {{runner_up, 2.0f}};
    run(s, bias, "logit_bias " + std::to_string(runner_up) + ":2",
        shown(s, runner_up) + " (the first step's second choice) raised by 2 at every step");

    GenerationConfig bad = plain;
    bad.bad_words_ids = {{second, third}};
    run(s, bad, "bad_words_ids \"" + std::to_string(second) + " " + std::to_string(third) + "\"",
        shown(s, third) + " banned only right after " + shown(s, second));

    GenerationConfig suppress = plain;
    suppress.suppress_tokens = {often};
    run(s, suppress, "suppress_tokens " + std::to_string(often), shown(s, often) + " (the run's most repeated token) banned everywhere");

    GenerationConfig begin = plain;
    begin.begin_suppress_tokens = {first};
    run(s, begin, "begin_suppress_tokens " + std::to_string(first), shown(s, first) + " banned at the first new token only");
}

}  // namespace chapter10
