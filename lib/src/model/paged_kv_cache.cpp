// Chapter 12: the paged KV cache, a pool of blocks of keys and values read through block tables.
#include "decodebook/model/paged_kv_cache.hpp"

#include <algorithm>
#include <string>

#include "decodebook/base/error.hpp"

namespace decodebook {
namespace {

// The positions one call may attend over: max_positions, or the model's context when it is 0.
size_t checked_positions(const ModelConfig& config, size_t num_blocks, size_t block_size, size_t max_tokens_per_step,
                         size_t max_positions) {
    if (num_blocks < 1 || block_size < 1)
        throw Error("a paged KV cache needs at least one block of at least one position",
                    "pass num_blocks >= 1 and block_size >= 1 (16 is vLLM's default)");
    if (max_tokens_per_step < 1)
        throw Error("a paged KV cache's decode call needs room for at least one token", "pass max_tokens_per_step >= 1");
    // the pool's size must be countable before anything is allocated (throws on overflow)
    kv_cache_bytes(config.n_layer, static_cast<int64_t>(num_blocks), config.n_embd, sizeof(float),
                   static_cast<int64_t>(block_size));
    if (max_tokens_per_step > num_blocks * block_size) {  // the product fits: kv_cache_bytes counted it
        throw Error("a decode call of " + std::to_string(max_tokens_per_step) + " tokens cannot fit a pool of " +
                        std::to_string(num_blocks) + " blocks of " + std::to_string(block_size) + " positions",
                    "pass max_tokens_per_step <= num_blocks x block_size");
    }
    const size_t context = static_cast<size_t>(config.n_positions);
    if (max_positions > context) {
        throw Error("a sequence of " + std::to_string(max_positions) + " positions does not fit the model's context of " +
                        std::to_string(context),
                    "pass max_positions <= " + std::to_string(context) + " (0 means the whole context)");
    }
    return max_positions == 0 ? context : max_positions;
}

}  // namespace

PagedKvCache::PagedKvCache(const ModelConfig& config, size_t num_blocks, size_t block_size,
                           size_t max_tokens_per_step, size_t max_positions)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      max_positions_(checked_positions(config, num_blocks, block_size, max_tokens_per_step, max_positions)),
      scratch_(config, max_tokens_per_step, max_positions_) {
    const size_t C = static_cast<size_t>(config.n_embd);
    for (int l = 0; l < config.n_layer; ++l) {
        keys_.push_back(xt::xtensor<float, 3>::from_shape({num_blocks, block_size, C}));
        values_.push_back(xt::xtensor<float, 3>::from_shape({num_blocks, block_size, C}));
    }
}

uint64_t PagedKvCache::bytes() const { return block_bytes() * num_blocks_; }

uint64_t PagedKvCache::block_bytes() const {
    if (keys_.empty()) return 0;
    return kv_cache_bytes(static_cast<int64_t>(keys_.size()), static_cast<int64_t>(block_size_),
                          static_cast<int64_t>(keys_[0].shape(2)), sizeof(float));
}

void PagedKvCache::copy_block(int from, int to, size_t positions) {
    for (int id : {from, to}) {
        if (id < 0 || static_cast<size_t>(id) >= num_blocks_)
            throw Error("block " + std::to_string(id) + " is outside the pool of " + std::to_string(num_blocks_) +
                            " blocks",
                        "copy blocks the pool has (0.." + std::to_string(num_blocks_ - 1) + ")");
    }
    if (from == to) throw Error("copy_block got block " + std::to_string(from) + " twice", "copy into another block");
    if (positions > block_size_)
        throw Error("a block holds " + std::to_string(block_size_) + " positions, not " + std::to_string(positions),
                    "copy at most block_size positions");
    if (keys_.empty()) return;
    const size_t C = keys_[0].shape(2), slot = block_size_ * C;
    for (auto* layers : {&keys_, &values_}) {
        for (xt::xtensor<float, 3>& t : *layers)
            std::copy_n(t.data() + static_cast<size_t>(from) * slot, positions * C,
                        t.data() + static_cast<size_t>(to) * slot);
    }
}

void PagedKvCache::check_table(std::span<const int> blocks, size_t length) const {
    if (length > max_positions_) {
        throw Error("a sequence of " + std::to_string(length) + " positions is longer than the " +
                        std::to_string(max_positions_) + " this cache attends over",
                    "make the PagedKvCache with max_positions >= prompt + new tokens");
    }
    const size_t needed = (length + block_size_ - 1) / block_size_;
    if (blocks.size() < needed) {
        throw Error("a block table of " + std::to_string(blocks.size()) + " blocks holds " +
                        std::to_string(blocks.size() * block_size_) + " positions, not " + std::to_string(length),
                    "give the sequence " + std::to_string(needed) + " blocks of " + std::to_string(block_size_) +
                        " first (BlockPool::allocate or append)");
    }
    for (size_t i = 0; i < needed; ++i) {
        if (blocks[i] < 0 || static_cast<size_t>(blocks[i]) >= num_blocks_)
            throw Error("block table entry " + std::to_string(i) + " is block " + std::to_string(blocks[i]) +
                            ", outside the pool of " + std::to_string(num_blocks_),
                        "use block ids from the pool's block manager");
    }
}

}  // namespace decodebook
