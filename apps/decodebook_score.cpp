// decodebook-score (chapter 11): score text instead of writing it.
//
//   decodebook-score                                   perplexity of the held-out fortunes
//   decodebook-score --text FILE --stride 128          perplexity of a file, windows sliding by 128
//   decodebook-score --context "Q: What" --continuation " is it?"   a continuation's log-likelihood
//   decodebook-score --task author                     the author-choice task: acc, acc_norm, chance
//
// Perplexity follows Hugging Face's guide for fixed-length models (a window of --window tokens,
// the model's context by default, sliding by --stride; only the tokens new to each window are
// scored). A continuation's score is what evaluation harnesses ask a server for (lm-eval's
// loglikelihood request): the sum of its tokens' log-probabilities given everything before them,
// and whether greedy decoding would have written it. The author-choice task (200 held-out fortunes,
// each author among four) is scored by lm-eval's multiple-choice rules. Every number is the model's raw
// log-probability: no sampling chain runs. Bad values exit 2 with the range.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/logprobs_report.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/choices.hpp"
#include "decodebook/decoding/scoring.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace {

using Clock = std::chrono::steady_clock;

// What the command line asks for: one of three scorings.
enum class Mode { Perplexity, Continuation, Task };

struct Request {
    Mode mode = Mode::Perplexity;
    std::string text_file;  // --text FILE; empty: the held-out fortunes
    int window = 0;         // --window (0: the model's context)
    std::optional<int> stride;
    std::string context, continuation;
    int items = 0;  // --items: the task's first N
    std::string model;  // the model folder as programs name it, printed once the inputs are read
};

// The flags, each checked against the mode it belongs to: a flag that would change nothing is refused.
Request read_request(const CommandLine& cl, int n_positions) {
    Request r;
    const auto given = [&](const char* flag) { return !cl.extra.at(flag).empty(); };
    const bool continuation = given("continuation") || given("context");
    if (given("items") && !given("task"))
        throw UsageError("--items counts the task's items, and --task is not given", "add --task author, or drop --items");
    if (given("task")) {
        if (cl.extra.at("task") != "author")
            throw UsageError("--task is '" + cl.extra.at("task") + "'", "pass --task author (the one task shipped)");
        for (const char* flag : {"text", "window", "stride", "context", "continuation"})
            if (given(flag))
                throw UsageError(std::string("--") + flag + " does not apply to --task, which scores the task's own texts",
                                 std::string("drop --") + flag + ", or --task");
        r.mode = Mode::Task;
        r.items = given("items") ? cl.extra_int("items", 1, 200) : 200;
        return r;
    }
    if (continuation) {
        if (!given("continuation") || !given("context"))
            throw UsageError(std::string("--") + (given("context") ? "context" : "continuation") + " is given without --" +
                                 (given("context") ? "continuation" : "context"),
                             "pass both: --context TEXT --continuation TEXT (the continuation's tokens are scored given the context)");
        for (const char* flag : {"text", "window", "stride"})
            if (given(flag))
                throw UsageError(std::string("--") + flag + " is perplexity's, and --continuation scores a continuation",
                                 std::string("drop --") + flag + ", or --context and --continuation");
        r.mode = Mode::Continuation;
        r.context = cl.extra.at("context");
        r.continuation = cl.extra.at("continuation");
        return r;
    }
    r.text_file = cl.extra.at("text");
    r.window = given("window") ? cl.extra_int("window", 2, n_positions) : n_positions;
    if (given("stride")) r.stride = cl.extra_int("stride", 1, r.window);
    return r;
}

// The text to score by perplexity: a file's bytes, or the held-out fortunes as the model was trained
// (<|endoftext|> before and after each), and its name for the report.
std::pair<std::vector<int>, std::string> perplexity_text(const Request& r, const Gpt2& model, const Tokenizer& tok) {
    if (!r.text_file.empty()) {
        std::ifstream in(r.text_file, std::ios::binary);
        if (!in) throw UsageError("cannot read the --text file '" + r.text_file + "'", "pass --text a readable text file");
        std::ostringstream bytes;
        bytes << in.rdbuf();
        const std::vector<int> ids = tok.encode(bytes.str());
        if (ids.size() < 2)
            throw UsageError("the --text file '" + r.text_file + "' holds " + std::to_string(ids.size()) +
                                 " token, and perplexity needs two or more",
                             "pass a longer text (the first token is never predicted)");
        return {ids, "'" + r.text_file + "'"};
    }
    const std::string path = builtin_tasks_dir() + "/held_out_fortunes.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot read the held-out fortunes '" + path + "'", "restore models/tasks/ from the repository, or pass --text FILE");
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded() || !doc.contains("documents"))
        throw Error("the held-out fortunes '" + path + "' are not the expected JSON", "restore models/tasks/ from the repository");
    const int eot = model.config().eos_token_id;
    std::vector<int> ids{eot};
    size_t count = 0;
    for (const auto& d : doc.at("documents")) {
        const std::vector<int> one = tok.encode(d.get<std::string>());
        ids.insert(ids.end(), one.begin(), one.end());
        ids.push_back(eot);
        ++count;
    }
    return {ids, "the " + std::to_string(count) + " held-out fortunes (models/tasks/held_out_fortunes.json)"};
}

int run_perplexity(const Request& r, const Gpt2& model, const Tokenizer& tok) {
    const auto [ids, name] = perplexity_text(r, model, tok);
    std::printf("model: %s\n", r.model.c_str());
    std::printf("perplexity of %s: %s tokens; window %d\n\n", name.c_str(), with_commas(ids.size()).c_str(), r.window);
    std::printf("%8s %9s %15s %14s %11s %8s\n", "stride", "forwards", "tokens scored", "mean NLL nats", "perplexity", "s");
    // one stride when asked for, else the window and half of it (the guide's two cases)
    std::vector<int> strides = r.stride ? std::vector<int>{*r.stride} : std::vector<int>{r.window, std::max(1, r.window / 2)};
    for (const int stride : strides) {
        const auto start = Clock::now();
        const Perplexity p = sliding_window_perplexity(model, ids, r.window, stride);
        const double s = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("%8d %9zu %15s %14.4f %11.2f %8.2f\n", stride, p.windows, with_commas(p.tokens).c_str(),
                    p.nll_sum / static_cast<double>(p.tokens), p.value(), s);
    }
    return 0;
}

int run_continuation(const Request& r, const Gpt2& model, const Tokenizer& tok) {
    const std::vector<int> context = tok.encode(r.context), continuation = tok.encode(r.continuation);
    if (context.empty() || continuation.empty())
        throw UsageError(std::string("--") + (context.empty() ? "context" : "continuation") + " is empty",
                         "pass a context and a continuation of one token or more each");
    if (context.size() + continuation.size() > static_cast<size_t>(model.config().n_positions))
        throw UsageError("the context and continuation hold " + std::to_string(context.size() + continuation.size()) +
                             " tokens, more than the model's context of " + std::to_string(model.config().n_positions),
                         "shorten --context");
    std::printf("model: %s\n", r.model.c_str());
    const ContinuationScore score = score_continuation(model, context, continuation);
    // each token's entry, from the prompt logprobs of context + continuation (the same forward's values)
    std::vector<int> all = context;
    all.insert(all.end(), continuation.begin(), continuation.end());
    const std::vector<LogprobsRow> rows = prompt_rows(all, prompt_logprobs(model, all, 1));
    print_logprobs_table(std::cout, "the continuation's tokens given everything before them (raw_logprobs, top 1)",
                         std::vector<LogprobsRow>(rows.begin() + static_cast<std::ptrdiff_t>(context.size()), rows.end()), tok);
    std::printf("\nlog-likelihood %.4f over %zu tokens (%.4f per token, %.4f per byte of '%s'); greedy decoding "
                "would %s it\n",
                score.logprob, score.tokens, score.logprob / static_cast<double>(score.tokens),
                score.logprob / static_cast<double>(r.continuation.size()), one_line(r.continuation).c_str(),
                score.greedy ? "write" : "not write");
    return 0;
}

int run_task(const Request& r, const Gpt2& model, const Tokenizer& tok) {
    std::vector<ChoiceItem> items = read_choice_task(builtin_author_choice_task());
    items.resize(std::min(items.size(), static_cast<size_t>(r.items)));
    std::printf("model: %s\n", r.model.c_str());
    const auto start = Clock::now();
    const TaskResult result = evaluate_choice_task(model, tok, items);
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("author choice (models/tasks/author_choice.json): %zu items, 4 choices each, %.1f s\n\n", items.size(), s);
    std::printf("%-10s %8s %8s %9s %22s\n", "rule", "correct", "accuracy", "stderr", "95 % interval");
    const auto line = [](const std::string& name, const Accuracy& a) {
        const double se = a.standard_error().value_or(0.0);
        std::printf("%-10s %8zu %8.3f %9.4f %10.3f to %.3f\n", name.c_str(), a.correct, a.value(), se, a.value() - 1.96 * se,
                    a.value() + 1.96 * se);
    };
    for (size_t i = 0; i < std::size(kChoiceRules); ++i) line(to_string(kChoiceRules[i]), result.by_rule[i]);
    line("no echo", result.without_logprobs);
    std::printf("%-10s %8s %8.3f\n", "chance", "", result.chance);
    std::printf("\nacc: the highest sum of log-probabilities; acc_norm: per character of the choice; acc_bytes: per byte\n"
                "(lm-eval's rules); stderr: lm-eval's mean_stderr, and the interval 1.96 of them either side; no echo:\n"
                "a server that returns no prompt logprobs, so every choice scores alike and the first is taken\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info("decodebook-score",
                     "Score text instead of writing it: perplexity by a sliding window, or a continuation's "
                     "log-likelihood (chapter 11).",
                     "");
    info.knob_groups = {};  // no decoding knobs: nothing is sampled
    info.show_steps = false;
    info.extra = {
        {"text", "FILE: the text whose perplexity to measure; default: the embedded model's held-out fortunes", ""},
        {"window", "N: tokens per window (2..the model's context); default: the model's context", ""},
        {"stride", "N: tokens the window moves by (1..window); default: the window and half of it, both", ""},
        {"context", "TEXT: with --continuation, the text the continuation follows", ""},
        {"continuation", "TEXT: score these tokens given --context (lm-eval's loglikelihood and is_greedy)", ""},
        {"task", "author: score the author-choice task (200 held-out fortunes, each author among four) by lm-eval's "
                 "multiple-choice rules", ""},
        {"items", "N: with --task, score its first N items (1..200); default: all", ""},
    };
    CommandLine cl;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, cl)) return *exit_code;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(cl.model_dir, cl.dtype);
        const Tokenizer tok = Tokenizer::load(cl.model_dir);
        Request r = read_request(cl, model.config().n_positions);
        r.model = display_model_dir(cl.model_dir);
        if (r.mode == Mode::Task) return run_task(r, model, tok);
        return r.mode == Mode::Continuation ? run_continuation(r, model, tok) : run_perplexity(r, model, tok);
    });
}
