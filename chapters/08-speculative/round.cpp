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

}  // namespace

void one_round_at_a_time(const Speculation& session, int k, int rounds) {
    const Gpt2& target = session.model;
    const Tokenizer& tok = session.tokenizer;
    GenerationConfig config = session.config;
    config.do_sample = false;
    config.num_assistant_tokens = k;
    const std::vector<int> eos = resolve_eos_ids(config, target.config().eos_token_id);
    const LogitsChain chain(config);
    // the rounds shown run past the prompt by at most rounds * (k + 1) tokens, whatever -n is (the
    // program's lookahead makes room for them); the whole run after them by max_new_tokens
    const size_t capacity = session.prompt.size() +
                            std::max(static_cast<size_t>(config.max_new_tokens), static_cast<size_t>(rounds * (k + 1)));
    const Drafter drafter = model_drafter(session.draft, config, capacity, k, draft_seed(config.seed));
    KvCache cache(target.config(), 1, capacity, static_cast<size_t>(k) + 1);
    CachedSequence seq(target, cache);

    std::vector<int> out;  // the kept tokens
    std::vector<xt::xtensor<float, 1>> logits{seq.prefill(session.prompt)};
    std::printf("The prompt (%zu tokens) is prefilled: the cache holds %zu positions.\n", session.prompt.size(), seq.length());
    int last = -1;  // the last kept token, not yet in the cache
    for (int r = 1; r <= rounds; ++r) {
        const DecodeContext ctx{session.prompt, out, static_cast<int>(out.size()), eos};
        const Draft d = drafter(ctx, k);
        std::vector<int> batch;
        if (last >= 0) batch.push_back(last);
        batch.insert(batch.end(), d.ids.begin(), d.ids.end());
        const xt::xtensor<float, 2> rows = seq.append(batch);
        if (last >= 0) logits.clear();
        for (size_t i = 0; i < rows.shape(0); ++i) logits.push_back(xt::view(rows, i));
        std::printf("\nRound %d: the draft proposes %zu tokens; the target runs %zu token%s in ONE decode call "
                    "(cache: %zu positions)\n",
                    r, d.ids.size(), batch.size(), batch.size() == 1 ? "" : "s", seq.length());
        if (last >= 0) std::printf("  (the first is %s, kept last round and not yet in the cache)\n", quoted(tok, last).c_str());
        std::printf("  %-4s %-14s %-16s %s\n", "pos", "draft", "target's argmax", "verdict");
        int kept = 0;
        int next = -1;
        for (size_t i = 0; i <= d.ids.size(); ++i) {
            std::vector<int> seen = out;
            seen.insert(seen.end(), d.ids.begin(), d.ids.begin() + static_cast<long>(i));
            const DecodeContext at{session.prompt, seen, static_cast<int>(seen.size()), eos};
            const int best = chain.choose(chain.distribution(logits[i], at), 0.0);
            const size_t pos = session.prompt.size() + out.size() + i;
            if (i == d.ids.size()) {
                std::printf("  %-4zu %-14s %-16s bonus: every draft was kept, the target's token comes free\n", pos, "",
                            quoted(tok, best).c_str());
                next = best;
                break;
            }
            if (d.ids[i] == best) {
                std::printf("  %-4zu %-14s %-16s kept\n", pos, quoted(tok, d.ids[i]).c_str(), quoted(tok, best).c_str());
                ++kept;
                continue;
            }
            std::printf("  %-4zu %-14s %-16s rejected: the target's own token is kept instead\n", pos,
                        quoted(tok, d.ids[i]).c_str(), quoted(tok, best).c_str());
            for (size_t j = i + 1; j < d.ids.size(); ++j)
                std::printf("  %-4zu %-14s %-16s not looked at (it followed a rejected token)\n",
                            session.prompt.size() + out.size() + j, quoted(tok, d.ids[j]).c_str(), "");
            next = best;
            break;
        }
        out.insert(out.end(), d.ids.begin(), d.ids.begin() + kept);
        out.push_back(next);
        const size_t before = seq.length();
        seq.truncate(session.prompt.size() + out.size() - 1);
        last = next;
        if (before == seq.length())
            std::printf("  -> %d + 1 tokens from one target call; the cache keeps all %zu positions (the bonus token "
                        "goes in next round)\n",
                        kept, before);
        else
            std::printf("  -> %d + 1 tokens from one target call; the cache is cut back from %zu to %zu positions (the "
                        "keys and values of the rejected draft and after it are dropped)\n",
                        kept, before, seq.length());
    }

    // the whole run, against plain greedy on the same cache code
    const Generation plain = generate_cached(target, tok, session.prompt, config, make_sampler(config, config.seed));
    SpeculativeStats st;
    const Generation spec = generate_speculative(target, tok, session.prompt, config,
                                                 make_drafter(config, &session.draft, eos, capacity), &st);
    std::printf("\nThe whole run (%d new tokens at most, k = %d):\n%s%s\n", config.max_new_tokens, k,
                one_line(tok.decode(session.prompt)).c_str(), one_line(spec.text).c_str());
    std::printf("speculative: %zu tokens from %d target calls (%d of %d drafts kept); plain greedy: %zu tokens from "
                "%zu calls. Same ids as plain greedy: %s\n",
                spec.ids.size(), st.rounds, st.accepted, st.drafted, plain.ids.size(), plain.ids.size(),
                spec.ids == plain.ids ? "yes" : "NO");
}

}  // namespace chapter08
