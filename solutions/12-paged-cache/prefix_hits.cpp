// Solution 12.1 - The chained block hashes, and how much of a prompt the cache hits.    Chapter 12: paged cache
// vLLM v1 (vllm-project/vllm): hash_block_tokens chains each full block's tokens to its parent's
// hash, and hash_request_tokens hashes full blocks only (vllm/v1/core/kv_cache_utils.py at
// bbf906a8); get_computed_blocks looks up at most num_tokens - 1 tokens (kv_cache_manager.py at
// 003df296); find_longest_cache_hit stops at the first block not cached
// (single_type_kv_cache_manager.py at 129ab7c6). Our hash is the library's splitmix64 chain.
// With 64-bit hashes a set of hashes stands for the cache; the library's pool also compares the
// tokens and parent of a hit.
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

namespace {

void check_block_size(int block_size) {
    if (block_size < 1)
        throw Error("block_size " + std::to_string(block_size) + " holds no token",
                    "give a block size of at least 1 token (vLLM's default is 16)");
}

}  // namespace

std::vector<BlockHash> your_hash_full_blocks(const std::vector<int>& tokens, int block_size) {
    check_block_size(block_size);
    const size_t b = static_cast<size_t>(block_size);
    std::vector<BlockHash> hashes;
    BlockHash parent = kFirstBlockParent;
    for (size_t start = 0; start + b <= tokens.size(); start += b) {
        parent = hash_block_tokens(parent, std::span<const int>(tokens).subspan(start, b));
        hashes.push_back(parent);
    }
    return hashes;
}

int your_prefix_hit_tokens(const std::vector<int>& prompt, const std::vector<std::vector<int>>& cached, int block_size) {
    check_block_size(block_size);
    if (prompt.empty()) return 0;
    std::unordered_set<BlockHash> in_cache;
    for (const std::vector<int>& sequence : cached)
        for (BlockHash h : your_hash_full_blocks(sequence, block_size)) in_cache.insert(h);
    const std::vector<BlockHash> wanted = your_hash_full_blocks(prompt, block_size);
    const size_t max_blocks = (prompt.size() - 1) / static_cast<size_t>(block_size);  // the last token is computed
    size_t hits = 0;
    while (hits < max_blocks && in_cache.count(wanted[hits])) ++hits;  // a chain: stop at the first miss
    return static_cast<int>(hits) * block_size;
}

}  // namespace decodebook
