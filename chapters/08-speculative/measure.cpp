// Chapter 08: the measurements its parts share: the cost of a step and of a verification call, the
// acceptance a run should see, and timed plain and speculative runs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "chapter08.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/model/cached_sequence.hpp"
#include "decodebook/model/kv_cache.hpp"

using namespace decodebook;

namespace chapter08 {
namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

// One cached step of `model` on `prompt`: a one-token decode call and the chain's distribution,
// as plain decoding (or the draft) does per token. Median milliseconds over `steps` steps.
double step_ms(const Gpt2& model, const std::vector<int>& prompt, const GenerationConfig& config, int steps) {
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(steps) + 1, 1);
    CachedSequence seq(model, cache);
    const LogitsChain chain(config);
    seq.prefill(prompt);
    std::vector<int> generated;
    std::vector<double> ms;
    int token = prompt.back();
    for (int i = 0; i < steps; ++i) {
        const auto t0 = Clock::now();
        const xt::xtensor<float, 2> rows = seq.append(std::span<const int>(&token, 1));
        const DecodeContext ctx{prompt, generated, static_cast<int>(generated.size()), {}};
        const xt::xtensor<float, 1> p = chain.distribution(xt::view(rows, 0), ctx);
        token = chain.choose(p, 0.5);
        ms.push_back(ms_between(t0, Clock::now()));
        generated.push_back(token);
    }
    return median(ms);
}

// One verification call against one step, at the end of `prompt`, interleaved so both meet the
// same machine: k + 1 tokens in one decode call with k + 1 distributions and one draw, and 1 token
// with its distribution and draw (the cache is cut back after each). The ratio of the medians over
// `reps` pairs.
double verify_ratio(const Gpt2& model, const std::vector<int>& prompt, const GenerationConfig& config, int k, int reps) {
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(k) + 1, static_cast<size_t>(k) + 1);
    CachedSequence seq(model, cache);
    const LogitsChain chain(config);
    seq.prefill(prompt);
    std::vector<int> batch(static_cast<size_t>(k) + 1);
    for (size_t i = 0; i < batch.size(); ++i) batch[i] = prompt[i % prompt.size()];
    const auto call = [&](std::span<const int> tokens) {
        const auto t0 = Clock::now();
        const xt::xtensor<float, 2> rows = seq.append(tokens);
        xt::xtensor<float, 1> p;
        for (size_t i = 0; i < rows.shape(0); ++i) {
            const DecodeContext ctx{prompt, {}, 0, {}};
            p = chain.distribution(xt::view(rows, i), ctx);
        }
        chain.choose(p, 0.5);  // the round's one draw (the residual or the bonus token)
        const double ms = ms_between(t0, Clock::now());
        seq.truncate(prompt.size());
        return ms;
    };
    std::vector<double> one, many;
    for (int r = 0; r < reps; ++r) {
        one.push_back(call(std::span<const int>(batch).first(1)));
        many.push_back(call(batch));
    }
    return median(many) / median(one);
}

// Leviathan's beta at every position of a run the target wrote: sum min(p, q) (what his rule keeps)
// and sum p q (what sample-and-compare keeps), p and q the processed distributions of the same
// context. Averaged, they are the acceptance rates the two rules expect.
Acceptance expected_acceptance(const Speculation& s, const GenerationConfig& config, const std::vector<int>& generated) {
    std::vector<int> ids = s.prompt;
    ids.insert(ids.end(), generated.begin(), generated.end());
    const xt::xtensor<float, 2> zp = s.model.forward(ids), zq = s.draft.forward(ids);
    const LogitsChain chain(config);
    const std::vector<int> eos = resolve_eos_ids(config, s.model.config().eos_token_id);
    Acceptance a;
    for (size_t i = 0; i < generated.size(); ++i) {
        const std::span<const int> seen = std::span<const int>(generated).first(i);
        const DecodeContext ctx{s.prompt, seen, static_cast<int>(i), eos};
        const size_t row = s.prompt.size() + i - 1;
        const xt::xtensor<float, 1> p = chain.distribution(xt::view(zp, row), ctx);
        const xt::xtensor<float, 1> q = chain.distribution(xt::view(zq, row), ctx);
        double overlap = 0, product = 0;
        for (size_t x = 0; x < p.size(); ++x) {
            overlap += std::min(p(x), q(x));
            product += static_cast<double>(p(x)) * q(x);
        }
        a.leviathan += overlap;
        a.sample_and_compare += product;
    }
    a.leviathan /= static_cast<double>(generated.size());
    a.sample_and_compare /= static_cast<double>(generated.size());
    return a;
}

Timed plain_run(const Speculation& s, const std::vector<int>& prompt, const GenerationConfig& config, int reps) {
    Timed best;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        Generation g = generate_cached(s.model, s.tokenizer, prompt, config, make_sampler(config, config.seed));
        const double ms = ms_between(t0, Clock::now());
        if (r == 0 || ms < best.ms) best = Timed{std::move(g), {}, ms};
    }
    return best;
}

Timed speculative_run(const Speculation& s, const std::vector<int>& prompt, const GenerationConfig& config, int reps) {
    Timed best;
    const std::vector<int> eos = resolve_eos_ids(config, s.model.config().eos_token_id);
    for (int r = 0; r < reps; ++r) {
        const Drafter drafter = make_drafter(config, &s.draft, eos,
                                             prompt.size() + static_cast<size_t>(config.max_new_tokens));
        SpeculativeStats st;
        const auto t0 = Clock::now();
        Generation g = generate_speculative(s.model, s.tokenizer, prompt, config, drafter, &st);
        const double ms = ms_between(t0, Clock::now());
        if (r == 0 || ms < best.ms) best = Timed{std::move(g), st, ms};
    }
    return best;
}

}  // namespace chapter08
