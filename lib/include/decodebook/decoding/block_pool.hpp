#pragma once
/// @file decoding/block_pool.hpp
/// @brief The block manager under a paged cache: block ids, reference counts, the free queue in
/// eviction order, and prefix caching by a hash chained over full blocks (chapter 12).
///
/// A paged cache cuts every request's keys and values into blocks of `block_size` positions; a
/// request's block table lists its blocks in token order. This file keeps the books only: which
/// blocks a request holds, how many requests hold each block, which free blocks still hold a
/// cached prefix, and which one is taken next. It stores no keys or values and runs no model.
/// The rules are vLLM v1's (docs/design.md, "The cache as shared memory", names the files):
///  - A full block's hash is chained: hash_block_tokens(the previous block's hash, its tokens).
///    Only full blocks are cached; a partial last block never is.
///  - A new prompt reuses the longest run of cached blocks from its start, and always leaves its
///    last token to compute (the model must run on it to give the next token's logits).
///  - Blocks with no holder wait in the free queue, least recently used at the head; a request's
///    blocks are freed tail first, so its tail, the least shareable, is evicted first. A cached
///    block leaves the cache only when it is taken from the head for new use.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace decodebook {

/// A block's chained hash: it names the block's tokens and every token before them.
/// Introduced in chapter 12.
using BlockHash = uint64_t;

/// The parent hash of a sequence's first block (vLLM's NONE_HASH: a fixed value, so two
/// processes hash the same prompt alike). Introduced in chapter 12.
inline constexpr BlockHash kFirstBlockParent = 0;

/// The hash of one block given its parent's hash: h = splitmix64(parent), then for each token
/// h = splitmix64(h XOR the token's 32 bits), with splitmix64 from base/rng.hpp. The same bits on
/// every machine (std::hash promises no such thing). Introduced in chapter 12.
BlockHash hash_block_tokens(BlockHash parent, std::span<const int> tokens);

/// A block hash function, for a pool that is given another (tests give one that collides).
/// Introduced in chapter 12.
using BlockHasher = BlockHash (*)(BlockHash parent, std::span<const int> tokens);

/// The chained hashes of `tokens`' full blocks: entry i hashes block i's tokens with entry i - 1
/// (kFirstBlockParent for the first). A partial last block has none. Introduced in chapter 12.
/// @throws Error if block_size < 1
std::vector<BlockHash> hash_full_blocks(std::span<const int> tokens, int block_size,
                                        BlockHasher hasher = hash_block_tokens);

/// The free blocks in eviction order, as a doubly linked list threaded through the block ids
/// (vLLM's FreeKVCacheBlockQueue): no node is allocated, and a block is taken out of the middle
/// in O(1) when a request hits it. Introduced in chapter 12.
class FreeBlockQueue {
public:
    /// Blocks 0 to num_blocks - 1, all free, in id order.
    /// @throws Error if num_blocks < 0
    explicit FreeBlockQueue(int num_blocks);
    /// Ids in [0, num_blocks), each free block listed once in queue order (head first).
    /// @throws Error for an id out of range or listed twice
    FreeBlockQueue(int num_blocks, std::span<const int> queue);

    /// How many blocks are queued.
    int size() const { return size_; }
    /// Whether block `id` is queued.
    bool contains(int id) const;
    /// The queued ids, head (taken first) to tail.
    std::vector<int> ids() const;
    /// Take the head. @throws Error when the queue is empty
    int pop_front();
    /// Queue `id` at the tail (evicted last). @throws Error if it is queued already
    void push_back(int id);
    /// Queue `id` at the head (taken next). @throws Error if it is queued already
    void push_front(int id);
    /// Take `id` out from wherever it is. @throws Error if it is not queued
    void remove(int id);

private:
    // links_[id] for each block; links_[num_blocks] is the sentinel that closes the ring: its
    // next is the head and its prev the tail. An id that is not queued has prev = next = -1.
    struct Links {
        int prev = -1;
        int next = -1;
    };
    int sentinel() const { return static_cast<int>(links_.size()) - 1; }
    Links& link(int id) { return links_[static_cast<size_t>(id)]; }
    const Links& link(int id) const { return links_[static_cast<size_t>(id)]; }
    void check_id(int id, const char* operation) const;
    void link_after(int at, int id);

    std::vector<Links> links_;
    int size_ = 0;
};

/// One block of the pool. Introduced in chapter 12.
struct Block {
    int id = 0;                      ///< its index in the pool (the paged cache's block number)
    int ref_count = 0;               ///< how many requests' block tables hold it; 0: it is in the free queue
    std::optional<BlockHash> hash;   ///< set while it is cached (full, hashed, not yet evicted)
    BlockHash parent = 0;            ///< while cached: the chained hash of the blocks before it
    std::vector<int> tokens;         ///< while cached: its block_size tokens (a hit compares them)
};

/// Where freed blocks join the free queue. Either way a request's blocks are freed in reverse
/// table order. Introduced in chapter 12.
enum class FreeOrder {
    Lru,            ///< every freed block at the tail (vLLM's design doc, and vLLM until May 2026)
    UncachedFirst,  ///< blocks with no hash at the head, reused first; cached ones at the tail (vLLM since)
};

/// The pool's knobs. Introduced in chapter 12.
struct BlockPoolOptions {
    bool caching = true;                  ///< prefix caching on (vLLM's enable_prefix_caching)
    FreeOrder free_order = FreeOrder::Lru;    ///< where freed blocks join the free queue
    BlockHasher hasher = hash_block_tokens;   ///< the block hash (tests give one that collides)
};

/// Prefix-cache counters since the pool was made or last reset, in tokens (vLLM's
/// PrefixCacheStats). Introduced in chapter 12.
struct PrefixCacheStats {
    long requests = 0;  ///< admissions that looked the cache up
    long queries = 0;   ///< their prompt tokens
    long hits = 0;      ///< of those, tokens found cached
    /// hits / queries; 0 before any query.
    double hit_rate() const { return queries == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(queries); }
};

/// What allocate gives a new request. Introduced in chapter 12.
struct Admission {
    std::vector<int> blocks;  ///< its block table: the hit blocks, then the new ones
    int cached_tokens = 0;    ///< prompt tokens already computed (the hits; a multiple of block_size)
};

/// The block manager. Requests are named by an int the caller chooses. Every operation either
/// succeeds whole or throws before changing anything. Introduced in chapter 12.
class BlockPool {
public:
    /// `num_blocks` blocks of `block_size` positions, all free, queued 0, 1, ..., num_blocks - 1.
    /// @throws Error if num_blocks < 1 or block_size < 1
    BlockPool(int num_blocks, int block_size, BlockPoolOptions options = {});

    int num_blocks() const { return static_cast<int>(blocks_.size()); }  ///< blocks in the pool, free or held
    int block_size() const { return block_size_; }  ///< token positions per block
    /// Blocks in the free queue (cached ones waiting there included: they can be taken).
    int num_free_blocks() const { return free_.size(); }
    /// The free queue, head (taken next) to tail.
    std::vector<int> free_queue() const { return free_.ids(); }
    /// Block `id`. @throws Error if there is no such block
    const Block& block(int id) const;
    /// The blocks cached under `hash`, first cached first (equal blocks can be cached twice).
    std::vector<int> cached_blocks(BlockHash hash) const;
    /// How many blocks hold a hash.
    int num_cached_blocks() const;

    /// The longest run of cached blocks that starts `tokens` (vLLM's get_computed_blocks): block i
    /// is a hit if a cached block holds exactly its tokens after exactly its chained parent hash;
    /// the walk stops at the first miss, and covers at most tokens.size() - 1 tokens, so the last
    /// token is always computed. Empty with caching off. Changes nothing.
    std::vector<int> computed_blocks(std::span<const int> tokens) const;
    /// How many blocks allocate(tokens) would take from the free queue: the new blocks, plus each
    /// hit that is waiting there (count 0). `read_cache` false: no hits; `chunk` as allocate's.
    int blocks_to_allocate(std::span<const int> tokens, bool read_cache = true, size_t chunk = 0) const;
    /// Whether the free queue holds blocks_to_allocate(tokens, read_cache, chunk) blocks.
    bool can_allocate(std::span<const int> tokens, bool read_cache = true, size_t chunk = 0) const;
    /// Admit `request` with its prompt `tokens`: touch the hits (count + 1, out of the free queue
    /// if they waited there), then take the new blocks from the queue's head (evicting what they
    /// cached), then cache every block the prompt fills. `read_cache` false skips the lookup (as
    /// vLLM does for a request that wants prompt logprobs): its blocks are still cached, as
    /// duplicates of equal ones. Counted in stats() when it looked the cache up (all of `tokens`).
    /// `chunk` > 0 (chunked prefill): the lookup reads all of `tokens`, but the request holds
    /// only the hits and at most `chunk` tokens after them, and caches only the blocks those
    /// fill; the rest of `tokens` come by append, chunk by chunk, as they are computed. A block is
    /// cached when its tokens are given, so give them in the step that computes them.
    /// @throws Error for an empty prompt, a request the pool holds already, or too few free blocks
    Admission allocate(int request, std::span<const int> tokens, bool read_cache = true, size_t chunk = 0);
    /// Whether append(request, num_tokens tokens) would find the blocks it needs.
    /// @throws Error if the pool does not hold `request`
    bool can_append(int request, int num_tokens) const;
    /// Add a running request's new `tokens` (those whose keys and values come next): new blocks
    /// from the queue's head as needed, and every block they fill is cached. Returns its table.
    /// @throws Error if the pool does not hold `request`, for no tokens, or too few free blocks
    const std::vector<int>& append(int request, std::span<const int> tokens);
    /// Start `child` as a copy of `parent` (n samples of one prompt, vLLM v0's fork): the child
    /// holds the parent's tokens and full blocks (each count + 1), and a block of its own in place
    /// of the parent's partial last block, if there is one, whose keys and values the caller copies
    /// (copy-on-write: a block is written by one holder only, so the partial one is copied before
    /// either writes into it). Returns {the parent's partial block, the child's copy}, or nothing
    /// when every block of the parent is full.
    /// @throws Error if the pool does not hold `parent`, holds `child` already, or no block is free for the copy
    std::optional<std::pair<int, int>> fork(int parent, int child);
    /// Release `request`'s blocks in reverse table order; each whose count reaches 0 joins the
    /// free queue by the pool's FreeOrder. Cached blocks stay cached until taken.
    /// @throws Error if the pool does not hold `request`
    void free(int request);

    /// Whether `request` holds blocks.
    bool holds(int request) const { return held_.count(request) > 0; }
    /// How many requests hold blocks.
    int num_requests() const { return static_cast<int>(held_.size()); }
    /// `request`'s block table. @throws Error if the pool does not hold it
    const std::vector<int>& block_table(int request) const;
    /// The chained hashes of `request`'s full blocks so far (empty with caching off).
    /// @throws Error if the pool does not hold it
    const std::vector<BlockHash>& block_hashes(int request) const;

    /// Forget every cached prefix and zero the counters (vLLM's reset_prefix_cache, used after
    /// new weights). Refused (false, nothing changed) while any request holds a block.
    bool reset_prefix_cache();
    /// The prefix-cache counters.
    const PrefixCacheStats& stats() const { return stats_; }

    /// Verify the books: each block's count is the number of tables that hold it; the free queue
    /// holds exactly the blocks whose count is 0; every cached block is found under its hash and
    /// holds block_size tokens; a held request's full blocks carry its chained hashes. So with no
    /// request held, every block is free. @throws Error naming the first rule broken
    void check_invariants() const;

private:
    struct Held {
        std::vector<int> table;          // its blocks in token order
        std::vector<int> tokens;         // every token given so far
        std::vector<BlockHash> hashes;   // chained hashes of its full blocks
    };

    Held& held(int request, const char* operation);
    const Held& held(int request, const char* operation) const;
    int blocks_for(size_t num_tokens) const;
    size_t tokens_held(size_t num_tokens, const std::vector<int>& hits, size_t chunk) const;
    int blocks_taken(size_t num_tokens, const std::vector<int>& hits) const;
    std::optional<int> find_cached(BlockHash hash, BlockHash parent, std::span<const int> tokens) const;
    void touch(const std::vector<int>& hits);
    int take_block();
    void evict(Block& b);
    void cache_full_blocks(Held& h);
    void check_free_blocks(int needed, const char* operation, int request) const;

    int block_size_;
    BlockPoolOptions options_;
    std::vector<Block> blocks_;
    FreeBlockQueue free_;
    std::unordered_map<BlockHash, std::vector<int>> cached_;  // hash -> blocks, first cached first
    std::map<int, Held> held_;
    PrefixCacheStats stats_;
};

}  // namespace decodebook
