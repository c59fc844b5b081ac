// Chapter 11, part 1: one drawn token in vLLM's four logprobs modes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter11.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/logprobs.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter11 {
namespace {

constexpr LogprobsMode kModes[] = {LogprobsMode::RawLogits, LogprobsMode::RawLogprobs, LogprobsMode::ProcessedLogits,
                                   LogprobsMode::ProcessedLogprobs};

// A value as the table prints it: -inf spelled out.
std::string cell(float v) {
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", static_cast<double>(v));
    return text;
}

}  // namespace

// [ch11:four-modes]
void four_modes(const Session& s, bool show_chain) {
    const std::vector<int> eos = resolve_eos_ids(s.config, s.model.config().eos_token_id);
    const DecodeContext context{s.prompt, {}, 0, eos};
    const Vec raw = last_position_logits(s.model.forward(s.prompt));  // (V) the model's logits
    const Vec processed = LogitsChain(s.config).apply(raw, context);   // (V) the chain's output
    // the drawn token, as the generation loop draws it: one recording sampler per mode, each with
    // the config's seed, so each draws the same token and records its value in its mode
    std::vector<StepLogprobs> drawn;
    for (LogprobsMode mode : kModes) {
        std::vector<StepLogprobs> record;
        make_logprobs_sampler(s.config, s.config.seed, {0, mode}, record)(raw, context);
        drawn.push_back(record.at(0));
    }
    const int token = drawn[0].token;
    if (show_chain) std::printf("chain: %s\n", LogitsChain(s.config).describe().c_str());
    std::printf("the first step drew %s (seed %llu)\n\n", visible_token(std::string(s.tokenizer.text_bytes(token, false))).c_str(),
                static_cast<unsigned long long>(s.config.seed));

    // the table: the 8 most likely tokens before the chain, then the drawn one if not among them
    std::vector<Vec> values;
    for (LogprobsMode mode : kModes) values.push_back(logprob_values(raw, processed, mode));
    std::vector<int> shown = top_ids(raw, 8);
    if (std::find(shown.begin(), shown.end(), token) == shown.end()) shown.push_back(token);
    std::printf("%-16s %12s %12s %16s %18s\n", "token", "raw_logits", "raw_logprobs", "processed_logits",
                "processed_logprobs");
    for (int id : shown) {
        const size_t i = static_cast<size_t>(id);
        std::printf("%-16s %12s %12s %16s %18s%s\n", visible_token(std::string(s.tokenizer.text_bytes(id, false))).c_str(),
                    cell(values[0](i)).c_str(), cell(values[1](i)).c_str(), cell(values[2](i)).c_str(),
                    cell(values[3](i)).c_str(), id == token ? "  <- drawn" : "");
    }
    // what the recording samplers wrote for the drawn token: the same four numbers
    std::printf("\nthe drawn token as each mode reports it:");
    for (size_t m = 0; m < drawn.size(); ++m)
        std::printf(" %s %s (rank %d)%s", to_string(kModes[m]).c_str(), cell(drawn[m].value).c_str(), drawn[m].rank,
                    m + 1 < drawn.size() ? "," : "\n");
    double kept_mass = 0;
    size_t kept = 0;
    for (size_t i = 0; i < processed.size(); ++i) {
        if (processed(i) == -INFINITY) continue;
        ++kept;
        kept_mass += std::exp(static_cast<double>(values[3](i)));
    }
    std::printf("the chain kept %zu of %zu tokens; exp(processed_logprobs) over them sums to %.6f, and the "
                "others are -inf\n",
                kept, processed.size(), kept_mass);
    std::printf("p(drawn) = %.4f before the chain (what vLLM returns by default), %.4f in the distribution it was "
                "drawn from\n",
                std::exp(static_cast<double>(drawn[1].value)), std::exp(static_cast<double>(drawn[3].value)));
}
// [/ch11:four-modes]

void a_run_in_two_modes(const Session& s) {
    // the same seed and chain twice: the same tokens, recorded before the chain and after it
    std::vector<StepLogprobs> raw, processed;
    const Generation g = generate_cached(s.model, s.tokenizer, s.prompt, s.config,
                                         make_logprobs_sampler(s.config, s.config.seed, {0, LogprobsMode::RawLogprobs}, raw));
    (void)generate_cached(s.model, s.tokenizer, s.prompt, s.config,
                          make_logprobs_sampler(s.config, s.config.seed, {0, LogprobsMode::ProcessedLogprobs}, processed));
    std::printf("%4s  %-14s %13s %7s %19s %7s\n", "step", "token", "raw_logprobs", "rank", "processed_logprobs", "rank");
    double raw_sum = 0, processed_sum = 0;
    for (size_t i = 0; i < raw.size() && i < processed.size(); ++i) {
        std::printf("%4zu  %-14s %13.4f %7d %19.4f %7d\n", i,
                    visible_token(std::string(s.tokenizer.text_bytes(raw[i].token, false))).c_str(),
                    static_cast<double>(raw[i].value), raw[i].rank, static_cast<double>(processed[i].value), processed[i].rank);
        raw_sum += raw[i].value;
        processed_sum += processed[i].value;
    }
    std::printf("%s%s\n(%zu tokens, finish_reason %s) sum of raw_logprobs %.2f, of processed_logprobs %.2f\n",
                s.tokenizer.decode(s.prompt).c_str(), g.text.c_str(), g.ids.size(), to_string(g.finish_reason).c_str(),
                raw_sum, processed_sum);
}

}  // namespace chapter11
