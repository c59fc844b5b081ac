// Chapter 07: the loops on the KV cache. The general loop of chapter 02 gets a cached seam;
// batches of prompts and beam search get their own loops, one decode call per step for all rows.
#include "decodebook/decoding/cached_loops.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "generate_checked.hpp"

namespace decodebook {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Row b of the last decode call's logits, copied into `out` (V) (no allocation once sized).
void copy_logits(const KvCache& cache, size_t b, xt::xtensor<float, 1>& out) {
    const size_t V = cache.logits().shape(1);
    if (out.size() != V) out = xt::xtensor<float, 1>::from_shape({V});
    std::copy_n(cache.logits().data() + b * V, V, out.data());
}

size_t capacity_for(const ModelConfig& mc, size_t longest_prompt, int max_new_tokens) {
    return std::min(static_cast<size_t>(mc.n_positions), longest_prompt + static_cast<size_t>(std::max(max_new_tokens, 1)));
}

}  // namespace

// [ch07:cached-logits]
NextLogits cached_logits(const Gpt2& model, KvCache& cache, size_t row) {
    auto cached = std::make_shared<CachedSequence>(model, cache, row);  // what the cache row holds
    return [cached](const std::vector<int>& sequence) -> xt::xtensor<float, 1> {
        if (cached->length() == 0) return cached->prefill(sequence);  // the first call: the prompt in one pass
        const std::vector<int>& held = cached->tokens();
        if (sequence.size() != held.size() + 1 || !std::equal(held.begin(), held.end(), sequence.begin())) {
            throw Error("cached_logits was given a sequence that is not the previous one plus one token",
                        "make a new cached_logits (or KvCache) for a new sequence");
        }
        return xt::view(cached->append({&sequence.back(), 1}), 0);  // only the new position is computed
    };
}
// [/ch07:cached-logits]

LogitAgreement compare_greedy_logits(const Gpt2& a, const Gpt2& b, const std::vector<int>& prompt, int steps) {
    if (steps < 1) throw Error("compare_greedy_logits needs at least one step", "pass steps >= 1");
    if (a.config().vocab_size != b.config().vocab_size)
        throw Error("the two models score " + std::to_string(a.config().vocab_size) + " and " +
                        std::to_string(b.config().vocab_size) + " tokens",
                    "compare models of one vocabulary");
    const size_t capacity = prompt.size() + static_cast<size_t>(steps) - 1;
    KvCache ca(a.config(), 1, capacity), cb(b.config(), 1, capacity);
    xt::xtensor<float, 1> la = a.prefill(prompt, ca, 0), lb = b.prefill(prompt, cb, 0);
    LogitAgreement g;
    for (;;) {
        for (size_t v = 0; v < la.size(); ++v) g.max_diff = std::max(g.max_diff, static_cast<double>(std::abs(la(v) - lb(v))));
        const int pick = argmax(la);  // the first model's greedy choice feeds both
        g.differ += pick != argmax(lb);
        if (++g.steps == steps) return g;
        a.decode({pick}, {0}, ca);
        b.decode({pick}, {0}, cb);
        la = xt::view(ca.logits(), 0, xt::all());
        lb = xt::view(cb.logits(), 0, xt::all());
    }
}

Generation generate_cached(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                           const GenerationConfig& config, const Sampler& sample, const StepObserver& on_step) {
    const std::vector<int> eos_ids = check_request(model.config(), prompt, config);  // before the cache is sized from it
    KvCache cache(model.config(), 1, capacity_for(model.config(), prompt.size(), config.max_new_tokens));
    return detail::generate_checked(cached_logits(model, cache), model.config(), tokenizer, prompt, config, eos_ids,
                                    sample, on_step);
}

// [ch07:generate-batch]
std::vector<Generation> generate_batch(const Gpt2& model, const Tokenizer* tokenizer,
                                       const std::vector<std::vector<int>>& prompts, const GenerationConfig& config,
                                       const std::vector<Sampler>& samplers, BatchKernels kernels, BatchStats* stats) {
    const ModelConfig& mc = model.config();
    if (prompts.empty()) throw Error("generate_batch got no prompts", "pass at least one prompt");
    if (samplers.size() != prompts.size()) {
        throw Error("generate_batch got " + std::to_string(samplers.size()) + " samplers for " +
                        std::to_string(prompts.size()) + " prompts",
                    "pass one sampler per prompt");
    }
    std::vector<int> eos_ids;
    size_t longest = 0;
    for (const auto& p : prompts) {
        eos_ids = check_request(mc, p, config);
        longest = std::max(longest, p.size());
    }
    const size_t n = prompts.size();
    KvCache cache(mc, n, capacity_for(mc, longest, config.max_new_tokens));
    std::vector<GenerationState> states;  // one per row
    states.reserve(n);
    for (size_t i = 0; i < n; ++i) states.emplace_back(mc, tokenizer, prompts[i], config, eos_ids);
    BatchStats local;
    BatchStats& st = stats ? *stats : local;
    st = BatchStats{};

    // Row i chooses and appends its token; returns true when row i is done (its criteria fired).
    xt::xtensor<float, 1> logits;
    const auto take = [&](size_t i, double ms) {
        const int token = samplers[i](logits, states[i].context());
        return append_token(states[i], token, logits, ms).has_value();
    };

    // prefill: each prompt into its own row, and its first token
    std::vector<size_t> rows;  // the rows still generating
    std::vector<int> tokens;   // their last tokens
    auto start = Clock::now();
    for (size_t i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        logits = model.prefill(prompts[i], cache, i);
        if (!take(i, ms_since(t0))) {
            rows.push_back(i);
            tokens.push_back(states[i].out.ids.back());
        }
    }
    st.prefill_ms = ms_since(start);
    // decode: one call per step for every row still going; a finished row leaves the batch
    while (!rows.empty()) {
        const auto t0 = Clock::now();
        model.decode(tokens, rows, cache, kernels);
        const double ms = ms_since(t0);
        st.decode_ms += ms;
        st.decode_steps += 1;
        st.decoded_tokens += static_cast<long>(rows.size());
        st.active_per_step.push_back(static_cast<int>(rows.size()));
        std::vector<size_t> next_rows;
        std::vector<int> next_tokens;
        for (size_t b = 0; b < rows.size(); ++b) {
            copy_logits(cache, b, logits);
            if (!take(rows[b], ms)) {
                next_rows.push_back(rows[b]);
                next_tokens.push_back(states[rows[b]].out.ids.back());
            }
        }
        rows.swap(next_rows);
        tokens.swap(next_tokens);
    }
    std::vector<Generation> out;
    for (GenerationState& s : states) out.push_back(std::move(s.out));
    return out;
}
// [/ch07:generate-batch]

// [ch07:cached-log-probs]
NextLogProbs cached_log_probs(const Gpt2& model, const std::vector<int>& prompt, const GenerationConfig& config,
                              const std::vector<int>& eos_ids, KvCache& cache, std::vector<Processor> first) {
    // with do_sample false: the caller's processors, then penalties and min_new_tokens
    auto chain = std::make_shared<const LogitsChain>(config, std::move(first));
    auto held = std::make_shared<std::vector<std::vector<int>>>();  // the new ids each row holds
    return [&model, &cache, prompt, eos_ids, chain, held](const std::vector<Beam>& beams, int step) {
        if (beams.size() > cache.rows())
            throw Error("beam search has " + std::to_string(beams.size()) + " beams for a cache of " +
                            std::to_string(cache.rows()) + " rows",
                        "make the KvCache with num_beams rows");
        std::vector<xt::xtensor<float, 1>> rows;
        xt::xtensor<float, 1> logits;
        if (held->empty()) {  // the first step: every beam is the prompt, prefilled once
            cache.clear(0);
            logits = model.prefill(prompt, cache, 0);
            cache.reorder(std::vector<int>(cache.rows(), 0));
            held->assign(cache.rows(), {});
            for (const Beam& beam : beams) {
                // log_softmax first, then the processors on log-probabilities (HF's beam search)
                rows.push_back(chain->apply(log_softmax(logits), DecodeContext{prompt, beam.ids, step, eos_ids}));
            }
            return rows;
        }
        // each beam continues its parent's cache row: find it, copy it into place
        std::vector<int> source(cache.rows());
        for (size_t r = 0; r < source.size(); ++r) source[r] = static_cast<int>(r);
        std::vector<int> tokens;
        std::vector<size_t> batch;
        for (size_t b = 0; b < beams.size(); ++b) {
            const std::vector<int>& ids = beams[b].ids;
            const auto parent = std::find_if(held->begin(), held->end(), [&](const std::vector<int>& h) {
                return h.size() + 1 == ids.size() && std::equal(h.begin(), h.end(), ids.begin());
            });
            if (ids.empty() || parent == held->end())
                throw Error("a beam's parent is not in the cache", "call cached_log_probs with the beams of consecutive steps");
            source[b] = static_cast<int>(parent - held->begin());
            tokens.push_back(ids.back());
            batch.push_back(b);
        }
        cache.reorder(source);
        for (size_t b = 0; b < beams.size(); ++b) (*held)[b] = beams[b].ids;
        model.decode(tokens, batch, cache);  // all beams' new positions as one batch
        for (size_t b = 0; b < beams.size(); ++b) {
            copy_logits(cache, b, logits);
            rows.push_back(chain->apply(log_softmax(logits), DecodeContext{prompt, beams[b].ids, step, eos_ids}));
        }
        return rows;
    };
}
// [/ch07:cached-log-probs]

std::vector<Hypothesis> beam_search_cached(const Gpt2& model, const Tokenizer& tokenizer,
                                           const std::vector<int>& prompt, const GenerationConfig& config,
                                           BeamTrace* trace) {
    const ModelConfig& mc = model.config();
    const std::vector<int> eos_ids = check_request(mc, prompt, config);
    KvCache cache(mc, static_cast<size_t>(config.num_beams), capacity_for(mc, prompt.size(), config.max_new_tokens));
    std::vector<Hypothesis> out = beam_search(cached_log_probs(model, prompt, config, eos_ids, cache), eos_ids,
                                              static_cast<int>(prompt.size()), config, trace);
    fill_texts(out, tokenizer, config.skip_special_tokens);
    return out;
}

}  // namespace decodebook
