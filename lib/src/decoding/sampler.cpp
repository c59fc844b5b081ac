// Chapters 02-06: the processor chain, and the samplers built on it.
#include "decodebook/decoding/sampler.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// The tokens the repetition penalty sees, by scope.
std::vector<int> penalty_window(const GenerationConfig& p, const DecodeContext& c) {
    if (p.penalty_scope == PenaltyScope::OutputOnly) return c.generated;
    std::vector<int> all = c.prompt;
    all.insert(all.end(), c.generated.begin(), c.generated.end());
    if (p.penalty_scope == PenaltyScope::LastN && all.size() > static_cast<size_t>(p.penalty_last_n)) {
        all.erase(all.begin(), all.end() - p.penalty_last_n);
    }
    return all;
}

}  // namespace

// [ch02:chain]
LogitsChain::LogitsChain(const GenerationConfig& p) {
    validate(p);
    greedy_ = !p.do_sample || p.temperature == 0.0f;
    const int keep = p.min_tokens_to_keep;
    // min_new_tokens first (HF's processor): no EOS before the minimum length
    if (p.min_new_tokens > 0) {
        processors_.push_back({"min_new_tokens(" + std::to_string(p.min_new_tokens) + ")",
                               [n = p.min_new_tokens](xt::xtensor<float, 1>& z, const DecodeContext& c) {
                                   if (static_cast<int>(c.generated.size()) >= n) return;
                                   for (int id : c.eos_ids)
                                       if (static_cast<size_t>(id) < z.size()) z(static_cast<size_t>(id)) = -INFINITY;
                               }});
    }
    // penalties, in every engine's order
    if (p.repetition_penalty != 1.0f) {
        const std::string scope = p.penalty_scope == PenaltyScope::PromptAndOutput ? ""
                                  : p.penalty_scope == PenaltyScope::LastN
                                      ? ", last_n=" + std::to_string(p.penalty_last_n)
                                      : ", " + to_string(p.penalty_scope);
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
    if (greedy_) return;  // argmax after the penalties; the warpers would not change it
    const Processor temperature{"temperature(" + number(p.temperature) + ")",
                                [t = p.temperature](xt::xtensor<float, 1>& z, const DecodeContext&) {
                                    apply_temperature(z, t);
                                }};
    const Processor top_k{"top_k(" + std::to_string(p.top_k) + ")",
                          [k = p.top_k, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_top_k(z, k, keep); }};
    // each engine's own top-p arithmetic (they differ by one token where the mass lands on p)
    const TopPRule rule = p.order == ChainOrder::LlamaCpp ? TopPRule::LlamaCpp
                          : p.order == ChainOrder::Vllm   ? TopPRule::Vllm
                                                          : TopPRule::HuggingFace;
    const Processor top_p{"top_p(" + number(p.top_p) + ")", [v = p.top_p, keep, rule](xt::xtensor<float, 1>& z, const DecodeContext&) {
                              apply_top_p(z, v, keep, rule);
                          }};
    const Processor min_p{"min_p(" + number(p.min_p) + ")",
                          [v = p.min_p, keep](xt::xtensor<float, 1>& z, const DecodeContext&) { apply_min_p(z, v, keep); }};
    const bool use_t = p.temperature != 1.0f, use_k = p.top_k > 0, use_p = p.top_p < 1.0f, use_min = p.min_p > 0.0f;
    const auto add = [&](bool on, const Processor& proc) {
        if (on) processors_.push_back(proc);
    };
    switch (p.order) {
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

int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext&) { return argmax(logits); }

// [ch02:make-sampler]
Sampler make_sampler(const GenerationConfig& config, uint64_t seed) {
    auto chain = std::make_shared<const LogitsChain>(config);
    auto rng = std::make_shared<Rng>(seed);
    return [chain, rng](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
        const double coin = rng->coin();  // one coin per step, used or not: coin i decides token i
        return chain->pick(logits, context, coin);
    };
}
// [/ch02:make-sampler]

}  // namespace decodebook
