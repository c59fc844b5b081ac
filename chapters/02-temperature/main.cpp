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
#include <cstdio>
#include <optional>
#include <string>

#include "chapter02.hpp"
#include "decodebook/decoding/naive_loop.hpp"

using namespace decodebook;
using namespace chapter02;

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-02",
                                        "Temperature and sampling: z / T, softmax, a coin, and the Gumbel-max trick.",
                                        "The best way to");
    info.csv_columns = "temperature,rank,id,token,probability";
    info.defaults.temperature = 0.7f;  // "your settings": a common chat temperature, so the coin's p differs from the raw one
    info.steers = {{"part 3", {"max-new-tokens", "do-sample", "temperature", "seed"}}};  // temperature's chapter: no truncation
    info.show_chain = true;
    CommandLine opt;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(opt);
        const GenerationConfig& config = session.config;
        const Vec logits = last_position_logits(session.model.forward(session.prompt));

        std::printf("== 1. The next-token distribution after \"%s\" ==\n", opt.prompt.c_str());
        distribution_at_temperatures(logits, session.tokenizer);

        std::printf("\n== 2. Entropy against temperature ==\n");
        entropy_against_temperature(logits);

        std::printf("\n== 3. Seeded generations (seed %llu, %d tokens) ==\n", static_cast<unsigned long long>(config.seed),
                    config.max_new_tokens);
        seeded_generations(session);
        first_steps_with_coins(session, opt);

        std::printf("\n== 4. Two ways to draw from the same distribution (T = 1, 5000 draws each) ==\n");
        two_ways_to_draw(logits, session.tokenizer, config.seed);

        std::printf("\n== 5. When float32 is not enough ==\n");
        print_numerics(logits, session.tokenizer, config.seed);

        if (!opt.csv.empty()) {
            write_temperature_csv(opt.csv, logits, session.tokenizer);
            std::printf("\n(wrote the 20 most likely tokens at 5 temperatures to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 02 grades them):\n");
        report_exercises(logits);
        return 0;
    });
}
