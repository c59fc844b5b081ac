// Chapter 08, parts 4 and 5: prompt lookup (drafts copied from the text itself, no draft model) where
// the text repeats and where it does not; and Hugging Face's target-distribution case, counted.
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter08.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter08 {

void prompt_lookup(const Speculation& s, const Costs& costs, const GenerationConfig& yours) {
    struct Rule {
        std::string name;
        int num_tokens, min_n, max_n;
    };
    const std::string your_rule = (yours.prompt_lookup_min > 0 ? "vLLM, " + std::to_string(yours.prompt_lookup_min) + " <= n <= "
                                                               : std::string("HF, n <= ")) +
                                  std::to_string(yours.max_matching_ngram_size) + ", " +
                                  std::to_string(yours.prompt_lookup_num_tokens) + " tokens";
    std::vector<Rule> rules = {{"HF, n <= 2, 4 tokens", 4, 0, 2},
                               {"HF, n <= 2, 10 tokens (HF's defaults)", 10, 0, 2},
                               {"vLLM, 2 <= n <= 3, 4 tokens", 4, 2, 3}};
    // A row of its own only for a rule that differs from the first row (the chapter's defaults);
    // 0 tokens turns prompt lookup off.
    const bool first_row = yours.prompt_lookup_num_tokens == 4 && yours.prompt_lookup_min == 0 &&
                           yours.max_matching_ngram_size == 2;
    if (yours.prompt_lookup_num_tokens > 0 && !first_row)
        rules.push_back({"yours: " + your_rule, yours.prompt_lookup_num_tokens, yours.prompt_lookup_min,
                         yours.max_matching_ngram_size});
    GenerationConfig greedy = s.config;
    greedy.do_sample = false;
    GenerationConfig sampled = s.config;
    sampled.do_sample = true;
    sampled.temperature = 1.0f;
    sampled.min_new_tokens = sampled.max_new_tokens;
    const std::string fresh = "Q: What do you call";
    const std::vector<int> fresh_ids = s.tokenizer.encode(fresh);
    struct Case {
        std::string what;
        std::vector<int> prompt;
        GenerationConfig config;
    };
    const Case cases[] = {{"greedy on '" + one_line(s.tokenizer.decode(s.prompt)) + "' (it loops, chapter 01)", s.prompt, greedy},
                          {"T = 1 on '" + fresh + "' (little repeats)", fresh_ids, sampled}};
    for (const Case& c : cases) {
        const Timed plain = plain_run(s, c.prompt, c.config, 3);
        std::printf("%s: plain %.0f tokens/s\n", c.what.c_str(), plain.tokens_per_second());
        std::printf("  %-38s %-11s %-13s %-16s %s\n", "rule", "drafted", "kept/drafted", "tokens / call",
                    "measured speed-up");
        for (const Rule& r : rules) {
            GenerationConfig lk = c.config;
            lk.prompt_lookup_num_tokens = r.num_tokens;
            lk.prompt_lookup_min = r.min_n;
            lk.max_matching_ngram_size = r.max_n;
            const Timed spec = speculative_run(s, c.prompt, lk, 2);
            std::printf("  %-38s %-11d %-13.2f %-16.2f %.2f\n", r.name.c_str(), spec.stats.drafted, spec.stats.acceptance(),
                        static_cast<double>(spec.stats.emitted) / spec.stats.rounds, plain.ms / spec.ms);
        }
    }
    std::printf("(measured speed-up: plain decoding's time over speculation's, below 1.00 slower. A call verifying 4 "
                "drafts costs %.2f target steps here, one verifying 8 %.2f: drafts that are rejected are not free.)\n",
                costs.verify[4], costs.verify[8]);
}

void target_distribution_case() {
    // transformers tests/generation/test_utils.py, test_speculative_sampling_target_distribution:
    // vocabulary 10, drafts [1, 4, 5] (candidate logits 10 at ids 1, 4, 5 and -10 elsewhere), target
    // rows -inf except 10 at id 1; 10 at id 4; 2.0 at ids 1 and 8, 1.0 at id 3, -0.01 at id 7
    const float inf = INFINITY;
    const auto softmax_of = [](std::array<float, 10> z) {
        xt::xtensor<float, 1> v = xt::zeros<float>({10});
        for (size_t i = 0; i < 10; ++i) v(i) = z[i];
        return softmax(v);
    };
    const auto draft_row = [&](int id) {
        std::array<float, 10> z;
        z.fill(-10.0f);
        z[static_cast<size_t>(id)] = 10.0f;
        return softmax_of(z);
    };
    std::array<float, 10> r0, r1, r2, r3;
    r0.fill(-inf), r1.fill(-inf), r2.fill(-inf), r3.fill(-inf);
    r0[1] = 10.0f;
    r1[4] = 10.0f;
    r2[1] = 2.0f, r2[8] = 2.0f, r2[3] = 1.0f, r2[7] = -0.01f;
    r3[0] = 0.0f;  // the bonus row: never reached (draft 5 has p = 0)
    const std::vector<xt::xtensor<float, 1>> p{softmax_of(r0), softmax_of(r1), softmax_of(r2), softmax_of(r3)};
    const std::vector<xt::xtensor<float, 1>> q{draft_row(1), draft_row(4), draft_row(5)};
    const std::vector<int> drafts{1, 4, 5};
    // the third token's exact law: the residual max(0, p - q) at position 2, normalised
    xt::xtensor<float, 1> law = residual(p[2], &q[2], 5);
    double total = 0;
    for (float v : law) total += v;
    const int n = 10000;
    std::array<int, 10> count{};
    int two_kept = 0;
    Rng rng(2026);
    for (int i = 0; i < n; ++i) {
        std::vector<double> coins;
        for (int c = 0; c < coins_per_round(3); ++c) coins.push_back(rng.coin());
        const Verdict v = verify_drafts(p, drafts, q, coins);
        two_kept += v.accepted == 2;
        ++count[static_cast<size_t>(v.next)];
    }
    double chi2 = 0;
    std::printf("  %-12s %-10s %-22s\n", "third token", "exact law", "seen in 10,000 rounds");
    for (const int id : {1, 8, 3, 7}) {
        const double expected = law(static_cast<size_t>(id)) / total;
        const double seen = static_cast<double>(count[static_cast<size_t>(id)]) / n;
        chi2 += std::pow(count[static_cast<size_t>(id)] - n * expected, 2) / (n * expected);
        std::printf("  %-12d %-10.4f %-8.4f %s\n", id, expected, seen, bar(seen, 0.5, 40).c_str());
    }
    int other = n;
    for (const int id : {1, 8, 3, 7}) other -= count[static_cast<size_t>(id)];
    std::printf("Drafts 1 and 4 kept, 5 rejected in %d of %d rounds; any other third token: %d times. chi-squared %.2f "
                "(3 degrees of freedom: above 16.27 would happen by chance once in 1,000 runs).\n",
                two_kept, n, other, chi2);
}

}  // namespace chapter08
