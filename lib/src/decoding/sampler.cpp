// Chapters 02-06: the processor chain, and the samplers built on it.
#include "decodebook/decoding/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <memory>
#include <optional>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/naive_loop.hpp"
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

// Every stage a config can switch on. The penalties (and min_new_tokens) edit the logits in both
// modes; the warpers from Temperature on only shape the distribution a sample is drawn from.
enum class Stage { MinNewTokens, Repetition, PresenceFrequency, NoRepeatNgram, Temperature, TopK, TopP, MinP };

// Each engine's order, as data: a new processor is one entry in each row. Every engine runs
// min_new_tokens and the penalties first; they differ in where temperature and min-p sit.
struct EngineOrder {
    ChainOrder order;
    std::vector<Stage> stages;
};
const EngineOrder kOrders[] = {
    {ChainOrder::HuggingFace, {Stage::MinNewTokens, Stage::Repetition, Stage::PresenceFrequency, Stage::NoRepeatNgram,
                               Stage::Temperature, Stage::TopK, Stage::TopP, Stage::MinP}},
    {ChainOrder::LlamaCpp, {Stage::MinNewTokens, Stage::Repetition, Stage::PresenceFrequency, Stage::NoRepeatNgram,
                            Stage::TopK, Stage::TopP, Stage::MinP, Stage::Temperature}},
    {ChainOrder::Vllm, {Stage::MinNewTokens, Stage::Repetition, Stage::PresenceFrequency, Stage::NoRepeatNgram,
                        Stage::Temperature, Stage::MinP, Stage::TopK, Stage::TopP}},
};

bool sampling_only(Stage s) { return s >= Stage::Temperature; }

// The processor a stage makes from the config, or nothing when the config switches it off.
std::optional<Processor> make_stage(Stage stage, const GenerationConfig& p) {
    const int keep = p.min_tokens_to_keep;
    switch (stage) {
        case Stage::MinNewTokens:  // HF's processor: no EOS before the minimum length
            if (p.min_new_tokens <= 0) return std::nullopt;
            return Processor{"min_new_tokens(" + std::to_string(p.min_new_tokens) + ")",
                             [n = p.min_new_tokens](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                 if (static_cast<int>(c.generated.size()) >= n) return;
                                 for (int id : c.eos_ids)
                                     if (static_cast<size_t>(id) < z.size()) z(static_cast<size_t>(id)) = -INFINITY;
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
    greedy_ = !p.do_sample || p.temperature == 0.0f;
    for (const EngineOrder& engine : kOrders) {
        if (engine.order != p.order) continue;
        for (const Stage stage : engine.stages) {
            if (greedy_ && sampling_only(stage)) continue;  // argmax after the penalties: the warpers would not change it
            if (std::optional<Processor> proc = make_stage(stage, p)) processors_.push_back(std::move(*proc));
        }
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

xt::xtensor<float, 1> LogitsChain::distribution(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const {
    return distribution_of(apply(logits, context), greedy_);
}

int LogitsChain::choose(const xt::xtensor<float, 1>& distribution, double coin) const {
    if (greedy_) return argmax(distribution);
    return sample_inverse_cdf(distribution, coin);
}

int LogitsChain::pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
    return choose(distribution(logits, context), coin);
}

Draw LogitsChain::draw(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
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
    return s + (greedy_ ? "argmax" : "sample");
}

int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext&) { return argmax(logits); }

// [ch02:make-sampler]
Sampler make_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>* seen,
                     std::vector<Processor> first) {
    auto chain = std::make_shared<const LogitsChain>(config, std::move(first));
    auto rng = std::make_shared<Rng>(seed);
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
