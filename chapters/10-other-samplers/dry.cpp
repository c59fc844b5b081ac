// Chapter 10, part 2: DRY against the repetition penalty on chapter 01's looping greedy run. At
// one step inside the loop, the penalty each applies to the likeliest tokens: the repetition
// penalty lowers every token already seen, DRY only the tokens that would extend a repeat of at
// least dry_allowed_length tokens. Then both runs, to see the loop broken.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {
namespace {

// The settings part 2 compares: the repetition penalty at 1.3 (chapter 04's part 4) and DRY at
// llama.cpp's README example (multiplier 0.8, base 1.75, allowed length 2, the whole context,
// the default breakers "\n" ":" "\"" "*").
constexpr float kTheta = 1.3f, kDryMultiplier = 0.8f, kDryBase = 1.75f;
constexpr int kDryAllowed = 2, kDryLastN = -1;

// Part 2's runs: greedy with one penalty, through the knob table as a user sets it (DRY is
// llama.cpp's: its order), bound to the tokenizer as every program binds its config.
GenerationConfig greedy_with_knob(const Session& s, const std::string& knob, const std::string& value) {
    GenerationConfig c;
    c.max_new_tokens = kLoopTokens;
    if (knob == "dry_multiplier") set_knob(c, "order", "llama.cpp");
    set_knob(c, knob, value);
    bind_to_tokenizer(c, s.tokenizer, resolve_eos_ids(c, s.model.config().eos_token_id));
    return c;
}

std::vector<int> joined(const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> c = a;
    c.insert(c.end(), b.begin(), b.end());
    return c;
}

void print_run(const Session& s, const char* label, const std::vector<int>& prompt, const GenerationConfig& c) {
    const Generation g = generate_cached(s.model, s.tokenizer, prompt, c, make_sampler(c, 0));
    const Loop loop = find_loop(g.ids);
    std::printf("  %-26s distinct-2 %.2f  %s\n", label, distinct_n(g.ids, 2),
                loop.period ? ("LOOP of " + std::to_string(loop.period) + " tokens x" +
                               std::to_string(loop.covered / loop.period)).c_str()
                            : "no loop");
    std::printf("      %s\n", visible_token(g.text).c_str());
}

}  // namespace

void dry_against_repetition(const Session& s) {
    const std::vector<int> prompt = s.tokenizer.encode(kLoopPrompt);
    const std::vector<int> out = greedy_run(s, prompt, kLoopTokens).ids;
    const Loop loop = find_loop(out);
    std::printf("  chapter 01's run: \"%s\", greedy, %d tokens: ", kLoopPrompt, kLoopTokens);
    if (loop.period == 0) {
        std::printf("no loop (the model changed?)\n");
        return;
    }
    std::printf("a cycle of %zu tokens from new token %zu on\n", loop.period, loop.start);

    // The step inside the loop's second cycle where the greedy token extends the longest repeat.
    // the default breakers as token sequences of this vocabulary, by llama.cpp's rule
    const std::vector<std::vector<int>> breakers = dry_breaker_sequences(s.tokenizer, GenerationConfig{}.dry_sequence_breakers);
    std::vector<int> single_breakers;  // breakers of one token: where dry_repeat_length stops
    for (const std::vector<int>& b : breakers)
        if (b.size() == 1) single_breakers.push_back(b[0]);
    size_t at = loop.start + loop.period;
    int longest = -1;
    for (size_t i = loop.start + loop.period; i < loop.start + 2 * loop.period && i < out.size(); ++i) {
        const std::vector<int> context = joined(prompt, {out.begin(), out.begin() + static_cast<long>(i)});
        const int L = dry_repeat_length(context, out[i], single_breakers);
        if (L > longest) longest = L, at = i;
    }
    const std::vector<int> context = joined(prompt, {out.begin(), out.begin() + static_cast<long>(at)});
    const Vec z = next_logits(s, context);
    Vec by_rep = z, by_dry = z;
    apply_repetition_penalty(by_rep, context, kTheta);
    apply_dry(by_dry, context, kDryMultiplier, kDryBase, kDryAllowed, kDryLastN, breakers);
    std::printf("  the step after ...%s (new token %zu): the 8 likeliest tokens\n",
                visible_token(s.tokenizer.decode({context.end() - 6, context.end()})).c_str(), at);
    std::printf("  %-14s %5s %8s %14s %7s %10s\n", "token", "seen", "logit", "repetition 1.3", "repeat", "DRY 0.8");
    for (int id : top_ids(softmax(z), 8)) {
        const size_t i = static_cast<size_t>(id);
        const long seen = std::count(context.begin(), context.end(), id);
        const int repeat = dry_repeat_length(context, id, single_breakers);  // -1: it never follows in the context
        const std::string shown = repeat < 0 ? "-" : std::to_string(repeat);
        std::printf("  %-14s %5ld %8.3f %+14.3f %7s %+10.3f\n", visible_token(s.tokenizer.token_bytes(id)).c_str(), seen, z(i),
                    by_rep(i) - z(i), shown.c_str(), by_dry(i) - z(i));
    }
    int lowered_by_rep = 0, lowered_by_dry = 0;
    for (size_t i = 0; i < z.size(); ++i) {
        lowered_by_rep += by_rep(i) < z(i);
        lowered_by_dry += by_dry(i) < z(i);
    }
    std::printf("  over the whole vocabulary the repetition penalty lowers %d tokens (every token seen), DRY %d\n"
                "  (the tokens that would extend a repeat of %d or more; \"repeat\" is that length, dry_repeat_length;\n"
                "   - where no repeat can end with the token: a breaker, or a token the context never continued with)\n",
                lowered_by_rep, lowered_by_dry, kDryAllowed);

    std::printf("  the same greedy run with each:\n");
    GenerationConfig plain;
    plain.max_new_tokens = kLoopTokens;
    print_run(s, "no penalty", prompt, plain);
    print_run(s, "repetition_penalty 1.3", prompt, greedy_with_knob(s, "repetition_penalty", "1.3"));
    print_run(s, "dry_multiplier 0.8", prompt, greedy_with_knob(s, "dry_multiplier", "0.8"));
}

}  // namespace chapter10
