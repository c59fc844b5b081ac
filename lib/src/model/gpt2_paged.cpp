// Chapter 12: GPT-2 on the paged cache. The bodies are chapter 07's (gpt2_cached.cpp), which read
// every cache through a block table; here the table is the caller's, over a pool of small blocks.
#include <algorithm>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/paged_kv_cache.hpp"

namespace decodebook {

xt::xtensor<float, 1> Gpt2::prefill(const std::vector<int>& ids, PagedKvCache& cache, std::span<const int> blocks,
                                    size_t cached, BatchKernels kernels) const {
    const size_t T = ids.size();
    if (T == 0) throw Error("prefill got no tokens", "give a non-empty prompt");
    check_token_ids(config_, ids);
    cache.check_table(blocks, cached + T);
    const Blocks pool{cache.keys_, cache.values_, cache.block_size()};
    if (kernels != BatchKernels::Invariant) return prefill_blocks(ids, cached, blocks.data(), pool);
    // decode's kernels, a step's worth of tokens at a time: each token's bits are those it gets
    // alone, so any split of the prompt (cache hit + rest, chunk + chunk) gives the same logits
    DecodeScratch& s = cache.scratch_;
    const size_t step = cache.max_tokens_per_step();
    for (size_t t0 = 0; t0 < T; t0 += step) {
        const size_t n = std::min(step, T - t0);
        for (size_t i = 0; i < n; ++i) {
            s.positions[i] = cached + t0 + i;
            s.tables[i] = blocks.data();
        }
        const bool last = t0 + n == T;  // only the prompt's last token needs its logits
        decode_blocks(ids.data() + t0, n, s.tables.data(), s.positions.data(), pool, s, BatchKernels::Invariant,
                      last ? n - 1 : n);
    }
    const size_t V = static_cast<size_t>(config_.vocab_size);
    xt::xtensor<float, 1> logits = xt::xtensor<float, 1>::from_shape({V});
    std::copy_n(s.logits.data(), V, logits.data());  // row 0: the last token's
    return logits;
}

// [ch12:paged-decode]
void Gpt2::decode(const std::vector<int>& tokens, const std::vector<PagedSlot>& slots, PagedKvCache& cache,
                  BatchKernels kernels, size_t logits_from) const {
    const size_t B = tokens.size();
    if (B == 0 || B != slots.size() || B > cache.max_tokens_per_step()) {
        throw Error("decode got " + std::to_string(B) + " tokens for " + std::to_string(slots.size()) +
                        " slots (the cache takes up to " + std::to_string(cache.max_tokens_per_step()) +
                        " tokens per call)",
                    "pass one slot per token, at most the cache's max_tokens_per_step tokens");
    }
    check_token_ids(config_, tokens);
    DecodeScratch& s = cache.scratch_;
    for (size_t i = 0; i < B; ++i) {
        cache.check_table(slots[i].blocks, slots[i].position + 1);
        s.positions[i] = slots[i].position;
        s.tables[i] = slots[i].blocks.data();
    }
    decode_blocks(tokens.data(), B, s.tables.data(), s.positions.data(),
                  {cache.keys_, cache.values_, cache.block_size()}, s, kernels, logits_from);
}
// [/ch12:paged-decode]

}  // namespace decodebook
