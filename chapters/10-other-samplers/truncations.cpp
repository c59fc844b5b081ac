// Chapter 10, part 1: each new truncation's idea on chapter 03's peaked and flat steps, beside
// top-p and min-p: how many tokens each keeps, how much of the mass, and whether the most likely
// token survives (typical-p may remove it: that is its idea).
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {

Vec next_logits(const Session& s, const std::vector<int>& context) {
    return last_position_logits(s.model.forward(context));
}

Generation greedy_run(const Session& s, const std::vector<int>& prompt, int max_new_tokens) {
    GenerationConfig c;
    c.max_new_tokens = max_new_tokens;
    return generate_cached(s.model, s.tokenizer, prompt, c, greedy);
}

namespace {

// One truncation at the settings part 1 uses: a label and the edit, on a copy of the logits.
struct Rule {
    std::string label;
    std::function<void(Vec&)> apply;
};

// The settings: top-p and min-p as chapter 03 shows them; typical-p 0.9 (llama.cpp's README
// example); epsilon and eta 3e-4, the low end HF's docs suggest; top-n-sigma 1 (the paper's and
// llama.cpp's README example); XTC at llama.cpp's default threshold 0.1 on a step where its coin
// fires (probability 1 here; 0.5 in the README's example).
std::vector<Rule> rules() {
    return {
        {"top_p 0.9", [](Vec& z) { apply_top_p(z, 0.9f); }},
        {"min_p 0.1", [](Vec& z) { apply_min_p(z, 0.1f); }},
        {"typical_p 0.9 (hf)", [](Vec& z) { apply_typical_p(z, 0.9f, 1, TypicalRule::HuggingFace); }},
        {"typical_p 0.9 (llama.cpp)", [](Vec& z) { apply_typical_p(z, 0.9f, 1, TypicalRule::LlamaCpp); }},
        {"epsilon_cutoff 3e-4", [](Vec& z) { apply_epsilon_cutoff(z, 3e-4f); }},
        {"eta_cutoff 3e-4", [](Vec& z) { apply_eta_cutoff(z, 3e-4f); }},
        {"top_n_sigma 1", [](Vec& z) { apply_top_n_sigma(z, 1.0f); }},
        {"xtc 0.1 (coin fired)", [](Vec& z) { apply_xtc(z, 1.0f, 0.1f, 1, 0.0); }},
    };
}


void show_step(const Session& s, const char* name, const std::vector<int>& context, CsvRows& csv) {
    const Vec z = next_logits(s, context);
    const Vec p = softmax(z);
    const int top = top_ids(p, 1)[0];
    std::printf("  %s step, after ...%s: top token %s p = %.3f, entropy %.2f nats\n", name,
                visible_token(s.tokenizer.decode({context.end() - std::min<long>(4, static_cast<long>(context.size())),
                                                   context.end()})).c_str(),
                visible_token(s.tokenizer.token_bytes(top)).c_str(), p(static_cast<size_t>(top)), entropy(p));
    std::printf("  %-26s %6s %7s %5s  %s\n", "rule", "kept", "mass", "top?", "the most likely kept tokens (p before the rule)");
    for (const Rule& rule : rules()) {
        Vec kept = z;
        rule.apply(kept);
        double mass = 0;
        for (size_t i = 0; i < kept.size(); ++i) mass += std::isfinite(kept(i)) ? p(i) : 0.0;
        const bool top_kept = std::isfinite(kept(static_cast<size_t>(top)));
        std::string first;
        int shown = 0;
        for (int id : candidate_order(p)) {
            if (!std::isfinite(kept(static_cast<size_t>(id)))) continue;
            if (++shown > 4) { first += " ..."; break; }
            char cell[96];
            std::snprintf(cell, sizeof cell, " %s %.3f", visible_token(s.tokenizer.token_bytes(id)).c_str(), p(static_cast<size_t>(id)));
            first += cell;
        }
        std::printf("  %-26s %6d %7.3f %5s %s\n", rule.label.c_str(), count_candidates(kept), mass, top_kept ? "yes" : "NO",
                    first.c_str());
        csv.push_back({std::string("kept_") + name, static_cast<double>(count_candidates(kept)), mass, rule.label});
    }
}

}  // namespace

// The most and the least confident of the first kScanned greedy steps: one greedy run, each
// step's top-1 probability read from its StepRecord (greedy chose the top token).
std::pair<std::vector<int>, std::vector<int>> peaked_and_flat_contexts(const Session& s) {
    GenerationConfig config;
    config.max_new_tokens = kScanned;
    config.eos_token_id = std::vector<int>{};  // scan every step, as chapter 03 does: no early stop
    const Generation g = generate_cached(s.model, s.tokenizer, s.prompt, config, greedy);
    size_t peaked = 0, flat = 0;
    for (size_t i = 0; i < g.steps.size(); ++i) {
        if (g.steps[i].probability > g.steps[peaked].probability) peaked = i;
        if (g.steps[i].probability < g.steps[flat].probability) flat = i;
    }
    const auto context = [&](size_t i) {
        std::vector<int> c = s.prompt;
        c.insert(c.end(), g.ids.begin(), g.ids.begin() + static_cast<long>(i));
        return c;
    };
    return {context(peaked), context(flat)};
}

void truncations_side_by_side(const Session& s, CsvRows& csv) {
    const auto [peaked, flat] = peaked_and_flat_contexts(s);
    std::printf("  (the most and the least confident of the first %d greedy steps, as chapter 03 finds them)\n", kScanned);
    show_step(s, "first", s.prompt, csv);
    show_step(s, "peaked", peaked, csv);
    show_step(s, "flat", flat, csv);

    // Top-n-sigma reads the logits' own scale: z / T moves the maximum and sigma alike, so a
    // temperature applied first keeps the same tokens.
    const Vec z_flat = next_logits(s, flat);
    std::printf("\n  top_n_sigma 1 on the flat step after temperature T first:");
    for (const float t : {0.5f, 1.0f, 2.0f}) {
        Vec z = z_flat;
        divide_by_temperature(z, t);
        apply_top_n_sigma(z, 1.0f);
        std::printf(" T %.1f keeps %d%s", static_cast<double>(t), count_candidates(z), t < 2.0f ? "," : "");
    }
    std::printf("\n  (z / T divides the largest logit and sigma alike: the cut keeps the same tokens at any T)\n");

    // Typical-p's two boundaries differ only where the mass is crossed inside a tie: a step built
    // so (tests/test_other_samplers.cpp checks it); on the model's steps above they agreed.
    const Vec built{0.4f, 0.2f, 0.2f, 0.2f};
    const auto ids_kept = [](const std::vector<bool>& keep) {
        std::string out;
        for (size_t i = 0; i < keep.size(); ++i)
            if (keep[i]) {
                out += ' ';
                out += std::to_string(i);
            }
        return out;
    };
    std::printf("\n  typical_p 0.3 on a step built so, p = 0.4 0.2 0.2 0.2 (the three 0.2s are the most typical and tie):\n"
                "    hf keeps ids%s (a tie at the crossing stays together); llama.cpp keeps ids%s (it stops at the\n"
                "    first running sum over the mass)\n",
                ids_kept(typical_keep(built, 0.3, 1, TypicalRule::HuggingFace)).c_str(),
                ids_kept(typical_keep(built, 0.3, 1, TypicalRule::LlamaCpp)).c_str());
}

}  // namespace chapter10
