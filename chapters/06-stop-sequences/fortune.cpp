// Chapter 06, parts 5 and 6: stop strings on real runs. A fortune cut before its attribution with
// the stop "\n\t\t--", step by step (what the stream showed and held back after each token);
// then a run with your settings. --csv FILE writes part 5's steps for the site's plot.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "chapter06.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/stop_strings.hpp"

using namespace decodebook;

namespace chapter06 {
namespace {

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

}  // namespace

FortuneCut fortune_cut(const Gpt2& model, const Tokenizer& tok, const Generation& a) {
    const std::vector<int> fortune = tok.encode(kFortunePrompt);
    const GenerationConfig plain = greedy_config(48);
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
    return {f, rows};
}

void your_settings_run(const Session& session, const CommandLine& opt) {
    const auto& [model, tok, prompt, config] = session;
    std::printf("  %s", opt.prompt.c_str());
    std::vector<Draw> coins;  // make_sampler's coins, watched for --show-steps' p(chain) column
    const Generation out = generate(model, tok, prompt, config, make_watched_sampler(config, config.seed, coins),
                                    print_text_to(std::cout));
    std::printf("\n  [%zu tokens, finish_reason %s%s]\n", out.ids.size(), to_string(out.finish_reason).c_str(),
                out.matched_stop.empty() ? "" : (", matched_stop " + visible_token(out.matched_stop)).c_str());
    if (opt.show_steps) print_steps(std::cout, out.steps, tok, coins);
}

void write_hold_csv(const std::string& path, const std::vector<HoldRow>& rows) {
    CsvFile csv(path, "step,token,shown,held,held_chars");
    std::ofstream& out = csv.out();
    for (const HoldRow& r : rows) {
        out << r.step << ',' << csv_quoted(visible_token(r.token)) << ',' << csv_quoted(visible_token(r.shown)) << ','
            << csv_quoted(visible_token(r.held)) << ',' << to_valid_utf8(r.held).size() << '\n';
    }
    csv.close();
}

}  // namespace chapter06
