// decodebook-diversity: diversity against quality across samplers, measured on the embedded model.
//
// For each sampler, generate from several prompts and seeds, then report
//   distinct-1 / distinct-2   share of unique tokens / token pairs within a generation (higher:
//                             more varied; a loop drives it down),
//   rep-4                     (--lab) share of a generation's 4-grams that repeat an earlier one
//                             in it: Welleck et al.'s seq-rep-4, 1 - distinct-4 (lower: fewer repeats),
//   model loss                the model's own mean -log p (nats/token, at T = 1 and before any
//                             filter) of the tokens that were generated (lower: text the model
//                             itself finds likely),
//   loops / EOS               how many generations ended in a repetition loop / ended a fortune.
// Greedy sits at one end (low loss, low diversity), high temperature at the other.
//
// Two sets of samplers. The default is chapter 04's table: eleven samplers of chapters 01-04 on
// 4 prompts x 2 seeds, on chapter 02's loop (its page shows this run). `--lab true` is chapter
// 10's lab: every sampler of chapters 02-04 and 10 at the settings an engine, its docs or its
// paper recommend (each row's source is in lab_settings), on 8 prompts x 4 seeds, on chapter
// 07's cached loop (the same samplers, one position per step: the lab's 30-odd rows fit the docs
// build's budget). `--csv FILE` writes the lab's rows for chapter 10's plot.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/generate.hpp"

using namespace decodebook;

namespace {

struct Setting {
    std::string name;
    GenerationConfig config;
    std::string chapter;  // where the sampler is taught: "01" ... "04", "10"
    std::string source;   // where the setting comes from (the lab's rows)
};

using Knobs = std::vector<std::pair<std::string, std::string>>;

// A sampler as the knobs it sets, by name, applied through the knob table.
Setting make(int max_new_tokens, std::string name, const Knobs& knobs, std::string chapter = "", std::string source = "") {
    GenerationConfig c;
    c.max_new_tokens = max_new_tokens;
    for (const auto& [knob, value] : knobs) set_knob(c, knob, value);
    return Setting{std::move(name), c, std::move(chapter), std::move(source)};
}

// Chapter 04's table: the classic samplers at round settings.
std::vector<Setting> classic_settings(int n) {
    return {
        make(n, "greedy", {}),
        make(n, "greedy + repetition 1.3", {{"repetition_penalty", "1.3"}}),
        make(n, "greedy + no-repeat-3gram", {{"no_repeat_ngram_size", "3"}}),
        make(n, "T 0.7", {{"temperature", "0.7"}}),
        make(n, "T 1.0 (pure sampling)", {{"do_sample", "true"}}),
        make(n, "T 1.5", {{"temperature", "1.5"}}),
        make(n, "top-k 40", {{"top_k", "40"}}),
        make(n, "top-p 0.9", {{"top_p", "0.9"}}),
        make(n, "min-p 0.1", {{"min_p", "0.1"}}),
        make(n, "T 0.8 + top-p 0.95", {{"temperature", "0.8"}, {"top_p", "0.95"}}),
        make(n, "T 0.7 + repetition 1.3", {{"temperature", "0.7"}, {"repetition_penalty", "1.3"}}),
    };
}

// Chapter 10's lab: each sampler at the setting its engine, docs or paper recommends. The engines'
// defaults: llama.cpp common/common.h (common_params_sampling @ 9f7c0d2: temp 0.8, top_k 40,
// top_p 0.95, min_p 0.05, mirostat tau 5 eta 0.1, xtc_threshold 0.1, dry_base 1.75,
// dry_allowed_length 2); Hugging Face GenerationConfig (do_sample false; top_k 50 when sampling);
// vLLM SamplingParams (temperature 1, no truncation).
std::vector<Setting> lab_settings(int n) {
    const Knobs llama_defaults{{"order", "llama.cpp"}, {"temperature", "0.8"}, {"top_k", "40"}, {"top_p", "0.95"}, {"min_p", "0.05"}};
    const auto plus = [&](Knobs more) {
        Knobs k = llama_defaults;
        k.insert(k.end(), more.begin(), more.end());
        return k;
    };
    return {
        make(n, "greedy", {}, "01", "HF GenerationConfig default (do_sample false)"),
        make(n, "T 1.0 (pure sampling)", {{"do_sample", "true"}}, "02", "vLLM SamplingParams defaults"),
        make(n, "T 1.5", {{"temperature", "1.5"}}, "02", "too hot: the table's far end"),
        make(n, "HF sampling: top-k 50", {{"top_k", "50"}}, "03", "HF GenerationConfig default top_k 50"),
        make(n, "top-k 40", {{"top_k", "40"}}, "03", "Radford et al. 2019 (GPT-2's samples)"),
        make(n, "top-p 0.95", {{"top_p", "0.95"}}, "03", "Holtzman et al. 2020"),
        make(n, "min-p 0.1", {{"min_p", "0.1"}}, "03", "Nguyen et al. 2024 (0.05-0.1)"),
        make(n, "llama.cpp defaults", llama_defaults, "03", "llama.cpp common/common.h"),
        make(n, "greedy + repetition 1.2", {{"repetition_penalty", "1.2"}}, "04", "Keskar et al. 2019 (CTRL)"),
        make(n, "greedy + no-repeat-2gram", {{"no_repeat_ngram_size", "2"}}, "04", "HF blog How to generate"),
        make(n, "T 1 + presence/frequency 0.5", {{"do_sample", "true"}, {"presence_penalty", "0.5"}, {"frequency_penalty", "0.5"}},
             "04", "OpenAI API docs (0.1 to 1)"),
        make(n, "typical-p 0.9", {{"typical_p", "0.9"}}, "10", "llama.cpp README example"),
        make(n, "epsilon 9e-4", {{"epsilon_cutoff", "0.0009"}}, "10", "HF docs (3e-4 to 9e-4; small model)"),
        make(n, "eta 2e-3", {{"eta_cutoff", "0.002"}}, "10", "HF docs (3e-4 to 2e-3; small model)"),
        make(n, "top-n-sigma 1", {{"order", "llama.cpp"}, {"top_n_sigma", "1"}}, "10", "Tang et al. 2024; llama.cpp README"),
        make(n, "min-p 0.02 + XTC 0.5/0.1", {{"order", "llama.cpp"}, {"min_p", "0.02"}, {"xtc_probability", "0.5"}, {"xtc_threshold", "0.1"}},
             "10", "llama.cpp README (XTC)"),
        make(n, "llama.cpp defaults + DRY 0.8", plus({{"dry_multiplier", "0.8"}}), "10", "llama.cpp README (DRY)"),
        make(n, "greedy + DRY 0.8", {{"order", "llama.cpp"}, {"dry_multiplier", "0.8"}}, "10", "llama.cpp README (DRY)"),
        make(n, "mirostat 2 (tau 5, eta 0.1)", {{"order", "llama.cpp"}, {"temperature", "0.8"}, {"mirostat", "2"}}, "10",
             "llama.cpp defaults"),
        make(n, "mirostat 1 (tau 5, eta 0.1)", {{"order", "llama.cpp"}, {"temperature", "0.8"}, {"mirostat", "1"}}, "10",
             "llama.cpp defaults"),
        make(n, "llama.cpp defaults + dynatemp 0.5", plus({{"dynatemp_range", "0.5"}}), "10", "range ours: no engine recommends one"),
    };
}

// Share of the 4-grams of `ids` that repeat an earlier one (Welleck et al. 2020's seq-rep-4).
double rep_4(const std::vector<int>& ids) {
    if (ids.size() < 4) return 0.0;
    return 1.0 - distinct_n(ids, 4);
}

struct Row {
    double d1 = 0, d2 = 0, rep4 = 0, loss = 0;
    int loops = 0, ends = 0;
};

const char* const kPrompts[] = {"The best way to", "A computer is", "You will", "Life is", "Never trust",
                                "Q: What do you call", "There are two kinds of", "The secret of"};

Row measure(const Gpt2& model, const Tokenizer& tok, const Setting& setting, int n_prompts, int n_seeds, bool cached) {
    Setting s = setting;  // bound to the tokenizer, as every program binds its config (DRY's breakers)
    bind_to_tokenizer(s.config, tok, resolve_eos_ids(s.config, model.config().eos_token_id));
    Row row;
    double nll = 0;
    int tokens = 0, runs = 0;
    for (int i = 0; i < n_prompts; ++i) {
        for (int seed = 1; seed <= n_seeds; ++seed) {
            const Sampler sampler = make_sampler(s.config, static_cast<uint64_t>(seed));
            const std::vector<int> prompt = tok.encode(kPrompts[i]);
            const Generation g = cached ? generate_cached(model, tok, prompt, s.config, sampler)
                                        : generate(model, tok, prompt, s.config, sampler);
            for (const StepRecord& r : g.steps) nll -= std::log(static_cast<double>(r.probability));
            row.d1 += distinct_n(g.ids, 1);
            row.d2 += distinct_n(g.ids, 2);
            row.rep4 += rep_4(g.ids);
            tokens += static_cast<int>(g.ids.size());
            row.loops += find_loop(g.ids).period > 0;
            row.ends += g.finish_reason == FinishReason::Eos;
            ++runs;
        }
    }
    row.d1 /= runs;
    row.d2 /= runs;
    row.rep4 /= runs;
    row.loss = nll / tokens;
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"decodebook-diversity", "Diversity (distinct-n) against quality (the model's own loss) across samplers.",
                     ""};
    info.defaults.max_new_tokens = 48;
    info.csv_columns = "sampler,chapter,distinct_1,distinct_2,rep_4,loss,loops,eos,source";
    info.extra = {{"prompts", "how many of the built-in prompts to use (1-8; 0: 4, or 8 with --lab true)", "0"},
                  {"seeds", "seeds per prompt (1-100; 0: 2, or 4 with --lab true)", "0"},
                  {"lab", "true: chapter 10's lab, every sampler at its recommended setting; false: chapter 04's table", "false"}};
    CommandLine cl;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, cl)) return *exit_code;
    int n_prompts = 0, n_seeds = 0;
    bool lab = false;
    try {
        const std::string lab_text = cl.extra.at("lab");
        if (lab_text != "true" && lab_text != "false")
            throw Error("--lab must be true or false, not \"" + lab_text + "\"", "use --lab true for chapter 10's lab");
        lab = lab_text == "true";
        n_prompts = cl.extra.at("prompts") == "0" ? (lab ? 8 : 4) : cl.extra_int("prompts", 1, 8);
        n_seeds = cl.extra.at("seeds") == "0" ? (lab ? 4 : 2) : cl.extra_int("seeds", 1, 100);
        if (!cl.csv.empty() && !lab) throw Error("--csv writes the lab's rows only", "add --lab true");
    } catch (const Error& e) {
        std::cerr << "error: " << e.what() << std::endl;
        return 2;
    }
    const int max_new = cl.config.max_new_tokens;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(cl.model_dir, cl.dtype);
        const Tokenizer tok = Tokenizer::load(cl.model_dir);
        const std::vector<Setting> settings = lab ? lab_settings(max_new) : classic_settings(max_new);
        std::printf("%d prompts x %d seeds x %d new tokens per sampler\n\n", n_prompts, n_seeds, max_new);
        if (lab) {
            std::printf("%-34s %3s %7s %7s %6s %11s %5s %4s  %s\n", "sampler", "ch", "dist-1", "dist-2", "rep-4", "model loss",
                        "loops", "EOS", "setting from");
        } else {
            std::printf("%-26s %10s %10s %12s %6s %5s\n", "sampler", "distinct-1", "distinct-2", "model loss", "loops", "EOS");
        }
        std::unique_ptr<CsvFile> csv = cl.csv.empty() ? nullptr : std::make_unique<CsvFile>(cl.csv, info.csv_columns);
        for (const Setting& s : settings) {
            const Row r = measure(model, tok, s, n_prompts, n_seeds, lab);
            if (lab) {
                std::printf("%-34s %3s %7.3f %7.3f %6.3f %6.3f nats %5d %4d  %s\n", s.name.c_str(), s.chapter.c_str(), r.d1, r.d2,
                            r.rep4, r.loss, r.loops, r.ends, s.source.c_str());
            } else {
                std::printf("%-26s %10.3f %10.3f %7.3f nats %6d %5d\n", s.name.c_str(), r.d1, r.d2, r.loss, r.loops, r.ends);
            }
            if (csv)
                csv->out() << csv_quoted(s.name) << ',' << s.chapter << ',' << r.d1 << ',' << r.d2 << ',' << r.rep4 << ','
                           << r.loss << ',' << r.loops << ',' << r.ends << ',' << csv_quoted(s.source) << '\n';
        }
        if (csv) csv->close();
        std::printf("\ndistinct-n: unique n-grams / n-grams within one generation, averaged (1 = no repeats).\n");
        if (lab) std::printf("rep-4: share of a generation's 4-grams that repeat an earlier one, averaged (0 = no repeats).\n");
        std::printf("model loss: mean -log p of the generated tokens under the model's unfiltered T = 1 distribution.\n");
        return 0;
    });
}
