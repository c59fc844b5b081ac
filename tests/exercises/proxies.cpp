// The graded tests' your_NAME functions: each is a proxy that runs the student's function of the
// same name in a sandboxed child (sandbox.hpp) and returns what it returned, with what it changed
// in its in-out arguments. The test programs link these, never the student's code.
#include <string>
#include <tuple>
#include <vector>

#include "decodebook/exercises.hpp"
#include "sandbox.hpp"

// The student's function `name` in the module, with the proxy's type (only inside a child).
#define REAL(name) sandbox::fn(&name, #name)

namespace decodebook {

using Vec = xt::xtensor<float, 1>;

Vec your_last_position_logits(const xt::xtensor<float, 2>& logits) {
    return sandbox::run<Vec>("your_last_position_logits", [&] { return REAL(your_last_position_logits)(logits); });
}

// The student's loop runs in the child, the test's picker with it; the on_step records it made
// are replayed to the test's callback in the parent, in order.
std::vector<int> your_generate_naive(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop,
                                     const Picker& pick, const StepCallback& on_step) {
    if (sandbox::in_child()) return REAL(your_generate_naive)(model, prompt, stop, pick, on_step);
    using Result = std::tuple<std::vector<int>, std::vector<StepRecord>>;
    auto [ids, steps] = sandbox::run<Result>("your_generate_naive", [&] {
        std::vector<StepRecord> seen;
        const StepCallback record = [&](const StepRecord& s) { seen.push_back(s); };
        std::vector<int> out = REAL(your_generate_naive)(model, prompt, stop, pick, on_step ? record : StepCallback{});
        return Result{std::move(out), std::move(seen)};
    });
    if (on_step)
        for (const StepRecord& s : steps) on_step(s);
    return ids;
}

int your_argmax(const Vec& logits) {
    return sandbox::run<int>("your_argmax", [&] { return REAL(your_argmax)(logits); });
}

std::vector<int> your_greedy_generate(const Gpt2& model, const std::vector<int>& prompt, const StopRule& stop) {
    return sandbox::run<std::vector<int>>("your_greedy_generate",
                                          [&] { return REAL(your_greedy_generate)(model, prompt, stop); });
}

Vec your_softmax(const Vec& logits) {
    return sandbox::run<Vec>("your_softmax", [&] { return REAL(your_softmax)(logits); });
}

void your_apply_temperature(Vec& logits, float temperature) {
    logits = sandbox::run<Vec>("your_apply_temperature", [&] {
        REAL(your_apply_temperature)(logits, temperature);
        return logits;
    });
}

int your_sample_inverse_cdf(const Vec& probs, double coin) {
    return sandbox::run<int>("your_sample_inverse_cdf", [&] { return REAL(your_sample_inverse_cdf)(probs, coin); });
}

void your_apply_top_k(Vec& logits, int k, int min_keep) {
    logits = sandbox::run<Vec>("your_apply_top_k", [&] {
        REAL(your_apply_top_k)(logits, k, min_keep);
        return logits;
    });
}

std::vector<bool> your_top_p_keep(const Vec& probs, double p, int min_keep) {
    return sandbox::run<std::vector<bool>>("your_top_p_keep", [&] { return REAL(your_top_p_keep)(probs, p, min_keep); });
}

std::vector<bool> your_min_p_keep(const Vec& probs, double min_p, int min_keep) {
    return sandbox::run<std::vector<bool>>("your_min_p_keep",
                                           [&] { return REAL(your_min_p_keep)(probs, min_p, min_keep); });
}

void your_apply_repetition_penalty(Vec& logits, const std::vector<int>& seen, float theta) {
    logits = sandbox::run<Vec>("your_apply_repetition_penalty", [&] {
        REAL(your_apply_repetition_penalty)(logits, seen, theta);
        return logits;
    });
}

void your_apply_presence_frequency(Vec& logits, const std::vector<int>& output, float presence, float frequency) {
    logits = sandbox::run<Vec>("your_apply_presence_frequency", [&] {
        REAL(your_apply_presence_frequency)(logits, output, presence, frequency);
        return logits;
    });
}

void your_apply_no_repeat_ngram(Vec& logits, const std::vector<int>& sequence, int n) {
    logits = sandbox::run<Vec>("your_apply_no_repeat_ngram", [&] {
        REAL(your_apply_no_repeat_ngram)(logits, sequence, n);
        return logits;
    });
}

BeamStep your_beam_step(const std::vector<Beam>& beams, const std::vector<Vec>& logprobs,
                        const std::vector<int>& eos_ids, int num_beams, bool last_step) {
    return sandbox::run<BeamStep>("your_beam_step", [&] {
        return REAL(your_beam_step)(beams, logprobs, eos_ids, num_beams, last_step);
    });
}

double your_beam_score(double sum_logprobs, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                       BeamScoring scoring) {
    return sandbox::run<double>("your_beam_score", [&] {
        return REAL(your_beam_score)(sum_logprobs, generated_len, ends_with_eos, prompt_len, length_penalty, scoring);
    });
}

bool your_beam_search_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                           int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping) {
    return sandbox::run<bool>("your_beam_search_done", [&] {
        return REAL(your_beam_search_done)(num_beams, finished_count, worst_finished_score, best_running_sum,
                                           generated_len, max_new_tokens, length_penalty, early_stopping);
    });
}

StopScan your_scan_stops(std::string_view pending, const std::vector<std::string>& stops) {
    return sandbox::run<StopScan>("your_scan_stops", [&] { return REAL(your_scan_stops)(pending, stops); });
}

void your_apply_min_new_tokens(Vec& logits, const std::vector<int>& eos_ids, int generated_count, int min_new_tokens) {
    logits = sandbox::run<Vec>("your_apply_min_new_tokens", [&] {
        REAL(your_apply_min_new_tokens)(logits, eos_ids, generated_count, min_new_tokens);
        return logits;
    });
}

Vec your_cached_attention_step(xt::xtensor<float, 2>& keys, xt::xtensor<float, 2>& values, size_t position,
                               const Vec& qkv, int n_head) {
    using Result = std::tuple<Vec, xt::xtensor<float, 2>, xt::xtensor<float, 2>>;
    Result r = sandbox::run<Result>("your_cached_attention_step", [&] {
        Vec out = REAL(your_cached_attention_step)(keys, values, position, qkv, n_head);
        return Result{std::move(out), keys, values};
    });
    keys = std::move(std::get<1>(r));
    values = std::move(std::get<2>(r));
    return std::move(std::get<0>(r));
}

uint64_t your_kv_cache_bytes(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value, int64_t rows) {
    return sandbox::run<uint64_t>("your_kv_cache_bytes", [&] {
        return REAL(your_kv_cache_bytes)(n_layer, positions, width, bytes_per_value, rows);
    });
}

double your_decode_roofline_ms(const ModelConfig& config, int bytes_per_weight, double bytes_per_second) {
    return sandbox::run<double>("your_decode_roofline_ms", [&] {
        return REAL(your_decode_roofline_ms)(config, bytes_per_weight, bytes_per_second);
    });
}

void your_reorder_rows(xt::xtensor<float, 3>& rows, const std::vector<int>& source) {
    rows = sandbox::run<xt::xtensor<float, 3>>("your_reorder_rows", [&] {
        REAL(your_reorder_rows)(rows, source);
        return rows;
    });
}

int your_verify_position(const Vec& p, const Vec* q, int x, double accept_coin, double residual_coin) {
    return sandbox::run<int>("your_verify_position", [&] {
        return REAL(your_verify_position)(p, q, x, accept_coin, residual_coin);
    });
}

std::vector<int> your_prompt_lookup(std::span<const int> sequence, int max_ngram, int num_tokens,
                                    std::span<const int> eos_ids) {
    return sandbox::run<std::vector<int>>("your_prompt_lookup", [&] {
        return REAL(your_prompt_lookup)(sequence, max_ngram, num_tokens, eos_ids);
    });
}

int32_t your_walk_token(const Dfa& dfa, int32_t state, std::string_view token) {
    return sandbox::run<int32_t>("your_walk_token", [&] { return REAL(your_walk_token)(dfa, state, token); });
}

std::vector<int> your_allowed_tokens(const Dfa& dfa, int32_t state, const Vocabulary& vocabulary,
                                     std::span<const int> eos_ids) {
    return sandbox::run<std::vector<int>>("your_allowed_tokens", [&] {
        return REAL(your_allowed_tokens)(dfa, state, vocabulary, eos_ids);
    });
}

std::vector<bool> your_typical_keep(const Vec& probs, double mass, int min_keep) {
    return sandbox::run<std::vector<bool>>("your_typical_keep",
                                           [&] { return REAL(your_typical_keep)(probs, mass, min_keep); });
}

float your_dry_penalty(const std::vector<int>& context, int candidate, const std::vector<int>& breakers,
                       float multiplier, float base, int allowed_length) {
    return sandbox::run<float>("your_dry_penalty", [&] {
        return REAL(your_dry_penalty)(context, candidate, breakers, multiplier, base, allowed_length);
    });
}

// mu is in-out: the child's value after the step comes back with the token.
int your_mirostat_v2_step(const Vec& logits, double tau, double eta, double& mu, double coin) {
    using Result = std::tuple<int, double>;
    const Result r = sandbox::run<Result>("your_mirostat_v2_step", [&] {
        const int token = REAL(your_mirostat_v2_step)(logits, tau, eta, mu, coin);
        return Result{token, mu};
    });
    mu = std::get<1>(r);
    return std::get<0>(r);
}

std::vector<LogprobEntry> your_top_logprobs(const Vec& values, int k, int sampled) {
    return sandbox::run<std::vector<LogprobEntry>>("your_top_logprobs",
                                                   [&] { return REAL(your_top_logprobs)(values, k, sampled); });
}

Perplexity your_sliding_window_perplexity(const Gpt2& model, const std::vector<int>& ids, int max_length, int stride) {
    return sandbox::run<Perplexity>("your_sliding_window_perplexity", [&] {
        return REAL(your_sliding_window_perplexity)(model, ids, max_length, stride);
    });
}

std::vector<BlockHash> your_hash_full_blocks(const std::vector<int>& tokens, int block_size) {
    return sandbox::run<std::vector<BlockHash>>("your_hash_full_blocks",
                                                [&] { return REAL(your_hash_full_blocks)(tokens, block_size); });
}

int your_prefix_hit_tokens(const std::vector<int>& prompt, const std::vector<std::vector<int>>& cached, int block_size) {
    return sandbox::run<int>("your_prefix_hit_tokens",
                             [&] { return REAL(your_prefix_hit_tokens)(prompt, cached, block_size); });
}

std::vector<int> your_free_queue_after(const std::vector<int>& queue, const std::vector<int>& table,
                                       const std::vector<int>& counts, const std::vector<bool>& cached, FreeOrder order) {
    return sandbox::run<std::vector<int>>("your_free_queue_after", [&] {
        return REAL(your_free_queue_after)(queue, table, counts, cached, order);
    });
}

}  // namespace decodebook
