// Chapter 10: binding a config to the tokenizer in use (the constraint, DRY's breakers, the ids).
#include "decodebook/decoding/bind.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/constraint.hpp"

namespace decodebook {

// llama.cpp's get_overlapping_token_sequences (ggml-org/llama.cpp src/llama-sampler.cpp, commit
// 00efb3e18426) with its caps from llama_sampler_init_dry: MAX_CHAR_LEN 40 bytes per breaker,
// MAX_SEQ_LEN 20 tokens per tail. A token's text is its bytes (a special token's is its name, as
// llama.cpp's detokenize with special = true).
std::vector<std::vector<int>> dry_breaker_sequences(const Tokenizer& tokenizer, const std::vector<std::string>& breakers) {
    constexpr size_t kMaxBreakerBytes = 40;
    constexpr size_t kMaxTailTokens = 20;
    std::vector<std::vector<int>> sequences;  // in the order found, each once
    std::set<std::vector<int>> seen;          // logarithmic: a breaker such as ":" is in many tokens
    const auto add = [&](std::vector<int> seq) {
        if (seen.insert(seq).second) sequences.push_back(std::move(seq));
    };
    for (std::string breaker : breakers) {
        if (breaker.empty()) continue;
        if (breaker.size() > kMaxBreakerBytes) breaker.resize(kMaxBreakerBytes);
        for (int id = 0; id < tokenizer.vocab_size(); ++id) {
            const std::string& word = tokenizer.token_bytes(id);
            if (word.find(breaker) != std::string::npos) {  // the whole breaker inside one token
                add({id});
                continue;
            }
            // every place the word's end starts the breaker: the word ends with breaker[0, n)
            for (size_t pos = word.find(breaker[0]); pos != std::string::npos; pos = word.find(breaker[0], pos + 1)) {
                const size_t n = word.size() - pos;  // < breaker.size(), or find would have matched
                if (word.compare(pos, n, breaker, 0, n) != 0) continue;
                std::vector<int> seq{id};
                std::vector<int> tail = tokenizer.encode(breaker.substr(n));
                if (tail.size() > kMaxTailTokens) tail.resize(kMaxTailTokens);
                seq.insert(seq.end(), tail.begin(), tail.end());
                add(std::move(seq));
            }
        }
    }
    return sequences;
}

namespace {

// The knobs that ban a token outright at the first step (suppress_tokens, begin_suppress_tokens, a
// -inf logit bias or bias of a one-token sequence) must leave one token: else every run would stop
// at its first step, after the prompt was printed.
void check_not_all_banned(const GenerationConfig& config, int vocab_size) {
    std::unordered_set<int> banned;
    std::set<std::string> knobs;
    const auto ban = [&](const std::string& knob, int id) {
        if (banned.insert(id).second) knobs.insert(knob);
    };
    for (int id : config.suppress_tokens) ban("suppress_tokens", id);
    for (int id : config.begin_suppress_tokens) ban("begin_suppress_tokens", id);
    for (const auto& [id, bias] : config.logit_bias)
        if (bias == -INFINITY) ban("logit_bias", id);
    for (const auto& [ids, bias] : config.sequence_bias)
        if (ids.size() == 1 && bias == -INFINITY) ban("sequence_bias", ids[0]);
    if (static_cast<int>(banned.size()) < vocab_size) return;
    std::string names;
    for (const std::string& k : knobs) names += (names.empty() ? "" : " and ") + k;
    throw Error(names + " ban all " + std::to_string(vocab_size) + " tokens of the vocabulary at the first step",
                "leave at least one token unbanned (the first step has no other token to choose)");
}

}  // namespace

void check_knob_ids(const GenerationConfig& config, int vocab_size) {
    const auto check = [vocab_size](const std::string& knob, int id) {
        if (id >= 0 && id < vocab_size) return;
        throw Error(knob + " names token " + std::to_string(id) + ", outside the vocabulary of " +
                        std::to_string(vocab_size) + " tokens (ids 0.." + std::to_string(vocab_size - 1) + ")",
                    "pass --" + find_knob(knob).flag + " with ids below " + std::to_string(vocab_size));
    };
    for (const auto& [id, bias] : config.logit_bias) check("logit_bias", id);
    for (const auto& [ids, bias] : config.sequence_bias)
        for (int id : ids) check("sequence_bias", id);
    for (const std::vector<int>& word : config.bad_words_ids)
        for (int id : word) check("bad_words_ids", id);
    for (int id : config.suppress_tokens) check("suppress_tokens", id);
    for (int id : config.begin_suppress_tokens) check("begin_suppress_tokens", id);
    check_not_all_banned(config, vocab_size);
}

void bind_to_tokenizer(GenerationConfig& config, const Tokenizer& tokenizer, const std::vector<int>& eos_ids) {
    validate(config);  // one constraint at most, before building it (chapter 09)
    check_knob_ids(config, tokenizer.vocab_size());
    config.constraint = make_constraint(config, tokenizer.vocabulary(), eos_ids);
    config.dry_breaker_ids.reset();
    if (config.dry_multiplier > 0 && config.dry_penalty_last_n != 0)
        config.dry_breaker_ids = std::make_shared<const std::vector<std::vector<int>>>(
            dry_breaker_sequences(tokenizer, config.dry_sequence_breakers));
}

}  // namespace decodebook
