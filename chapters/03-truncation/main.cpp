// Chapter 03 - Truncation: top-k, top-p and min-p.
//
// Sampling from the whole distribution lets the long tail of unlikely tokens in: thousands of
// tokens with tiny probabilities add up to a real chance of nonsense. Truncation removes the
// tail before sampling. Three rules, three different ideas of "the tail":
//   top-k  keeps a fixed number of tokens;
//   top-p  keeps the smallest set whose mass reaches p (it adapts to the distribution's shape);
//   min-p  keeps tokens at least min_p times as likely as the top one (it scales with confidence).
// This program shows them side by side on real steps of the embedded model, on a peaked and a
// flat step, works the classic top-p exercise, and shows that where temperature sits in the
// chain (Hugging Face vs llama.cpp vs vLLM) changes the candidate set.
//
// Library code this chapter introduces: apply_top_k, top_p_keep, apply_top_p, min_p_keep,
// apply_min_p, count_candidates (sampling/sampling.hpp); ChainOrder (decoding/generation_config.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
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

constexpr int kScanned = 32;  // part 2 looks for its peaked and flat step among this many greedy steps

// Print the candidates that survive `z` (up to 8), renormalised, and how many there are.
void print_survivors(const char* label, const Vec& z, const Tokenizer& tok) {
    const Vec p = softmax(z);
    const int n = count_candidates(z);
    std::printf("  %-12s %5d %s:", label, n, n == 1 ? "candidate " : "candidates");
    for (int id : top_ids(p, 6)) std::printf(" %s %.2f", visible_token(tok.token_bytes(id)).c_str(), p(static_cast<size_t>(id)));
    std::printf(n > 6 ? " ...\n" : "\n");
}

Vec filtered(const Vec& logits, const GenerationConfig& config) {
    const std::vector<int> none;
    return LogitsChain(config).apply(logits, {none, none});
}

// A sampling config with one knob set, e.g. only("top_k", "10").
GenerationConfig only(const std::string& knob, const std::string& value) {
    GenerationConfig c;
    set_knob(c, knob, value);  // a truncation knob turns do_sample on
    return c;
}
GenerationConfig only_k(int k) { return only("top_k", std::to_string(k)); }
GenerationConfig only_p(float v) { return only("top_p", std::to_string(v)); }
GenerationConfig only_min_p(float v) { return only("min_p", std::to_string(v)); }

// Greedy steps after the prompt: the most and the least confident ones, to contrast. Confidence is
// the top token's probability; entropy is printed beside it.
struct Step {
    std::vector<int> context;
    double top1 = 0;     // probability of the most likely token
    double entropy = 0;  // nats
};

std::pair<Step, Step> peaked_and_flat(const Gpt2& model, const std::vector<int>& prompt, int steps) {
    Step peaked{{}, -1, 0}, flat{{}, 2, 0};
    std::vector<int> context = prompt;
    for (int i = 0; i < steps; ++i) {
        const Vec z = last_position_logits(model.forward(context));
        const Vec p = softmax(z);
        const int best = argmax(z);
        const Step here{context, p(static_cast<size_t>(best)), entropy(p)};
        if (here.top1 > peaked.top1) peaked = here;
        if (here.top1 < flat.top1) flat = here;
        context.push_back(best);
    }
    return {peaked, flat};
}

// Part 6: how many tokens top-p keeps under each engine's arithmetic.
int kept_by(const Vec& probs, double p, TopPRule rule) {
    const std::vector<bool> keep = top_p_keep(probs, p, 1, rule);
    return static_cast<int>(std::count(keep.begin(), keep.end(), true));
}

// --csv FILE: the 40 most likely tokens of the peaked and the flat step of part 2, each with
// whether top_k 10, top_p 0.9 and min_p 0.1 keep it (1) or remove it (0), and the step's entropy
// (nats, over the whole vocabulary), for the site's plot.
void write_truncation_csv(const std::string& path, const Gpt2& model, const Tokenizer& tok, const Step& peaked,
                          const Step& flat) {
    CsvFile csv(path, "step,rank,id,token,probability,top_k,top_p,min_p,entropy");
    std::ofstream& out = csv.out();
    for (const Step* s : {&peaked, &flat}) {
        const Vec z = last_position_logits(model.forward(s->context));
        const Vec p = softmax(z);
        const Vec by_k = filtered(z, only_k(10)), by_p = filtered(z, only_p(0.9f)), by_min_p = filtered(z, only_min_p(0.1f));
        const std::vector<int> ids = top_ids(p, 40);
        for (size_t rank = 0; rank < ids.size(); ++rank) {
            const size_t id = static_cast<size_t>(ids[rank]);
            out << (s == &peaked ? "peaked" : "flat") << ',' << rank + 1 << ',' << id << ','
                << csv_quoted(visible_token(tok.token_bytes(ids[rank]))) << ',' << p(id) << ',' << std::isfinite(by_k(id))
                << ',' << std::isfinite(by_p(id)) << ',' << std::isfinite(by_min_p(id)) << ',' << s->entropy << '\n';
        }
    }
    csv.close();
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-03",
                                        "Truncation: top-k, top-p and min-p on the same step.",
                                        "A computer is");
    info.defaults.max_new_tokens = 24;
    info.csv_columns = "step,rank,id,token,probability,top_k,top_p,min_p,entropy";
    info.lookahead = kScanned - 1;  // part 2 walks kScanned greedy steps: the prompt must leave room, whatever -n is
    const CommandLine opt = parse_command_line(argc, argv, info);
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const Vec logits = last_position_logits(model.forward(prompt));

        std::printf("== 1. Three truncations of the same step (after \"%s\") ==\n", opt.prompt.c_str());
        print_survivors("none", logits, tok);
        print_survivors("top_k 5", filtered(logits, only_k(5)), tok);
        print_survivors("top_p 0.9", filtered(logits, only_p(0.9f)), tok);
        print_survivors("min_p 0.1", filtered(logits, only_min_p(0.1f)), tok);

        std::printf("\n== 2. Fixed size against adaptive: a peaked step and a flat step ==\n");
        const auto [peaked, flat] = peaked_and_flat(model, prompt, kScanned);
        std::printf("  (the most and the least confident of the first %d greedy steps)\n", kScanned);
        for (const Step* s : {&peaked, &flat}) {
            const Vec z = last_position_logits(model.forward(s->context));
            std::printf("  %s step, after ...%s: top token p = %.3f, entropy %.2f nats\n", s == &peaked ? "peaked" : "flat",
                        visible_token(tok.decode({s->context.end() - std::min<long>(4, static_cast<long>(s->context.size())), s->context.end()})).c_str(),
                        s->top1, s->entropy);
            print_survivors("top_k 10", filtered(z, only_k(10)), tok);
            print_survivors("top_p 0.9", filtered(z, only_p(0.9f)), tok);
            print_survivors("min_p 0.1", filtered(z, only_min_p(0.1f)), tok);
        }

        std::printf("\n== 3. The classic exercise: logits [10, 9.9, 9.8, 5, 4], 31995 more at 0, p = 0.9 ==\n");
        Vec classic = xt::zeros<float>({32000});
        const float top5[] = {10.0f, 9.9f, 9.8f, 5.0f, 4.0f};
        for (size_t i = 0; i < 5; ++i) classic(i) = top5[i];
        const Vec cp = softmax(classic);
        std::printf("  p = %.4f %.4f %.4f %.4f %.4f, and %.2e for each of the 31995 zeros (together %.3f)\n", cp(0),
                    cp(1), cp(2), cp(3), cp(4), cp(5), 31995 * cp(5));
        Vec nucleus = classic;
        apply_top_p(nucleus, 0.9f);
        std::printf("  top_p 0.9 keeps %d tokens: the three big ones hold only %.3f of the mass, so the flat tail\n"
                    "  must be walked until 0.9 is reached. top_k 3 would keep 3; min_p 0.1 keeps %d.\n",
                    count_candidates(nucleus), cp(0) + cp(1) + cp(2), count_candidates(filtered(classic, only_min_p(0.1f))));

        std::printf("\n== 4. Where temperature sits changes the candidates (T 0.5, top_p 0.9, min_p 0.05) ==\n");
        GenerationConfig mix;
        mix.do_sample = true; mix.temperature = 0.5f; mix.top_p = 0.9f; mix.min_p = 0.05f;
        for (ChainOrder order : {ChainOrder::HuggingFace, ChainOrder::LlamaCpp, ChainOrder::Vllm}) {
            mix.order = order;
            std::printf("  %-10s %s\n", to_string(order).c_str(), LogitsChain(mix).describe().c_str());
            print_survivors("", filtered(logits, mix), tok);
        }
        std::printf("  llama.cpp truncates at T = 1 and cools afterwards, so it keeps more tokens.\n");

        std::printf("\n== 5. Where the mass lands on p: one token of difference ==\n");
        const Vec hf_case = softmax(Vec{std::log(0.3f), std::log(0.1f), std::log(0.1f), std::log(0.5f)});
        std::printf("  Hugging Face's own test: logits log([0.3, 0.1, 0.1, 0.5]) in float32, top_p 0.8.\n"
                    "  The float32 softmax: %.10f %.10f %.10f %.10f (0.3 comes out one float step low).\n",
                    hf_case(0), hf_case(1), hf_case(2), hf_case(3));
        const std::vector<int> order = candidate_order(hf_case);
        double up = 0;  // HF: from the least likely token up, each sum stored in float32
        std::printf("  hf         sums up from the least likely:");
        for (size_t r = order.size(); r-- > 2;) {
            up += hf_case(static_cast<size_t>(order[r]));
            std::printf(" %.10f", static_cast<float>(up));
        }
        std::printf(" <= float32(1 - 0.8) = %.10f:\n             both 0.1s go, %d tokens kept\n",
                    static_cast<float>(1.0 - 0.8), kept_by(hf_case, 0.8, TopPRule::HuggingFace));
        float down = 0;  // llama.cpp: from the most likely down, a float sum
        std::printf("  llama.cpp  sums down in float:");
        for (size_t r = 0; r < 2; ++r) {
            down += hf_case(static_cast<size_t>(order[r]));
            std::printf(" %.10f", down);
        }
        std::printf(" < %.10f (0.8f):\n             not there yet, so a 0.1 comes in: %d tokens kept\n", 0.8f,
                    kept_by(hf_case, 0.8, TopPRule::LlamaCpp));
        const Vec plain{0.5f, 0.3f, 0.1f, 0.1f};
        std::printf("  %-34s %6s %4s %5s %10s\n", "probabilities (float32)", "top_p", "hf", "vllm", "llama.cpp");
        const std::pair<const char*, const Vec*> rows[] = {{"softmax(log [0.3, 0.1, 0.1, 0.5])", &hf_case},
                                                           {"[0.5, 0.3, 0.1, 0.1]", &plain}};
        for (const auto& [label, probs] : rows) {
            for (double p : {0.8, 0.81}) {
                std::printf("  %-34s %6g %4d %5d %10d\n", label, p, kept_by(*probs, p, TopPRule::HuggingFace),
                            kept_by(*probs, p, TopPRule::Vllm), kept_by(*probs, p, TopPRule::LlamaCpp));
            }
        }
        std::printf("  Same rule on paper, one token apart at an exact sum: float rounding and the direction of the\n"
                    "  sum decide. vLLM computes 1 - p in float32 (1 - 0.8f = %.10f), HF from a double.\n",
                    1.0f - 0.8f);

        const LogitsChain chain(config);
        std::printf("\n== 6. Your settings: %s (seed %llu) ==\n", chain.describe().c_str(),
                    static_cast<unsigned long long>(config.seed));
        std::printf("  %s", opt.prompt.c_str());
        std::vector<Draw> coins;  // make_sampler's coins and chain, watched for --show-steps
        const Generation out =
            generate(model, tok, prompt, config, make_watched_sampler(config, config.seed, coins), print_text_to(std::cout));
        std::printf("\n");
        if (opt.show_steps) print_steps(std::cout, out.steps, tok, coins);

        if (!opt.csv.empty()) {
            write_truncation_csv(opt.csv, model, tok, peaked, flat);
            std::printf("\n(wrote the peaked and the flat step of part 2, 40 tokens each, to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 03 grades them):\n");
        Vec yours_k = logits;
        const ExerciseAttempt k = try_exercise([&] { your_apply_top_k(yours_k, 5, 1); });
        print_exercise_status(course_exercise("your_apply_top_k"), k, count_candidates(yours_k) == 5 &&
                              yours_k == filtered(logits, only_k(5)), std::to_string(count_candidates(yours_k)) + " candidates", "5 candidates");
        const Vec probs = softmax(logits);
        std::vector<bool> yours_p, yours_boundary;  // this step, and part 5's boundary case (catches the top-down walk)
        const ExerciseAttempt p = try_exercise([&] {
            yours_p = your_top_p_keep(probs, 0.9, 1);
            yours_boundary = your_top_p_keep(hf_case, 0.8, 1);
        });
        const bool same_p = yours_p == top_p_keep(probs, 0.9, 1) && yours_boundary == top_p_keep(hf_case, 0.8, 1);
        print_exercise_status(course_exercise("your_top_p_keep"), p, same_p, "a different set (here or on part 5's case)",
                              std::to_string(count_candidates(filtered(logits, only_p(0.9f)))) + " candidates here, " +
                                  std::to_string(kept_by(hf_case, 0.8, TopPRule::HuggingFace)) + " on part 5's case");
        std::vector<bool> yours_m;
        const ExerciseAttempt m = try_exercise([&] { yours_m = your_min_p_keep(probs, 0.1, 1); });
        print_exercise_status(course_exercise("your_min_p_keep"), m, yours_m == min_p_keep(probs, 0.1, 1),
                              "a different set", std::to_string(count_candidates(filtered(logits, only_min_p(0.1f)))) + " candidates");
        return 0;
    });
}
