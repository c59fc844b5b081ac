// Chapter 08, parts 2 and 3: predict the speed-up from what can be measured without speculating
// (the acceptance alpha, the draft's cost c, the cost of verifying k tokens), then speculate and
// measure it; and how acceptance falls with temperature, for Leviathan's rule and llama.cpp's.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter08.hpp"
#include "decodebook/decoding/generation_config.hpp"

using namespace decodebook;

namespace chapter08 {
namespace {

// The settings of part 2: greedy, then sampling at two temperatures. Sampled runs are held to
// their full length (EOS masked until max_new_tokens), so both loops make the same number of tokens.
std::vector<std::pair<std::string, GenerationConfig>> settings(const GenerationConfig& base) {
    GenerationConfig greedy = base;
    greedy.do_sample = false;
    std::vector<std::pair<std::string, GenerationConfig>> out{{"greedy", greedy}};
    for (const float t : {0.7f, 1.0f}) {
        GenerationConfig c = base;
        c.do_sample = true;
        c.temperature = t;
        c.min_new_tokens = c.max_new_tokens;
        out.emplace_back("T = " + knob_number(t), c);
    }
    return out;
}

}  // namespace

Costs predicted_against_measured(const Speculation& s, CsvRows& csv) {
    Costs greedy_costs;
    for (const auto& [name, config] : settings(s.config)) {
        // before speculating: what a step of each model costs with this setting's chain, what a
        // verification call costs, the target alone, and the acceptance its run implies
        Costs costs;
        costs.target_ms = step_ms(s.model, s.prompt, config, 32);
        costs.draft_ms = step_ms(s.draft, s.prompt, config, 32);
        costs.c = costs.draft_ms / costs.target_ms;
        for (int k = 1; k <= kMaxK; ++k) costs.verify.push_back(verify_ratio(s.model, s.prompt, config, k, 9));
        const Timed plain = plain_run(s, s.prompt, config, 2);
        const double alpha = expected_acceptance(s, config, plain.g.ids).leviathan;
        std::printf("\n%s: a target step %.3f ms, a draft step %.3f ms: c = %.2f. Verifying k drafts in one call costs, "
                    "in target steps:\n ",
                    name.c_str(), costs.target_ms, costs.draft_ms, costs.c);
        for (int k = 1; k <= kMaxK; ++k) std::printf(" k=%d %.2fx", k, costs.verify[static_cast<size_t>(k)]);
        std::printf("\nThe target alone: %.0f tokens/s. Expected acceptance alpha = %.2f (mean of sum min(p, q) over "
                    "the %zu positions it wrote).\n",
                    plain.tokens_per_second(), alpha, plain.g.ids.size());
        std::printf("  %-3s %-22s %-12s %-16s %-14s %s\n", "k", "tokens/call exp./seen", "alpha seen", "Leviathan pred.",
                    "+ verify cost", "measured");
        std::vector<double> rest;  // per round, milliseconds the two models' calls do not explain
        std::string tag = "greedy";
        if (name != "greedy") tag = std::string(1, 't').append(knob_number(config.temperature));
        for (int k = 1; k <= kMaxK; ++k) {
            GenerationConfig ck = config;
            ck.num_assistant_tokens = k;
            const double expected = expected_tokens_per_round(alpha, k);
            const double leviathan = predicted_speedup(alpha, k, costs.c);
            const double with_verify = expected / (k * costs.c + costs.verify[static_cast<size_t>(k)]);
            const Timed spec = speculative_run(s, s.prompt, ck, 1);
            const double measured = plain.ms / spec.ms;
            std::printf("  %-3d %5.2f / %-14.2f %-12.2f %-16.2f %-14.2f %.2f\n", k, expected,
                        static_cast<double>(spec.stats.emitted) / spec.stats.rounds, spec.stats.alpha(), leviathan,
                        with_verify, measured);
            const double rounds = spec.stats.rounds;
            rest.push_back(spec.ms / rounds - spec.stats.drafted / rounds * costs.draft_ms -
                           costs.verify[static_cast<size_t>(k)] * costs.target_ms);
            csv.push_back({"predicted_" + tag, {k, leviathan}});
            csv.push_back({"predicted_verify_" + tag, {k, with_verify}});
            csv.push_back({"measured_" + tag, {k, measured}});
            if (name == "greedy") csv.push_back({"verify_cost", {k, costs.verify[static_cast<size_t>(k)]}});
        }
        std::sort(rest.begin(), rest.end());
        std::printf("  Beyond the two models' calls, a round took %.3f ms more (median over k): %.2f target steps of the "
                    "loop's own work the formulas leave out.\n",
                    rest[rest.size() / 2], rest[rest.size() / 2] / costs.target_ms);
        if (name == "greedy") greedy_costs = costs;
    }
    return greedy_costs;
}

void acceptance_against_temperature(const Speculation& s, CsvRows& csv) {
    std::printf("  %-12s %-30s %s\n", "", "expected (from the target's run)", "seen (speculating, k = 4)");
    std::printf("  %-12s %-14s %-15s %-14s %s\n", "temperature", "sum min(p,q)", "sum p q", "leviathan", "sample_and_compare");
    for (const float t : {0.0f, 0.3f, 0.7f, 1.0f, 1.5f}) {
        GenerationConfig c = s.config;
        c.do_sample = t > 0;
        if (t > 0) c.temperature = t;
        c.min_new_tokens = c.max_new_tokens;
        c.num_assistant_tokens = 4;
        const Timed plain = plain_run(s, s.prompt, c, 1);
        const Acceptance a = expected_acceptance(s, c, plain.g.ids);
        const Timed leviathan = speculative_run(s, s.prompt, c, 1);
        c.verify_rule = VerifyRule::SampleAndCompare;
        const Timed compare = speculative_run(s, s.prompt, c, 1);
        std::printf("  %-12s %-14.2f %-15.2f %-14.2f %.2f\n", t > 0 ? knob_number(t).c_str() : "0 (greedy)", a.leviathan,
                    a.sample_and_compare, leviathan.stats.alpha(), compare.stats.alpha());
        csv.push_back({"acceptance_leviathan", {t, a.leviathan}});
        csv.push_back({"acceptance_sample_and_compare", {t, a.sample_and_compare}});
    }
}

}  // namespace chapter08
