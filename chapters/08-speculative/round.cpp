// Chapter 08, part 1: one greedy round at a time, step by step. The draft proposes k tokens, the
// target scores [last kept token, drafts] in one decode call, a prefix is kept and the target's own
// token follows, then the cache is cut back to what was kept. Then the whole run against plain greedy.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "chapter08.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/model/cached_sequence.hpp"
#include "decodebook/model/kv_cache.hpp"

using namespace decodebook;

namespace chapter08 {
namespace {

std::string quoted(const Tokenizer& tok, int id) {
    std::string s(1, '\'');
    s += one_line(tok.decode({id}));
    s += '\'';
    return s;
}

GenerationConfig greedy_with_drafts(GenerationConfig config, int k) {
    config.do_sample = false;
    config.num_assistant_tokens = k;
    return config;
}

// the rounds shown run past the prompt by at most rounds * (k + 1) tokens, whatever -n is (the
// program's lookahead makes room for them); the whole run after them by max_new_tokens
size_t cache_capacity(const Speculation& session, const GenerationConfig& config, int k, int rounds) {
    return session.prompt.size() +
           std::max(static_cast<size_t>(config.max_new_tokens), static_cast<size_t>(rounds * (k + 1)));
}

// What the target made of one round's drafts: how many it kept, and its own token after them.
struct RoundVerdict {
    int kept = 0;
    int next = -1;
};

// Part 1's rounds, one at a time, on the target's own cache and the draft model's drafter; then the
// whole run with the same config.
class RoundByRound {
public:
    RoundByRound(const Speculation& session, int k, int rounds)
        : session_(session), tok_(session.tokenizer), k_(k), config_(greedy_with_drafts(session.config, k)),
          eos_(resolve_eos_ids(config_, session.model.config().eos_token_id)), chain_(config_),
          capacity_(cache_capacity(session, config_, k, rounds)),
          drafter_(model_drafter(session.draft, config_, capacity_, k, draft_seed(config_.seed))),
          cache_(session.model.config(), 1, capacity_, static_cast<size_t>(k) + 1), seq_(session.model, cache_) {}

    void prefill() {
        logits_.push_back(seq_.prefill(session_.prompt));
        std::printf("The prompt (%zu tokens) is prefilled: the cache holds %zu positions.\n", session_.prompt.size(),
                    seq_.length());
    }

    void round(int r) {
        const DecodeContext ctx{session_.prompt, out_, static_cast<int>(out_.size()), eos_};
        const Draft d = drafter_(ctx, k_);
        const size_t sent = send_to_target(d);
        std::printf("\nRound %d: the draft proposes %zu tokens; the target runs %zu token%s in ONE decode call "
                    "(cache: %zu positions)\n",
                    r, d.ids.size(), sent, sent == 1 ? "" : "s", seq_.length());
        if (last_ >= 0)
            std::printf("  (the first is %s, kept last round and not yet in the cache)\n", quoted(tok_, last_).c_str());
        std::printf("  %-4s %-14s %-16s %s\n", "pos", "draft", "target's argmax", "verdict");
        keep(d, verify(d));
    }

    // the whole run, against plain greedy on the same cache code
    void whole_run() const {
        const Gpt2& target = session_.model;
        const Generation plain =
            generate_cached(target, tok_, session_.prompt, config_, make_sampler(config_, config_.seed));
        SpeculativeStats st;
        const Generation spec = generate_speculative(target, tok_, session_.prompt, config_,
                                                     make_drafter(config_, &session_.draft, eos_, capacity_), &st);
        std::printf("\nThe whole run (%d new tokens at most, k = %d):\n%s%s\n", config_.max_new_tokens, k_,
                    one_line(tok_.decode(session_.prompt)).c_str(), one_line(spec.text).c_str());
        std::printf("speculative: %zu tokens from %d target calls (%d of %d drafts kept); plain greedy: %zu tokens from "
                    "%zu calls. Same ids as plain greedy: %s\n",
                    spec.ids.size(), st.rounds, st.accepted, st.drafted, plain.ids.size(), plain.ids.size(),
                    spec.ids == plain.ids ? "yes" : "NO");
        // acceptance is alpha everywhere in this chapter: kept over looked at, never kept over drafted
        std::printf("Acceptance alpha = %.2f: %d kept of the %d drafts the target looked at (a round stops looking at "
                    "its first rejection). Kept over drafted, %d of %d = %.2f, is the rate vLLM reports; "
                    "decodebook-generate prints both.\n",
                    st.alpha(), st.accepted, st.accepted + st.rejected, st.accepted, st.drafted, st.acceptance());
    }

private:
    const Speculation& session_;
    const Tokenizer& tok_;
    int k_;
    GenerationConfig config_;
    std::vector<int> eos_;
    LogitsChain chain_;
    size_t capacity_;
    Drafter drafter_;
    KvCache cache_;
    CachedSequence seq_;
    std::vector<int> out_;                      // the kept tokens
    std::vector<xt::xtensor<float, 1>> logits_;  // the target's rows for this round's positions
    int last_ = -1;                              // the last kept token, not yet in the cache

    // The last kept token (if any) and the drafts in one decode call; their rows replace the last
    // round's. Returns how many tokens the call ran.
    size_t send_to_target(const Draft& d) {
        std::vector<int> batch;
        if (last_ >= 0) batch.push_back(last_);
        batch.insert(batch.end(), d.ids.begin(), d.ids.end());
        const xt::xtensor<float, 2> rows = seq_.append(batch);
        if (last_ >= 0) logits_.clear();
        for (size_t i = 0; i < rows.shape(0); ++i) logits_.push_back(xt::view(rows, i));
        return batch.size();
    }

    // The target's greedy choice at draft position i: its row there, after the kept tokens and the
    // drafts before i.
    int target_argmax(const Draft& d, size_t i) const {
        std::vector<int> seen = out_;
        seen.insert(seen.end(), d.ids.begin(), d.ids.begin() + static_cast<long>(i));
        const DecodeContext at{session_.prompt, seen, static_cast<int>(seen.size()), eos_};
        return chain_.choose(chain_.distribution(logits_[i], at), 0.0);
    }

    // Each draft against the target's argmax, one table row each: kept while they agree; the first
    // that differs is replaced by the target's token; all kept, the target's next token is a bonus.
    RoundVerdict verify(const Draft& d) const {
        RoundVerdict v;
        for (size_t i = 0; i <= d.ids.size(); ++i) {
            const int best = target_argmax(d, i);
            const size_t pos = session_.prompt.size() + out_.size() + i;
            if (i == d.ids.size()) {
                std::printf("  %-4zu %-14s %-16s bonus: every draft was kept, the target's token comes free\n", pos, "",
                            quoted(tok_, best).c_str());
                v.next = best;
                break;
            }
            if (d.ids[i] == best) {
                std::printf("  %-4zu %-14s %-16s kept\n", pos, quoted(tok_, d.ids[i]).c_str(),
                            quoted(tok_, best).c_str());
                ++v.kept;
                continue;
            }
            std::printf("  %-4zu %-14s %-16s rejected: the target's own token is kept instead\n", pos,
                        quoted(tok_, d.ids[i]).c_str(), quoted(tok_, best).c_str());
            print_not_looked_at(d, i + 1);
            v.next = best;
            break;
        }
        return v;
    }

    void print_not_looked_at(const Draft& d, size_t from) const {
        for (size_t j = from; j < d.ids.size(); ++j)
            std::printf("  %-4zu %-14s %-16s not looked at (it followed a rejected token)\n",
                        session_.prompt.size() + out_.size() + j, quoted(tok_, d.ids[j]).c_str(), "");
    }

    // Keep the kept drafts and the target's token, and cut the cache back to the kept tokens but the
    // last (it goes in next round).
    void keep(const Draft& d, RoundVerdict v) {
        out_.insert(out_.end(), d.ids.begin(), d.ids.begin() + v.kept);
        out_.push_back(v.next);
        const size_t before = seq_.length();
        seq_.truncate(session_.prompt.size() + out_.size() - 1);
        last_ = v.next;
        if (before == seq_.length())
            std::printf("  -> %d + 1 tokens from one target call; the cache keeps all %zu positions (the bonus token "
                        "goes in next round)\n",
                        v.kept, before);
        else
            std::printf("  -> %d + 1 tokens from one target call; the cache is cut back from %zu to %zu positions (the "
                        "keys and values of the rejected draft and after it are dropped)\n",
                        v.kept, before, seq_.length());
    }
};

}  // namespace

void one_round_at_a_time(const Speculation& session, int k, int rounds) {
    RoundByRound shown(session, k, rounds);
    shown.prefill();
    for (int r = 1; r <= rounds; ++r) shown.round(r);
    shown.whole_run();
}

}  // namespace chapter08
