// Chapter 01 - Greedy decoding.
//
// Greedy decoding always takes the most likely next token (argmax; ties go to the lowest id).
// Three things follow, and this program shows each on the embedded model:
//   1. it is deterministic: the same prompt gives the same text every time;
//   2. on a long run it falls into a loop, repeating the same few tokens forever;
//   3. it stops when the model writes <|endoftext|>, and that token stays in the output (as in HF);
//      skip_special_tokens leaves it out of the text, never out of the ids.
// With --reference FILE (tests/data/greedy.json) it prints instead this program's greedy tokens
// beside the independent reference's (tests/reference/, Python in float64), case by case.
//
// Library code this chapter introduces: argmax and greedy_generate (decoding/naive_loop.hpp);
// Tokenizer::decode with skip_special_tokens and the knob of that name.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/files.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace {

// A prompt whose greedy continuation ends its fortune with <|endoftext|> quickly.
const char* const kEndingPrompt = "Murphy's Law:\n\t";

// Run greedy decoding with the general loop (chapter 02) and `greedy` as its sampler, streaming
// the text; returns the new tokens and why they ended.
Generation run_greedy(const Gpt2& model, const Tokenizer& tok, const std::string& prompt, int max_new_tokens) {
    std::cout << prompt << std::flush;
    GenerationConfig config;
    config.max_new_tokens = max_new_tokens;
    Generation g = generate(model, tok, tok.encode(prompt), config, greedy, print_text_to(std::cout));
    std::cout << "\n";
    return g;
}

// The five most likely next tokens after `prompt`, to show what argmax chooses from.
void show_first_choice(const Gpt2& model, const Tokenizer& tok, const std::string& prompt) {
    const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(prompt)));
    const xt::xtensor<float, 1> probs = softmax(logits);
    std::printf("The five most likely first tokens after the prompt:\n");
    const std::vector<int> ids = top_ids(probs, 5);
    for (size_t i = 0; i < ids.size(); ++i) {
        const size_t id = static_cast<size_t>(ids[i]);
        std::printf("  %-16s id %5zu  logit %7.3f  p %.3f%s\n", visible_token(tok.token_bytes(ids[i])).c_str(), id,
                    logits(id), probs(id), i == 0 ? "   <- argmax: greedy takes this" : "");
    }
}

// The smallest gap between the two largest logits over the steps of a greedy run: how far every
// decision was from a tie (a gap of 0 would let float rounding pick either token).
double smallest_top2_gap(const Gpt2& model, std::vector<int> sequence, const std::vector<int>& generated) {
    double smallest = INFINITY;
    for (int id : generated) {
        const xt::xtensor<float, 1> z = last_position_logits(model.forward(sequence));
        const std::vector<int> top = top_ids(softmax(z), 2);
        smallest = std::min(smallest, static_cast<double>(z(static_cast<size_t>(top[0])) - z(static_cast<size_t>(top[1]))));
        sequence.push_back(id);
    }
    return smallest;
}

// One golden case of the reference, as the file holds it.
struct ReferenceCase {
    std::string name, prompt, text;
    std::vector<int> prompt_ids, ids;
    int max_new_tokens = 0;
    double min_top2_gap = 0;
};

std::vector<ReferenceCase> read_reference(const std::string& path) {
    const std::string fix = "pass --reference the reference's greedy goldens, tests/data/greedy.json";
    if (!std::filesystem::is_regular_file(path)) throw UsageError("--reference '" + path + "' is not a file", fix);
    const std::string text = read_small_file(path, "reference file", 16u << 20, fix);
    std::vector<ReferenceCase> out;
    try {
        const nlohmann::json file = nlohmann::json::parse(text);
        for (const nlohmann::json& c : file.at("cases")) {
            out.push_back({c.at("name"), c.at("prompt"), c.at("text"), c.at("prompt_ids"), c.at("ids"),
                           c.at("max_new_tokens"), c.at("min_top2_gap")});
        }
    } catch (const nlohmann::json::exception& e) {
        throw UsageError("'" + path + "' is not a file of greedy goldens (" + e.what() + ")", fix);
    }
    if (out.empty()) throw UsageError("'" + path + "' holds no cases", fix);
    return out;
}

// [ch01:reference]
// --reference FILE: every golden case greedy here (float32, the naive loop with argmax) beside the
// independent reference (Python and torch in float64, sharing no code with this program), and the
// case whose prompt is --prompt token by token.
void compare_with_reference(const Gpt2& model, const Tokenizer& tok, const std::string& path, const std::string& prompt) {
    const std::vector<ReferenceCase> cases = read_reference(path);
    const int eos = model.config().eos_token_id;
    std::printf("== Greedy here against the independent reference (%s) ==\n", path.c_str());
    std::printf("The reference is tests/reference/decode.py: Python and torch in float64, no code shared with\n"
                "this program. Each case is greedy here (float32, greedy_generate) beside the reference's ids:\n");
    std::printf("  %-18s %7s %10s %10s %22s\n", "case", "tokens", "same ids", "same text", "reference's top-2 gap");
    int same = 0;
    const ReferenceCase* shown = nullptr;
    std::vector<int> shown_ids;
    for (const ReferenceCase& c : cases) {
        const std::vector<int> ids = greedy_generate(model, c.prompt_ids, {c.max_new_tokens, eos});
        const bool ids_same = ids == c.ids, text_same = to_valid_utf8(tok.decode(ids)) == c.text;
        same += ids_same && text_same;
        std::printf("  %-18s %7zu %10s %10s %22.4f\n", c.name.c_str(), c.ids.size(), ids_same ? "yes" : "NO",
                    text_same ? "yes" : "NO", c.min_top2_gap);
        if (c.prompt == prompt) {
            shown = &c;
            shown_ids = ids;
        }
    }
    std::printf("%d of %zu cases: the same ids and the same text. (The top-2 gap is the smallest distance between\n"
                "the two largest logits over a case's steps: the goldens keep only cases where it is at least\n"
                "0.001, so float32 rounding here cannot flip a token.)\n", same, cases.size());
    if (!shown) {
        std::printf("\nNo case has the prompt \"%s\"; -p with a case's prompt (e.g. \"%s\") shows it token by token.\n",
                    prompt.c_str(), cases.front().prompt.c_str());
        return;
    }
    const ReferenceCase& c = *shown;
    const std::vector<int> prompt_here = tok.encode(c.prompt);
    std::printf("\nCase '%s', token by token: prompt %s, ids here", c.name.c_str(), visible_token(c.prompt).c_str());
    for (int id : prompt_here) std::printf(" %d", id);
    std::printf(", the reference's");
    for (int id : c.prompt_ids) std::printf(" %d", id);
    std::printf("\n  %4s   %-22s %s\n", "step", "here (C++, float32)", "reference (float64)");
    for (size_t i = 0; i < std::max(shown_ids.size(), c.ids.size()); ++i) {
        const auto cell = [&](const std::vector<int>& ids) {
            return i < ids.size() ? std::to_string(ids[i]) + "=" + visible_token(tok.token_bytes(ids[i])) : std::string("-");
        };
        std::printf("  %4zu   %-22s %s%s\n", i, cell(shown_ids).c_str(), cell(c.ids).c_str(),
                    i < shown_ids.size() && i < c.ids.size() && shown_ids[i] == c.ids[i] ? "" : "  <- differs");
    }
    std::printf("  text here:      %s\n  text reference: %s\n", visible_token(tok.decode(shown_ids)).c_str(),
                visible_token(c.text).c_str());
    std::printf("  smallest top-2 logit gap: here %.4f, the reference's %.4f\n", smallest_top2_gap(model, c.prompt_ids, shown_ids),
                c.min_top2_gap);
}
// [/ch01:reference]

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"chapter-01", "Greedy decoding: deterministic, loops on long runs, stops at <|endoftext|>.",
                     "The best way to"};
    info.defaults.max_new_tokens = 128;
    info.extra.push_back({"reference", "print only greedy here beside the independent reference's goldens in FILE "
                                       "(tests/data/greedy.json), and the case whose prompt is --prompt step by step", ""});
    const CommandLine opt = parse_command_line(argc, argv, info);
    const int max_new_tokens = opt.config.max_new_tokens;
    return run_program([&] {
        const Gpt2 model = Gpt2::load(opt.model_dir, opt.dtype);
        const Tokenizer tok = Tokenizer::load(opt.model_dir);
        const int eos = model.config().eos_token_id;
        if (!opt.extra.at("reference").empty()) {
            compare_with_reference(model, tok, opt.extra.at("reference"), opt.prompt);
            return 0;
        }
        check_generation_request(model.config(), tok.encode(opt.prompt), {max_new_tokens, eos});  // fail early

        std::printf("== 1. Greedy takes the argmax ==\n");
        show_first_choice(model, tok, opt.prompt);

        std::printf("\n== 2. A long greedy run (%d new tokens at most) ==\n", max_new_tokens);
        const Generation run = run_greedy(model, tok, opt.prompt, max_new_tokens);
        const std::vector<int>& first = run.ids;
        if (opt.show_steps) print_steps(std::cout, run.steps, tok);

        const StopRule stop{max_new_tokens, eos};
        const std::vector<int> second = greedy_generate(model, tok.encode(opt.prompt), stop);
        std::printf("\nDeterminism: a second run (greedy_generate, the naive loop with argmax) gives %s (%zu tokens).\n",
                    first == second ? "exactly the same tokens" : "DIFFERENT tokens (this should never happen)",
                    second.size());

        const Loop loop = find_loop(first);  // metrics.hpp
        if (loop.period > 0) {
            const std::vector<int> cycle(first.begin() + static_cast<long>(loop.start),
                                         first.begin() + static_cast<long>(loop.start + loop.period));
            std::printf("Repetition loop: from new token %zu on, a cycle of %zu tokens repeats %.1f times:\n  %s\n"
                        "Once the context repeats, the argmax tends to repeat too: greedy has no randomness to\n"
                        "leave the loop, so only a rare shift in the logits, the length limit or <|endoftext|> ends it.\n"
                        "(Chapters 02-04 break such loops with sampling and penalties.)\n",
                        loop.start, loop.period, static_cast<double>(loop.covered) / static_cast<double>(loop.period),
                        visible_token(tok.decode(cycle)).c_str());
        } else {
            std::printf("No repetition loop in this run (try a larger --max-new-tokens).\n");
        }
        if (run.finish_reason == FinishReason::Eos) {
            std::printf("The run ended with <|endoftext|> (id %d) after %zu tokens; it stays in the output.\n", eos,
                        first.size());
        }

        std::printf("\n== 3. Stopping at <|endoftext|> ==\n");
        const Generation end_run = run_greedy(model, tok, kEndingPrompt, 48);
        const std::vector<int>& ending = end_run.ids;
        if (end_run.finish_reason == FinishReason::Eos) {
            std::printf("The model ended the fortune: the last of the %zu new tokens is <|endoftext|> (id %d), and\n"
                        "generation stopped there although 48 were allowed. Like HF generate, the EOS token is\n"
                        "kept in the returned ids: [..., %d].\n",
                        ending.size(), eos, ending.back());
            // The same run with skip_special_tokens (HF's decode flag, vLLM's default): the same ids,
            // and <|endoftext|> left out of the text.
            GenerationConfig skip;
            skip.max_new_tokens = 48;
            skip.skip_special_tokens = true;
            const Generation skipped = generate(model, tok, tok.encode(kEndingPrompt), skip, greedy);
            std::printf("With skip_special_tokens true (HF's tok.decode(ids, skip_special_tokens=True); vLLM's default)\n"
                        "the ids are %s, and the text ends %s instead of %s.\n",
                        skipped.ids == ending ? "the same" : "DIFFERENT (this should never happen)",
                        visible_token(skipped.text.substr(skipped.text.size() - std::min<size_t>(skipped.text.size(), 12))).c_str(),
                        visible_token(end_run.text.substr(end_run.text.size() - std::min<size_t>(end_run.text.size(), 25))).c_str());
        } else {
            std::printf("This run used all 48 tokens without producing <|endoftext|>.\n");
        }

        // Your turn: the same inputs through your exercises (exercises/01-greedy/).
        std::printf("\nYour exercises (./grade 01 grades them):\n");
        const xt::xtensor<float, 1> logits = last_position_logits(model.forward(tok.encode(opt.prompt)));
        int your_pick = -1;
        const ExerciseAttempt pick = try_exercise([&] { your_pick = your_argmax(logits); });
        print_exercise_status(course_exercise("your_argmax"), pick, your_pick == argmax(logits),
                              "id " + std::to_string(your_pick), "id " + std::to_string(argmax(logits)));
        std::vector<int> yours;
        const ExerciseAttempt yours_greedy =
            try_exercise([&] { yours = your_greedy_generate(model, tok.encode(opt.prompt), stop); });
        print_exercise_status(course_exercise("your_greedy_generate"), yours_greedy, yours == first,
                              visible_token(tok.decode(yours)), visible_token(tok.decode(first)));
        return 0;
    });
}
