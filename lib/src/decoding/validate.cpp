// Chapters 02-10: what the knobs mean together. Each knob's own range is its row's (knob_table.cpp);
// here the rules that involve several knobs, the stage table's engine and mirostat refusals, and
// which EOS ids a config means.
#include "decodebook/decoding/generation_config.hpp"

#include <string>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/chain_end.hpp"
#include "decodebook/decoding/stages.hpp"
#include "knob_text.hpp"

namespace decodebook {
namespace {

// Mirostat's end keeps mu: the loops that would have to roll mu back (beam search, prompt lookup;
// a draft model in make_drafter) refuse a stateful end. Checked before the engine's order, which no
// value of --order can fix for these loops.
void check_loop_for_chain_end(const GenerationConfig& c) {
    if (c.mirostat == 0) return;
    const std::string m = "mirostat = " + std::to_string(c.mirostat);
    if (ends_in_state(c) && c.num_beams > 1)
        throw Error(m + " with beam search (num_beams " + std::to_string(c.num_beams) +
                        ") is not offered: mirostat draws one token per step and keeps mu",
                    "drop --num-beams (or pass --num-beams 1), or drop --mirostat");
    if (ends_in_state(c) && c.prompt_lookup_num_tokens > 0)
        throw Error(m + " with speculative decoding (prompt_lookup_num_tokens " +
                        std::to_string(c.prompt_lookup_num_tokens) +
                        ") is not offered: verifying k drafts at once would have to roll mu back at each rejection",
                    "drop --prompt-lookup-num-tokens, or --mirostat");
}

// Mirostat has no greedy mode: it refuses the settings that leave it nothing to draw.
void check_chain_end(const GenerationConfig& c) {
    if (c.mirostat == 0) return;
    const std::string m = "mirostat = " + std::to_string(c.mirostat);
    if (!c.do_sample)
        throw Error(m + " with do_sample false: mirostat draws the token itself, it has no greedy mode",
                    "drop --do-sample false for mirostat, or drop --mirostat for greedy decoding");
    if (c.temperature == 0)
        throw Error(m + " with temperature 0: llama.cpp's chain would keep only the top token, and mirostat would "
                        "change nothing",
                    "pass --temperature > 0 with --mirostat, or --do-sample false for greedy decoding");
}

}  // namespace

void validate(const GenerationConfig& config) { validate(config, stage_table()); }

void validate(const GenerationConfig& config, const StageTable& stages) {
    for (const Knob& k : knobs())
        if (!k.valid(config)) knob_text::invalid(k.name, k.flag, k.get(config), k.rule);
    check_loop_for_chain_end(config);
    stages.check_engine(config);  // a knob only where its engine's chain has its stage
    check_chain_end(config);
    if (config.min_new_tokens > config.max_new_tokens) {
        throw Error("min_new_tokens (" + std::to_string(config.min_new_tokens) + ") exceeds max_new_tokens (" +
                        std::to_string(config.max_new_tokens) + ")",
                    "lower --min-new-tokens or raise --max-new-tokens");
    }
    if (config.num_return_sequences > config.num_beams) {
        throw Error("num_return_sequences (" + std::to_string(config.num_return_sequences) + ") exceeds num_beams (" +
                        std::to_string(config.num_beams) + ")",
                    "lower --num-return-sequences or raise --num-beams");
    }
    if (config.num_beams > 1 && config.do_sample) {
        throw Error("beam search with sampling (HF's beam sample) is not offered: num_beams is " +
                        std::to_string(config.num_beams) + " and do_sample is true",
                    "drop the sampling flags, or pass --do-sample false with --num-beams");
    }
    if (config.num_beams > 1 && !config.stop.empty()) {  // refused, not ignored
        throw Error("stop strings with beam search are not offered: num_beams is " + std::to_string(config.num_beams) +
                        " and stop is " + nlohmann::json(config.stop).dump() +
                        " (beam search would run to its end and ignore them)",
                    "drop --stop, or pass --num-beams 1");
    }
    const int constraints = !config.regex.empty() + !config.choice.empty() + !config.json_schema.empty();
    if (constraints > 1) {
        throw Error("more than one constraint is set (regex, choice, json_schema)",
                    "give exactly one of --regex, --choice, --json-schema (vLLM's rule)");
    }
    if (config.prompt_lookup_min > config.max_matching_ngram_size) {
        throw Error("prompt_lookup_min (" + std::to_string(config.prompt_lookup_min) + ") exceeds max_matching_ngram_size (" +
                        std::to_string(config.max_matching_ngram_size) + ")",
                    "lower --prompt-lookup-min or raise --max-matching-ngram-size");
    }
}

DecodeLoop decode_loop(const GenerationConfig& config, bool has_draft_model) {
    const bool drafts = has_draft_model || config.prompt_lookup_num_tokens > 0;
    if (config.num_beams > 1 && drafts) {
        throw Error("speculative decoding with beam search is not offered (nor in HF: assisted generation is greedy or "
                    "sampling)",
                    "drop --num-beams, or --assistant-model and --prompt-lookup-num-tokens");
    }
    // one drafter drafts each round: HF's generate takes prompt lookup and leaves the draft model
    // unused (_get_candidate_generator asks for prompt_lookup_num_tokens first); refused, not dropped
    if (has_draft_model && config.prompt_lookup_num_tokens > 0) {
        throw Error("a draft model and prompt lookup (prompt_lookup_num_tokens " +
                        std::to_string(config.prompt_lookup_num_tokens) +
                        ") are both given, and one drafter drafts each round (HF would use prompt lookup and leave "
                        "the draft model unused)",
                    "drop --assistant-model (or pass --assistant-model none), or --prompt-lookup-num-tokens");
    }
    if (has_draft_model && ends_in_state(config)) {  // as make_drafter refuses it, but before any output
        throw Error("mirostat = " + std::to_string(config.mirostat) +
                        " with speculative decoding is not offered: verifying k drafts at once would have to roll "
                        "mirostat's mu back at each rejection",
                    "drop --assistant-model, or --mirostat");
    }
    if (config.num_beams > 1) return DecodeLoop::Beams;
    return drafts ? DecodeLoop::Speculative : DecodeLoop::Plain;
}

std::vector<int> resolve_eos_ids(const GenerationConfig& config, int model_eos_token_id) {
    if (config.eos_token_id) return *config.eos_token_id;
    if (model_eos_token_id < 0) return {};
    return {model_eos_token_id};
}

}  // namespace decodebook
