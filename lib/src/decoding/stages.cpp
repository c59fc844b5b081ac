// Chapters 02-04 and 10: every logits stage as one row, and each engine's order as stage names.
#include "decodebook/decoding/stages.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <span>

#include "decodebook/base/error.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

using Z = xt::xtensor<float, 1>;
using C = GenerationConfig;

// ------------------------------------------------------------------ what the stages read

// The tokens the repetition penalty sees, by scope.
std::vector<int> penalty_window(const C& p, const DecodeContext& c) {
    if (p.penalty_scope == PenaltyScope::OutputOnly) return {c.generated.begin(), c.generated.end()};
    std::vector<int> all(c.prompt.begin(), c.prompt.end());
    all.insert(all.end(), c.generated.begin(), c.generated.end());
    if (p.penalty_scope == PenaltyScope::LastN && all.size() > static_cast<size_t>(p.penalty_last_n)) {
        all.erase(all.begin(), all.end() - p.penalty_last_n);
    }
    return all;
}

// Every token the model has seen: the prompt, then the output.
std::vector<int> all_tokens(const DecodeContext& c) {
    std::vector<int> all(c.prompt.begin(), c.prompt.end());
    all.insert(all.end(), c.generated.begin(), c.generated.end());
    return all;
}

// "464 3290" for a token sequence.
std::string ids_text(std::span<const int> ids) {
    std::string s;
    for (int id : ids) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
    }
    return s;
}

std::string bias_text(float bias) { return bias == -INFINITY ? "-inf" : knob_number(bias); }

// [ch02:stages]
// ------------------------------------------------------------------ the rules the library owns

// HF's MinNewTokensLengthLogitsProcessor: while fewer than `min_new_tokens` tokens are generated,
// every EOS id is -inf (exercise 06.2's twin, which a stub cannot call: it lives in this file only).
void apply_min_new_tokens(Z& z, std::span<const int> eos_ids, size_t generated_count, int min_new_tokens) {
    if (static_cast<int>(generated_count) >= min_new_tokens) return;
    for (int id : eos_ids)
        if (static_cast<size_t>(id) < z.size()) z(static_cast<size_t>(id)) = -INFINITY;
}

// vLLM's bad words, as _apply_bad_words_single_batch (vllm/v1/sample/ops/bad_words.py, commit
// 17daac612991), called with the output's ids: a word of n tokens bans its last one when the
// output's last n - 1 tokens are its first n - 1 (a word needs n - 1 tokens of output, where HF's
// needs n of prompt and output); no EOS is spared. The ids are in the vocabulary (check_request).
void apply_bad_words_vllm(Z& z, std::span<const int> output, const std::vector<std::vector<int>>& words) {
    for (const std::vector<int>& w : words) {
        if (w.empty() || w.size() > output.size() + 1) continue;
        const size_t n = w.size() - 1;
        if (std::equal(w.begin(), w.end() - 1, output.end() - static_cast<std::ptrdiff_t>(n)) &&
            static_cast<size_t>(w.back()) < z.size())
            z(static_cast<size_t>(w.back())) = -INFINITY;
    }
}

// ------------------------------------------------------------------ one factory per stage
// Each makes the stage's Processor from the config; its row's switches have already said it is on.
// The rules and the engine code each follows are in sampling/ (sampling.hpp, other_samplers.hpp).

std::optional<Processor> make_min_new_tokens(const C& p) {  // HF's processor: no EOS before the minimum length
    return Processor{"min_new_tokens(" + std::to_string(p.min_new_tokens) + ")",
                     [n = p.min_new_tokens](Z& z, const DecodeContext& c) {
                         apply_min_new_tokens(z, c.eos_ids, c.generated.size(), n);
                     }};
}

std::optional<Processor> make_repetition(const C& p) {
    const std::string scope = p.penalty_scope == PenaltyScope::PromptAndOutput ? ""
                              : p.penalty_scope == PenaltyScope::LastN ? ", last_n=" + std::to_string(p.penalty_last_n)
                                                                       : ", " + to_string(p.penalty_scope);
    return Processor{"repetition_penalty(" + knob_number(p.repetition_penalty) + scope + ")",
                     [p](Z& z, const DecodeContext& c) {
                         apply_repetition_penalty(z, penalty_window(p, c), p.repetition_penalty);
                     }};
}

std::optional<Processor> make_presence_frequency(const C& p) {
    return Processor{"presence_frequency(" + knob_number(p.presence_penalty) + ", " + knob_number(p.frequency_penalty) + ")",
                     [p](Z& z, const DecodeContext& c) {
                         const std::vector<int> output(c.generated.begin(), c.generated.end());
                         apply_presence_frequency(z, output, p.presence_penalty, p.frequency_penalty);
                     }};
}

std::optional<Processor> make_no_repeat_ngram(const C& p) {
    return Processor{"no_repeat_ngram(" + std::to_string(p.no_repeat_ngram_size) + ")",
                     [n = p.no_repeat_ngram_size](Z& z, const DecodeContext& c) { apply_no_repeat_ngram(z, all_tokens(c), n); }};
}

std::optional<Processor> make_temperature(const C& p) {
    // temperature 0 runs only in llama.cpp's chain (runs_warpers): there it keeps the largest logit
    return Processor{"temperature(" + knob_number(p.temperature) + ")", [t = p.temperature](Z& z, const DecodeContext&) {
                         t == 0.0f ? keep_largest_logit(z) : divide_by_temperature(z, t);
                     }};
}

std::optional<Processor> make_dynatemp(const C& p) {  // llama.cpp's temp_ext, in temperature's place
    return Processor{"dynatemp(" + knob_number(p.temperature) + ", " + knob_number(p.dynatemp_range) + ", " +
                         knob_number(p.dynatemp_exponent) + ")",
                     [t = p.temperature, r = p.dynatemp_range, e = p.dynatemp_exponent](Z& z, const DecodeContext&) {
                         apply_dynamic_temperature(z, t, r, e);
                     }};
}

std::optional<Processor> make_top_k(const C& p) {
    return Processor{"top_k(" + std::to_string(p.top_k) + ")",
                     [k = p.top_k, keep = p.min_tokens_to_keep](Z& z, const DecodeContext&) { apply_top_k(z, k, keep); }};
}

std::optional<Processor> make_top_p(const C& p) {
    // each engine's own top-p arithmetic (they differ by one token where the mass lands on p)
    const TopPRule rule = p.order == ChainOrder::LlamaCpp ? TopPRule::LlamaCpp
                          : p.order == ChainOrder::Vllm   ? TopPRule::Vllm
                                                          : TopPRule::HuggingFace;
    return Processor{"top_p(" + knob_number(p.top_p) + ")", [v = p.top_p, keep = p.min_tokens_to_keep, rule](Z& z, const DecodeContext&) {
                         apply_top_p(z, v, keep, rule);
                     }};
}

std::optional<Processor> make_min_p(const C& p) {
    return Processor{"min_p(" + knob_number(p.min_p) + ")",
                     [v = p.min_p, keep = p.min_tokens_to_keep](Z& z, const DecodeContext&) { apply_min_p(z, v, keep); }};
}

std::optional<Processor> make_typical(const C& p) {
    const TypicalRule rule = p.order == ChainOrder::LlamaCpp ? TypicalRule::LlamaCpp : TypicalRule::HuggingFace;
    return Processor{"typical_p(" + knob_number(p.typical_p) + ")", [v = p.typical_p, keep = p.min_tokens_to_keep, rule](Z& z, const DecodeContext&) {
                         apply_typical_p(z, v, keep, rule);
                     }};
}

std::optional<Processor> make_epsilon(const C& p) {
    return Processor{"epsilon_cutoff(" + knob_number(p.epsilon_cutoff) + ")",
                     [v = p.epsilon_cutoff, keep = p.min_tokens_to_keep](Z& z, const DecodeContext&) { apply_epsilon_cutoff(z, v, keep); }};
}

std::optional<Processor> make_eta(const C& p) {
    return Processor{"eta_cutoff(" + knob_number(p.eta_cutoff) + ")",
                     [v = p.eta_cutoff, keep = p.min_tokens_to_keep](Z& z, const DecodeContext&) { apply_eta_cutoff(z, v, keep); }};
}

std::optional<Processor> make_top_n_sigma(const C& p) {
    return Processor{"top_n_sigma(" + knob_number(p.top_n_sigma) + ")",
                     [n = p.top_n_sigma](Z& z, const DecodeContext&) { apply_top_n_sigma(z, n); }};
}

std::optional<Processor> make_xtc(const C& p) {  // the coin is a pure function of the seed and the step
    if (p.xtc_threshold > 0.5f) return std::nullopt;  // llama.cpp: a threshold above 0.5 leaves XTC off
    return Processor{"xtc(" + knob_number(p.xtc_probability) + ", " + knob_number(p.xtc_threshold) + ")",
                     [p](Z& z, const DecodeContext& c) {
                         apply_xtc(z, p.xtc_probability, p.xtc_threshold, p.min_tokens_to_keep, xtc_coin(p.seed, c.step));
                     }};
}

std::optional<Processor> make_dry(const C& p) {
    if (p.dry_penalty_last_n == 0) return std::nullopt;  // llama.cpp: a window of 0 tokens leaves DRY off
    // the breakers as token sequences: bound to the tokenizer, or none when there are none
    std::vector<std::vector<int>> breakers;
    if (p.dry_breaker_ids) breakers = *p.dry_breaker_ids;
    return Processor{"dry(" + knob_number(p.dry_multiplier) + ", " + knob_number(p.dry_base) + ", " +
                         std::to_string(p.dry_allowed_length) + ", " + std::to_string(p.dry_penalty_last_n) + ")",
                     [p, breakers](Z& z, const DecodeContext& c) {
                         apply_dry(z, all_tokens(c), p.dry_multiplier, p.dry_base, p.dry_allowed_length,
                                   p.dry_penalty_last_n, breakers);
                     }};
}

std::optional<Processor> make_logit_bias(const C& p) {  // llama.cpp and vLLM: token id -> bias
    std::string name;
    for (const auto& [id, bias] : p.logit_bias) name += (name.empty() ? "" : ", ") + std::to_string(id) + ":" + bias_text(bias);
    return Processor{"logit_bias(" + name + ")", [b = p.logit_bias](Z& z, const DecodeContext&) { apply_logit_bias(z, b); }};
}

std::optional<Processor> make_sequence_bias(const C& p) {  // HF: a logit_bias entry is a sequence of one token
    std::vector<std::pair<std::vector<int>, float>> bias;
    for (const auto& [id, b] : p.logit_bias) bias.push_back({{id}, b});
    bias.insert(bias.end(), p.sequence_bias.begin(), p.sequence_bias.end());
    std::string name;
    for (const auto& [ids, b] : bias) name += (name.empty() ? "" : ", ") + ids_text(ids) + ":" + bias_text(b);
    return Processor{"sequence_bias(" + name + ")",
                     [bias](Z& z, const DecodeContext& c) { apply_sequence_bias(z, all_tokens(c), bias); }};
}

std::optional<Processor> make_bad_words(const C& p) {
    std::string name;
    for (const std::vector<int>& w : p.bad_words_ids) name += (name.empty() ? "" : ", ") + ids_text(w);
    // HF (NoBadWordsLogitsProcessor) matches prefixes over the prompt and the output and skips a
    // bad word that is only an EOS id; vLLM (vllm/v1/sample/ops/bad_words.py, commit 17daac612991,
    // called with output_token_ids) over the output only, and bans an EOS like any token
    if (p.order == ChainOrder::Vllm) {
        return Processor{"bad_words(" + name + ")", [w = p.bad_words_ids](Z& z, const DecodeContext& c) {
                             apply_bad_words_vllm(z, c.generated, w);
                         }};
    }
    return Processor{"bad_words(" + name + ")", [w = p.bad_words_ids](Z& z, const DecodeContext& c) {
                         apply_bad_words(z, all_tokens(c), w, c.eos_ids);
                     }};
}

std::optional<Processor> make_suppress_tokens(const C& p) {
    return Processor{"suppress_tokens(" + ids_text(p.suppress_tokens) + ")",
                     [ids = p.suppress_tokens](Z& z, const DecodeContext&) { apply_suppress_tokens(z, ids); }};
}

std::optional<Processor> make_begin_suppress_tokens(const C& p) {  // HF's begin_index: the first new token
    return Processor{"begin_suppress_tokens(" + ids_text(p.begin_suppress_tokens) + ")",
                     [ids = p.begin_suppress_tokens](Z& z, const DecodeContext& c) {
                         if (c.step == 0) apply_suppress_tokens(z, ids);
                     }};
}

// ------------------------------------------------------------------ the table
// One row per stage: {name, warper, switches {knob, on, off}, factory[, the stage it replaces]}.
// The refusals walk the rows in this order, so with several refused knobs the first named is the
// first here.
std::vector<StageRow> make_rows() {
    return {
        {"top_k", true, {{"top_k", [](const C& c) { return c.top_k > 0; }, "0"}}, make_top_k},
        {"top_p", true, {{"top_p", [](const C& c) { return c.top_p < 1; }, "1"}}, make_top_p},
        {"min_p", true, {{"min_p", [](const C& c) { return c.min_p > 0; }, "0"}}, make_min_p},
        {"typical_p", true, {{"typical_p", [](const C& c) { return c.typical_p < 1; }, "1"}}, make_typical},
        {"epsilon_cutoff", true, {{"epsilon_cutoff", [](const C& c) { return c.epsilon_cutoff > 0; }, "0"}}, make_epsilon},
        {"eta_cutoff", true, {{"eta_cutoff", [](const C& c) { return c.eta_cutoff > 0; }, "0"}}, make_eta},
        {"top_n_sigma", true, {{"top_n_sigma", [](const C& c) { return c.top_n_sigma > 0; }, "-1"}}, make_top_n_sigma},
        {"xtc", true, {{"xtc_probability", [](const C& c) { return c.xtc_probability > 0; }, "0"}}, make_xtc},
        {"dry", false, {{"dry_multiplier", [](const C& c) { return c.dry_multiplier > 0; }, "0"}}, make_dry},
        {"repetition", false, {{"repetition_penalty", [](const C& c) { return c.repetition_penalty != 1; }, "1"}},
         make_repetition},
        {"presence_frequency", false,
         {{"presence_penalty", [](const C& c) { return c.presence_penalty != 0; }, "0"},
          {"frequency_penalty", [](const C& c) { return c.frequency_penalty != 0; }, "0"}},
         make_presence_frequency},
        {"no_repeat_ngram", false, {{"no_repeat_ngram_size", [](const C& c) { return c.no_repeat_ngram_size > 0; }, "0"}},
         make_no_repeat_ngram},
        {"dynatemp", true, {{"dynatemp_range", [](const C& c) { return c.dynatemp_range > 0; }, "0"}}, make_dynatemp,
         "temperature"},
        {"logit_bias", false, {{"logit_bias", [](const C& c) { return !c.logit_bias.empty(); }, "[]"}}, make_logit_bias},
        {"sequence_bias", false,
         {{"sequence_bias", [](const C& c) { return !c.sequence_bias.empty(); }, "[]"},
          {"logit_bias", [](const C& c) { return !c.logit_bias.empty(); }, "[]"}},
         make_sequence_bias},
        {"bad_words", false, {{"bad_words_ids", [](const C& c) { return !c.bad_words_ids.empty(); }, "[]"}}, make_bad_words},
        {"suppress_tokens", false, {{"suppress_tokens", [](const C& c) { return !c.suppress_tokens.empty(); }, "[]"}},
         make_suppress_tokens},
        {"begin_suppress_tokens", false,
         {{"begin_suppress_tokens", [](const C& c) { return !c.begin_suppress_tokens.empty(); }, "[]"}},
         make_begin_suppress_tokens},
        {"min_new_tokens", false, {{"min_new_tokens", [](const C& c) { return c.min_new_tokens > 0; }, "0"}},
         make_min_new_tokens},
        {"temperature", true, {{"temperature", [](const C& c) { return c.temperature != 1; }, "1"}}, make_temperature},
    };
}

// Each engine's order, as data: a stage an engine lacks is not in its list (validate refuses its
// knob under that order). Each list follows the engine's code:
// - hf: GenerationMixin._get_logits_processor (huggingface/transformers
//   src/transformers/generation/utils.py, commit 000034a44ef8): sequence_bias (a logit_bias is HF's
//   sequence_bias of one token), repetition, no_repeat_ngram, bad_words, min_new_tokens,
//   suppress_tokens, begin_suppress_tokens; then the warpers when sampling: temperature, top_k, top_p,
//   min_p, typical_p, epsilon, eta. (HF has no presence/frequency penalty: ours sits beside repetition.)
// - llama.cpp: common_sampler_init (ggml-org/llama.cpp common/sampling.cpp, commit 00efb3e18426):
//   logit_bias first, then the default `samplers` of common/common.h: penalties, DRY, top_n_sigma,
//   top_k, typical_p, top_p, min_p, XTC, temperature (temp_ext: dynamic when dynatemp_range > 0).
//   min_new_tokens (not llama.cpp's) sits before its penalties, as it does everywhere. Its mirostat
//   chain is logit_bias, temp, mirostat; mirostat itself is the chain's end (ChainEnd), not a stage.
// - vllm: v1 Sampler.forward (vllm-project/vllm vllm/v1/sample/sampler.py): bad_words, then the
//   argmax-changing logits processors in BUILTIN_LOGITS_PROCESSORS order (min_tokens, logit_bias;
//   vllm/v1/sample/logits_processor/__init__.py, commit 02a6b06222ab), the penalties, temperature,
//   min_p, top_k, top_p.
std::vector<EngineOrder> make_orders() {
    return {
        {ChainOrder::HuggingFace,
         {"sequence_bias", "repetition", "presence_frequency", "no_repeat_ngram", "bad_words", "min_new_tokens",
          "suppress_tokens", "begin_suppress_tokens", "temperature", "top_k", "top_p", "min_p", "typical_p",
          "epsilon_cutoff", "eta_cutoff"}},
        {ChainOrder::LlamaCpp,
         {"logit_bias", "min_new_tokens", "repetition", "presence_frequency", "no_repeat_ngram", "dry", "top_n_sigma",
          "top_k", "typical_p", "top_p", "min_p", "xtc", "dynatemp", "temperature"},
         {"logit_bias", "min_new_tokens", "temperature"}},
        {ChainOrder::Vllm,
         {"bad_words", "min_new_tokens", "logit_bias", "repetition", "presence_frequency", "no_repeat_ngram",
          "temperature", "min_p", "top_k", "top_p"}},
    };
}
// [/ch02:stages]

bool lists(const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// "hf and llama.cpp", "--order hf or --order llama.cpp".
std::string orders_text(const std::vector<ChainOrder>& orders, const std::string& prefix, const std::string& joint) {
    std::string s;
    for (size_t i = 0; i < orders.size(); ++i) {
        if (i > 0) s += i + 1 == orders.size() ? joint : ", ";
        s += prefix + to_string(orders[i]);
    }
    return s;
}

[[noreturn]] void refuse_under_order(const std::string& knob, const std::vector<ChainOrder>& orders, const C& config) {
    const Knob& k = find_knob(knob);
    const std::string whose =
        orders.size() == 1 ? to_string(orders[0]) + "'s sampler" : "a sampler of " + orders_text(orders, "", " and ");
    throw Error(knob + " = " + k.get(config) + " is " + whose + ", and --order is " + to_string(config.order) +
                    " (its chain has no such step)",
                "add " + orders_text(orders, "--order ", " or ") + ", or drop --" + k.flag);
}

[[noreturn]] void refuse_beside_mirostat(const StageSwitch& s, const C& config) {
    const Knob& k = find_knob(s.knob);
    throw Error(std::string(s.knob) + " = " + k.get(config) + " has no effect with mirostat = " +
                    std::to_string(config.mirostat) +
                    " (llama.cpp's mirostat chain is logit_bias -> temperature -> mirostat: refused rather than ignored)",
                "drop --" + k.flag + " (or pass --" + k.flag + " " + s.off + "), or drop --mirostat");
}

}  // namespace

bool StageRow::on(const GenerationConfig& config) const {
    return std::any_of(switches.begin(), switches.end(), [&](const StageSwitch& s) { return s.on(config); });
}

const StageRow& StageTable::row(std::string_view name) const {
    for (const StageRow& r : rows)
        if (name == r.name) return r;
    throw Error("no logits stage is called '" + std::string(name) + "'", "name a row of the stage table");
}

const EngineOrder& StageTable::order(ChainOrder o) const {
    for (const EngineOrder& e : orders)
        if (e.order == o) return e;
    throw Error("the stage table has no order " + to_string(o), "add its EngineOrder to the table");
}

std::vector<ChainOrder> StageTable::orders_with(std::string_view knob) const {
    std::vector<ChainOrder> with;
    for (const EngineOrder& e : orders) {
        bool has = knob == "mirostat" && !e.mirostat_stages.empty();
        for (const std::string& name : e.stages)
            for (const StageSwitch& s : row(name).switches) has = has || knob == s.knob;
        if (has) with.push_back(e.order);
    }
    return with;
}

std::vector<Processor> StageTable::processors(const GenerationConfig& config, bool warpers) const {
    const EngineOrder& engine = order(config.order);
    const std::vector<std::string>& names = config.mirostat != 0 ? engine.mirostat_stages : engine.stages;
    std::set<std::string_view> replaced;
    for (const std::string& name : names) {
        const StageRow& r = row(name);
        if (r.replaces && r.on(config) && (warpers || !r.warper)) replaced.insert(r.replaces);
    }
    std::vector<Processor> chain;
    for (const std::string& name : names) {
        const StageRow& r = row(name);
        if (!warpers && r.warper) continue;  // HF's and vLLM's argmax: after the processors only
        if (!r.on(config) || replaced.count(r.name)) continue;
        if (std::optional<Processor> p = r.make(config)) chain.push_back(std::move(*p));
    }
    return chain;
}

void StageTable::check_engine(const GenerationConfig& config) const {
    std::set<std::string_view> seen;
    for (const StageRow& r : rows)
        for (const StageSwitch& s : r.switches) {
            if (!s.on(config) || !seen.insert(s.knob).second) continue;
            const std::vector<ChainOrder> with = orders_with(s.knob);
            if (std::find(with.begin(), with.end(), config.order) == with.end()) refuse_under_order(s.knob, with, config);
        }
    if (config.mirostat == 0) return;
    const std::vector<ChainOrder> with = orders_with("mirostat");
    if (std::find(with.begin(), with.end(), config.order) == with.end()) refuse_under_order("mirostat", with, config);
    const EngineOrder& engine = order(config.order);
    for (const StageRow& r : rows) {
        if (!lists(engine.stages, r.name) || lists(engine.mirostat_stages, r.name)) continue;
        for (const StageSwitch& s : r.switches)
            if (s.on(config)) refuse_beside_mirostat(s, config);
    }
}

const StageTable& stage_table() {
    static const StageTable table{make_rows(), make_orders()};
    return table;
}

}  // namespace decodebook
