// Chapter 02 - Temperature and sampling.
//
// Greedy decoding throws away everything but the top token. Sampling keeps the distribution:
// softmax the logits, then draw a token with a coin in [0, 1) (inverse CDF). Temperature
// reshapes the distribution first: z / T. T < 1 sharpens it toward greedy, T > 1 flattens it
// toward uniform, T = 0 is greedy. This program shows, on the embedded model:
//   1. one step's distribution before and after temperature, as bars;
//   2. entropy against temperature;
//   3. seeded generations at several temperatures (the same seed gives the same text);
//   4. the Gumbel-max trick drawing from the same distribution as the inverse CDF.
//
// Library code this chapter introduces: softmax, apply_temperature, candidate_order,
// sample_inverse_cdf, sample_gumbel_max (sampling/sampling.hpp); Rng (base/rng.hpp);
// GenerationConfig and its knob table (decoding/generation_config.hpp); LogitsChain, make_sampler
// (decoding/sampler.hpp); generate (decoding/generate.hpp).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
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
