// Chapter 01, --reference FILE: greedy here beside the independent reference's goldens
// (tests/reference/, Python and torch in float64), case by case, and one case token by token.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapter01.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/base/files.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter01 {
namespace {

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

}  // namespace

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

}  // namespace chapter01
