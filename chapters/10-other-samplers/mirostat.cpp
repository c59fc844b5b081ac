// Chapter 10, part 3: the adaptive samplers. Mirostat 2.0 on a sampled run: each step keeps the
// tokens whose surprise -log2 p is at most mu, draws one, and moves mu by eta times the gap
// between the surprise it got and the target tau (mu over the run, the surprise held near tau);
// mirostat 1 on the same run; and dynamic temperature on three steps.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter10.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter10 {
namespace {

constexpr int kMirostatM = 100;  // mirostat 1's m, the top probabilities its Zipf fit reads (llama.cpp's, as the library's chain uses)

// What one mirostat step saw: mu before it, the chosen token's surprise in bits (under the
// distribution mirostat drew from, and under the model's whole distribution).
struct MiroStep {
    double mu = 0, surprise = 0, raw_surprise = 0;
    int kept = 0;
};

// A run of mirostat 2.0 written out: coin i of Rng(seed) for token i, mu from 2 tau, one
// mirostat_v2_step per token (T = 1, so the logits go in as the model gave them).
std::vector<MiroStep> run_mirostat(const Session& s, int version, double tau, double eta, Generation& out) {
    std::vector<MiroStep> steps;
    Rng rng(s.config.seed);
    double mu = 2 * tau;
    const Sampler mirostat = [&](const Vec& logits, const DecodeContext&) {
        MiroStep step{mu, 0, 0, 0};
        const Vec p = softmax(logits);
        for (size_t i = 0; i < p.size(); ++i) step.kept += -std::log2(static_cast<double>(p(i))) <= mu;
        step.kept = std::max(step.kept, 1);  // the floor: the favourite stays even when mu is below every surprise
        if (version == 1) step.kept = -1;    // mirostat 1 keeps the top k of its Zipf fit, not the tokens under mu
        const int id = version == 1 ? mirostat_v1_step(logits, tau, eta, kMirostatM, mu, rng.coin())
                                    : mirostat_v2_step(logits, tau, eta, mu, rng.coin());
        step.surprise = tau + (step.mu - mu) / eta;  // mu' = mu - eta (surprise - tau)
        step.raw_surprise = -std::log2(static_cast<double>(p(static_cast<size_t>(id))));
        steps.push_back(step);
        return id;
    };
    GenerationConfig c;
    c.max_new_tokens = s.config.max_new_tokens;
    c.do_sample = true;
    out = generate_cached(s.model, s.tokenizer, s.prompt, c, mirostat);
    return steps;
}

// The same run through the library's chain: --mirostat VERSION --order llama.cpp.
std::vector<int> library_run(const Session& s, int version, double tau, double eta) {
    GenerationConfig c;
    c.max_new_tokens = s.config.max_new_tokens;
    c.do_sample = true;
    c.order = ChainOrder::LlamaCpp;
    c.mirostat = version;
    c.mirostat_tau = static_cast<float>(tau);
    c.mirostat_eta = static_cast<float>(eta);
    return generate_cached(s.model, s.tokenizer, s.prompt, c, make_sampler(c, s.config.seed)).ids;
}

void one_tau(const Session& s, int version, double tau, double eta, CsvRows& csv) {
    Generation g;
    const std::vector<MiroStep> steps = run_mirostat(s, version, tau, eta, g);
    const std::string series = "tau " + std::to_string(tau).substr(0, 3);
    std::printf("  mirostat %s, tau %.1f bits, eta %.2f (mu starts at 2 tau = %.1f):\n  %s%s\n",
                version == 1 ? "1 (k from a Zipf fit of the top 100)" : "2.0", tau, eta, 2 * tau,
                s.tokenizer.decode(s.prompt).c_str(), g.text.c_str());
    std::printf("  %5s %7s %6s %10s %13s\n", "step", "mu", "kept", "s under q", "s under model");
    double sum = 0, sum_late = 0, sum_model = 0;
    int late = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        const MiroStep& st = steps[i];
        if (i < 4 || i % 8 == 0 || i + 1 == steps.size())
            std::printf("  %5zu %7.3f %6s %10.3f %13.3f\n", i, st.mu, st.kept < 0 ? "-" : std::to_string(st.kept).c_str(),
                        st.surprise, st.raw_surprise);
        if (version == 2) {  // the page's plot follows mirostat 2.0
            csv.push_back({series + " mu", static_cast<double>(i), st.mu, ""});
            csv.push_back({series + " surprise", static_cast<double>(i), st.surprise, ""});
        }
        sum += st.surprise;
        sum_model += st.raw_surprise;
        if (2 * i >= steps.size()) sum_late += st.surprise, ++late;
    }
    const double n = static_cast<double>(steps.size()), second_half = late ? sum_late / late : 0.0;
    std::printf("  s, the drawn token's surprise in bits: under q (the kept tokens renormalised, the one mu\n"
                "  follows) and under the model's whole distribution, which is larger: the cut tail is gone from q.\n");
    std::printf("  mean s under q %.2f over all %zu steps, %.2f over the second half (tau %.1f); under the model %.2f\n",
                sum / n, steps.size(), second_half, tau, sum_model / n);
    if (std::abs(second_half - tau) <= 0.5)
        std::printf("  settled: the second half's mean under q is within 0.5 bits of tau\n");
    else
        std::printf("  not settled in %zu steps: the second half's mean under q is %.2f bits from tau; more tokens\n"
                    "  (--max-new-tokens) give mu time to settle\n",
                    steps.size(), std::abs(second_half - tau));
    const bool same = library_run(s, version, tau, eta) == g.ids;
    std::printf("  make_sampler with --mirostat %d --order llama.cpp, seed %llu: %s\n", version,
                static_cast<unsigned long long>(s.config.seed), same ? "the same tokens" : "DIFFERENT tokens");
}

// Dynamic temperature on one step: the candidates' normalised entropy H / ln n, the temperature
// apply_dynamic_temperature picks (read back as the largest logit's ratio), and the favourite's
// probability at T 1 and at that temperature.
void dynamic_temperature_step(const Session& s, const char* name, const std::vector<int>& context) {
    const Vec z = next_logits(s, context);
    const Vec p = softmax(z);
    double entropy = 0;
    for (float q : p)
        if (q > 0) entropy -= static_cast<double>(q) * std::log(static_cast<double>(q));
    const double normalized = entropy / std::log(static_cast<double>(p.size()));
    Vec cooled = z;
    apply_dynamic_temperature(cooled, 1.0f, 0.5f, 1.0f);
    const size_t top = static_cast<size_t>(candidate_order(p).front());
    const double t = static_cast<double>(z(top)) / static_cast<double>(cooled(top));
    std::printf("  %-9s %12.3f %10.3f %14.3f %14.3f\n", name, normalized, t, static_cast<double>(p(top)),
                static_cast<double>(softmax(cooled)(top)));
}

}  // namespace

void mirostat_run(const Session& s, CsvRows& csv) {
    const double eta = s.config.mirostat_eta;
    one_tau(s, 2, s.config.mirostat_tau, eta, csv);
    std::printf("\n");
    one_tau(s, 2, 3.0, eta, csv);
    std::printf("\n");
    one_tau(s, 1, s.config.mirostat_tau, eta, csv);

    // dynamic temperature (llama.cpp temp_ext) at T 1, range 0.5, exponent 1: T runs from 0.5 to 1.5
    std::printf("\n  Dynamic temperature at T 1, dynatemp_range 0.5, exponent 1 (T from 0.5 to 1.5 by the entropy):\n");
    std::printf("  %-9s %12s %10s %14s %14s\n", "step", "H / ln n", "its T", "top p at T 1", "top p at its T");
    const auto [peaked, flat] = peaked_and_flat_contexts(s);
    dynamic_temperature_step(s, "prompt", s.prompt);
    dynamic_temperature_step(s, "peaked", peaked);
    dynamic_temperature_step(s, "flat", flat);
    std::printf("  A confident step (low entropy) is cooled, so its favourite grows; a hesitant one is heated.\n");
}

}  // namespace chapter10
