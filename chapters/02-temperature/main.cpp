// Chapter 02 - Temperature and sampling.
//
// Greedy decoding throws away everything but the top token. Sampling keeps the distribution:
// softmax the logits, then draw a token with a coin in [0, 1) (inverse CDF). Temperature
// reshapes the distribution first: z / T. T < 1 sharpens it toward greedy, T > 1 flattens it
// toward uniform, T = 0 is greedy. This program shows, on the embedded model:
//   1. one step's distribution before and after temperature, as bars;
//   2. entropy against temperature;
//   3. seeded generations at several temperatures (the same seed gives the same text);
//   4. the Gumbel-max trick drawing from the same distribution as the inverse CDF;
//   5. when float32 is not enough: a CDF walked in float32 at V = 64 against V = 50,000, and a
//      coin near a CDF boundary that picks another token in float32 than in float64.
//
// Library code this chapter introduces: softmax, apply_temperature, candidate_order,
// sample_inverse_cdf, sample_gumbel_max (sampling/sampling.hpp); Rng (base/rng.hpp);
// GenerationConfig and its knob table (decoding/generation_config.hpp); LogitsChain, make_sampler
// (decoding/sampler.hpp); generate (decoding/generate.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace {

using Vec = xt::xtensor<float, 1>;

Vec with_temperature(const Vec& logits, float t) {
    Vec z = logits;
    apply_temperature(z, t);
    return z;
}

// Generate with `config` (its seed gives the coins) and print the text on one line.
void seeded_run(const Gpt2& model, const Tokenizer& tok, const std::vector<int>& prompt, const GenerationConfig& config,
                const char* label) {
    const Generation g = generate(model, tok, prompt, config, make_sampler(config, config.seed));
    std::printf("  %-8s %s\n", label, visible_token(tok.decode(g.ids)).c_str());
}

// --csv FILE: the 20 most likely next tokens at several temperatures, for the course site's plot.
// The ranks are those at T = 1; dividing by T > 0 keeps the order, so they hold at every T.
void write_temperature_csv(const std::string& path, const Vec& logits, const Tokenizer& tok) {
    CsvFile csv(path, "temperature,rank,id,token,probability");
    std::ofstream& out = csv.out();
    const std::vector<int> ids = top_ids(softmax(logits), 20);
    for (float t : {0.25f, 0.5f, 1.0f, 1.5f, 2.0f}) {
        const Vec p = softmax(with_temperature(logits, t));
        for (size_t rank = 0; rank < ids.size(); ++rank) {
            const int id = ids[rank];
            out << t << ',' << rank + 1 << ',' << id << ',' << csv_quoted(visible_token(tok.token_bytes(id))) << ','
                << p(static_cast<size_t>(id)) << '\n';
        }
    }
    csv.close();
}

// Seeded logits z_i ~ N(0, 2^2) (Box-Muller on the project's coins), or all equal (sigma = 0).
Vec seeded_logits(size_t vocab, double sigma, uint64_t seed) {
    Rng rng(seed);
    Vec z = xt::zeros<float>({vocab});
    for (float& v : z) {
        const double u1 = 1.0 - rng.coin(), u2 = rng.coin();  // u1 in (0, 1]: log(u1) is finite
        v = static_cast<float>(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
    }
    return z;
}

// The end of an inverse-CDF walk down `probs` (candidate_order) with a float32 running sum, and
// with a double one: exactly 1 in real numbers.
std::pair<float, double> walk_sums(const Vec& probs) {
    float f = 0;
    double d = 0;
    for (int id : candidate_order(probs)) {
        f += probs(static_cast<size_t>(id));
        d += probs(static_cast<size_t>(id));
    }
    return {f, d};
}

// The float64 arithmetic of the reference (tests/reference/sampling.py) on the same float32 logits:
// a softmax in double and the walk down the candidates.
int sample_inverse_cdf_f64(const Vec& logits, double coin) {
    double max = -INFINITY, sum = 0;
    for (float z : logits) max = std::max(max, static_cast<double>(z));
    std::vector<double> e(logits.size());
    for (size_t i = 0; i < e.size(); ++i) sum += (e[i] = std::exp(static_cast<double>(logits(i)) - max));
    double cumulative = 0;
    const std::vector<int> order = candidate_order(softmax(logits));
    for (int id : order) {
        cumulative += e[static_cast<size_t>(id)] / sum;
        if (coin < cumulative) return id;
    }
    return order.back();
}

constexpr double kGoldenMargin = 1e-4;  // tests/reference/make_goldens.py MIN_MARGIN

void print_numerics(const Vec& logits, const Tokenizer& tok, uint64_t seed) {
    std::printf("\n== 5. When float32 is not enough ==\n");
    std::printf("  The end of an inverse-CDF walk, p_1 + ... + p_V added down the candidates (exactly 1 in real numbers;\n"
                "  seeded logits, --seed %llu):\n", static_cast<unsigned long long>(seed));
    std::printf("  %8s  %-16s %14s %10s %14s %10s\n", "V", "logits", "float32 sum", "error", "double sum", "error");
    double worst_small = 0, worst_large = 0, worst_double = 0;  // float32 at V = 64, above it; double
    for (size_t vocab : {size_t{64}, size_t{2048}, size_t{50000}}) {
        for (double sigma : {0.0, 2.0}) {
            const auto [f, d] = walk_sums(softmax(seeded_logits(vocab, sigma, seed)));
            const double error = std::abs(static_cast<double>(f) - 1.0);
            double& worst = vocab == 64 ? worst_small : worst_large;
            worst = std::max(worst, error);
            worst_double = std::max(worst_double, std::abs(d - 1.0));
            std::printf("  %8s  %-16s %14.8f %10.1e %14.10f %10.1e\n", with_commas(vocab).c_str(),
                        sigma == 0 ? "all equal" : "N(0, 2^2)", f, error, d, std::abs(d - 1.0));
        }
    }
    std::printf("  Each float32 addition rounds the sum to 24 bits. At V = 64 the walk ends at most %.1e from 1;\n"
                "  at V = 2,048 or 50,000, up to %.1e: %s the goldens' margin of %.0e (below).\n"
                "  decodebook's softmax and sample_inverse_cdf add in double: at most %.1e off here.\n",
                worst_small, worst_large, worst_large > kGoldenMargin ? "more than" : "less than", kGoldenMargin,
                worst_double);

    // One boundary of the prompt's own distribution, in float32 and in float64.
    const Vec probs = softmax(logits);
    const std::vector<int> order = candidate_order(probs);
    double total = 0;
    for (int id : order) total += probs(static_cast<size_t>(id));
    double max = -INFINITY, sum = 0, f32 = 0, f64 = 0, b32 = 0, b64 = 0;
    for (float z : logits) max = std::max(max, static_cast<double>(z));
    for (float z : logits) sum += std::exp(static_cast<double>(z) - max);
    size_t rank = 0;
    for (size_t r = 0; r + 1 < std::min<size_t>(order.size(), 8); ++r) {  // the boundary float rounding moved most
        const size_t id = static_cast<size_t>(order[r]);
        f32 += probs(id) / total;
        f64 += std::exp(static_cast<double>(logits(id)) - max) / sum;
        if (std::abs(f32 - f64) > std::abs(b32 - b64)) {
            b32 = f32;
            b64 = f64;
            rank = r;
        }
    }
    const double coin = (b32 + b64) / 2;
    const int here = sample_inverse_cdf(probs, coin), reference = sample_inverse_cdf_f64(logits, coin);
    std::printf("\n  A coin at a CDF boundary: between %s (rank %zu) and %s (rank %zu) of the step above (T = 1),\n",
                visible_token(tok.token_bytes(order[rank])).c_str(), rank + 1,
                visible_token(tok.token_bytes(order[rank + 1])).c_str(), rank + 2);
    std::printf("  the boundary is at %.12f with float32 probabilities (this program's softmax)\n"
                "             and at %.12f with float64 ones (the reference's arithmetic), %.1e apart.\n",
                b32, b64, std::abs(b32 - b64));
    std::printf("  The coin %.12f picks %s in float32 and %s in float64.\n", coin,
                visible_token(tok.token_bytes(here)).c_str(), visible_token(tok.token_bytes(reference)).c_str());
    std::printf("  So tests/reference/ keeps a sampled case only if every coin is at least %.0e from every boundary\n"
                "  (%s times this gap), and every other decision as far from flipping.\n",
                kGoldenMargin, with_commas(static_cast<uint64_t>(std::llround(kGoldenMargin / std::abs(b32 - b64)))).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-02",
                                        "Temperature and sampling: z / T, softmax, a coin, and the Gumbel-max trick.",
                                        "The best way to");
    info.csv_columns = "temperature,rank,id,token,probability";
    info.defaults.temperature = 0.7f;  // "your settings": a common chat temperature, so the coin's p differs from the raw one
    const CommandLine opt = parse_command_line(argc, argv, info);
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const Vec logits = last_position_logits(model.forward(prompt));

        std::printf("== 1. The next-token distribution after \"%s\" ==\n", opt.prompt.c_str());
        const float temperatures[] = {0.5f, 1.0f, 1.5f};
        const double scale = softmax(with_temperature(logits, 0.5f))(static_cast<size_t>(argmax(logits)));
        for (float t : temperatures) {
            std::printf("  T = %.1f%s\n", t, t == 1.0f ? "  (the model's own distribution)" : "");
            print_distribution(softmax(with_temperature(logits, t)), tok, 8, scale);
        }

        std::printf("\n== 2. Entropy against temperature ==\n");
        std::printf("  %6s %10s %14s %8s\n", "T", "entropy", "like choosing", "p(top)");
        for (float t : {0.1f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 2.0f, 4.0f}) {
            const Vec p = softmax(with_temperature(logits, t));
            const double h = entropy(p);
            std::printf("  %6.2f %7.3f nats %8.1f tokens %7.3f  %s\n", t, h, std::exp(h), p(static_cast<size_t>(argmax(p))),
                        bar(h, std::log(static_cast<double>(p.size())), 30).c_str());
        }
        std::printf("  (\"like choosing\" = e^entropy: the number of equally likely tokens with the same entropy;\n"
                    "   the maximum is the vocabulary, %zu tokens, ln V = %.2f nats)\n", logits.size(),
                    std::log(static_cast<double>(logits.size())));

        std::printf("\n== 3. Seeded generations (seed %llu, %d tokens) ==\n", static_cast<unsigned long long>(config.seed),
                    config.max_new_tokens);
        for (float t : {0.0f, 0.5f, 1.0f, 1.5f}) {
            GenerationConfig c = config;
            c.do_sample = true;
            c.temperature = t;
            if (t == 0.0f) c.mirostat = 0;  // T = 0 is greedy: mirostat (chapter 10) has nothing to draw from
            char label[32];
            std::snprintf(label, sizeof label, "T = %.1f", t);
            seeded_run(model, tok, prompt, c, t == 0.0f ? "T = 0" : label);
        }
        std::printf("  Run it again: the same seed gives the same text. Change --seed for another draw.\n");

        // The chosen settings, step by step: the coin and where it landed.
        const LogitsChain chain(config);
        if (opt.show_chain) std::printf("\nchain: %s\n", chain.describe().c_str());
        std::printf("\nYour settings (%s), the first steps with their coins:\n", chain.describe().c_str());
        GenerationConfig first_steps = config;
        first_steps.max_new_tokens = std::min(config.max_new_tokens, 6);
        std::vector<Draw> coins;  // make_sampler's coins and chain, watched
        const std::vector<StepRecord> steps =
            generate(model, tok, prompt, first_steps, make_watched_sampler(first_steps, config.seed, coins)).steps;
        for (size_t i = 0; i < coins.size(); ++i) {
            const Draw& c = coins[i];
            const std::string token = visible_token(tok.token_bytes(c.token));
            if (c.greedy) {
                std::printf("  step %zu: argmax -> %-12s (p after the chain %.3f; raw p %.3f)\n", i, token.c_str(), c.processed, c.raw);
            } else {
                std::printf("  step %zu: coin %.4f -> %-12s (p after the chain %.3f, CDF slice [%.4f, %.4f); raw p %.3f)\n", i,
                            c.coin, token.c_str(), c.processed, c.from, c.to, c.raw);
            }
        }
        if (opt.show_steps) print_steps(std::cout, steps, tok, coins);

        std::printf("\n== 4. Two ways to draw from the same distribution (T = 1, 5000 draws each) ==\n");
        const Vec probs = softmax(logits);
        Rng rng(config.seed);
        std::vector<int> by_cdf(logits.size(), 0), by_gumbel(logits.size(), 0);
        std::vector<double> many(logits.size());
        const int draws = 5000;
        for (int i = 0; i < draws; ++i) {
            ++by_cdf[static_cast<size_t>(sample_inverse_cdf(probs, rng.coin()))];
            for (double& c : many) c = rng.coin();
            ++by_gumbel[static_cast<size_t>(sample_gumbel_max(logits, many))];
        }
        std::printf("  %-14s %8s %12s %12s\n", "token", "p", "inverse CDF", "Gumbel-max");
        for (int id : top_ids(probs, 6)) {
            const size_t i = static_cast<size_t>(id);
            std::printf("  %-14s %8.3f %12.3f %12.3f\n", visible_token(tok.token_bytes(id)).c_str(), probs(i),
                        by_cdf[i] / double(draws), by_gumbel[i] / double(draws));
        }
        std::printf("  Inverse CDF needs one coin per token drawn; Gumbel-max needs one per vocabulary entry but\n"
                    "  no sorting or normalising: argmax(z + Gumbel noise) is an exact sample of softmax(z).\n");

        print_numerics(logits, tok, config.seed);

        if (!opt.csv.empty()) {
            write_temperature_csv(opt.csv, logits, tok);
            std::printf("\n(wrote the 20 most likely tokens at 5 temperatures to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 02 grades them):\n");
        Vec yours_p;
        const ExerciseAttempt sm = try_exercise([&] { yours_p = your_softmax(logits); });
        print_exercise_status(course_exercise("your_softmax"), sm,
                              yours_p.size() == probs.size() && xt::allclose(yours_p, probs, 1e-4, 1e-6),
                              "different probabilities", "softmax(logits)");
        Vec yours_t = logits;
        const ExerciseAttempt temp = try_exercise([&] { your_apply_temperature(yours_t, 0.5f); });
        print_exercise_status(course_exercise("your_apply_temperature"), temp,
                              xt::allclose(yours_t, with_temperature(logits, 0.5f)), "different logits", "logits / 0.5");
        int yours_s = -1;
        const ExerciseAttempt smp = try_exercise([&] { yours_s = your_sample_inverse_cdf(probs, 0.5); });
        print_exercise_status(course_exercise("your_sample_inverse_cdf"), smp, yours_s == sample_inverse_cdf(probs, 0.5),
                              "id " + std::to_string(yours_s), "id " + std::to_string(sample_inverse_cdf(probs, 0.5)));
        return 0;
    });
}
