#pragma once
/// @file model/cached_sequence.hpp
/// @brief One sequence on the KV cache as a value that knows what it holds (chapter 07): feed it
/// tokens, get their logits, cut it back. The general loop's cached seam runs on one; chapter
/// 08's target and draft models each own one.
#include <cstddef>
#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kv_cache.hpp"

namespace decodebook {

/// One row of a KvCache and the tokens it holds, so a caller speaks in new tokens ("append
/// these; give me their logits") instead of whole sequences. The model and the cache are the
/// caller's and must outlive it; two sequences may share a model (a target and a draft) or a cache
/// (two rows). Introduced in chapter 07.
class CachedSequence {
public:
    /// A view of cache row `row`, which it clears: the sequence starts empty, and tokens() is
    /// always what the row holds.
    /// @throws Error when the cache has no such row.
    /// @param model the model (it must outlive the view)
    /// @param cache the cache holding the row (it must outlive the view)
    /// @param row which of the cache's rows
    /// @param kernels how decode multiplies (Invariant by default: every append gives the bits
    ///        one token at a time would)
    CachedSequence(const Gpt2& model, KvCache& cache, size_t row = 0, BatchKernels kernels = BatchKernels::Invariant);

    /// Run `ids` after what the row holds in one pass (Gpt2::prefill: GEMM, the prompt's way).
    /// @return logits (V) of the last of them
    /// @throws Error as Gpt2::prefill.
    xt::xtensor<float, 1> prefill(const std::vector<int>& ids);

    /// Run `ids` after what the row holds in one decode call (Gpt2::decode with the row repeated:
    /// bit for bit what one call per token gives).
    /// @return logits (T, V): row t scores the token that follows ids[t]
    /// @throws Error as Gpt2::decode (an empty row: prefill first; more tokens than the cache's
    /// max_tokens_per_step; a full row).
    xt::xtensor<float, 2> append(std::span<const int> ids);

    /// Keep the first `length` positions (rollback).
    /// @throws Error when the sequence is shorter than `length`.
    void truncate(size_t length);
    /// Forget everything (the memory is kept).
    void clear() { truncate(0); }

    /// Positions the row holds.
    size_t length() const { return cache_->length(row_); }
    /// The tokens the row holds, oldest first (length() of them).
    const std::vector<int>& tokens() const { return tokens_; }

private:
    const Gpt2* model_;
    KvCache* cache_;
    size_t row_;
    BatchKernels kernels_;
    std::vector<int> tokens_;
};

}  // namespace decodebook
