// Chapter 08, parts 2 and 3: predict the speed-up from what can be measured without speculating
// (the acceptance alpha, the draft's cost c, the cost of verifying k tokens), then speculate and
// measure it; and acceptance against temperature, for Leviathan's rule and llama.cpp's, pooled over
// a few seeded runs.
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

// Part 3's speculative runs per rule at each sampled temperature (seeds seed, seed + 1, ...): one
// run of max_new_tokens sees too few drafts for its rate to settle near what it expects. Two are
// the fewest that settle; each run adds to the chapter's time (docs/measurements.md).
constexpr int kAcceptanceRuns = 2;
constexpr int kAcceptanceDrafts = 4;  // part 1's default k

// One rule's runs at one temperature, pooled: the drafts kept over those looked at (the rate
// alpha predicts), and the rule's chance of keeping a draft averaged over every position written.
struct Pooled {
    int accepted = 0, looked_at = 0;
    double expected = 0;  // summed over positions
    size_t positions = 0;
    void add(const Timed& run, double expected_mean) {
        accepted += run.stats.accepted;
        looked_at += run.stats.accepted + run.stats.rejected;
        expected += expected_mean * static_cast<double>(run.g.ids.size());
        positions += run.g.ids.size();
    }
    double seen() const { return looked_at ? static_cast<double>(accepted) / looked_at : 0.0; }
    double expected_mean() const { return positions ? expected / static_cast<double>(positions) : 0.0; }
};

}  // namespace

Costs predicted_against_measured(const Speculation& s, CsvRows& csv) {
    Costs greedy_costs;
    int rows = 0, slower = 0;  // over every setting's table: rows, and rows where speculation was slower
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
        if (name == "greedy")
            std::printf("('alpha seen': the drafts kept over the drafts the target looked at, which alpha predicts; "
                        "the drafts after a rejection are never looked at. The rate vLLM reports, kept over drafted, "
                        "counts them too: part 4's 'kept/drafted'.)\n");
        std::printf("  %-3s %-22s %-12s %-16s %-14s %s\n", "k", "tokens/call exp./seen", "alpha seen", "Leviathan pred.",
                    "+ verify cost", "measured");
        std::vector<double> rest;  // per round, milliseconds the two models' calls do not explain
        struct Row {
            int k = 0;
            double tokens = 0, measured = 0;  // tokens per target call seen; the measured speed-up
        };
        Row best;
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
            const double tokens = static_cast<double>(spec.stats.emitted) / spec.stats.rounds;
            std::printf("  %-3d %5.2f / %-14.2f %-12.2f %-16.2f %-14.2f %.2f\n", k, expected, tokens, spec.stats.alpha(),
                        leviathan, with_verify, measured);
            if (k == 1 || measured > best.measured) best = Row{k, tokens, measured};
            ++rows;
            slower += measured < 1.0;
            const double rounds = spec.stats.rounds;
            rest.push_back(spec.ms / rounds - spec.stats.drafted / rounds * costs.draft_ms -
                           costs.verify[static_cast<size_t>(k)] * costs.target_ms);
            csv.push_back({"predicted_" + tag, {k, leviathan}});
            csv.push_back({"predicted_verify_" + tag, {k, with_verify}});
            csv.push_back({"measured_" + tag, {k, measured}});
            if (name == "greedy") csv.push_back({"verify_cost", {k, costs.verify[static_cast<size_t>(k)]}});
        }
        // what 'measured' means, and what a round of the best k cost, in this run's own figures
        const double verify = costs.verify[static_cast<size_t>(best.k)];
        const double round = best.k * costs.c + verify;  // target steps: k draft steps and one verification call
        std::printf("  measured = the target alone's time / speculation's: above 1.00 speculation was faster, below "
                    "1.00 slower. The best k here, k = %d, measured %.2f: speculation took %.2fx the target alone's "
                    "time.\n",
                    best.k, best.measured, 1.0 / best.measured);
        std::printf("  What a round cost at k = %d: %d draft step%s (%d x c = %.2f target steps) and one call verifying "
                    "%d draft%s (%.2f target steps, where Leviathan's formula counts 1): %.2f target steps for the %.2f "
                    "tokens it yielded, %.2f a token, where the target alone took %.2f a token (its own loop's work "
                    "included).\n",
                    best.k, best.k, best.k == 1 ? "" : "s", best.k, best.k * costs.c, best.k, best.k == 1 ? "" : "s",
                    verify, round, best.tokens, round / best.tokens,
                    plain.ms / static_cast<double>(plain.g.ids.size()) / costs.target_ms);
        std::sort(rest.begin(), rest.end());
        std::printf("  And the loop's own work: a round also took %.3f ms (median over k) beyond its draft steps and its "
                    "verification call as timed alone above, %.2f target steps that no formula counts: the verdict, "
                    "appending the kept tokens, cutting both caches back, and whatever the two models' calls cost "
                    "more inside the loop than alone%s.\n",
                    rest[rest.size() / 2], rest[rest.size() / 2] / costs.target_ms,
                    rest[rest.size() / 2] < 0 ? " (below zero: the calls ran faster inside the loop than timed alone, "
                                                "which a busy machine's timings can do)"
                                              : "");
        if (name == "greedy") greedy_costs = costs;
    }
    const std::vector<double>& v = greedy_costs.verify;
    std::printf("\nSpeculation was slower than the target alone (measured below 1.00) in %d of the %d rows. What "
                "Leviathan's formula misses: it assumes a call verifying k drafts costs one step, as on a model whose step waits "
                "on reading its weights from memory, where k more positions hide in that wait. This model's weights "
                "sit in the processor's cache: a step is bound by arithmetic, and each position a call adds is "
                "arithmetic of its own. Greedy, a call verifying 1 draft cost %.2f target steps and one verifying %d "
                "cost %.2f: %.2f more for each draft, so verifying k drafts costs several steps, not one.\n",
                slower, rows, v[1], kMaxK, v[static_cast<size_t>(kMaxK)],
                (v[static_cast<size_t>(kMaxK)] - v[1]) / (kMaxK - 1));
    return greedy_costs;
}

void acceptance_against_temperature(const Speculation& s, CsvRows& csv) {
    const uint64_t seed = s.config.seed;
    const std::string last = std::to_string(seed + kAcceptanceRuns - 1);
    std::printf("Each sampled row pools %d speculative runs per rule (seeds %s %s %s; greedy draws no coins: one "
                "run) of %d tokens, drafting %d token%s a round: one run looks at too few drafts for its rate to "
                "settle. 'seen': the drafts kept "
                "over those looked at; 'expected': the rule's chance of keeping a draft, sum min(p, q) for "
                "Leviathan's and sum p q for sample-and-compare, averaged over the positions of the same runs (their "
                "text follows the target's own law, so it is text the target could have written alone).\n",
                kAcceptanceRuns, std::to_string(seed).c_str(), kAcceptanceRuns == 2 ? "and" : "to", last.c_str(),
                s.config.max_new_tokens, kAcceptanceDrafts, kAcceptanceDrafts == 1 ? "" : "s");
    std::printf("  %-12s %-28s %s\n", "", "Leviathan's rule", "sample-and-compare (llama.cpp)");
    std::printf("  %-12s %-13s %-14s %-13s %s\n", "temperature", "expected", "seen", "expected", "seen");
    const std::string k = "(k = " + std::to_string(kAcceptanceDrafts) + ")";
    std::printf("  %-12s %-13s %-14s %-13s %s\n", "", "sum min(p,q)", k.c_str(), "sum p q", k.c_str());
    double greedy = 0, warm = 0, coldest_compare = 0, hottest_compare = 0;
    float warm_t = 0, hottest_t = 0;
    for (const float t : {0.0f, 0.3f, 0.7f, 1.0f, 1.5f}) {
        Pooled leviathan, compare;
        for (int r = 0; r < (t > 0 ? kAcceptanceRuns : 1); ++r) {
            GenerationConfig c = s.config;
            c.do_sample = t > 0;
            if (t > 0) c.temperature = t;
            c.min_new_tokens = c.max_new_tokens;
            c.num_assistant_tokens = kAcceptanceDrafts;
            c.seed = seed + static_cast<uint64_t>(r);
            const Timed lev = speculative_run(s, s.prompt, c, 1);
            leviathan.add(lev, expected_acceptance(s, c, lev.g.ids).leviathan);
            c.verify_rule = VerifyRule::SampleAndCompare;
            const Timed cmp = speculative_run(s, s.prompt, c, 1);
            compare.add(cmp, expected_acceptance(s, c, cmp.g.ids).sample_and_compare);
        }
        std::printf("  %-12s %-13.2f %-14.2f %-13.2f %.2f\n", t > 0 ? knob_number(t).c_str() : "0 (greedy)",
                    leviathan.expected_mean(), leviathan.seen(), compare.expected_mean(), compare.seen());
        csv.push_back({"acceptance_leviathan", {t, leviathan.expected_mean()}});
        csv.push_back({"acceptance_sample_and_compare", {t, compare.expected_mean()}});
        if (t == 0) greedy = leviathan.expected_mean(), coldest_compare = compare.expected_mean();
        if (t > 0 && leviathan.expected_mean() > warm) warm = leviathan.expected_mean(), warm_t = t;
        hottest_compare = compare.expected_mean(), hottest_t = t;
    }
    std::printf("Why Leviathan's rate %s with temperature: at T = 0 both distributions are one-hot, so sum min(p, q) is "
                "1 where the two models' top tokens agree and 0 where they differ: a draft survives only on agreement "
                "(%.2f of the positions). Warmer, each model spreads its mass, and sum min(p, q) counts the mass they "
                "share even where their top tokens differ (%.2f at T = %s). sum p q is the chance that two independent "
                "draws hit the same token: equal to sum min(p, q) at T = 0 (%.2f), it falls as the mass spreads over "
                "more tokens (%.2f at T = %s).\n",
                warm > greedy ? "rises" : "need not rise", greedy, warm, knob_number(warm_t).c_str(), coldest_compare,
                hottest_compare, knob_number(hottest_t).c_str());
}

}  // namespace chapter08
