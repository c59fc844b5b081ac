// decodebook-diversity: diversity against quality across samplers, measured on the embedded model.
//
// For each sampler, generate from several prompts and seeds, then report
//   distinct-1 / distinct-2   share of unique tokens / token pairs within a generation (higher:
//                             more varied; a loop drives it down),
//   model loss                the model's own mean -log p (nats/token, at T = 1 and before any
//                             filter) of the tokens that were generated (lower: text the model
//                             itself finds likely),
//   loops / EOS               how many generations ended in a repetition loop / ended a fortune.
// Greedy sits at one end (low loss, low diversity), high temperature at the other.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/decoding/generate.hpp"

using namespace decodebook;

namespace {

struct Setting {
    std::string name;
    GenerationConfig config;
};

// Each sampler as the knobs it sets, by name ("" for none), applied through the knob table.
std::vector<Setting> settings(int max_new_tokens) {
    const auto make = [&](std::string name, std::vector<std::pair<std::string, std::string>> knobs) {
        GenerationConfig c;
        c.max_new_tokens = max_new_tokens;
        for (const auto& [knob, value] : knobs) set_knob(c, knob, value);
        return Setting{std::move(name), c};
    };
    return {
        make("greedy", {}),
        make("greedy + repetition 1.3", {{"repetition_penalty", "1.3"}}),
        make("greedy + no-repeat-3gram", {{"no_repeat_ngram_size", "3"}}),
        make("T 0.7", {{"temperature", "0.7"}}),
        make("T 1.0 (pure sampling)", {{"do_sample", "true"}}),
        make("T 1.5", {{"temperature", "1.5"}}),
        make("top-k 40", {{"top_k", "40"}}),
        make("top-p 0.9", {{"top_p", "0.9"}}),
        make("min-p 0.1", {{"min_p", "0.1"}}),
        make("T 0.8 + top-p 0.95", {{"temperature", "0.8"}, {"top_p", "0.95"}}),
        make("T 0.7 + repetition 1.3", {{"temperature", "0.7"}, {"repetition_penalty", "1.3"}}),
    };
}

const char* const kPrompts[] = {"The best way to", "A computer is", "You will", "Life is", "Never trust",
                                "Q: What do you call", "There are two kinds of", "The secret of"};

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"decodebook-diversity", "Diversity (distinct-n) against quality (the model's own loss) across samplers.",
                     ""};
    info.defaults.max_new_tokens = 48;
    info.extra = {{"prompts", "how many of the built-in prompts to use (1-8)", "4"}, {"seeds", "seeds per prompt (1-100)", "2"}};
    const CommandLine cl = parse_command_line(argc, argv, info);
    int n_prompts = 0, n_seeds = 0;
    try {
        n_prompts = cl.extra_int("prompts", 1, 8);
        n_seeds = cl.extra_int("seeds", 1, 100);
    } catch (const Error& e) {
        std::cerr << "error: " << e.what() << std::endl;
        return 2;
    }
    const int max_new = cl.config.max_new_tokens;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(cl.model_dir);
        const Tokenizer tok = Tokenizer::load(cl.model_dir);
        std::printf("%d prompts x %d seeds x %d new tokens per sampler\n\n", n_prompts, n_seeds, max_new);
        std::printf("%-26s %10s %10s %12s %6s %5s\n", "sampler", "distinct-1", "distinct-2", "model loss", "loops", "EOS");
        for (const Setting& s : settings(max_new)) {
            double d1 = 0, d2 = 0, nll = 0;
            int tokens = 0, loops = 0, ends = 0, runs = 0;
            for (int i = 0; i < n_prompts; ++i) {
                for (int seed = 1; seed <= n_seeds; ++seed) {
                    const Generation g = generate(model, tok, tok.encode(kPrompts[i]), s.config,
                                                  make_sampler(s.config, static_cast<uint64_t>(seed)));
                    for (const StepRecord& r : g.steps) nll -= std::log(static_cast<double>(r.probability));
                    d1 += distinct_n(g.ids, 1);
                    d2 += distinct_n(g.ids, 2);
                    tokens += static_cast<int>(g.ids.size());
                    loops += find_loop(g.ids).period > 0;
                    ends += g.finish_reason == FinishReason::Eos;
                    ++runs;
                }
            }
            std::printf("%-26s %10.3f %10.3f %7.3f nats %6d %5d\n", s.name.c_str(), d1 / runs, d2 / runs, nll / tokens,
                        loops, ends);
        }
        std::printf("\ndistinct-n: unique n-grams / n-grams within one generation, averaged (1 = no repeats).\n"
                    "model loss: mean -log p of the generated tokens under the model's unfiltered T = 1 distribution.\n");
        return 0;
    });
}
