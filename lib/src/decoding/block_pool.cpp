// Chapter 12: the block manager under a paged cache, after vLLM v1's prefix caching:
//  - vllm/v1/core/kv_cache_utils.py: KVCacheBlock (id, ref_cnt, block_hash), FreeKVCacheBlockQueue
//    (a linked list through the blocks), hash_block_tokens (parent hash, block tokens).
//  - vllm/v1/core/block_pool.py, BlockPool: get_new_blocks (take the head, evicting a cached
//    block), touch (a hit leaves the free queue), free_blocks, get_cached_block (the first block
//    cached under a hash), reset_prefix_cache.
//  - vllm/v1/core/kv_cache_manager.py, get_computed_blocks (the last token is always computed),
//    and single_type_kv_cache_manager.py (find_longest_cache_hit, get_num_blocks_to_allocate,
//    free in reverse order).
// One pool, one kind of layer, no null block: vLLM's block 0 is a placeholder, ours is a block.
#include "decodebook/decoding/block_pool.hpp"

#include <algorithm>
#include <string>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"

namespace decodebook {

BlockHash hash_block_tokens(BlockHash parent, std::span<const int> tokens) {
    BlockHash h = splitmix64(parent);
    for (int t : tokens) h = splitmix64(h ^ static_cast<uint32_t>(t));
    return h;
}

std::vector<BlockHash> hash_full_blocks(std::span<const int> tokens, int block_size, BlockHasher hasher) {
    if (block_size < 1)
        throw Error("hash_full_blocks got block_size " + std::to_string(block_size),
                    "give a block size of at least 1 token");
    std::vector<BlockHash> hashes;
    BlockHash parent = kFirstBlockParent;
    const size_t bs = static_cast<size_t>(block_size);
    for (size_t start = 0; start + bs <= tokens.size(); start += bs) {
        parent = hasher(parent, tokens.subspan(start, bs));
        hashes.push_back(parent);
    }
    return hashes;
}

// ---------------------------------------------------------------------------- the free queue

FreeBlockQueue::FreeBlockQueue(int num_blocks) {
    if (num_blocks < 0)
        throw Error("a free queue of " + std::to_string(num_blocks) + " blocks", "give 0 blocks or more");
    links_.resize(static_cast<size_t>(num_blocks) + 1);
    link(sentinel()) = {sentinel(), sentinel()};
    for (int id = 0; id < num_blocks; ++id) push_back(id);
}

FreeBlockQueue::FreeBlockQueue(int num_blocks, std::span<const int> queue) : FreeBlockQueue(num_blocks) {
    while (size_ > 0) pop_front();
    for (int id : queue) push_back(id);
}

void FreeBlockQueue::check_id(int id, const char* operation) const {
    if (id < 0 || id >= sentinel())
        throw Error(std::string("FreeBlockQueue::") + operation + " got block " + std::to_string(id) +
                        " of a queue over " + std::to_string(sentinel()) + " blocks",
                    "give a block id from 0 to " + std::to_string(sentinel() - 1));
}

bool FreeBlockQueue::contains(int id) const {
    return id >= 0 && id < sentinel() && link(id).next != -1;
}

std::vector<int> FreeBlockQueue::ids() const {
    std::vector<int> out;
    out.reserve(static_cast<size_t>(size_));
    for (int id = link(sentinel()).next; id != sentinel(); id = link(id).next) out.push_back(id);
    return out;
}

// Invariant: the queued ids and the sentinel form one ring, prev and next mirror each other.
void FreeBlockQueue::link_after(int at, int id) {
    const int next = link(at).next;
    link(id) = {at, next};
    link(at).next = id;
    link(next).prev = id;
    ++size_;
}

void FreeBlockQueue::remove(int id) {
    check_id(id, "remove");
    if (!contains(id))
        throw Error("block " + std::to_string(id) + " is not in the free queue",
                    "take out only a block whose reference count is 0");
    Links& l = link(id);
    link(l.prev).next = l.next;
    link(l.next).prev = l.prev;
    l = {};
    --size_;
}

int FreeBlockQueue::pop_front() {
    if (size_ == 0)
        throw Error("the free queue is empty: no free blocks available",
                    "free a finished request, or give the pool more blocks");
    const int head = link(sentinel()).next;
    remove(head);
    return head;
}

void FreeBlockQueue::push_back(int id) {
    check_id(id, "push_back");
    if (contains(id))
        throw Error("block " + std::to_string(id) + " is already in the free queue", "free a block once");
    link_after(link(sentinel()).prev, id);
}

void FreeBlockQueue::push_front(int id) {
    check_id(id, "push_front");
    if (contains(id))
        throw Error("block " + std::to_string(id) + " is already in the free queue", "free a block once");
    link_after(sentinel(), id);
}

// ---------------------------------------------------------------------------- the pool

BlockPool::BlockPool(int num_blocks, int block_size, BlockPoolOptions options)
    : block_size_(block_size), options_(options), free_(std::max(num_blocks, 0)) {
    if (num_blocks < 1)
        throw Error("a block pool of " + std::to_string(num_blocks) + " blocks", "give the pool at least 1 block");
    if (block_size < 1)
        throw Error("a block pool with blocks of " + std::to_string(block_size) + " tokens",
                    "give a block size of at least 1 token (vLLM's default is 16)");
    if (options_.hasher == nullptr) throw Error("a block pool with no hash function", "leave hasher at hash_block_tokens");
    blocks_.resize(static_cast<size_t>(num_blocks));
    for (int id = 0; id < num_blocks; ++id) blocks_[static_cast<size_t>(id)].id = id;
}

const Block& BlockPool::block(int id) const {
    if (id < 0 || id >= num_blocks())
        throw Error("block " + std::to_string(id) + " of a pool of " + std::to_string(num_blocks()) + " blocks",
                    "give a block id from 0 to " + std::to_string(num_blocks() - 1));
    return blocks_[static_cast<size_t>(id)];
}

std::vector<int> BlockPool::cached_blocks(BlockHash hash) const {
    const auto it = cached_.find(hash);
    return it == cached_.end() ? std::vector<int>{} : it->second;
}

int BlockPool::num_cached_blocks() const {
    int n = 0;
    for (const auto& [hash, ids] : cached_) n += static_cast<int>(ids.size());
    return n;
}

int BlockPool::blocks_for(size_t num_tokens) const {
    return static_cast<int>((num_tokens + static_cast<size_t>(block_size_) - 1) / static_cast<size_t>(block_size_));
}

BlockPool::Held& BlockPool::held(int request, const char* operation) {
    return const_cast<Held&>(static_cast<const BlockPool*>(this)->held(request, operation));
}

const BlockPool::Held& BlockPool::held(int request, const char* operation) const {
    const auto it = held_.find(request);
    if (it == held_.end())
        throw Error(std::string("BlockPool::") + operation + ": request " + std::to_string(request) +
                        " holds no blocks in the pool",
                    "admit it first with allocate (and do not use it after free)");
    return it->second;
}

const std::vector<int>& BlockPool::block_table(int request) const { return held(request, "block_table").table; }

const std::vector<BlockHash>& BlockPool::block_hashes(int request) const {
    return held(request, "block_hashes").hashes;
}

// The collision rule: the hash only finds candidates; a hit must hold exactly these tokens after
// exactly this parent. Equal blocks cached twice: the first cached wins (vLLM's get_one_block).
std::optional<int> BlockPool::find_cached(BlockHash hash, BlockHash parent, std::span<const int> tokens) const {
    const auto it = cached_.find(hash);
    if (it == cached_.end()) return std::nullopt;
    for (int id : it->second) {
        const Block& b = blocks_[static_cast<size_t>(id)];
        if (b.parent == parent && std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) return id;
    }
    return std::nullopt;
}

// [ch12:computed-blocks]
std::vector<int> BlockPool::computed_blocks(std::span<const int> tokens) const {
    std::vector<int> hits;
    if (!options_.caching || tokens.empty()) return hits;
    // The last token is always computed: at most tokens - 1 of them are hit, in whole blocks.
    const size_t max_blocks = (tokens.size() - 1) / static_cast<size_t>(block_size_);
    BlockHash parent = kFirstBlockParent;
    for (size_t i = 0; i < max_blocks; ++i) {
        const std::span<const int> block_tokens = tokens.subspan(i * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_));
        const BlockHash hash = options_.hasher(parent, block_tokens);
        const std::optional<int> hit = find_cached(hash, parent, block_tokens);
        if (!hit) break;  // a chain: once a block misses, no later block can hit
        hits.push_back(*hit);
        parent = hash;
    }
    return hits;
}
// [/ch12:computed-blocks]

// A hit waiting in the free queue is a free block this request will hold: count it.
int BlockPool::blocks_taken(size_t num_tokens, const std::vector<int>& hits) const {
    const auto waiting = std::count_if(hits.begin(), hits.end(),
                                       [&](int id) { return blocks_[static_cast<size_t>(id)].ref_count == 0; });
    return blocks_for(num_tokens) - static_cast<int>(hits.size()) + static_cast<int>(waiting);
}

// The tokens an admission holds: all, or the hits and at most `chunk` more (chunked prefill).
size_t BlockPool::tokens_held(size_t num_tokens, const std::vector<int>& hits, size_t chunk) const {
    if (chunk == 0) return num_tokens;
    return std::min(num_tokens, hits.size() * static_cast<size_t>(block_size_) + chunk);
}

int BlockPool::blocks_to_allocate(std::span<const int> tokens, bool read_cache, size_t chunk) const {
    const std::vector<int> hits = read_cache ? computed_blocks(tokens) : std::vector<int>{};
    return blocks_taken(tokens_held(tokens.size(), hits, chunk), hits);
}

bool BlockPool::can_allocate(std::span<const int> tokens, bool read_cache, size_t chunk) const {
    return blocks_to_allocate(tokens, read_cache, chunk) <= num_free_blocks();
}

void BlockPool::check_free_blocks(int needed, const char* operation, int request) const {
    if (needed <= num_free_blocks()) return;
    throw Error(std::string("BlockPool::") + operation + ": request " + std::to_string(request) + " needs " +
                    std::to_string(needed) + " free blocks and the pool has " + std::to_string(num_free_blocks()) +
                    " (of " + std::to_string(num_blocks()) + ")",
                "free a finished request first, ask can_allocate or can_append before, or give the pool more blocks");
}

// A hit gains a holder; if it was waiting in the free queue it leaves it, so nothing evicts it.
void BlockPool::touch(const std::vector<int>& hits) {
    for (int id : hits) {
        Block& b = blocks_[static_cast<size_t>(id)];
        if (b.ref_count == 0) free_.remove(id);
        ++b.ref_count;
    }
}

// A cached block leaves the cache only here, when it is taken for new tokens.
void BlockPool::evict(Block& b) {
    if (!b.hash) return;
    const auto entry = cached_.find(*b.hash);
    std::vector<int>& ids = entry->second;  // a hashed block is always listed under its hash
    ids.erase(std::find(ids.begin(), ids.end(), b.id));
    if (ids.empty()) cached_.erase(entry);
    b.hash.reset();
    b.parent = 0;
    b.tokens.clear();
}

int BlockPool::take_block() {
    Block& b = blocks_[static_cast<size_t>(free_.pop_front())];
    evict(b);
    b.ref_count = 1;
    return b.id;
}

// Hash every block the request's tokens fill that is not hashed yet; cache those that are not
// hits already (a hit holds this very hash). Equal blocks are cached again, not merged: a table
// never changes a block it holds.
void BlockPool::cache_full_blocks(Held& h) {
    if (!options_.caching) return;
    const size_t bs = static_cast<size_t>(block_size_);
    const std::span<const int> tokens(h.tokens);
    for (size_t i = h.hashes.size(); (i + 1) * bs <= tokens.size(); ++i) {
        const BlockHash parent = i == 0 ? kFirstBlockParent : h.hashes[i - 1];
        const std::span<const int> block_tokens = tokens.subspan(i * bs, bs);
        const BlockHash hash = options_.hasher(parent, block_tokens);
        h.hashes.push_back(hash);
        Block& b = blocks_[static_cast<size_t>(h.table[i])];
        if (b.hash) continue;
        b.hash = hash;
        b.parent = parent;
        b.tokens.assign(block_tokens.begin(), block_tokens.end());
        cached_[hash].push_back(b.id);
    }
}

Admission BlockPool::allocate(int request, std::span<const int> tokens, bool read_cache, size_t chunk) {
    if (tokens.empty())
        throw Error("BlockPool::allocate: request " + std::to_string(request) + " has no tokens",
                    "admit a request with a prompt of at least one token");
    if (holds(request))
        throw Error("BlockPool::allocate: request " + std::to_string(request) + " holds blocks already",
                    "admit each request once; add a running request's tokens with append");
    const std::vector<int> hits = read_cache ? computed_blocks(tokens) : std::vector<int>{};
    const size_t hold = tokens_held(tokens.size(), hits, chunk);  // the rest come by append
    check_free_blocks(blocks_taken(hold, hits), "allocate", request);

    touch(hits);  // before taking new blocks, so the hits cannot be taken
    Held& h = held_[request];
    h.table = hits;
    while (static_cast<int>(h.table.size()) < blocks_for(hold)) h.table.push_back(take_block());
    h.tokens.assign(tokens.begin(), tokens.begin() + static_cast<long>(hold));
    cache_full_blocks(h);

    const int cached_tokens = static_cast<int>(hits.size()) * block_size_;
    if (read_cache && options_.caching) {
        ++stats_.requests;
        stats_.queries += static_cast<long>(tokens.size());
        stats_.hits += cached_tokens;
    }
    return {h.table, cached_tokens};
}

bool BlockPool::can_append(int request, int num_tokens) const {
    const Held& h = held(request, "can_append");
    const int needed = blocks_for(h.tokens.size() + static_cast<size_t>(std::max(num_tokens, 0))) -
                       static_cast<int>(h.table.size());
    return needed <= num_free_blocks();
}

const std::vector<int>& BlockPool::append(int request, std::span<const int> tokens) {
    Held& h = held(request, "append");
    if (tokens.empty())
        throw Error("BlockPool::append: no tokens for request " + std::to_string(request),
                    "append the tokens whose keys and values come next (at least one)");
    const int total = blocks_for(h.tokens.size() + tokens.size());
    check_free_blocks(total - static_cast<int>(h.table.size()), "append", request);
    while (static_cast<int>(h.table.size()) < total) h.table.push_back(take_block());
    h.tokens.insert(h.tokens.end(), tokens.begin(), tokens.end());
    cache_full_blocks(h);
    return h.table;
}

std::optional<std::pair<int, int>> BlockPool::fork(int parent, int child) {
    const Held& p = held(parent, "fork");
    if (holds(child))
        throw Error("BlockPool::fork: request " + std::to_string(child) + " holds blocks already",
                    "fork into a request id the pool does not hold");
    const bool partial = p.tokens.size() % static_cast<size_t>(block_size_) != 0;
    if (partial) check_free_blocks(1, "fork", child);
    Held c = p;  // its tokens, table and hashes
    const size_t shared = c.table.size() - (partial ? 1 : 0);
    for (size_t k = 0; k < shared; ++k) blocks_[static_cast<size_t>(c.table[k])].ref_count += 1;
    std::optional<std::pair<int, int>> copy;
    if (partial) {
        copy = std::pair{c.table.back(), take_block()};
        c.table.back() = copy->second;
    }
    held_[child] = std::move(c);
    return copy;
}

// Tail first: the request's last block, whose hash covers the most tokens and is the least likely
// to be shared, is the first of its blocks to be evicted.
// [ch12:free]
void BlockPool::free(int request) {
    const Held& h = held(request, "free");
    std::vector<int> released;
    for (auto it = h.table.rbegin(); it != h.table.rend(); ++it) {
        Block& b = blocks_[static_cast<size_t>(*it)];
        if (--b.ref_count == 0) released.push_back(b.id);
    }
    if (options_.free_order == FreeOrder::Lru) {
        for (int id : released) free_.push_back(id);
    } else {
        // Uncached blocks go to the head keeping their order among themselves (vLLM's prepend_n).
        for (auto it = released.rbegin(); it != released.rend(); ++it)
            if (!blocks_[static_cast<size_t>(*it)].hash) free_.push_front(*it);
        for (int id : released)
            if (blocks_[static_cast<size_t>(id)].hash) free_.push_back(id);
    }
    held_.erase(request);
}
// [/ch12:free]

bool BlockPool::reset_prefix_cache() {
    if (!held_.empty()) return false;
    for (Block& b : blocks_) {
        b.hash.reset();
        b.parent = 0;
        b.tokens.clear();
    }
    cached_.clear();
    stats_ = {};
    return true;
}

void BlockPool::check_invariants() const {
    const auto broken = [](const std::string& rule) {
        return Error("BlockPool's books are broken: " + rule,
                     "this is a bug in the block pool: report the operations that led here");
    };
    std::vector<int> holders(blocks_.size(), 0);
    for (const auto& [request, h] : held_) {
        if (static_cast<int>(h.table.size()) != blocks_for(h.tokens.size()))
            throw broken("request " + std::to_string(request) + " has " + std::to_string(h.table.size()) +
                         " blocks for " + std::to_string(h.tokens.size()) + " tokens");
        for (int id : h.table) ++holders[static_cast<size_t>(id)];
        const size_t full = h.tokens.size() / static_cast<size_t>(block_size_);
        if (options_.caching && h.hashes.size() != full)
            throw broken("request " + std::to_string(request) + " has " + std::to_string(h.hashes.size()) +
                         " block hashes for " + std::to_string(full) + " full blocks");
        for (size_t i = 0; i < h.hashes.size(); ++i)
            if (blocks_[static_cast<size_t>(h.table[i])].hash != h.hashes[i])
                throw broken("block " + std::to_string(h.table[i]) + " of request " + std::to_string(request) +
                             " does not hold the request's hash for its block " + std::to_string(i));
    }
    const std::vector<int> queue = free_.ids();
    if (static_cast<int>(queue.size()) != free_.size()) throw broken("the free queue's links and its size disagree");
    std::vector<int> queued(blocks_.size(), 0);
    for (int id : queue) ++queued[static_cast<size_t>(id)];
    int cached = 0;
    for (const Block& b : blocks_) {
        const std::string name = "block " + std::to_string(b.id);
        if (b.ref_count != holders[static_cast<size_t>(b.id)])
            throw broken(name + " counts " + std::to_string(b.ref_count) + " holders and " +
                         std::to_string(holders[static_cast<size_t>(b.id)]) + " tables hold it");
        if (queued[static_cast<size_t>(b.id)] != (b.ref_count == 0 ? 1 : 0))
            throw broken(name + " with " + std::to_string(b.ref_count) + " holders is in the free queue " +
                         std::to_string(queued[static_cast<size_t>(b.id)]) + " times");
        if (!b.hash) {
            if (!b.tokens.empty()) throw broken(name + " holds tokens but no hash");
            continue;
        }
        ++cached;
        if (!options_.caching) throw broken(name + " is cached with caching off");
        if (static_cast<int>(b.tokens.size()) != block_size_) throw broken(name + " is cached but not full");
        if (options_.hasher(b.parent, b.tokens) != *b.hash) throw broken(name + "'s hash is not its parent and tokens'");
        const std::vector<int> under = cached_blocks(*b.hash);
        if (std::count(under.begin(), under.end(), b.id) != 1) throw broken(name + " is not cached under its hash once");
    }
    if (cached != num_cached_blocks()) throw broken("the cache lists blocks that hold no hash");
}

}  // namespace decodebook
