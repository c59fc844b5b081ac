// Chapters 02-04: the processor chain and sampled generation.
#include "decodebook/chain.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

#include "decodebook/error.hpp"
#include "decodebook/rng.hpp"
#include "decodebook/sampling.hpp"

namespace decodebook {
namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

void require(bool ok, const std::string& name, double value, const std::string& rule) {
    if (!ok) {
        std::string flag = name;  // the command-line spelling: top_k -> --top-k
        for (char& ch : flag) ch = ch == '_' ? '-' : ch;
        throw Error(name + " = " + number(value) + " is invalid: it must be " + rule,
                    "pass --" + flag + " with a value " + rule);
    }
}

// The tokens the repetition penalty sees, by scope.
std::vector<int> penalty_window(const SamplingParams& p, const DecodeContext& c) {
    if (p.penalty_scope == PenaltyScope::OutputOnly) return c.generated;
    std::vector<int> all = c.prompt;
    all.insert(all.end(), c.generated.begin(), c.generated.end());
    if (p.penalty_scope == PenaltyScope::LastN && all.size() > static_cast<size_t>(p.penalty_last_n)) {
        all.erase(all.begin(), all.end() - p.penalty_last_n);
    }
    return all;
}

}  // namespace

void validate(const SamplingParams& p) {
    require(std::isfinite(p.temperature) && p.temperature >= 0, "temperature", p.temperature, ">= 0 (0 = greedy)");
    require(p.top_k >= 0, "top_k", p.top_k, ">= 0 (0 = off)");
    require(p.top_p >= 0 && p.top_p <= 1, "top_p", p.top_p, "in [0, 1] (1 = off)");
    require(p.min_p >= 0 && p.min_p <= 1, "min_p", p.min_p, "in [0, 1] (0 = off)");
    require(p.min_tokens_to_keep >= 1, "min_tokens_to_keep", p.min_tokens_to_keep, ">= 1");
    require(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0, "repetition_penalty",
            p.repetition_penalty, "> 0 (1 = off)");
    require(p.penalty_last_n >= 1, "penalty_last_n", p.penalty_last_n, ">= 1");
    require(p.presence_penalty >= -2 && p.presence_penalty <= 2, "presence_penalty", p.presence_penalty,
            "in [-2, 2] (0 = off)");
    require(p.frequency_penalty >= -2 && p.frequency_penalty <= 2, "frequency_penalty", p.frequency_penalty,
            "in [-2, 2] (0 = off)");
    require(p.no_repeat_ngram_size >= 0, "no_repeat_ngram_size", p.no_repeat_ngram_size, ">= 0 (0 = off)");
}

ChainOrder parse_chain_order(const std::string& name) {
    if (name == "hf" || name == "huggingface") return ChainOrder::HuggingFace;
    if (name == "llama.cpp" || name == "llamacpp") return ChainOrder::LlamaCpp;
    if (name == "vllm") return ChainOrder::Vllm;
    throw Error("unknown chain order '" + name + "'", "use one of: hf, llama.cpp, vllm");
}

// [ch02:chain]
LogitsChain::LogitsChain(const SamplingParams& p, ChainOrder order) {
    validate(p);
    greedy_ = p.temperature == 0.0f;
    const int keep = p.min_tokens_to_keep;
    // penalties first, in every engine's order
    if (p.repetition_penalty != 1.0f) {
        const std::string scope = p.penalty_scope == PenaltyScope::OutputOnly ? ", output_only"
                                  : p.penalty_scope == PenaltyScope::LastN
                                      ? ", last_n=" + std::to_string(p.penalty_last_n)
                                      : "";
        processors_.push_back({"repetition_penalty(" + number(p.repetition_penalty) + scope + ")",
                               [p](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                   apply_repetition_penalty(z, penalty_window(p, c), p.repetition_penalty);
                               }});
    }
    if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
        processors_.push_back({"presence_frequency(" + number(p.presence_penalty) + ", " + number(p.frequency_penalty) + ")",
                               [p](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                   apply_presence_frequency(z, c.generated, p.presence_penalty, p.frequency_penalty);
                               }});
    }
    if (p.no_repeat_ngram_size > 0) {
        processors_.push_back({"no_repeat_ngram(" + std::to_string(p.no_repeat_ngram_size) + ")",
                               [n = p.no_repeat_ngram_size](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                   std::vector<int> all = c.prompt;
                                   all.insert(all.end(), c.generated.begin(), c.generated.end());
                                   apply_no_repeat_ngram(z, all, n);
                               }});
    }
    if (greedy_) return;  // T = 0: argmax after the penalties; the warpers would not change it
    const Processor temperature{"temperature(" + number(p.temperature) + ")",
                                [t = p.temperature](xt::xtensor<float, 1>& z, const DecodeContext&) {
                                    apply_temperature(z, t);
                                }};
    const Processor top_k{"top_k(" + std::to_string(p.top_k) + ")",
                          [k = p.top_k, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_top_k(z, k, keep); }};
    const Processor top_p{"top_p(" + number(p.top_p) + ")",
                          [v = p.top_p, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_top_p(z, v, keep); }};
    const Processor min_p{"min_p(" + number(p.min_p) + ")",
                          [v = p.min_p, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_min_p(z, v, keep); }};
    const bool use_t = p.temperature != 1.0f, use_k = p.top_k > 0, use_p = p.top_p < 1.0f, use_min = p.min_p > 0.0f;
    const auto add = [&](bool on, const Processor& proc) {
        if (on) processors_.push_back(proc);
    };
    switch (order) {
        case ChainOrder::HuggingFace:
            add(use_t, temperature), add(use_k, top_k), add(use_p, top_p), add(use_min, min_p);
            break;
        case ChainOrder::LlamaCpp:
            add(use_k, top_k), add(use_p, top_p), add(use_min, min_p), add(use_t, temperature);
            break;
        case ChainOrder::Vllm:
            add(use_t, temperature), add(use_min, min_p), add(use_k, top_k), add(use_p, top_p);
            break;
    }
}
// [/ch02:chain]

xt::xtensor<float, 1> LogitsChain::apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const {
    xt::xtensor<float, 1> z = logits;
    for (const Processor& p : processors_) p.apply(z, context);
    return z;
}

int LogitsChain::pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
    const xt::xtensor<float, 1> z = apply(logits, context);
    if (greedy_) return argmax(z);
    return sample_inverse_cdf(softmax(z), coin);
}

std::string LogitsChain::describe() const {
    std::string s;
    for (const Processor& p : processors_) s += p.name + " -> ";
    return s + (greedy_ ? "argmax" : "sample");
}

std::vector<int> generate_sampled(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                  const LogitsChain& chain, uint64_t seed, const StepCallback& on_step) {
    auto rng = std::make_shared<Rng>(seed);
    auto generated = std::make_shared<std::vector<int>>();
    const Picker pick = [&chain, &prompt, rng, generated](const xt::xtensor<float, 1>& logits) {
        const double coin = rng->coin();  // one coin per step, used or not
        const int token = chain.pick(logits, DecodeContext{prompt, *generated}, coin);
        generated->push_back(token);
        return token;
    };
    return generate_naive(model, prompt, stop, pick, on_step);
}

}  // namespace decodebook
