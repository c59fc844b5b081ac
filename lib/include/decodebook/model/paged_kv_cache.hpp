#pragma once
/// @file model/paged_kv_cache.hpp
/// @brief The paged KV cache: keys and values in fixed-size blocks that sequences share through
/// block tables (chapter 12).
///
/// Chapter 07's KvCache gives each sequence one row of `capacity` positions, reserved whether it
/// is used or not, and never shared. Here every layer's keys and values are one pool of blocks of
/// `block_size` positions; a sequence's **block table** lists its blocks in position order, so
/// position p lives in block table[p / block_size], slot p % block_size. Blocks need not be
/// adjacent, in order or owned by one sequence: two sequences whose tables start with the same
/// blocks share those positions' keys and values (a prefix cache, n samples of one prompt).
/// This class holds only the numbers. Which block is free, shared or cached is the block
/// manager's business (decoding/block_pool.hpp): each `Gpt2` call takes the sequence's table.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/model/config.hpp"
#include "decodebook/model/kv_cache.hpp"

namespace decodebook {

/// Every layer's keys and values as (num_blocks, block_size, C), allocated once, plus the scratch
/// of a decode call. Introduced in chapter 12.
class PagedKvCache {
public:
    /// Allocate the pool for a model: n_layer x 2 x (num_blocks, block_size, n_embd) floats, and a
    /// decode call's scratch for up to `max_tokens_per_step` tokens, each attending over up to
    /// `max_positions` positions (0: the model's context, n_positions).
    /// @throws Error when num_blocks or block_size is 0, max_tokens_per_step is 0, or
    /// max_positions is above n_positions.
    PagedKvCache(const ModelConfig& config, size_t num_blocks, size_t block_size = 16,
                 size_t max_tokens_per_step = 64, size_t max_positions = 0);

    size_t num_blocks() const { return num_blocks_; }      ///< blocks in the pool
    size_t block_size() const { return block_size_; }      ///< positions per block
    size_t max_positions() const { return max_positions_; }  ///< the longest sequence a call takes
    /// The most tokens one `Gpt2::decode` call may take (its scratch is sized for them).
    size_t max_tokens_per_step() const { return scratch_.positions.size(); }
    /// Bytes of K and V in the whole pool (not the scratch).
    uint64_t bytes() const;
    /// Bytes of K and V in one block, every layer.
    uint64_t block_bytes() const;

    /// Copy the first `positions` slots of block `from` into block `to`, keys and values of every
    /// layer: copy-on-write, when a sequence is about to write into a block another sequence
    /// still reads.
    /// @throws Error when a block is outside the pool, the two are one block, or positions > block_size.
    void copy_block(int from, int to, size_t positions);

    /// (num_blocks, block_size, C) keys of one layer.
    const xt::xtensor<float, 3>& keys(size_t layer) const { return keys_.at(layer); }
    /// (num_blocks, block_size, C) values of one layer.
    const xt::xtensor<float, 3>& values(size_t layer) const { return values_.at(layer); }

    /// (max_tokens_per_step, V) the logits of the last `Gpt2::decode` call: row b scores what
    /// follows its b-th token (rows past the call's token count hold stale values).
    const xt::xtensor<float, 2>& logits() const { return scratch_.logits; }

    /// Check a sequence's table before a call writes positions up to `length` - 1: the table
    /// names at least ceil(length / block_size) blocks, each inside the pool, and length fits
    /// max_positions.
    /// @throws Error naming the fix.
    void check_table(std::span<const int> blocks, size_t length) const;

private:
    friend class Gpt2;
    size_t num_blocks_, block_size_, max_positions_;
    std::vector<xt::xtensor<float, 3>> keys_, values_;  // per layer: (num_blocks, block_size, C)
    DecodeScratch scratch_;
};

/// Where one token of a paged decode call goes: its sequence's block table, and its position in
/// the sequence (it attends over positions 0..position). Introduced in chapter 12.
struct PagedSlot {
    std::span<const int> blocks;  ///< the sequence's block table
    size_t position = 0;          ///< where the token goes (0-based)
};

}  // namespace decodebook
