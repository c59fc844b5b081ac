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

#include <cxxopts.hpp>

#include "decodebook/chain.hpp"
#include "decodebook/decode.hpp"
#include "decodebook/error.hpp"
#include "decodebook/model.hpp"
#include "decodebook/paths.hpp"
#include "decodebook/report.hpp"
#include "decodebook/tokenizer.hpp"

using namespace decodebook;

namespace {

struct Sampler {
    std::string name;
    SamplingParams params;
};

std::vector<Sampler> samplers() {
    const auto make = [](std::string name, auto edit) {
        SamplingParams p;
        edit(p);
        return Sampler{std::move(name), p};
    };
    return {
        make("greedy", [](SamplingParams& p) { p.temperature = 0; }),
        make("greedy + repetition 1.3", [](SamplingParams& p) { p.temperature = 0; p.repetition_penalty = 1.3f; }),
        make("greedy + no-repeat-3gram", [](SamplingParams& p) { p.temperature = 0; p.no_repeat_ngram_size = 3; }),
        make("T 0.7", [](SamplingParams& p) { p.temperature = 0.7f; }),
        make("T 1.0 (pure sampling)", [](SamplingParams&) {}),
        make("T 1.5", [](SamplingParams& p) { p.temperature = 1.5f; }),
        make("top-k 40", [](SamplingParams& p) { p.top_k = 40; }),
        make("top-p 0.9", [](SamplingParams& p) { p.top_p = 0.9f; }),
        make("min-p 0.1", [](SamplingParams& p) { p.min_p = 0.1f; }),
        make("T 0.8 + top-p 0.95", [](SamplingParams& p) { p.temperature = 0.8f; p.top_p = 0.95f; }),
        make("T 0.7 + repetition 1.3", [](SamplingParams& p) { p.temperature = 0.7f; p.repetition_penalty = 1.3f; }),
    };
}

const char* const kPrompts[] = {"The best way to", "A computer is", "You will", "Life is", "Never trust",
                                "Q: What do you call", "There are two kinds of", "The secret of"};

}  // namespace

int main(int argc, char** argv) {
    cxxopts::Options options("decodebook-diversity", "Diversity (distinct-n) against quality (the model's own loss) across samplers.");
    options.add_options()
        ("prompts", "how many of the built-in prompts to use (1-8)", cxxopts::value<int>()->default_value("4"))
        ("seeds", "seeds per prompt", cxxopts::value<int>()->default_value("2"))
        ("n,max-new-tokens", "tokens per generation", cxxopts::value<int>()->default_value("48"))
        ("m,model", "model folder", cxxopts::value<std::string>()->default_value(""))
        ("h,help", "show this help");
    int n_prompts = 0, n_seeds = 0, max_new = 0;
    std::string model_dir;
    try {
        const auto r = options.parse(argc, argv);
        if (r.count("help")) {
            std::cout << options.help() << std::endl;
            return 0;
        }
        n_prompts = r["prompts"].as<int>();
        n_seeds = r["seeds"].as<int>();
        max_new = r["max-new-tokens"].as<int>();
        if (n_prompts < 1 || n_prompts > 8) throw Error("--prompts must be 1 to 8", "e.g. --prompts 4");
        if (n_seeds < 1) throw Error("--seeds must be at least 1", "e.g. --seeds 2");
        model_dir = resolve_model_dir(r["model"].as<std::string>());
    } catch (const cxxopts::exceptions::exception& e) {
        std::cerr << "decodebook-diversity: " << e.what() << "\n  see: decodebook-diversity --help" << std::endl;
        return 2;
    } catch (const Error& e) {
        std::cerr << "decodebook-diversity: error: " << e.what() << std::endl;
        return 2;
    }
    try {
        const Gpt2 model = Gpt2::load(model_dir);
        const Tokenizer tok = Tokenizer::load(model_dir);
        const int eos = model.config().eos_token_id;
        std::printf("%d prompts x %d seeds x %d new tokens per sampler\n\n", n_prompts, n_seeds, max_new);
        std::printf("%-26s %10s %10s %12s %6s %5s\n", "sampler", "distinct-1", "distinct-2", "model loss", "loops", "EOS");
        for (const Sampler& s : samplers()) {
            const LogitsChain chain(s.params);
            double d1 = 0, d2 = 0, nll = 0;
            int tokens = 0, loops = 0, ends = 0, runs = 0;
            for (int i = 0; i < n_prompts; ++i) {
                for (int seed = 1; seed <= n_seeds; ++seed) {
                    double run_nll = 0;
                    const std::vector<int> out = generate_sampled(
                        model, tok.encode(kPrompts[i]), {max_new, eos}, chain, static_cast<uint64_t>(seed),
                        [&](const StepRecord& r) { run_nll -= std::log(static_cast<double>(r.probability)); });
                    d1 += distinct_n(out, 1);
                    d2 += distinct_n(out, 2);
                    nll += run_nll;
                    tokens += static_cast<int>(out.size());
                    loops += find_loop(out).period > 0;
                    ends += !out.empty() && out.back() == eos;
                    ++runs;
                }
            }
            std::printf("%-26s %10.3f %10.3f %7.3f nats %6d %5d\n", s.name.c_str(), d1 / runs, d2 / runs, nll / tokens,
                        loops, ends);
        }
        std::printf("\ndistinct-n: unique n-grams / n-grams within one generation, averaged (1 = no repeats).\n"
                    "model loss: mean -log p of the generated tokens under the model's unfiltered T = 1 distribution.\n");
        return 0;
    } catch (const Error& e) {
        std::cerr << "decodebook-diversity: error: " << e.what() << std::endl;
        return 1;
    }
}
