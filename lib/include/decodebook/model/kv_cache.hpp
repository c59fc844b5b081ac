#pragma once
/// @file model/kv_cache.hpp
/// @brief The KV cache: every layer's keys and values, kept so a step computes only the new
/// position (chapter 07).
///
/// Chapter 00's forward recomputes every position's keys and values at every step. They never
/// change (position s only attends to positions <= s), so chapter 07 keeps them: `Gpt2::prefill`
/// writes the prompt's, `Gpt2::decode` appends one position per row and attends over the rest.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/model/config.hpp"

namespace decodebook {

/// Bytes a KV cache takes: 2 (K and V) x layers x positions x width x bytes per value x rows.
/// `width` is the key/value width of one layer (n_embd for GPT-2; n_kv_heads x head_dim with
/// grouped-query attention). Introduced in chapter 07.
/// @throws Error when a count is negative or the product overflows 64 bits.
uint64_t kv_cache_bytes(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value, int64_t rows = 1);

/// Copy rows of a (rows, positions, C) tensor: row r becomes the old row `source[r]`, for
/// every r at once (a row may be copied to several rows, or dropped). Beam search uses it
/// after each step: a beam continues its parent's cache. Introduced in chapter 07.
/// @throws Error when `source` has the wrong size or an index is out of range.
void reorder_rows(xt::xtensor<float, 3>& rows, const std::vector<int>& source);

/// One cached attention step for one row and one layer, as exercise 07.1 asks: write this
/// position's key and value into row `position` of `keys` and `values`, then attend the query
/// over rows 0..position, head by head.
/// @param keys (capacity, C) the layer's keys for one sequence
/// @param values (capacity, C) the layer's values for one sequence
/// @param position where the new token sits (0-based), < capacity
/// @param qkv (3C) the new token's fused [q | k | v] projection
/// @param n_head the number of heads; C must divide evenly
/// @return (C) the attention output, heads side by side
/// Introduced in chapter 07.
xt::xtensor<float, 1> cached_attention_step(xt::xtensor<float, 2>& keys, xt::xtensor<float, 2>& values,
                                            size_t position, const xt::xtensor<float, 1>& qkv, int n_head);

/// The buffers of one decode call, sized once for its most tokens B (so `Gpt2::decode` allocates
/// nothing): the activations, and where each token's keys and values go. Chapter 07's KvCache and
/// chapter 12's PagedKvCache each own one. Introduced in chapter 07.
struct DecodeScratch {
    /// Size every buffer for up to B tokens of a model with this config, attending over up to
    /// `positions` positions.
    DecodeScratch(const ModelConfig& config, size_t B, size_t positions);
    xt::xtensor<float, 2> x;       ///< (B, C) residual stream
    xt::xtensor<float, 2> xn;      ///< (B, C) after LayerNorm
    xt::xtensor<float, 2> qkv;     ///< (B, 3C)
    xt::xtensor<float, 2> att;     ///< (B, C) attention output
    xt::xtensor<float, 2> proj;    ///< (B, C) a projection's output
    xt::xtensor<float, 2> hidden;  ///< (B, 4C) MLP hidden layer
    xt::xtensor<float, 2> scores;  ///< (B x n_head, positions) attention scores, one row per head
    std::vector<const float*> keys;    ///< (B) where each token's cache keys start (the layer's block 0)
    std::vector<const float*> values;  ///< (B) where each token's cache values start
    std::vector<const int*> tables;    ///< (B) each token's block table
    std::vector<int> row_blocks;       ///< (B) a KvCache row's one block: its row number
    std::vector<size_t> positions;     ///< (B) where each token goes in its sequence
    std::vector<size_t> lengths;       ///< (B) how many positions each token attends over
    xt::xtensor<float, 2> logits;      ///< (B, V)
};

/// The keys and values of every layer for `rows` sequences of up to `capacity` positions,
/// allocated once (llama2.c's `key_cache`, with a batch dimension), plus the scratch buffers a
/// decode step needs, so `Gpt2::decode` allocates nothing. Each row has its own length, and a row
/// can be cut back to any shorter length (truncate: chapter 08 rolls back rejected drafts).
/// The caller owns it. Each row is one block of `capacity` positions: chapter 12's PagedKvCache
/// cuts the same layout into smaller blocks, and both are read by one decode body.
/// Introduced in chapter 07.
class KvCache {
public:
    /// Allocate the cache for a model: n_layer x 2 x (rows, capacity, n_embd) floats, and the
    /// scratch of a decode call of up to `max_tokens_per_step` tokens (0: one per row).
    /// @throws Error when rows < 1, capacity is outside 1..n_positions or max_tokens_per_step
    /// is above capacity x rows.
    KvCache(const ModelConfig& config, size_t rows, size_t capacity, size_t max_tokens_per_step = 0);

    size_t rows() const { return lengths_.size(); }           ///< sequences it holds
    size_t capacity() const { return capacity_; }              ///< positions per row
    size_t length(size_t row) const { return lengths_.at(row); }  ///< positions filled in a row
    uint64_t bytes() const;                                    ///< bytes of K and V (not the scratch)
    /// The most tokens one `Gpt2::decode` call may take (its scratch is sized for them).
    size_t max_tokens_per_step() const { return scratch_.positions.size(); }

    /// Forget a row's positions (the memory is kept).
    void clear(size_t row) { lengths_.at(row) = 0; }
    /// Keep a row's first `length` positions and forget the rest (llama.cpp's `seq_rm`, HF's
    /// `crop`): the next decode of the row writes at `length`, as if the rest had never been
    /// decoded. Introduced in chapter 07 (chapter 08 rolls back rejected drafts with it).
    /// @throws Error when the row does not exist or holds fewer than `length` positions.
    void truncate(size_t row, size_t length);
    /// Row r becomes the old row `source[r]` in every layer, lengths too (beam search).
    /// @throws Error when `source` has the wrong size or an index is out of range.
    void reorder(const std::vector<int>& source);

    /// (rows, capacity, C) keys of one layer.
    xt::xtensor<float, 3>& keys(size_t layer) { return keys_.at(layer); }
    /// (rows, capacity, C) values of one layer.
    xt::xtensor<float, 3>& values(size_t layer) { return values_.at(layer); }
    /// (rows, capacity, C) keys of one layer, read-only.
    const xt::xtensor<float, 3>& keys(size_t layer) const { return keys_.at(layer); }
    /// (rows, capacity, C) values of one layer, read-only.
    const xt::xtensor<float, 3>& values(size_t layer) const { return values_.at(layer); }

    /// (max_tokens_per_step, V) the logits of the last `Gpt2::decode` call: row b scores what
    /// follows its b-th token (rows past the call's token count hold stale values).
    const xt::xtensor<float, 2>& logits() const { return scratch_.logits; }

private:
    friend class Gpt2;
    void set_length(size_t row, size_t length) { lengths_.at(row) = length; }

    size_t capacity_;
    std::vector<size_t> lengths_;
    std::vector<xt::xtensor<float, 3>> keys_, values_;  // per layer: (rows, capacity, C)
    DecodeScratch scratch_;
};

}  // namespace decodebook
