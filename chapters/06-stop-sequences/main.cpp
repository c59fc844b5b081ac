// Chapter 06 - EOS and stop sequences.
//
// A generation ends in one of three ways: the length limit, an end-of-sequence token, or a stop
// string in the text. EOS is a token id (a list of them, in fact), decided before the text
// exists; min_new_tokens forbids it for a while. A stop string is text: it may begin inside one
// token and end inside a later one, several may match, and a program that streams must not show
// text that a stop string is about to claim. This program shows each rule on small scripted
// streams, then cuts a real fortune before its attribution with the stop "\n\t\t--", step by step.
//
// Library code this chapter introduces: find_stop, stop_holdback, scan_stops, StopStringStream
// (decoding/stop_strings.hpp); make_text_stream (decoding/stopping.hpp) returns the
// StopStringStream when config.stop is set.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace {

const char* const kFortunePrompt = "A computer is";
const char* const kAttribution = "\n\t\t--";

GenerationConfig greedy_config(int max_new_tokens) {
    GenerationConfig c;  // do_sample false: argmax after the processors (here: min_new_tokens)
    c.max_new_tokens = max_new_tokens;
    return c;
}

std::string ids_tail(const std::vector<int>& ids, size_t n) {
    std::string out = ids.size() > n ? "... " : "";
    for (size_t i = ids.size() > n ? ids.size() - n : 0; i < ids.size(); ++i) out += std::to_string(ids[i]) + " ";
    return out;
}

void print_run(const char* label, const Generation& g) {
    std::printf("  %-34s %s\n", label, visible_token(g.text).c_str());
    std::printf("  %-34s %zu tokens, ids %s-> finish_reason %s\n", "", g.ids.size(), ids_tail(g.ids, 3).c_str(),
                to_string(g.finish_reason).c_str());
}

// Push `tokens` through a StopStringStream and print one row per token: what it showed, what it holds.
void print_stream(const std::vector<std::string>& tokens, const std::vector<std::string>& stops, bool include,
                  StopMatch rule) {
    StopStringStream s(stops, include, rule);
    for (const std::string& t : tokens) {
        const bool before = s.matched_stop().has_value();
        const std::string shown = s.push(t);
        const std::string state = before ? "ignored, after the stop"
                                  : (s.matched_stop() ? "drops " : "holds ") + visible_token(std::string(s.held()));
        std::printf("    push %-10s shows %-12s %s\n", visible_token(t).c_str(), visible_token(shown).c_str(), state.c_str());
    }
    const std::string tail = s.flush();
    std::printf("    %-15s shows %-12s -> matched %s\n", "flush", visible_token(tail).c_str(),
                s.matched_stop() ? visible_token(*s.matched_stop()).c_str() : "nothing");
}

// The whole text a stream shows for `tokens`.
std::string shown_text(const std::vector<std::string>& tokens, const std::vector<std::string>& stops, bool include,
                       StopMatch rule) {
    StopStringStream s(stops, include, rule);
    std::string out;
    for (const std::string& t : tokens) out += s.push(t);
    return out + s.flush();
}

// One row of part 5: a token, what the stream showed and what it held back after it.
struct HoldRow {
    int step;
    std::string token, shown, held;
};

// Replay the generated ids through a fresh stream, to see what it holds after each token.
std::vector<HoldRow> hold_rows(const Generation& g, const Tokenizer& tok, const GenerationConfig& config) {
    StopStringStream s(config.stop, config.include_stop_str_in_output, config.stop_match);
    std::vector<HoldRow> rows;
    for (size_t i = 0; i < g.ids.size(); ++i) {
        const std::string shown = s.push(tok.token_bytes(g.ids[i]));
        rows.push_back({static_cast<int>(i), tok.token_bytes(g.ids[i]), shown, std::string(s.held())});
    }
    return rows;
}

// --csv FILE: part 5's steps (held = characters held back after the token).
void write_hold_csv(const std::string& path, const std::vector<HoldRow>& rows) {
    CsvFile csv(path, "step,token,shown,held,held_chars");
    std::ofstream& out = csv.out();
    for (const HoldRow& r : rows) {
        out << r.step << ',' << csv_quoted(visible_token(r.token)) << ',' << csv_quoted(visible_token(r.shown)) << ','
            << csv_quoted(visible_token(r.held)) << ',' << to_valid_utf8(r.held).size() << '\n';
    }
    csv.close();
}

// Your 06.1 as a stream: keep what was not shown, show what your_scan_stops says is safe.
std::string your_stream(const std::vector<std::string>& tokens, const std::vector<std::string>& stops) {
    std::string pending, shown;
    for (const std::string& t : tokens) {
        pending += t;
        const StopScan scan = your_scan_stops(pending, stops);
        shown += pending.substr(0, scan.safe);
        if (scan.stop) return shown;
        pending.erase(0, scan.safe);
    }
    return shown + to_valid_utf8(pending);
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-06", "EOS and stop sequences: ending a generation on a token or on text.",
                                        kFortunePrompt);
    info.defaults.max_new_tokens = 48;
    info.defaults.stop = {kAttribution};
    info.csv_columns = "step,token,shown,held,held_chars";
    const CommandLine opt = parse_command_line(argc, argv, info);
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const std::vector<int> fortune = tok.encode(kFortunePrompt);
        const int eos = model.config().eos_token_id;

        std::printf("== 1. EOS is a list of ids, and it stays in the output (greedy, \"%s\") ==\n", kFortunePrompt);
        GenerationConfig plain = greedy_config(48);
        const Generation a = generate(model, tok, fortune, plain, make_sampler(plain, 0));
        print_run("eos_token_id model (2047):", a);
        GenerationConfig two = plain;
        const std::vector<int> period = tok.encode(".");
        two.eos_token_id = std::vector<int>{eos, period.at(0)};
        const Generation b = generate(model, tok, fortune, two, make_sampler(two, 0));
        const std::string two_label = "eos_token_id [" + std::to_string(eos) + ", " + std::to_string(period[0]) + " \".\"]:";
        print_run(two_label.c_str(), b);
        std::printf("  %-34s %zu tokens earlier than with the model's EOS alone\n", "", a.ids.size() - b.ids.size());
        GenerationConfig longer = plain;
        longer.min_new_tokens = static_cast<int>(a.ids.size()) + 6;
        const Generation c = generate(model, tok, fortune, longer, make_sampler(longer, 0));
        const std::string min_label = "min_new_tokens " + std::to_string(longer.min_new_tokens) + ":";
        print_run(min_label.c_str(), c);
        std::printf("  chain: %s. The EOS the model wanted at step %zu is masked (-inf) until %d tokens\n"
                    "  exist; the stop strings below are not delayed by it (Hugging Face's rule).\n",
                    LogitsChain(longer).describe().c_str(), a.ids.size() - 1, longer.min_new_tokens);

        std::printf("\n== 2. A stop string is text: \"DE\" starts inside one token and ends inside the next ==\n");
        print_stream({"ABC", "xDE", "Fgh"}, {"DE"}, false, StopMatch::Earliest);
        print_stream({"AB", "CD", "EF"}, {"DE"}, false, StopMatch::Earliest);

        std::printf("\n== 3. Several stops: which one wins (stop_match), and include_stop_str_in_output ==\n");
        const std::vector<std::string> lo_hel{"lo", "hel"};
        std::printf("  stops [\"lo\", \"hel\"], tokens \"hello\" \" world\":\n");
        for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm, StopMatch::ListOrder, StopMatch::TokenOverlap}) {
            std::printf("    %-14s shows %-9s with include_stop_str_in_output: %s\n", to_string(rule).c_str(),
                        visible_token(shown_text({"hello", " world"}, lo_hel, false, rule)).c_str(),
                        visible_token(shown_text({"hello", " world"}, lo_hel, true, rule)).c_str());
        }
        const std::vector<std::string> abcd_bc{"abcd", "bc"};
        std::printf("  stops [\"abcd\", \"bc\"], tokens \"xab\" \"c\" \"d\": \"bc\" completes first, \"abcd\" starts first:\n");
        for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm, StopMatch::ListOrder}) {
            StopStringStream s(abcd_bc, false, rule);
            std::string shown;
            for (const char* t : {"xab", "c", "d"}) shown += s.push(t);
            shown += s.flush();
            std::printf("    %-14s shows %-9s matched %-7s with include_stop_str_in_output: %s\n", to_string(rule).c_str(),
                        visible_token(shown).c_str(), visible_token(s.matched_stop().value_or("")).c_str(),
                        visible_token(shown_text({"xab", "c", "d"}, abcd_bc, true, rule)).c_str());
        }
        const std::vector<std::string> abc_b{"abc", "b"};
        std::printf("  stops [\"abc\", \"b\"], one token \"abc\": \"abc\" starts first and is first in the list, \"b\" completes first:\n");
        for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm}) {
            StopStringStream s(abc_b, false, rule);
            const std::string shown = s.push("abc") + s.flush();
            std::printf("    %-14s shows %-9s matched %s\n", to_string(rule).c_str(), visible_token(shown).c_str(),
                        visible_token(s.matched_stop().value_or("")).c_str());
        }
        const StopScan scan = scan_stops("xabc", abcd_bc);
        std::printf("  exercise 06.1's scan decides on the pending text alone: scan_stops(\"xabc\", [\"abcd\", \"bc\"]) ="
                    " safe %zu, stop %s\n  (the text %s), where earliest waits for the next token.\n",
                    scan.safe, scan.stop ? visible_token(abcd_bc[*scan.stop]).c_str() : "none",
                    visible_token(std::string("xabc").substr(0, scan.safe)).c_str());

        std::printf("\n== 4. Streaming: hold back only what may still become a stop (\"User:\") ==\n");
        print_stream({"User", " said"}, {"User:"}, false, StopMatch::Earliest);
        print_stream({"User", ":", " hi"}, {"User:"}, false, StopMatch::Earliest);
        print_stream({"Hello Us", "e", "r"}, {"User:"}, false, StopMatch::Earliest);
        const auto fixed_holdback = [](const std::string& text) { return text.substr(0, text.size() > 4 ? text.size() - 4 : 0); };
        std::printf("  vLLM instead holds a fixed max(len(stop)) - 1 = 4 characters until the end: after \"Hello Us\"\n"
                    "  it shows %s, after \"User\" then \" said\" it shows %s and keeps the rest.\n",
                    visible_token(fixed_holdback("Hello Us")).c_str(), visible_token(fixed_holdback("User said")).c_str());

        std::printf("\n== 5. A fortune cut before its attribution: stop %s (greedy, \"%s\") ==\n",
                    visible_token(kAttribution).c_str(), kFortunePrompt);
        GenerationConfig cut = plain;
        cut.stop = {kAttribution};
        const Generation f = generate(model, tok, fortune, cut, make_sampler(cut, 0));
        const std::vector<HoldRow> rows = hold_rows(f, tok, cut);
        std::printf("  %4s  %-12s %-14s %s\n", "step", "token", "shown", "held back");
        for (const HoldRow& r : rows) {
            if (r.step + 11 < static_cast<int>(rows.size())) continue;  // the last 11 steps
            const bool last = r.step + 1 == static_cast<int>(rows.size());
            std::printf("  %4d  %-12s %-14s %s%s\n", r.step, visible_token(r.token).c_str(), visible_token(r.shown).c_str(),
                        visible_token(r.held).c_str(), last ? ": the stop, dropped" : "");
        }
        std::printf("  text: %s\n  finish_reason %s, matched_stop %s; without the stop the text went on to %s\n",
                    visible_token(f.text).c_str(), to_string(f.finish_reason).c_str(),
                    visible_token(f.matched_stop).c_str(), visible_token(a.text.substr(f.text.size())).c_str());

        std::printf("\n== 6. Your settings: %s (seed %llu) ==\n", describe(config, {KnobGroup::Stopping}).c_str(),
                    static_cast<unsigned long long>(config.seed));
        std::printf("  %s", opt.prompt.c_str());
        std::vector<Draw> coins;  // make_sampler's coins, watched for --show-steps' p(chain) column
        const Generation out = generate(model, tok, prompt, config, make_watched_sampler(config, config.seed, coins),
                                        print_text_to(std::cout));
        std::printf("\n  [%zu tokens, finish_reason %s%s]\n", out.ids.size(), to_string(out.finish_reason).c_str(),
                    out.matched_stop.empty() ? "" : (", matched_stop " + visible_token(out.matched_stop)).c_str());
        if (opt.show_steps) print_steps(std::cout, out.steps, tok, coins);

        if (!opt.csv.empty()) {
            write_hold_csv(opt.csv, rows);
            std::printf("\n(wrote the %zu steps of part 5 to %s)\n", rows.size(), opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 06 grades them):\n");
        std::vector<std::string> tokens;
        for (int id : f.ids) tokens.push_back(tok.token_bytes(id));
        std::string yours_text;
        const ExerciseAttempt s = try_exercise([&] { yours_text = your_stream(tokens, cut.stop); });
        print_exercise_status(course_exercise("your_scan_stops"), s, yours_text == f.text, visible_token(yours_text),
                              visible_token(f.text));
        std::vector<int> yours_ids;
        const ExerciseAttempt m = try_exercise([&] {
            GenerationConfig no_min = plain;  // your processor instead of the library's, then argmax
            const Sampler yours = [&](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
                xt::xtensor<float, 1> z = logits;
                const std::vector<int> eos_ids(context.eos_ids.begin(), context.eos_ids.end());
                your_apply_min_new_tokens(z, eos_ids, static_cast<int>(context.generated.size()), longer.min_new_tokens);
                return argmax(z);
            };
            yours_ids = generate(model, tok, fortune, no_min, yours).ids;
        });
        print_exercise_status(course_exercise("your_apply_min_new_tokens"), m, yours_ids == c.ids,
                              std::to_string(yours_ids.size()) + " tokens", std::to_string(c.ids.size()) + " tokens");
        return 0;
    });
}
