// Chapter 10, part 4: the biases on one short greedy run, each set by its knob. Each is a fixed edit of the logits the caller writes down in advance: logit_bias adds to one token, bad_words_ids bans the last token
// of a word right after the rest of it, suppress_tokens bans a token everywhere and
// begin_suppress_tokens only at the first new token. The tokens they name come from the run itself.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {
namespace {

constexpr int kTokens = 16;

// A greedy run of kTokens with the knobs given (none: plain greedy), through the knob table as a
// user sets them, bound to the tokenizer (which checks every id a knob names).
std::vector<int> run(const Session& s, const std::vector<std::pair<std::string, std::string>>& knobs, const std::string& why) {
    GenerationConfig c;
    c.max_new_tokens = kTokens;
    std::string label;
    for (const auto& [knob, value] : knobs) {
        set_knob(c, knob, value);
        label += (label.empty() ? "" : " ") + knob + " " + value;
    }
    bind_to_tokenizer(c, s.tokenizer, resolve_eos_ids(c, s.model.config().eos_token_id));
    const Generation g = generate_cached(s.model, s.tokenizer, s.prompt, c, make_sampler(c, 0));
    std::printf("  %-36s %s\n  %-36s   %s\n", label.empty() ? "greedy" : label.c_str(), visible_token(g.text).c_str(), "",
                why.c_str());
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
    const std::vector<int> base = run(s, {}, "(no bias)");
    if (base.size() < 3) return;
    const std::string first = std::to_string(base[0]), second = std::to_string(base[1]), third = std::to_string(base[2]);
    const int often = most_repeated(base);
    const int runner_up = top_ids(softmax(next_logits(s, s.prompt)), 2)[1];  // the first step's second choice
    run(s, {{"logit_bias", std::to_string(runner_up) + ":2"}},
        shown(s, runner_up) + " (the first step's second choice) raised by 2 at every step");
    run(s, {{"bad_words_ids", second + " " + third}}, shown(s, base[2]) + " banned only right after " + shown(s, base[1]));
    run(s, {{"suppress_tokens", std::to_string(often)}}, shown(s, often) + " (the run's most repeated token) banned everywhere");
    run(s, {{"begin_suppress_tokens", first}}, shown(s, base[0]) + " banned at the first new token only");
}

}  // namespace chapter10
