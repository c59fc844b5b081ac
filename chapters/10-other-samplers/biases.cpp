// Chapter 10, part 4: the biases on one short greedy run, each as the one processor at the head
// of the chain (make_sampler's seam). Each is a fixed edit of the logits the caller writes down in advance: logit_bias adds to one token, bad_words_ids bans the last token
// of a word right after the rest of it, suppress_tokens bans a token everywhere and
// begin_suppress_tokens only at the first new token. The tokens they name come from the run itself.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {
namespace {

constexpr int kTokens = 16;

std::vector<int> run(const Session& s, std::vector<Processor> first, const std::string& label, const std::string& why) {
    const Generation g = greedy_with(s, s.prompt, kTokens, std::move(first));
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
    const std::vector<int> base = run(s, {}, "greedy", "(no bias)");
    if (base.size() < 3) return;
    const int first = base[0], second = base[1], third = base[2], often = most_repeated(base);
    const int runner_up = top_ids(softmax(next_logits(s, s.prompt)), 2)[1];  // the first step's second choice
    const std::vector<int> eos{s.model.config().eos_token_id};

    const std::vector<std::pair<int, float>> bias{{runner_up, 2.0f}};
    run(s, {{"logit_bias", [bias](Vec& z, const DecodeContext&) { apply_logit_bias(z, bias); }}},
        "logit_bias " + std::to_string(runner_up) + ":2", shown(s, runner_up) + " (the first step's second choice) raised by 2 at every step");

    const std::vector<std::vector<int>> bad{{second, third}};
    run(s, {{"bad_words", [bad, eos](Vec& z, const DecodeContext& c) { apply_bad_words(z, whole_sequence(c), bad, eos); }}},
        "bad_words_ids \"" + std::to_string(second) + " " + std::to_string(third) + "\"",
        shown(s, third) + " banned only right after " + shown(s, second));

    const std::vector<int> suppressed{often};
    run(s, {{"suppress_tokens", [suppressed](Vec& z, const DecodeContext&) { apply_suppress_tokens(z, suppressed); }}},
        "suppress_tokens " + std::to_string(often), shown(s, often) + " (the run's most repeated token) banned everywhere");

    // begin_suppress_tokens is suppress_tokens at the first new token only (HF's begin_index)
    const std::vector<int> at_begin{first};
    run(s, {{"begin_suppress_tokens", [at_begin](Vec& z, const DecodeContext& c) {
                 if (c.step == 0) apply_suppress_tokens(z, at_begin);
             }}},
        "begin_suppress_tokens " + std::to_string(first), shown(s, first) + " banned at the first new token only");
}

}  // namespace chapter10
