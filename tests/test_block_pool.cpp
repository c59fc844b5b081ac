// Chapter 12: the block manager (decoding/block_pool.hpp), against vLLM's own statements of the rules.
//  - vLLM's docs/design/prefix_caching.md, its worked example and its "Duplicated blocks" section,
//    replayed step by step (vllm-project/vllm at 01ff8bff98541914fbc22970a92359b1602988c7).
//  - The cases of vLLM's tests/v1/core/test_prefix_caching.py
//    (003df2961dd8830c317a61f9745ccd557da9fa06) and tests/v1/core/test_kv_cache_utils.py
//    (002f10e0cfa1373a19a0d2756598a34b700d20e5) that are facts about one pool of one layer kind;
//    each names its test function. Not ported: hybrid groups (sliding window, Mamba), EAGLE, KV
//    events, multimodal / LoRA / salt extra keys (our hash has none), and the windowed hit rate.
// vLLM keeps block 0 as a placeholder (null_block) that it never hands out, so its tests count
// blocks from 1 and a pool of N + 1 blocks holds N usable ones: vllm({...}) subtracts one.
// Every case checks the books after each step and ends with every block free.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/block_pool.hpp"

using namespace decodebook;

namespace {

using Tokens = std::vector<int>;

// from, from + 1, ..., to - 1
Tokens range(int from, int to) {
    Tokens t;
    for (int i = from; i < to; ++i) t.push_back(i);
    return t;
}

Tokens repeat(int value, int n) { return Tokens(static_cast<size_t>(n), value); }

Tokens join(Tokens a, const Tokens& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// vLLM's block ids in its tests, as ours: one lower (its block 0 is the null block).
std::vector<int> vllm(std::initializer_list<int> ids) {
    std::vector<int> out;
    for (int id : ids) out.push_back(id - 1);
    return out;
}

void require_books(const BlockPool& pool) { REQUIRE_NOTHROW(pool.check_invariants()); }

// The end of every case: no request holds a block, and every block is back in the free queue
// with a count of 0 (the books agree with that).
void require_all_free(const BlockPool& pool) {
    require_books(pool);
    REQUIRE(pool.num_requests() == 0);
    REQUIRE(pool.num_free_blocks() == pool.num_blocks());
    for (int id = 0; id < pool.num_blocks(); ++id) REQUIRE(pool.block(id).ref_count == 0);
}

void free_all(BlockPool& pool, std::initializer_list<int> requests) {
    for (int r : requests) {
        pool.free(r);
        require_books(pool);
    }
    require_all_free(pool);
}

BlockPoolOptions uncached_first() {
    BlockPoolOptions o;
    o.free_order = FreeOrder::UncachedFirst;
    return o;
}

// test_prefix_caching.py's prompt: 3 full blocks of 16, block k all k.
Tokens common_tokens() { return join(join(repeat(0, 16), repeat(1, 16)), repeat(2, 16)); }

}  // namespace

// ------------------------------------------------------------------- the design doc, replayed

// docs/design/prefix_caching.md, "Example": block size 4, 10 blocks. Request 0 has 15 prompt
// tokens; request 1 has 14, its first 10 request 0's; request 2 has 29, its first 12 request 0's.
TEST_CASE("vLLM's prefix caching example replayed step by step", "[blocks]") {
    BlockPool pool(10, 4);
    const Tokens r0 = range(100, 115);
    const Tokens r1 = join(range(100, 110), range(200, 204));
    const Tokens r2 = join(range(100, 112), range(300, 317));
    REQUIRE(r1.size() == 14);
    REQUIRE(r2.size() == 29);
    REQUIRE(pool.free_queue() == range(0, 10));

    // Time 1: the cache is empty; request 0 takes 4 blocks, 3 full (cached) and one with 3 of 4 tokens.
    CHECK(pool.computed_blocks(r0).empty());
    const Admission a0 = pool.allocate(0, r0);
    require_books(pool);
    CHECK(a0.blocks == Tokens{0, 1, 2, 3});
    CHECK(a0.cached_tokens == 0);
    const std::vector<BlockHash> h0 = hash_full_blocks(join(r0, {115}), 4);
    for (int id : {0, 1, 2}) {
        CHECK(pool.block(id).hash == h0[static_cast<size_t>(id)]);
        CHECK(pool.block(id).ref_count == 1);
    }
    CHECK_FALSE(pool.block(3).hash);
    CHECK(pool.free_queue() == range(4, 10));

    // Times 2 and 3 (the doc shows them as time 3): request 0 decodes two tokens. The first fills
    // block 3, which is cached then; the second needs a new block, 4.
    CHECK(pool.append(0, Tokens{115}) == Tokens{0, 1, 2, 3});
    require_books(pool);
    CHECK(pool.block(3).hash == h0[3]);
    CHECK(pool.free_queue() == range(4, 10));
    CHECK(pool.append(0, Tokens{116}) == Tokens{0, 1, 2, 3, 4});
    require_books(pool);
    CHECK_FALSE(pool.block(4).hash);
    CHECK(pool.free_queue() == range(5, 10));

    // Time 4: request 1 hits only the first 2 blocks (8 tokens): its third block matches 2 of 4 tokens.
    CHECK(pool.computed_blocks(r1) == Tokens{0, 1});
    const Admission a1 = pool.allocate(1, r1);
    require_books(pool);
    CHECK(a1.blocks == Tokens{0, 1, 5, 6});
    CHECK(a1.cached_tokens == 8);
    CHECK(pool.block(0).ref_count == 2);
    CHECK(pool.block(1).ref_count == 2);
    CHECK(pool.block(5).hash == hash_full_blocks(r1, 4)[2]);
    CHECK(pool.block(5).hash != pool.block(2).hash);
    CHECK_FALSE(pool.block(6).hash);
    CHECK(pool.free_queue() == Tokens{7, 8, 9});

    // Time 5: request 0 is freed. Blocks 4, 3, 2 join the queue in reverse (2 and 3 still cached);
    // 0 and 1 stay out of it, held by request 1.
    pool.free(0);
    require_books(pool);
    CHECK(pool.free_queue() == Tokens{7, 8, 9, 4, 3, 2});
    CHECK(pool.block(2).hash == h0[2]);
    CHECK(pool.block(3).hash == h0[3]);
    CHECK_FALSE(pool.block(4).hash);
    CHECK(pool.block(0).ref_count == 1);
    CHECK(pool.block(1).ref_count == 1);

    // Time 6: request 1 is freed.
    pool.free(1);
    require_books(pool);
    CHECK(pool.free_queue() == Tokens{7, 8, 9, 4, 3, 2, 6, 5, 1, 0});

    // Time 7: request 2 hits blocks 0, 1, 2, which are touched (taken out of the queue) before
    // any block is taken, so the queue is 7 8 9 4 3 6 5; the allocated blocks are 0, 1, 2
    // (cached), 7, 8, 9, 4, 3 (evicted).
    CHECK(pool.computed_blocks(r2) == Tokens{0, 1, 2});
    const Admission a2 = pool.allocate(2, r2);
    require_books(pool);
    CHECK(a2.blocks == Tokens{0, 1, 2, 7, 8, 9, 4, 3});
    CHECK(a2.cached_tokens == 12);
    CHECK(pool.free_queue() == Tokens{6, 5});
    CHECK(pool.cached_blocks(h0[3]).empty());  // block 3's old prefix is gone from the cache
    CHECK_FALSE(pool.block(3).hash);            // and it now holds request 2's last token only
    const std::vector<BlockHash> h2 = hash_full_blocks(r2, 4);
    for (size_t i = 0; i < h2.size(); ++i) CHECK(pool.block(a2.blocks[i]).hash == h2[i]);

    const PrefixCacheStats& s = pool.stats();
    CHECK(s.requests == 3);
    CHECK(s.queries == 15 + 14 + 29);
    CHECK(s.hits == 0 + 8 + 12);
    free_all(pool, {2});
}

// docs/design/prefix_caching.md, "Duplicated blocks": block size 4, request 1 is ABCDEF and
// decodes G H I; request 2 is the same prompt and decodes the same. Its block 3 fills with E F G H
// and is cached beside block 1, which holds the same: "Cache Blocks: 0, 1, 3". The table stays
// [0, 3] (append-only), where vLLM v0 would have switched it to [0, 1].
TEST_CASE("a block filled twice is cached twice and a table never changes", "[blocks]") {
    BlockPool pool(10, 4);
    const int A = 1, B = 2, C = 3, D = 4, E = 5, F = 6, G = 7, H = 8, I = 9;
    const Tokens prompt{A, B, C, D, E, F};

    CHECK(pool.allocate(1, prompt).blocks == Tokens{0, 1});
    CHECK(pool.append(1, Tokens{G}) == Tokens{0, 1});  // time 0: 0 (ABCD), 1 (EFG); cached 0
    CHECK(pool.num_cached_blocks() == 1);
    CHECK(pool.append(1, Tokens{H}) == Tokens{0, 1});  // time 1: 1 (EFGH) cached
    CHECK(pool.num_cached_blocks() == 2);
    CHECK(pool.append(1, Tokens{I}) == Tokens{0, 1, 2});  // time 2: 2 (I)
    require_books(pool);
    pool.free(1);
    require_books(pool);

    // Request 2: the prompt's 6 tokens hit block 0 only (the last token is computed, and E F is not full).
    const Admission a2 = pool.allocate(2, prompt);
    CHECK(a2.blocks == Tokens{0, 3});
    CHECK(a2.cached_tokens == 4);
    pool.append(2, Tokens{G});
    CHECK(pool.append(2, Tokens{H}) == Tokens{0, 3});
    require_books(pool);
    const BlockHash efgh = hash_full_blocks(Tokens{A, B, C, D, E, F, G, H}, 4)[1];
    CHECK(pool.cached_blocks(efgh) == Tokens{1, 3});
    CHECK(pool.num_cached_blocks() == 3);

    // A lookup takes the first block cached under a hash.
    CHECK(pool.computed_blocks(Tokens{A, B, C, D, E, F, G, H, I}) == Tokens{0, 1});
    free_all(pool, {2});
}

// -------------------------------------------------------------- test_prefix_caching.py, ported

// test_prefix_caching.py::test_prefill, on vLLM's current rule: 11 blocks there (10 usable), 16
// tokens a block, freed blocks without a hash at the head of the queue.
TEST_CASE("test_prefill with uncached blocks freed to the head", "[blocks]") {
    BlockPool pool(10, 16, uncached_first());
    const Tokens common = common_tokens();

    // Full miss: 3 full blocks and one of 7 tokens.
    const Tokens all0 = join(common, repeat(3, 7));
    CHECK(pool.computed_blocks(all0).empty());
    CHECK(pool.allocate(0, all0).blocks == vllm({1, 2, 3, 4}));
    require_books(pool);
    BlockHash parent = kFirstBlockParent;
    for (int id : vllm({1, 2, 3})) {
        const BlockHash expected =
            hash_block_tokens(parent, std::span<const int>(all0).subspan(static_cast<size_t>(id) * 16, 16));
        CHECK(pool.block(id).hash == expected);
        CHECK(pool.block(id).ref_count == 1);
        parent = expected;
    }
    CHECK(pool.block_hashes(0).size() == 3);
    CHECK_FALSE(pool.block(vllm({4})[0]).hash);
    CHECK(pool.block(vllm({4})[0]).ref_count == 1);

    // A hit on the common prefix while its blocks are still held.
    const Tokens all1 = join(common, repeat(3, 5));
    CHECK(pool.computed_blocks(all1) == vllm({1, 2, 3}));
    const Admission a1 = pool.allocate(1, all1);
    CHECK(a1.cached_tokens == 3 * 16);
    CHECK(a1.blocks == join(vllm({1, 2, 3}), vllm({5})));
    for (int id : vllm({1, 2, 3})) CHECK(pool.block(id).ref_count == 2);
    CHECK(pool.num_free_blocks() == 5);

    pool.free(0);
    pool.free(1);
    require_books(pool);
    // [partial, no hash, from request 1 and 0 (5, 4), at the head] [never used (6 to 10)] [common (3, 2, 1)]
    CHECK(pool.free_queue() == vllm({5, 4, 6, 7, 8, 9, 10, 3, 2, 1}));

    // A hit on the common prefix after its blocks were freed: the partial block 5 is reused.
    const Tokens all2 = join(common, repeat(3, 6));
    CHECK(pool.computed_blocks(all2) == vllm({1, 2, 3}));
    CHECK(pool.allocate(2, all2).blocks == join(vllm({1, 2, 3}), vllm({5})));
    CHECK(pool.num_free_blocks() == 6);
    for (int id : pool.free_queue()) CHECK(pool.block(id).ref_count == 0);
    pool.free(2);
    require_books(pool);

    // A full miss evicts in queue order.
    const Tokens all3 = repeat(99, 16 * 10);
    CHECK(pool.computed_blocks(all3).empty());
    CHECK(pool.allocate(3, all3).blocks == vllm({5, 4, 6, 7, 8, 9, 10, 3, 2, 1}));
    CHECK(pool.num_free_blocks() == 0);
    CHECK(pool.free_queue().empty());
    free_all(pool, {3});
}

// test_prefix_caching.py::test_prefill as it stood before vLLM PR #42656 (May 2026), when every
// freed block joined the tail, the rule of the design doc: "[unallocated (6, 7, 8, 9, 10)]
// [unique_req0 (4)] [unique_req1 (5)] [common (3, 2, 1)]", then [7, 8, 9, 10, 4, 5, 6, 3, 2, 1].
TEST_CASE("test_prefill with every freed block at the tail", "[blocks]") {
    BlockPool pool(10, 16);
    const Tokens common = common_tokens();
    pool.allocate(0, join(common, repeat(3, 7)));
    pool.allocate(1, join(common, repeat(3, 5)));
    pool.free(0);
    pool.free(1);
    require_books(pool);
    CHECK(pool.free_queue() == vllm({6, 7, 8, 9, 10, 4, 5, 3, 2, 1}));
    CHECK(pool.allocate(2, join(common, repeat(3, 6))).blocks == join(vllm({1, 2, 3}), vllm({6})));
    pool.free(2);
    CHECK(pool.allocate(3, repeat(99, 16 * 10)).blocks == vllm({7, 8, 9, 10, 4, 5, 6, 3, 2, 1}));
    free_all(pool, {3});
}

// test_prefix_caching.py::test_prefill_plp: a request that wants prompt logprobs skips the
// lookup (it needs every prompt position's logits), but its full blocks are still cached; another
// such request duplicates them: the same hashes in other blocks.
TEST_CASE("test_prefill_plp a request that skips the lookup caches duplicates", "[blocks]") {
    BlockPool pool(10, 16, uncached_first());
    const Tokens common = common_tokens();

    const Tokens all0 = join(common, repeat(3, 7));
    const Admission a0 = pool.allocate(0, all0, false);
    CHECK(a0.blocks == vllm({1, 2, 3, 4}));
    CHECK(a0.cached_tokens == 0);
    const std::vector<BlockHash> h0 = pool.block_hashes(0);
    CHECK(h0 == hash_full_blocks(all0, 16));
    for (int id : vllm({1, 2, 3})) CHECK(pool.block(id).ref_count == 1);
    CHECK_FALSE(pool.block(vllm({4})[0]).hash);

    // A request that reads the cache hits what the first one cached.
    const Tokens all1 = join(common, repeat(3, 5));
    CHECK(pool.computed_blocks(all1) == vllm({1, 2, 3}));
    CHECK(pool.allocate(1, all1).blocks == join(vllm({1, 2, 3}), vllm({5})));
    for (int id : vllm({1, 2, 3})) CHECK(pool.block(id).ref_count == 2);
    CHECK(pool.num_free_blocks() == 5);
    pool.free(0);
    pool.free(1);
    require_books(pool);
    CHECK(pool.free_queue() == vllm({5, 4, 6, 7, 8, 9, 10, 3, 2, 1}));

    // No hit for a prompt-logprobs request: its blocks are new, with request 0's hashes.
    const Admission a2 = pool.allocate(2, join(common, repeat(3, 6)), false);
    CHECK(a2.cached_tokens == 0);
    CHECK(a2.blocks != vllm({1, 2, 3, 4}));
    for (size_t i = 0; i < 3; ++i) {
        CHECK(pool.block(a2.blocks[i]).hash == h0[i]);
        CHECK(pool.cached_blocks(h0[i]).size() == 2);
    }
    for (int id : a2.blocks) CHECK(pool.block(id).ref_count == 1);
    // Only the request that looked the cache up is counted.
    CHECK(pool.stats().requests == 1);
    CHECK(pool.stats().queries == 53);
    CHECK(pool.stats().hits == 48);
    free_all(pool, {2});
}

// test_prefix_caching.py::test_decode: decoded tokens fill the last block before a new one is
// taken, and a block is cached when it fills.
TEST_CASE("test_decode appends fill the last block and cache it when full", "[blocks]") {
    BlockPool pool(10, 16);
    CHECK(pool.allocate(0, join(common_tokens(), repeat(3, 7))).blocks == vllm({1, 2, 3, 4}));

    // 4 more tokens fit block 4 (55 + 4 = 59 of 64).
    CHECK(pool.append(0, repeat(8, 4)).size() == 4);
    CHECK_FALSE(pool.block(pool.block_table(0).back()).hash);
    require_books(pool);

    // 19 more: 5 fill block 4, which is cached, and 14 go to a new block.
    const std::vector<int>& table = pool.append(0, repeat(7, 19));
    CHECK(table.size() == 5);
    CHECK(pool.block(table[table.size() - 2]).hash);
    CHECK_FALSE(pool.block(table.back()).hash);
    free_all(pool, {0});
}

// test_prefix_caching.py::test_evict: request 0 holds 5 full blocks and a partial one, request 1
// 3 full blocks; on vLLM's current rule the partial block 6 goes to the head when freed.
TEST_CASE("test_evict with uncached blocks freed to the head", "[blocks]") {
    BlockPool pool(10, 16, uncached_first());
    CHECK(pool.allocate(0, range(0, 5 * 16 + 7)).blocks.size() == 6);
    CHECK(pool.allocate(1, range(5 * 16 + 7, 5 * 16 + 7 + 3 * 16)).blocks.size() == 3);
    CHECK(pool.num_free_blocks() == 1);

    pool.free(0);
    require_books(pool);
    CHECK(pool.free_queue() == vllm({6, 10, 5, 4, 3, 2, 1}));
    pool.free(1);
    require_books(pool);
    CHECK(pool.free_queue() == vllm({6, 10, 5, 4, 3, 2, 1, 9, 8, 7}));

    // Touch the first 2 blocks.
    const Tokens t2 = range(0, 2 * 16 + 3);
    CHECK(pool.computed_blocks(t2) == vllm({1, 2}));
    const Admission a2 = pool.allocate(2, t2);
    CHECK(a2.cached_tokens == 2 * 16);
    CHECK(a2.blocks == join(vllm({1, 2}), vllm({6})));
    CHECK(pool.num_free_blocks() == 7);
    free_all(pool, {2});
}

// test_prefix_caching.py::test_evict before vLLM PR #42656: [10, 6, 5, 4, 3, 2, 1], then
// [10, 6, 5, 4, 3, 2, 1, 9, 8, 7], and the new block is 10.
TEST_CASE("test_evict with every freed block at the tail", "[blocks]") {
    BlockPool pool(10, 16);
    pool.allocate(0, range(0, 5 * 16 + 7));
    pool.allocate(1, range(5 * 16 + 7, 5 * 16 + 7 + 3 * 16));
    pool.free(0);
    CHECK(pool.free_queue() == vllm({10, 6, 5, 4, 3, 2, 1}));
    pool.free(1);
    CHECK(pool.free_queue() == vllm({10, 6, 5, 4, 3, 2, 1, 9, 8, 7}));
    CHECK(pool.allocate(2, range(0, 2 * 16 + 3)).blocks == join(vllm({1, 2}), vllm({10})));
    CHECK(pool.num_free_blocks() == 7);
    free_all(pool, {2});
}

// test_prefix_caching.py::test_hash_block_correct_reuse: a cached block taken for new tokens
// loses its hash (2 blocks there, 1 usable).
TEST_CASE("test_hash_block_correct_reuse an evicted block forgets its hash", "[blocks]") {
    BlockPool pool(1, 16);
    CHECK(pool.allocate(0, range(0, 16)).blocks.size() == 1);
    CHECK(pool.block(0).hash);
    pool.free(0);
    CHECK(pool.block(0).hash);  // freed, still cached
    CHECK(pool.allocate(1, range(0, 15)).blocks == Tokens{0});
    CHECK_FALSE(pool.block(0).hash);
    CHECK(pool.num_cached_blocks() == 0);
    free_all(pool, {1});
}

// test_prefix_caching.py::test_computed_blocks_not_evicted: with a hit on the first block, the
// new block comes from the other cached one, not from the hit (3 blocks there, 2 usable).
TEST_CASE("test_computed_blocks_not_evicted a hit is touched before blocks are taken", "[blocks]") {
    for (FreeOrder order : {FreeOrder::Lru, FreeOrder::UncachedFirst}) {
        BlockPoolOptions options;
        options.free_order = order;
        BlockPool pool(2, 16, options);
        CHECK(pool.allocate(0, range(0, 16)).blocks == vllm({1}));
        CHECK(pool.allocate(1, range(16, 32)).blocks == vllm({2}));
        pool.free(0);
        pool.free(1);
        require_books(pool);

        const Tokens t2 = range(0, 32);
        CHECK(pool.computed_blocks(t2) == vllm({1}));
        const Admission a2 = pool.allocate(2, t2);
        CHECK(a2.cached_tokens == 16);
        CHECK(a2.blocks == join(vllm({1}), vllm({2})));
        free_all(pool, {2});
    }
}

// test_prefix_caching.py::test_basic_prefix_caching_disabled: 4 tokens a block, 5 blocks there
// (4 usable), caching off: no hits, and a request that does not fit gets nothing.
TEST_CASE("test_basic_prefix_caching_disabled no hits and no blocks past the pool", "[blocks]") {
    BlockPoolOptions options;
    options.caching = false;
    BlockPool pool(4, 4, options);
    CHECK(pool.allocate(1, range(0, 10)).blocks.size() == 3);
    CHECK(pool.num_cached_blocks() == 0);
    CHECK(pool.block_hashes(1).empty());
    pool.free(1);
    require_books(pool);

    const Tokens t2 = range(0, 16);  // a shared prefix, not cached
    CHECK(pool.computed_blocks(t2).empty());
    const Admission a2 = pool.allocate(2, t2);
    CHECK(a2.blocks.size() == 4);
    CHECK(a2.cached_tokens == 0);

    const Tokens t3 = range(0, 4);
    CHECK_FALSE(pool.can_allocate(t3));
    CHECK_THROWS_AS(pool.allocate(3, t3), Error);
    CHECK_FALSE(pool.holds(3));
    CHECK(pool.stats().requests == 0);
    free_all(pool, {2});
}

// test_prefix_caching.py::test_cache_blocks: the full blocks are cached, also when they fill one
// at a time (block size 4, 14 tokens: blocks [0 1 2 3] [4 5 6 7] [8 9 10 11] [12 13]).
TEST_CASE("test_cache_blocks full blocks are cached as they fill", "[blocks]") {
    BlockPool pool(5, 4);
    pool.allocate(0, range(0, 8));
    CHECK(pool.num_cached_blocks() == 2);
    pool.append(0, range(8, 12));
    CHECK(pool.num_cached_blocks() == 3);
    pool.append(0, range(12, 14));
    CHECK(pool.num_cached_blocks() == 3);
    CHECK(pool.block_hashes(0) == hash_full_blocks(range(0, 14), 4));
    for (int id : pool.block_table(0)) CHECK(pool.block(id).hash.has_value() == (id < 3));
    free_all(pool, {0});
}

// test_prefix_caching.py::test_prefill_not_enough_free_blocks_with_computed_blocks: a request
// whose hits wait in the free queue needs them as free blocks too; refused, it changes nothing.
TEST_CASE("test_prefill_not_enough_free_blocks_with_computed_blocks a refusal touches nothing", "[blocks]") {
    BlockPool pool(10, 16);
    const Tokens common = common_tokens();
    pool.allocate(0, common);
    const std::vector<int> part0 = pool.block_table(0);

    const Tokens twice = join(common, common);
    CHECK(pool.computed_blocks(twice) == part0);
    CHECK(pool.allocate(1, twice).cached_tokens == 3 * 16);
    const std::vector<int> part1 = pool.block_table(1);
    pool.free(1);
    for (size_t i = 0; i < 6; ++i) CHECK(pool.block(part1[i]).ref_count == (i < 3 ? 1 : 0));

    CHECK(pool.computed_blocks(repeat(7, 32)).empty());
    pool.allocate(2, repeat(7, 32));
    CHECK(pool.num_free_blocks() == 5);

    // Request 3 is 9 blocks: 6 hits (3 of them waiting in the queue) and 3 new, 6 > 5 free.
    const Tokens thrice = join(twice, common);
    CHECK(pool.computed_blocks(thrice) == part1);
    CHECK(pool.blocks_to_allocate(thrice) == 6);
    CHECK_FALSE(pool.can_allocate(thrice));
    const std::vector<int> queue = pool.free_queue();
    CHECK_THROWS_AS(pool.allocate(3, thrice), Error);
    for (size_t i = 0; i < 6; ++i) CHECK(pool.block(part1[i]).ref_count == (i < 3 ? 1 : 0));
    CHECK(pool.free_queue() == queue);
    require_books(pool);
    free_all(pool, {0, 2});
}

// test_prefix_caching.py::test_reset_prefix_cache: refused while blocks are held; then every hash is gone.
TEST_CASE("test_reset_prefix_cache refused while held then forgets every hash", "[blocks]") {
    BlockPool pool(10, 16);
    const Tokens common = common_tokens();
    CHECK(pool.allocate(0, join(common, repeat(3, 7))).blocks == vllm({1, 2, 3, 4}));
    const Tokens all1 = join(common, repeat(4, 7));
    CHECK(pool.computed_blocks(all1).size() == 3);
    CHECK(pool.allocate(1, all1).blocks == join(vllm({1, 2, 3}), vllm({5})));

    CHECK_FALSE(pool.reset_prefix_cache());
    CHECK(pool.num_cached_blocks() == 3);
    pool.free(0);
    pool.free(1);
    CHECK(pool.reset_prefix_cache());
    CHECK(pool.num_cached_blocks() == 0);
    for (int id = 0; id < pool.num_blocks(); ++id) CHECK_FALSE(pool.block(id).hash);
    CHECK(pool.stats().requests == 0);
    CHECK(pool.computed_blocks(all1).empty());
    require_all_free(pool);
}

// test_prefix_caching.py::test_maybe_evict_cached_block and test_block_lookup_cache_multi_blocks_per_key:
// two blocks cached under one hash; a lookup takes the first cached; evicting it leaves the other,
// and evicting both leaves the hash with none.
TEST_CASE("test_maybe_evict_cached_block equal blocks leave the cache one at a time", "[blocks]") {
    BlockPool pool(4, 4);
    const Tokens t = range(0, 5);
    CHECK(pool.allocate(0, t).blocks == Tokens{0, 1});
    CHECK(pool.allocate(1, t, false).blocks == Tokens{2, 3});  // a duplicate of block 0
    const BlockHash h = pool.block_hashes(0)[0];
    CHECK(pool.cached_blocks(h) == Tokens{0, 2});
    CHECK(pool.computed_blocks(t) == Tokens{0});
    pool.free(0);
    pool.free(1);
    CHECK(pool.free_queue() == Tokens{1, 0, 3, 2});

    // Each other request takes the queue's head: 1 (no hash), then 0, 3 (no hash), then 2.
    CHECK(pool.allocate(10, range(50, 52)).blocks == Tokens{1});
    CHECK(pool.allocate(11, range(60, 62)).blocks == Tokens{0});
    CHECK(pool.cached_blocks(h) == Tokens{2});
    CHECK(pool.computed_blocks(t) == Tokens{2});
    CHECK(pool.allocate(12, range(70, 72)).blocks == Tokens{3});
    CHECK(pool.allocate(13, range(80, 82)).blocks == Tokens{2});
    CHECK(pool.cached_blocks(h).empty());
    CHECK(pool.computed_blocks(t).empty());
    free_all(pool, {10, 11, 12, 13});
}

// kv_cache_manager.py, get_computed_blocks: "When all tokens hit the cache, we must recompute the
// last token to obtain logits", and whole blocks are hit or not, so a prompt of exactly k full
// cached blocks hits k - 1 of them.
TEST_CASE("the last prompt token is always computed", "[blocks]") {
    BlockPool pool(10, 4);
    pool.allocate(0, range(0, 12));
    pool.free(0);
    CHECK(pool.computed_blocks(range(0, 12)).size() == 2);
    CHECK(pool.computed_blocks(range(0, 13)).size() == 3);
    CHECK(pool.computed_blocks(range(0, 11)).size() == 2);
    CHECK(pool.computed_blocks(range(0, 4)).empty());
    CHECK(pool.computed_blocks(range(0, 5)).size() == 1);
    CHECK(pool.computed_blocks(Tokens{}).empty());
    const Admission a = pool.allocate(1, range(0, 12));
    CHECK(a.cached_tokens == 8);
    CHECK(a.blocks.size() == 3);
    free_all(pool, {1});
}

// --------------------------------------------------------------- test_kv_cache_utils.py, ported

// test_kv_cache_utils.py::test_kv_cache_block: a new block has its id, no holder and no hash.
TEST_CASE("test_kv_cache_block a new pool holds free blocks with no hash", "[blocks]") {
    const BlockPool pool(5, 16);
    for (int id = 0; id < 5; ++id) {
        CHECK(pool.block(id).id == id);
        CHECK(pool.block(id).ref_count == 0);
        CHECK_FALSE(pool.block(id).hash);
    }
    require_all_free(pool);
}

// test_kv_cache_utils.py::test_free_kv_cache_block_queue_initialization and _operations.
TEST_CASE("test_free_kv_cache_block_queue_operations", "[blocks]") {
    const FreeBlockQueue one(1);
    CHECK(one.size() == 1);
    CHECK(one.ids() == Tokens{0});

    FreeBlockQueue queue(5);
    CHECK(queue.size() == 5);
    CHECK(queue.ids() == range(0, 5));
    CHECK(queue.pop_front() == 0);
    CHECK(queue.size() == 4);
    CHECK(queue.ids() == Tokens{1, 2, 3, 4});
    queue.remove(2);  // from the middle
    CHECK(queue.size() == 3);
    CHECK(queue.ids() == Tokens{1, 3, 4});
    CHECK_FALSE(queue.contains(2));
    queue.push_back(2);
    CHECK(queue.size() == 4);
    CHECK(queue.ids() == Tokens{1, 3, 4, 2});
    for (int i = 0; i < 4; ++i) queue.pop_front();
    CHECK(queue.size() == 0);
    CHECK(queue.ids().empty());
    CHECK_THROWS_WITH(queue.pop_front(), Catch::Contains("no free blocks available"));
}

// test_kv_cache_utils.py::test_free_kv_cache_block_queue_append_n and _prepend_n: blocks added
// at the tail or the head keep their order among themselves.
TEST_CASE("test_free_kv_cache_block_queue_append_n and prepend_n", "[blocks]") {
    FreeBlockQueue queue(6, Tokens{});
    CHECK(queue.size() == 0);
    queue.push_back(0);
    CHECK(queue.ids() == Tokens{0});
    for (int id : {4, 5}) queue.push_back(id);
    CHECK(queue.ids() == Tokens{0, 4, 5});
    for (int id : {1, 2, 3}) queue.push_back(id);
    CHECK(queue.ids() == Tokens{0, 4, 5, 1, 2, 3});
    CHECK(queue.size() == 6);

    FreeBlockQueue front(6, Tokens{0});
    for (int id : {5, 4}) front.push_front(id);  // prepend [4, 5]
    CHECK(front.ids() == Tokens{4, 5, 0});
    for (int id : {2, 1}) front.push_front(id);  // prepend [1, 2]
    CHECK(front.ids() == Tokens{1, 2, 4, 5, 0});
    Tokens popped;
    while (front.size() > 0) popped.push_back(front.pop_front());
    CHECK(popped == Tokens{1, 2, 4, 5, 0});
}

// test_kv_cache_utils.py::test_free_kv_cache_block_queue_popleft_n and _get_all_free_blocks.
TEST_CASE("test_free_kv_cache_block_queue_popleft_n and get_all_free_blocks", "[blocks]") {
    FreeBlockQueue queue(6, Tokens{1, 3, 5, 4, 0, 2});
    CHECK(queue.ids() == Tokens{1, 3, 5, 4, 0, 2});
    CHECK(queue.pop_front() == 1);
    CHECK(queue.size() == 5);
    CHECK(queue.pop_front() == 3);
    CHECK(queue.pop_front() == 5);
    CHECK(queue.ids() == Tokens{4, 0, 2});
    CHECK(queue.pop_front() == 4);
    CHECK(queue.pop_front() == 0);
    CHECK(queue.pop_front() == 2);
    CHECK(queue.size() == 0);

    FreeBlockQueue all(5);
    CHECK(all.ids() == range(0, 5));
    all.pop_front();
    CHECK(all.ids() == range(1, 5));
    all.remove(2);
    CHECK(all.ids() == Tokens{1, 3, 4});
    all.push_back(2);
    CHECK(all.ids() == Tokens{1, 3, 4, 2});
}

// test_kv_cache_utils.py::test_hash_block_tokens (hash of parent, tokens) and test_none_hash (the
// first block's parent is a fixed value, so every process hashes a prompt alike). The values are
// pinned: tests/reference/rng.py's splitmix64 gives the same.
TEST_CASE("test_hash_block_tokens the hash is fixed bit for bit", "[blocks]") {
    BlockHash expected = splitmix64(123);
    for (uint32_t t : {1u, 2u, 3u}) expected = splitmix64(expected ^ t);
    CHECK(hash_block_tokens(123, Tokens{1, 2, 3}) == expected);

    CHECK(hash_block_tokens(kFirstBlockParent, Tokens{1, 2, 3}) == 0x1467336edb962514ull);
    CHECK(hash_block_tokens(0x1467336edb962514ull, Tokens{4, 5, 6}) == 0xfd5fe186ea94a145ull);
    CHECK(hash_block_tokens(kFirstBlockParent, Tokens{-1, 0, 7, 50256}) == 0x218061c6b986fbf7ull);
    // The parent matters: equal tokens after different prefixes hash differently.
    CHECK(hash_block_tokens(1, Tokens{1, 2, 3}) != hash_block_tokens(2, Tokens{1, 2, 3}));
}

// test_kv_cache_utils.py::test_hash_request_tokens_no_mm_inputs and test_request_block_hasher:
// block size 3, tokens 0 to 5: two chained hashes; a partial block has none.
TEST_CASE("test_hash_request_tokens the chain covers full blocks only", "[blocks]") {
    const std::vector<BlockHash> h = hash_full_blocks(range(0, 6), 3);
    REQUIRE(h.size() == 2);
    CHECK(h[0] == hash_block_tokens(kFirstBlockParent, Tokens{0, 1, 2}));
    CHECK(h[1] == hash_block_tokens(h[0], Tokens{3, 4, 5}));
    CHECK(hash_full_blocks(range(0, 8), 3) == h);
    CHECK(hash_full_blocks(range(0, 2), 3).empty());
    CHECK_THROWS_AS(hash_full_blocks(range(0, 6), 0), Error);
}

// ------------------------------------------------------------------------- our own rules

BlockHash colliding_hash(BlockHash, std::span<const int>) { return 7; }

// The collision rule (docs/design.md): a hash only finds candidates, a hit must hold exactly the
// block's tokens after exactly its parent hash. With a hash that collides on every block, equal
// prompts still hit and a prompt whose first block differs hits nothing. What a parent hash
// cannot tell apart is two prefixes whose chained hashes collide: here [1 2][7 8] hits the block
// [7 8] cached after [5 6]. The real hash tells them apart.
TEST_CASE("a hit compares tokens and parent and trusts the prefix to the chained hash", "[blocks]") {
    BlockPoolOptions options;
    options.hasher = colliding_hash;
    BlockPool pool(8, 2, options);
    pool.allocate(0, Tokens{1, 2, 3, 4, 9});
    pool.allocate(1, Tokens{5, 6, 7, 8, 9});
    require_books(pool);
    CHECK(pool.cached_blocks(7).size() == 4);
    CHECK(pool.computed_blocks(Tokens{1, 2, 3, 4, 9}) == Tokens{pool.block_table(0)[0], pool.block_table(0)[1]});
    CHECK(pool.computed_blocks(Tokens{3, 4, 1, 2, 9}).empty());
    CHECK(pool.computed_blocks(Tokens{1, 2, 7, 8, 9}) == Tokens{pool.block_table(0)[0], pool.block_table(1)[1]});

    BlockPool good(8, 2);
    good.allocate(0, Tokens{1, 2, 3, 4, 9});
    good.allocate(1, Tokens{5, 6, 7, 8, 9});
    CHECK(good.computed_blocks(Tokens{1, 2, 7, 8, 9}) == Tokens{good.block_table(0)[0]});
    free_all(pool, {0, 1});
    free_all(good, {0, 1});
}

// A running request that needs a block the pool does not have is refused, and nothing changes.
TEST_CASE("append past the pool is refused and changes nothing", "[blocks]") {
    BlockPool pool(2, 4);
    pool.allocate(0, range(0, 7));
    CHECK(pool.can_append(0, 1));
    CHECK_FALSE(pool.can_append(0, 2));
    CHECK_THROWS_WITH(pool.append(0, Tokens{7, 8}), Catch::Contains("needs 1 free blocks and the pool has 0"));
    CHECK(pool.block_table(0) == Tokens{0, 1});
    CHECK(pool.append(0, Tokens{7}) == Tokens{0, 1});
    CHECK(pool.block(1).hash);
    free_all(pool, {0});
}

// n samples of one prompt: the fork shares the full blocks and gives the child its own copy of
// the partial one (the caller copies its keys and values), so no block is written by two holders.
TEST_CASE("a fork shares the full blocks and copies the partial one", "[blocks]") {
    BlockPool pool(8, 4);
    pool.allocate(0, range(0, 10));  // blocks 0, 1 full (cached), 2 holds 2 tokens
    CHECK(pool.fork(0, 1) == std::optional<std::pair<int, int>>{{2, 3}});
    require_books(pool);
    CHECK(pool.block_table(1) == Tokens{0, 1, 3});
    CHECK(pool.block(0).ref_count == 2);
    CHECK(pool.block(1).ref_count == 2);
    CHECK(pool.block(2).ref_count == 1);
    CHECK(pool.block(3).ref_count == 1);
    CHECK(pool.block_hashes(1) == pool.block_hashes(0));
    CHECK(pool.num_free_blocks() == 4);
    // each appends its own token into its own partial block, which each fills and caches alone
    pool.append(0, Tokens{10, 11});
    pool.append(1, Tokens{20, 21});
    require_books(pool);
    CHECK(pool.block(2).hash);
    CHECK(pool.block(3).hash);
    CHECK(*pool.block(2).hash != *pool.block(3).hash);
    // a parent whose blocks are all full shares them all
    CHECK(pool.fork(0, 2) == std::nullopt);
    CHECK(pool.block_table(2) == Tokens{0, 1, 2});
    CHECK(pool.block(0).ref_count == 3);
    require_books(pool);
    CHECK_THROWS_WITH(pool.fork(0, 1), Catch::Contains("request 1 holds blocks already"));
    CHECK_THROWS_WITH(pool.fork(5, 6), Catch::Contains("request 5 holds no blocks"));
    free_all(pool, {0, 1, 2});
    // no free block for the copy: refused, nothing changed
    BlockPool full(3, 4);
    full.allocate(0, range(0, 6));
    full.allocate(1, range(50, 52));
    CHECK_THROWS_WITH(full.fork(0, 2), Catch::Contains("needs 1 free blocks and the pool has 0"));
    CHECK_FALSE(full.holds(2));
    CHECK(full.block(0).ref_count == 1);
    free_all(full, {0, 1});
}

// Every refusal names the problem and the fix.
TEST_CASE("errors name the request and the fix", "[blocks]") {
    CHECK_THROWS_AS(BlockPool(0, 4), Error);
    CHECK_THROWS_AS(BlockPool(4, 0), Error);
    BlockPool pool(4, 4);
    CHECK_THROWS_WITH(pool.free(3), Catch::Contains("request 3 holds no blocks") && Catch::Contains("allocate"));
    CHECK_THROWS_WITH(pool.append(3, Tokens{1}), Catch::Contains("request 3 holds no blocks"));
    CHECK_THROWS_WITH(pool.block_table(3), Catch::Contains("request 3 holds no blocks"));
    CHECK_THROWS_WITH(pool.can_append(3, 1), Catch::Contains("request 3 holds no blocks"));
    CHECK_THROWS_WITH(pool.allocate(3, Tokens{}), Catch::Contains("no tokens"));
    pool.allocate(3, Tokens{1, 2});
    CHECK_THROWS_WITH(pool.allocate(3, Tokens{1, 2}), Catch::Contains("holds blocks already"));
    CHECK_THROWS_WITH(pool.append(3, Tokens{}), Catch::Contains("no tokens"));
    CHECK_THROWS_WITH(pool.allocate(4, range(0, 17)),
                      Catch::Contains("needs 5 free blocks and the pool has 3") && Catch::Contains("free a finished request"));
    CHECK_THROWS_AS(pool.block(4), Error);
    FreeBlockQueue queue(3);
    CHECK_THROWS_WITH(queue.push_back(1), Catch::Contains("already in the free queue"));
    CHECK_THROWS_AS(queue.push_front(3), Error);
    queue.remove(1);
    CHECK_THROWS_WITH(queue.remove(1), Catch::Contains("not in the free queue"));
    CHECK_THROWS_AS(FreeBlockQueue(3, Tokens{0, 0}), Error);
    free_all(pool, {3});
}
