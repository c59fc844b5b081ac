// Chapters 02-06: the processor chain, and the samplers built on it.
#include "decodebook/decoding/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

// The tokens the repetition penalty sees, by scope.
std::vector<int> penalty_window(const GenerationConfig& p, const DecodeContext& c) {
    if (p.penalty_scope == PenaltyScope::OutputOnly) return {c.generated.begin(), c.generated.end()};
    std::vector<int> all(c.prompt.begin(), c.prompt.end());
    all.insert(all.end(), c.generated.begin(), c.generated.end());
    if (p.penalty_scope == PenaltyScope::LastN && all.size() > static_cast<size_t>(p.penalty_last_n)) {
        all.erase(all.begin(), all.end() - p.penalty_last_n);
    }
    return all;
}

bool nothing_left(const xt::xtensor<float, 1>& z) {
    for (float v : z)
        if (v != -INFINITY) return false;
    return true;
}

}  // namespace

// [ch02:chain]
namespace {

// The temperature stage: z / T, as HF's TemperatureLogitsWarper (apply_temperature), for any T > 0.
// A T so small that some z / T overflows a float (T = 2e-38 and a logit of 30) would give
// softmax inf - inf = NaN; then every logit is taken from the largest first, (z - max) / T: the
// same distribution (a shift), the largest at 0 and the others at -inf or far below, all but
// greedy, as the limit T -> 0 is. -inf (a removed token) stays -inf.
void divide_by_temperature(xt::xtensor<float, 1>& z, float t) {
    float max = -std::numeric_limits<float>::infinity();
    bool overflows = false;
    for (float v : z) {
        max = std::max(max, v);
        overflows = overflows || (std::isfinite(v) && !std::isfinite(v / t));
    }
    if (!overflows) return apply_temperature(z, t);
    for (float& v : z) v = (v - max) / t;
}

// Every stage a config can switch on. Those before Temperature (the biases, min_new_tokens, the
// penalties, DRY) edit the logits in both modes; the warpers from Temperature on only shape the
// distribution a sample is drawn from.
enum class Stage {
    LogitBias, SequenceBias, BadWords, MinNewTokens, Repetition, PresenceFrequency, NoRepeatNgram, Dry,
    SuppressTokens, BeginSuppressTokens,  // chapter 10: the biases and DRY
    Temperature, TopK, TopP, MinP,
    Typical, EpsilonCutoff, EtaCutoff, TopNSigma, Xtc,  // chapter 10: the other truncations
};

// Each engine's order, as data: a new processor is one entry in each row; a stage an engine lacks is
// not in its row (validate refuses its knob under that order). Each row follows the engine's code:
// - hf: GenerationMixin._get_logits_processor (huggingface/transformers
//   src/transformers/generation/utils.py, commit 000034a44ef8): sequence_bias (a logit_bias is HF's
//   sequence_bias of one token), repetition, no_repeat_ngram, bad_words, min_new_tokens,
//   suppress_tokens, begin_suppress_tokens; then the warpers when sampling: temperature, top_k, top_p,
//   min_p, typical_p, epsilon, eta. (HF has no presence/frequency penalty: ours sits beside repetition.)
// - llama.cpp: common_sampler_init (ggml-org/llama.cpp common/sampling.cpp, commit 00efb3e18426):
//   logit_bias first, then the default `samplers` of common/common.h: penalties, DRY, top_n_sigma,
//   top_k, typical_p, top_p, min_p, XTC, temperature (temp_ext: dynamic when dynatemp_range > 0).
//   min_new_tokens (not llama.cpp's) sits before its penalties, as it does everywhere.
// - vllm: v1 Sampler.forward (vllm-project/vllm vllm/v1/sample/sampler.py): bad_words, then the
//   argmax-changing logits processors in BUILTIN_LOGITS_PROCESSORS order (min_tokens, logit_bias;
//   vllm/v1/sample/logits_processor/__init__.py, commit 02a6b06222ab), the penalties, temperature,
//   min_p, top_k, top_p.
struct EngineOrder {
    ChainOrder order;
    std::vector<Stage> stages;
};
const EngineOrder kOrders[] = {
    {ChainOrder::HuggingFace, {Stage::SequenceBias, Stage::Repetition, Stage::PresenceFrequency, Stage::NoRepeatNgram,
                               Stage::BadWords, Stage::MinNewTokens, Stage::SuppressTokens, Stage::BeginSuppressTokens,
                               Stage::Temperature, Stage::TopK, Stage::TopP, Stage::MinP, Stage::Typical,
                               Stage::EpsilonCutoff, Stage::EtaCutoff}},
    {ChainOrder::LlamaCpp, {Stage::LogitBias, Stage::MinNewTokens, Stage::Repetition, Stage::PresenceFrequency,
                            Stage::NoRepeatNgram, Stage::Dry, Stage::TopNSigma, Stage::TopK, Stage::Typical, Stage::TopP,
                            Stage::MinP, Stage::Xtc, Stage::Temperature}},
    {ChainOrder::Vllm, {Stage::BadWords, Stage::MinNewTokens, Stage::LogitBias, Stage::Repetition,
                        Stage::PresenceFrequency, Stage::NoRepeatNgram, Stage::Temperature, Stage::MinP, Stage::TopK,
                        Stage::TopP}},
};
// With mirostat (llama.cpp only): common_sampler_init's mirostat chain is logit_bias, temp, mirostat;
// mirostat itself is the chain's end (LogitsChain::mirostat), not a stage.
const std::vector<Stage> kMirostatStages = {Stage::LogitBias, Stage::MinNewTokens, Stage::Temperature};

bool sampling_only(Stage s) { return s >= Stage::Temperature; }

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

// Every token the model has seen: the prompt, then the output.
std::vector<int> all_tokens(const DecodeContext& c) {
    std::vector<int> all(c.prompt.begin(), c.prompt.end());
    all.insert(all.end(), c.generated.begin(), c.generated.end());
    return all;
}

// vLLM's bad words, as _apply_bad_words_single_batch (vllm/v1/sample/ops/bad_words.py, commit
// 17daac612991), called with the output's ids: a word of n tokens bans its last one when the
// output's last n - 1 tokens are its first n - 1 (a word needs n - 1 tokens of output, where HF's
// needs n of prompt and output); no EOS is spared. The ids are in the vocabulary (check_request).
void apply_bad_words_vllm(xt::xtensor<float, 1>& z, std::span<const int> output, const std::vector<std::vector<int>>& words) {
    for (const std::vector<int>& w : words) {
        if (w.empty() || w.size() > output.size() + 1) continue;
        const size_t n = w.size() - 1;
        if (std::equal(w.begin(), w.end() - 1, output.end() - static_cast<std::ptrdiff_t>(n)) &&
            static_cast<size_t>(w.back()) < z.size())
            z(static_cast<size_t>(w.back())) = -INFINITY;
    }
}

// Chapter 10's stages (sampling/other_samplers.hpp has each rule and the engine code it follows).
std::optional<Processor> make_chapter10_stage(Stage stage, const GenerationConfig& p) {
    using Z = xt::xtensor<float, 1>;
    const int keep = p.min_tokens_to_keep;
    switch (stage) {
        case Stage::LogitBias: {  // llama.cpp and vLLM: token id -> bias
            if (p.logit_bias.empty()) return std::nullopt;
            std::string name;
            for (const auto& [id, bias] : p.logit_bias) name += (name.empty() ? "" : ", ") + std::to_string(id) + ":" + bias_text(bias);
            return Processor{"logit_bias(" + name + ")",
                             [b = p.logit_bias](Z& z, const DecodeContext&) { apply_logit_bias(z, b); }};
        }
        case Stage::SequenceBias: {  // HF: a logit_bias entry is a sequence of one token
            std::vector<std::pair<std::vector<int>, float>> bias;
            for (const auto& [id, b] : p.logit_bias) bias.push_back({{id}, b});
            bias.insert(bias.end(), p.sequence_bias.begin(), p.sequence_bias.end());
            if (bias.empty()) return std::nullopt;
            std::string name;
            for (const auto& [ids, b] : bias) name += (name.empty() ? "" : ", ") + ids_text(ids) + ":" + bias_text(b);
            return Processor{"sequence_bias(" + name + ")", [bias](Z& z, const DecodeContext& c) {
                                 apply_sequence_bias(z, all_tokens(c), bias);
                             }};
        }
        case Stage::BadWords: {
            if (p.bad_words_ids.empty()) return std::nullopt;
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
        case Stage::Dry: {
            if (p.dry_multiplier == 0.0f || p.dry_base < 1.0f || p.dry_penalty_last_n == 0) return std::nullopt;
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
        case Stage::SuppressTokens:
            if (p.suppress_tokens.empty()) return std::nullopt;
            return Processor{"suppress_tokens(" + ids_text(p.suppress_tokens) + ")",
                             [ids = p.suppress_tokens](Z& z, const DecodeContext&) { apply_suppress_tokens(z, ids); }};
        case Stage::BeginSuppressTokens:  // HF's begin_index is the prompt's length: the first new token
            if (p.begin_suppress_tokens.empty()) return std::nullopt;
            return Processor{"begin_suppress_tokens(" + ids_text(p.begin_suppress_tokens) + ")",
                             [ids = p.begin_suppress_tokens](Z& z, const DecodeContext& c) {
                                 if (c.step == 0) apply_suppress_tokens(z, ids);
                             }};
        case Stage::Typical: {
            if (p.typical_p >= 1.0f) return std::nullopt;
            const TypicalRule rule = p.order == ChainOrder::LlamaCpp ? TypicalRule::LlamaCpp : TypicalRule::HuggingFace;
            return Processor{"typical_p(" + knob_number(p.typical_p) + ")", [v = p.typical_p, keep, rule](Z& z, const DecodeContext&) {
                                 apply_typical_p(z, v, keep, rule);
                             }};
        }
        case Stage::EpsilonCutoff:
            if (p.epsilon_cutoff <= 0.0f) return std::nullopt;
            return Processor{"epsilon_cutoff(" + knob_number(p.epsilon_cutoff) + ")",
                             [v = p.epsilon_cutoff, keep](Z& z, const DecodeContext&) { apply_epsilon_cutoff(z, v, keep); }};
        case Stage::EtaCutoff:
            if (p.eta_cutoff <= 0.0f) return std::nullopt;
            return Processor{"eta_cutoff(" + knob_number(p.eta_cutoff) + ")",
                             [v = p.eta_cutoff, keep](Z& z, const DecodeContext&) { apply_eta_cutoff(z, v, keep); }};
        case Stage::TopNSigma:
            if (p.top_n_sigma <= 0.0f) return std::nullopt;
            return Processor{"top_n_sigma(" + knob_number(p.top_n_sigma) + ")",
                             [n = p.top_n_sigma](Z& z, const DecodeContext&) { apply_top_n_sigma(z, n); }};
        case Stage::Xtc:  // the coin is a pure function of the seed and the step (xtc_coin)
            if (p.xtc_probability <= 0.0f || p.xtc_threshold > 0.5f) return std::nullopt;
            return Processor{"xtc(" + knob_number(p.xtc_probability) + ", " + knob_number(p.xtc_threshold) + ")",
                             [p, keep](Z& z, const DecodeContext& c) {
                                 apply_xtc(z, p.xtc_probability, p.xtc_threshold, keep, xtc_coin(p.seed, c.step));
                             }};
        default:
            return std::nullopt;
    }
}

// HF's MinNewTokensLengthLogitsProcessor: while fewer than `min_new_tokens` tokens are generated,
// every EOS id is -inf (exercise 06.2's twin, which a stub cannot call: it lives in this file only).
void apply_min_new_tokens(xt::xtensor<float, 1>& z, std::span<const int> eos_ids, size_t generated_count,
                          int min_new_tokens) {
    if (static_cast<int>(generated_count) >= min_new_tokens) return;
    for (int id : eos_ids)
        if (static_cast<size_t>(id) < z.size()) z(static_cast<size_t>(id)) = -INFINITY;
}

// The processor a stage makes from the config, or nothing when the config switches it off.
std::optional<Processor> make_stage(Stage stage, const GenerationConfig& p) {
    const int keep = p.min_tokens_to_keep;
    switch (stage) {
        case Stage::MinNewTokens:  // HF's processor: no EOS before the minimum length
            if (p.min_new_tokens <= 0) return std::nullopt;
            return Processor{"min_new_tokens(" + std::to_string(p.min_new_tokens) + ")",
                             [n = p.min_new_tokens](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                 apply_min_new_tokens(z, c.eos_ids, c.generated.size(), n);
                             }};
        case Stage::Repetition: {
            if (p.repetition_penalty == 1.0f) return std::nullopt;
            const std::string scope = p.penalty_scope == PenaltyScope::PromptAndOutput ? ""
                                      : p.penalty_scope == PenaltyScope::LastN
                                          ? ", last_n=" + std::to_string(p.penalty_last_n)
                                          : ", " + to_string(p.penalty_scope);
            return Processor{"repetition_penalty(" + knob_number(p.repetition_penalty) + scope + ")",
                             [p](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                 apply_repetition_penalty(z, penalty_window(p, c), p.repetition_penalty);
                             }};
        }
        case Stage::PresenceFrequency:
            if (p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return std::nullopt;
            return Processor{"presence_frequency(" + knob_number(p.presence_penalty) + ", " + knob_number(p.frequency_penalty) + ")",
                             [p](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                 const std::vector<int> output(c.generated.begin(), c.generated.end());
                                 apply_presence_frequency(z, output, p.presence_penalty, p.frequency_penalty);
                             }};
        case Stage::NoRepeatNgram:
            if (p.no_repeat_ngram_size <= 0) return std::nullopt;
            return Processor{"no_repeat_ngram(" + std::to_string(p.no_repeat_ngram_size) + ")",
                             [n = p.no_repeat_ngram_size](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                 std::vector<int> all(c.prompt.begin(), c.prompt.end());
                                 all.insert(all.end(), c.generated.begin(), c.generated.end());
                                 apply_no_repeat_ngram(z, all, n);
                             }};
        case Stage::Temperature:
            if (p.dynatemp_range > 0 && p.mirostat == 0) {  // llama.cpp's temp_ext (only its row: validate)
                return Processor{"dynatemp(" + knob_number(p.temperature) + ", " + knob_number(p.dynatemp_range) + ", " +
                                     knob_number(p.dynatemp_exponent) + ")",
                                 [t = p.temperature, r = p.dynatemp_range, e = p.dynatemp_exponent](
                                     xt::xtensor<float, 1>& z, const DecodeContext&) { apply_dynamic_temperature(z, t, r, e); }};
            }
            if (p.temperature == 1.0f) return std::nullopt;
            return Processor{"temperature(" + knob_number(p.temperature) + ")",
                             [t = p.temperature](xt::xtensor<float, 1>& z, const DecodeContext&) { divide_by_temperature(z, t); }};
        case Stage::TopK:
            if (p.top_k <= 0) return std::nullopt;
            return Processor{"top_k(" + std::to_string(p.top_k) + ")",
                             [k = p.top_k, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_top_k(z, k, keep); }};
        case Stage::TopP: {
            if (p.top_p >= 1.0f) return std::nullopt;
            // each engine's own top-p arithmetic (they differ by one token where the mass lands on p)
            const TopPRule rule = p.order == ChainOrder::LlamaCpp ? TopPRule::LlamaCpp
                                  : p.order == ChainOrder::Vllm   ? TopPRule::Vllm
                                                                  : TopPRule::HuggingFace;
            return Processor{"top_p(" + knob_number(p.top_p) + ")", [v = p.top_p, keep, rule](xt::xtensor<float, 1>& z, const DecodeContext&) {
                                 apply_top_p(z, v, keep, rule);
                             }};
        }
        case Stage::MinP:
            if (p.min_p <= 0.0f) return std::nullopt;
            return Processor{"min_p(" + knob_number(p.min_p) + ")",
                             [v = p.min_p, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_min_p(z, v, keep); }};
        default:
            return make_chapter10_stage(stage, p);
    }
    return std::nullopt;
}

}  // namespace

LogitsChain::LogitsChain(const GenerationConfig& p, std::vector<Processor> first)
    : processors_(std::move(first)), first_(processors_.size()) {
    validate(p);
    if (p.constraint) {  // chapter 09: the constraint's mask heads the chain, before the caller's own
        processors_.insert(processors_.begin(), constraint_mask(p.constraint));
        ++first_;
    }
    if (p.dry_multiplier > 0 && p.dry_penalty_last_n != 0 && !p.dry_sequence_breakers.empty() && !p.dry_breaker_ids) {
        // chapter 10: breakers are text; never run DRY without them (as a constraint never built)
        throw Error("DRY is on with dry_sequence_breakers " + find_knob("dry_sequence_breakers").get(p) + " that were not bound to a tokenizer",
                    "call bind_to_tokenizer(config, tokenizer, eos_ids) (decoding/bind.hpp) before decoding, or "
                    "set config.dry_breaker_ids");
    }
    greedy_ = !p.do_sample || p.temperature == 0.0f;
    std::vector<Stage> stages;
    if (p.mirostat != 0) {  // chapter 10: llama.cpp's mirostat chain, which mirostat itself ends
        stages = kMirostatStages;
        greedy_ = false;  // validate refuses mirostat with do_sample false or temperature 0
        mirostat_ = p.mirostat;
        mirostat_name_ = "mirostat" + std::string(p.mirostat == 2 ? "_v2" : "") + "(tau=" + knob_number(p.mirostat_tau) +
                         ", eta=" + knob_number(p.mirostat_eta) + ")";
    } else {
        for (const EngineOrder& engine : kOrders)
            if (engine.order == p.order) stages = engine.stages;
    }
    for (const Stage stage : stages) {
        if (greedy_ && sampling_only(stage)) continue;  // argmax after the penalties: the warpers would not change it
        if (std::optional<Processor> proc = make_stage(stage, p)) processors_.push_back(std::move(*proc));
    }
}
// [/ch02:chain]

xt::xtensor<float, 1> LogitsChain::apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const {
    xt::xtensor<float, 1> z = logits;
    if (nothing_left(z)) {
        throw Error("the model's logits are all -inf at step " + std::to_string(context.step),
                    "check the model's weights (a NaN or -inf in them spreads to every logit)");
    }
    for (size_t i = 0; i < processors_.size(); ++i) {
        processors_[i].apply(z, context);
        if (!nothing_left(z)) continue;
        // A dead end, caught before a later processor fails on it: name the processor that removed
        // the last tokens, with the fix that fits it (never "loosen top-p" for a constraint).
        const std::string& name = processors_[i].name;
        const std::string problem = "no token is left after " + name + " at step " + std::to_string(context.step);
        if (i < first_) {
            throw Error(problem, "the constraint '" + name + "' allows no token here: it must allow at least one "
                                 "token (EOS where the text may end) in every state it can reach");
        }
        std::string before;
        for (size_t j = 0; j < i; ++j) before += (before.empty() ? "" : ", ") + processors_[j].name;
        throw Error(problem + (before.empty() ? "" : " (after " + before + ")"),
                    "'" + name + "' removed the last tokens" + (before.empty() ? "" : " the processors before it left") +
                        ": loosen it" + (before.empty() ? "" : " or what runs before it"));
    }
    return z;
}

namespace {
// The distribution of processed logits z: their softmax, or when greedy all the mass on the argmax.
xt::xtensor<float, 1> distribution_of(const xt::xtensor<float, 1>& z, bool greedy) {
    if (!greedy) return softmax(z);
    xt::xtensor<float, 1> one_hot = xt::zeros<float>(z.shape());
    one_hot(static_cast<size_t>(argmax(z))) = 1.0f;
    return one_hot;
}
}  // namespace

namespace {
// Mirostat draws from a distribution its mu decides, and mu moves with every token it draws: a chain
// without that state cannot say what it would draw from.
Error mirostat_has_state(const std::string& what, const std::string& name) {
    return Error(what + " is not defined for a chain that ends in " + name +
                     ": mirostat truncates by its mu, which each drawn token moves",
                 "decode with make_sampler (it keeps mu), or drop --mirostat");
}
}  // namespace

xt::xtensor<float, 1> LogitsChain::distribution(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const {
    if (mirostat_) throw mirostat_has_state("the distribution of the next token", mirostat_name_);
    return distribution_of(apply(logits, context), greedy_);
}

int LogitsChain::mirostat_step(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double tau, double eta,
                               double& mu, double coin) const {
    if (!mirostat_) throw Error("mirostat_step on a chain without mirostat", "set config.mirostat to 1 or 2");
    const xt::xtensor<float, 1> z = apply(logits, context);
    // llama.cpp's llama_sampler_init_mirostat(n_vocab, seed, tau, eta, m = 100) in common_sampler_init
    if (mirostat_ == 1) return mirostat_v1_step(z, tau, eta, 100, mu, coin);
    return mirostat_v2_step(z, tau, eta, mu, coin);
}

int LogitsChain::choose(const xt::xtensor<float, 1>& distribution, double coin) const {
    if (mirostat_) throw mirostat_has_state("choosing from a distribution", mirostat_name_);
    if (greedy_) return argmax(distribution);
    return sample_inverse_cdf(distribution, coin);
}

int LogitsChain::pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
    return choose(distribution(logits, context), coin);
}

namespace {
Error no_steps_with_mirostat(const std::string& name) {
    return Error("LogitsChain::draw cannot say where the coin fell in a chain that ends in " + name +
                     ": mirostat draws from a truncation its mu decides, and the chain does not hold mu",
                 "record the steps with make_watched_sampler (it keeps mu), or drop --mirostat");
}

// One mirostat step, recorded (--show-steps). Mirostat draws by inverse CDF from a truncation its mu
// decides, and the step is a pure function of the logits, mu and the coin: so the drawn token's
// slice [from, to) of that CDF is the set of coins that draw it with the same mu, found by bisecting
// on the coin, and its width is the token's probability in the truncation (`processed`). Then the
// real step moves mu. z: the chain's processed logits (V); raw: the model's (V).
Draw mirostat_draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, int version, double tau, double eta,
                   double& mu, double coin) {
    const auto token_at = [&](double c) {
        double m = mu;  // a probe: mu stays as it is
        return version == 1 ? mirostat_v1_step(z, tau, eta, 100, m, c) : mirostat_v2_step(z, tau, eta, m, c);
    };
    const int token = token_at(coin);
    double lo = 0, hi = coin;  // the first coin that draws `token` is in (lo, hi]
    if (token_at(0) == token) hi = 0;
    for (int i = 0; i < 52 && hi > 0; ++i) {
        const double mid = (lo + hi) / 2;
        (token_at(mid) == token ? hi : lo) = mid;
    }
    const double from = hi;
    lo = coin;
    hi = 1;  // the first coin past `token`'s slice is in (lo, hi]
    for (int i = 0; i < 52; ++i) {
        const double mid = (lo + hi) / 2;
        (token_at(mid) == token ? lo : hi) = mid;
    }
    const double to = hi;
    const int drawn = version == 1 ? mirostat_v1_step(z, tau, eta, 100, mu, coin) : mirostat_v2_step(z, tau, eta, mu, coin);
    return Draw{coin, drawn, static_cast<float>(to - from), softmax(raw)(static_cast<size_t>(drawn)), from, to, false};
}
}  // namespace

Draw LogitsChain::draw(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
    if (mirostat_) throw no_steps_with_mirostat(mirostat_name_);
    const xt::xtensor<float, 1> z = apply(logits, context);  // the chain runs once
    const int token = choose(distribution_of(z, greedy_), coin);
    const xt::xtensor<float, 1> processed = softmax(z);
    const size_t t = static_cast<size_t>(token);
    Draw d{coin, token, processed(t), softmax(logits)(t), 0, 0, greedy_};
    double total = 0, before = 0;
    const std::vector<int> order = candidate_order(processed);
    for (int id : order) total += processed(static_cast<size_t>(id));
    for (int id : order) {
        if (id == token) break;
        before += processed(static_cast<size_t>(id));
    }
    d.from = before / total;
    d.to = (before + processed(t)) / total;
    return d;
}

std::string LogitsChain::describe() const {
    std::string s;
    for (const Processor& p : processors_) s += p.name + " -> ";
    if (mirostat_) return s + mirostat_name_;
    return s + (greedy_ ? "argmax" : "sample");
}

int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext&) { return argmax(logits); }

// [ch02:make-sampler]
Sampler make_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>* seen,
                     std::vector<Processor> first) {
    auto chain = std::make_shared<const LogitsChain>(config, std::move(first));
    auto rng = std::make_shared<Rng>(seed);
    if (config.mirostat != 0) {  // chapter 10: mu is state, kept beside the coin stream
        auto mu = std::make_shared<double>(2.0 * config.mirostat_tau);  // llama.cpp's mu starts at 2 tau
        return [chain, rng, mu, seen, tau = double(config.mirostat_tau), eta = double(config.mirostat_eta)](
                   const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
            const double coin = rng->coin();  // one coin per step, as always
            if (!seen) return chain->mirostat_step(logits, context, tau, eta, *mu, coin);
            seen->push_back(mirostat_draw(chain->apply(logits, context), logits, chain->mirostat(), tau, eta, *mu, coin));
            return seen->back().token;
        };
    }
    return [chain, rng, seen](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
        const double coin = rng->coin();  // one coin per step, used or not: coin i decides token i
        if (!seen) return chain->pick(logits, context, coin);
        seen->push_back(chain->draw(logits, context, coin));  // --show-steps: where the coin fell
        return seen->back().token;
    };
}
// [/ch02:make-sampler]

Sampler make_watched_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>& seen) {
    return make_sampler(config, seed, &seen);
}

}  // namespace decodebook
