// Exercise 12.1 - The chained block hashes, and how much of a prompt the cache hits.    Chapter 12: paged cache
//
// A prefix cache (vLLM's enable_prefix_caching) finds a new prompt's blocks by hash. Two functions:
//
// your_hash_full_blocks(tokens, block_size): the hashes of the sequence's FULL blocks, chained:
//   - block i holds tokens [i * block_size, (i + 1) * block_size);
//   - its hash is hash_block_tokens(parent, its tokens), where parent is the hash of block i - 1,
//     and kFirstBlockParent (0) for block 0. So a block's hash names every token up to its end;
//   - a partial last block has no hash (it will still be written into); 7 tokens at block size 3
//     give 2 hashes, 6 give 2, 2 give none.
//
// your_prefix_hit_tokens(prompt, cached, block_size): how many tokens of `prompt` the cache hits
// when it holds every full block of each sequence in `cached` (nothing evicted):
//   - whole blocks only, from the prompt's start: block i hits when some cached sequence has the
//     same tokens in its block i after the same blocks before it (the same chained hash);
//   - the walk stops at the first miss: a later block equal to a cached one after another prefix
//     is no hit (its keys and values depend on every token before it);
//   - the last prompt token is always computed (the model must run on it to give the next
//     token's logits): at most prompt.size() - 1 tokens, so at most (size - 1) / block_size blocks;
//   - an empty prompt hits 0.
//
//   block size 4, cached {A = 0 1 2 3  4 5 6 7  8 9}:
//     prompt 0 1 2 3  4 5 6 7  8 9 10 11  -> 8   (blocks 0 and 1 hit; A's block 2 is partial)
//     prompt 0 1 2 3  4 5 6 7             -> 4   (exactly 2 cached blocks: the last token is computed)
//     prompt 0 1 2 3  9 9 9 9  4 5 6 7    -> 4   (block 1 misses; block 2 is not looked at)
//     prompt 9 9 9 9  4 5 6 7  1          -> 0   (block 1's tokens are A's block 1, after another prefix)
//
// Both throw decodebook::Error (problem, fix) when block_size < 1.
//
// Tested by: "ex12.1 ..." in tests/exercises/test_12_paged_cache.cpp (the cases above and more,
// the independent reference's hashes and hits (tests/data/paged.json), vLLM's worked example, and
// cases drawn when the tests run, checked against a BlockPool).
// You may call decodebook::hash_block_tokens (one block's hash). Do not call hash_full_blocks or
// a BlockPool: they are the answer.
// Graded by: ./grade 12
#include <span>
#include <unordered_set>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<BlockHash> your_hash_full_blocks(const std::vector<int>& tokens, int block_size) {
    // TODO: check block_size; hash each full block with its parent's hash, the first with
    // kFirstBlockParent.
    (void)tokens, (void)block_size;
    throw NotImplemented("12.1 (your_hash_full_blocks)", "exercises/12-paged-cache/prefix_hits.cpp");
}

int your_prefix_hit_tokens(const std::vector<int>& prompt, const std::vector<std::vector<int>>& cached, int block_size) {
    // TODO: collect the cached sequences' block hashes; walk the prompt's hashes while they are
    // found, at most (prompt.size() - 1) / block_size blocks.
    (void)prompt, (void)cached, (void)block_size;
    throw NotImplemented("12.1 (your_prefix_hit_tokens)", "exercises/12-paged-cache/prefix_hits.cpp");
}

}  // namespace decodebook
