// Graded tests for chapter 12's exercises (see exercises/manifest.json). The cases are worked by
// hand, with the reasoning beside each, or are facts from vLLM's design doc and tests (the file
// and test are named beside each), or come from the independent reference (tests/data/paged.json,
// tests/reference/paged.py); none was produced by the code it checks.
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's BlockPool in this
// test program, which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/block_pool.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Ids = std::vector<int>;
using Hashes = std::vector<BlockHash>;

namespace {

using feedback::check_refused;
using feedback::list;

// from, from + 1, ..., to - 1
Ids range(int from, int to) {
    Ids t;
    for (int i = from; i < to; ++i) t.push_back(i);
    return t;
}

Ids join(Ids a, const Ids& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A random sequence over a small alphabet (so prefixes collide often): 0..length_max tokens.
Ids draw_tokens(Rng& rng, int alphabet, int length_max) {
    Ids t(static_cast<size_t>(rng.next_u64() % static_cast<uint64_t>(length_max + 1)));
    for (int& x : t) x = static_cast<int>(rng.next_u64() % static_cast<uint64_t>(alphabet));
    return t;
}

// ------------------------------------------------------------------------------------------ 12.1

std::string hex(BlockHash h) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::string show(const Hashes& hashes) {
    std::string s = std::to_string(hashes.size()) + (hashes.size() == 1 ? " hash [" : " hashes [");
    for (size_t i = 0; i < hashes.size(); ++i) s += (i ? ", " : "") + hex(hashes[i]);
    return s + "]";
}

// What the first difference between two chains of hashes says about the rule that was missed.
std::string diagnosis(const Hashes& expected, const Hashes& found, const Ids& tokens, int block_size) {
    const size_t b = static_cast<size_t>(block_size);
    for (size_t i = 0; i < std::min(expected.size(), found.size()); ++i) {
        if (found[i] == expected[i]) continue;
        const std::span<const int> block = std::span<const int>(tokens).subspan(i * b, b);
        if (i > 0 && found[i] == hash_block_tokens(kFirstBlockParent, block))
            return "block " + std::to_string(i) + " was hashed without the blocks before it: its parent is the hash of block " +
                   std::to_string(i - 1);
        return "block " + std::to_string(i) + " holds tokens [" + std::to_string(i * b) + ", " + std::to_string((i + 1) * b) +
               ") and its parent is the hash of block " + (i ? std::to_string(i - 1) : std::string("-1, kFirstBlockParent"));
    }
    return std::to_string(tokens.size()) + " tokens in blocks of " + std::to_string(block_size) + " make " +
           std::to_string(expected.size()) + " full blocks, one hash each: a partial last block has no hash";
}

void check_hashes(const Ids& tokens, int block_size, const Hashes& expected, const std::string& why) {
    FEEDBACK("input: " << tokens.size() << " tokens " << list(tokens) << ", block_size " << block_size);
    const Hashes found = your_hash_full_blocks(tokens, block_size);
    FEEDBACK("expected: " << show(expected) << "\nfound:    " << show(found));
    FEEDBACK((found == expected ? std::string() : "hint: " + diagnosis(expected, found, tokens, block_size)));
    FEEDBACK("the case: " << why);
    CHECK(found == expected);
}

// The chain by hand from one block's hash (the tool the exercise may use).
Hashes chain_by_hand(const Ids& tokens, int block_size) {
    Hashes h;
    BlockHash parent = kFirstBlockParent;
    for (size_t s = 0; s + static_cast<size_t>(block_size) <= tokens.size(); s += static_cast<size_t>(block_size)) {
        parent = hash_block_tokens(parent, std::span<const int>(tokens).subspan(s, static_cast<size_t>(block_size)));
        h.push_back(parent);
    }
    return h;
}

std::string show(const std::vector<Ids>& sequences) {
    std::string s = "{";
    for (size_t i = 0; i < sequences.size(); ++i) s += (i ? ", " : "") + list(sequences[i]);
    return s + "}";
}

std::string hit_diagnosis(int expected, int found, const Ids& prompt, int block_size) {
    const int max_tokens = prompt.empty() ? 0 : static_cast<int>((prompt.size() - 1) / static_cast<size_t>(block_size)) * block_size;
    if (found % block_size != 0) return "a hit is whole blocks: the answer is a multiple of block_size";
    if (found > max_tokens)
        return "the last prompt token is always computed: at most (" + std::to_string(prompt.size()) + " - 1) / " +
               std::to_string(block_size) + " blocks can hit";
    if (found > expected)
        return "block " + std::to_string(expected / block_size) +
               " misses: a block hits only when a cached sequence holds its tokens after the same blocks before it, "
               "and the walk stops at the first miss (only full blocks are cached)";
    return "block " + std::to_string(found / block_size) +
           " hits: one cached sequence holds the same tokens there after the same blocks before it";
}

void check_hits(const Ids& prompt, const std::vector<Ids>& cached, int block_size, int expected, const std::string& why) {
    FEEDBACK("input: prompt " << list(prompt) << ", cached " << show(cached) << ", block_size " << block_size);
    const int found = your_prefix_hit_tokens(prompt, cached, block_size);
    FEEDBACK("expected: " << expected << " tokens\nfound:    " << found << " tokens");
    FEEDBACK((found == expected ? std::string() : "hint: " + hit_diagnosis(expected, found, prompt, block_size)));
    FEEDBACK("the case: " << why);
    CHECK(found == expected);
}

// The library's answer: a pool large enough that nothing is evicted, each cached sequence
// admitted (its full blocks cached) and freed, then the prompt looked up.
int pool_hit_tokens(const Ids& prompt, const std::vector<Ids>& cached, int block_size) {
    int blocks = 1;
    for (const Ids& s : cached) blocks += static_cast<int>(s.size()) / block_size + 1;
    BlockPool pool(blocks, block_size);
    int request = 0;
    for (const Ids& s : cached) {
        if (s.empty()) continue;
        pool.allocate(request, s);
        pool.free(request++);
    }
    return static_cast<int>(pool.computed_blocks(prompt).size()) * block_size;
}

// ------------------------------------------------------------------------------------------ 12.2

std::string show(const std::vector<bool>& cached, const Ids& ids) {
    std::string s;
    for (int id : ids)
        if (cached[static_cast<size_t>(id)]) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s.empty() ? "none" : s;
}

const char* order_name(FreeOrder order) { return order == FreeOrder::Lru ? "Lru" : "UncachedFirst"; }

std::string queue_diagnosis(const Ids& expected, const Ids& found, const Ids& queue, FreeOrder order) {
    Ids e = expected, f = found;
    std::sort(e.begin(), e.end());
    std::sort(f.begin(), f.end());
    if (e != f)
        return found.size() > expected.size()
                   ? "only a block whose count reaches 0 joins the queue: one still held by another request stays out"
                   : "every block of the table whose count reaches 0 joins the queue, and the queued blocks stay";
    Ids old_in_found;
    for (int id : found)
        if (std::find(queue.begin(), queue.end(), id) != queue.end()) old_in_found.push_back(id);
    if (old_in_found != queue) return "the blocks already queued keep their order";
    if (order == FreeOrder::Lru)
        return "with Lru every released block joins the tail, in the order released: the table is walked from its last block";
    return "with UncachedFirst a released block with no hash goes to the head (the first released ends up first) and a "
           "cached one to the tail, in the order released: the table is walked from its last block";
}

void check_queue(const Ids& queue, const Ids& table, const Ids& counts, const std::vector<bool>& cached, FreeOrder order,
                 const Ids& expected, const std::string& why) {
    FEEDBACK("input: queue " << list(queue) << ", table " << list(table) << ", counts " << list(counts)
                             << " (by block id), cached blocks " << show(cached, range(0, static_cast<int>(cached.size())))
                             << ", order " << order_name(order));
    const Ids found = your_free_queue_after(queue, table, counts, cached, order);
    FEEDBACK("expected: " << list(expected) << "\nfound:    " << list(found));
    FEEDBACK((found == expected ? std::string() : "hint: " + queue_diagnosis(expected, found, queue, order)));
    FEEDBACK("the case: " << why);
    CHECK(found == expected);
}

std::vector<bool> cached_ids(int num_blocks, const Ids& ids) {
    std::vector<bool> c(static_cast<size_t>(num_blocks), false);
    for (int id : ids) c[static_cast<size_t>(id)] = true;
    return c;
}

FreeOrder order_of(const nlohmann::json& c) {
    const std::string o = c["order"].get<std::string>();
    REQUIRE((o == "lru" || o == "uncached_first"));
    return o == "lru" ? FreeOrder::Lru : FreeOrder::UncachedFirst;
}

}  // namespace

// ------------------------------------------------------------------------ 12.1 the chained hashes

TEST_CASE("ex12.1 hash_full_blocks on the stub's cases", "[ex12.1]") {
    const Ids seven{5, 6, 7, 8, 9, 10, 11};
    const BlockHash h0 = hash_block_tokens(kFirstBlockParent, std::span<const int>(seven).subspan(0, 3));
    const BlockHash h1 = hash_block_tokens(h0, std::span<const int>(seven).subspan(3, 3));
    check_hashes(seven, 3, {h0, h1}, "7 tokens at block size 3: two full blocks; the 7th token is a partial block, no hash");
    check_hashes(Ids(seven.begin(), seven.begin() + 6), 3, {h0, h1}, "6 tokens at block size 3: exactly two blocks");
    check_hashes({5, 6}, 3, {}, "2 tokens at block size 3: no full block, no hash");
    check_hashes({}, 4, {}, "no tokens: no hash");
    check_hashes({5, 6, 7}, 3, {h0}, "one block: hashed with kFirstBlockParent as its parent");
    // Block 1 alone, as if it started a prompt, has another hash: the chain is what makes it differ.
    const BlockHash unchained = hash_block_tokens(kFirstBlockParent, std::span<const int>(seven).subspan(3, 3));
    REQUIRE(unchained != h1);
    check_hashes({8, 9, 10}, 3, {unchained}, "tokens 8 9 10 as a first block: the same tokens, another parent, another hash");
}

TEST_CASE("ex12.1 hash_full_blocks equals the reference's hashes", "[ex12.1]") {
    // tests/data/paged.json, "hashes": the chain computed by tests/reference/paged.py from the
    // rule (splitmix64 in Python), for block sizes 1 to 16 and ids up to 2^31 - 1.
    const nlohmann::json file = golden::load("paged.json");
    int n = 0;
    for (const auto& c : file["hashes"]) {
        check_hashes(c["tokens"].get<Ids>(), c["block_size"].get<int>(), c["hashes"].get<Hashes>(),
                     "the reference's case \"" + c["name"].get<std::string>() + "\"");
        ++n;
    }
    CHECK(n >= 10);
}

TEST_CASE("ex12.1 hash_full_blocks refuses a block size below 1", "[ex12.1]") {
    for (int b : {0, -1, -16})
        check_refused([&] { return your_hash_full_blocks({1, 2, 3}, b).size(); }, "tokens [1, 2, 3], block_size " + std::to_string(b),
                      "a block holds at least one token");
}

// ----------------------------------------------------------------------------- 12.1 the hit

TEST_CASE("ex12.1 prefix_hit_tokens on the stub's cases", "[ex12.1]") {
    const std::vector<Ids> a{range(0, 10)};
    check_hits(range(0, 12), a, 4, 8, "blocks 0 and 1 are A's; A's block 2 (8 9) is partial and never cached");
    check_hits(range(0, 8), a, 4, 4, "exactly two cached blocks: the last prompt token is computed, so block 1 is not hit");
    check_hits(join(join(range(0, 4), {9, 9, 9, 9}), range(4, 8)), a, 4, 4,
               "block 1 misses; block 2 equals A's block 1 but the walk has stopped");
    check_hits(join(join({9, 9, 9, 9}, range(4, 8)), {1}), a, 4, 0,
               "block 1's tokens are A's block 1, after another block 0: no hit (and block 0 missed already)");
}

TEST_CASE("ex12.1 prefix_hit_tokens by hand", "[ex12.1]") {
    check_hits(range(0, 20), {}, 4, 0, "nothing cached: nothing hit");
    check_hits({}, {range(0, 8)}, 4, 0, "an empty prompt hits nothing");
    check_hits(range(0, 3), {range(0, 8)}, 4, 0, "a prompt shorter than a block has no full block to hit");
    check_hits(range(0, 9), {range(0, 8)}, 4, 8, "one token past two cached blocks: both hit");
    check_hits(range(0, 8), {range(0, 16)}, 4, 4, "a prompt of exactly 2 blocks hits 1, however much is cached");
    check_hits(range(0, 5), {range(0, 5)}, 1, 4, "block size 1: every token but the last");
    check_hits(join(range(0, 8), {50, 51, 52, 53, 54}), {range(0, 4), join(range(0, 8), {60})}, 4, 8,
               "block 0 is in both cached sequences, block 1 in the second: the chain goes on in whichever holds it");
    check_hits(join(range(0, 8), {1}), {join(range(0, 4), {7, 7, 7, 7}), join({3, 3, 3, 3}, range(4, 8))}, 4, 4,
               "block 1 (4 5 6 7) is cached, but after 3 3 3 3, not after 0 1 2 3: only block 0 hits");
    check_hits(range(0, 17), {range(0, 16)}, 16, 16, "vLLM's block size: one cached block of 16 and one token more");
}

TEST_CASE("ex12.1 prefix_hit_tokens in vLLM's worked example", "[ex12.1]") {
    // vllm-project/vllm docs/design/prefix_caching.md (01ff8bff): block size 4. Request 0 is
    // tokens 100..114 and decodes 115 and 116, so blocks 0-3 are full; request 1 (14 tokens)
    // shares 10 tokens with it and hits 2 blocks (8 tokens); request 2 (29 tokens) shares 12
    // with both and hits 3 blocks.
    const Ids r0 = range(100, 117);
    const Ids r1 = join(range(100, 110), range(200, 204));
    const Ids r2 = join(range(100, 112), range(300, 317));
    check_hits(r1, {r0}, 4, 8, "vLLM's time 4: 10 shared tokens, 2 whole blocks hit");
    check_hits(r2, {r0, r1}, 4, 12, "vLLM's time 7: 12 shared tokens, 3 blocks hit (the third is request 0's)");
}

TEST_CASE("ex12.1 prefix_hit_tokens equals the reference's hits", "[ex12.1]") {
    // tests/data/paged.json, "hits": tests/reference/paged.py compares token prefixes, not hashes.
    const nlohmann::json file = golden::load("paged.json");
    int n = 0;
    for (const auto& c : file["hits"]) {
        check_hits(c["prompt"].get<Ids>(), c["cached"].get<std::vector<Ids>>(), c["block_size"].get<int>(),
                   c["hit_tokens"].get<int>(), "the reference's case \"" + c["name"].get<std::string>() + "\"");
        ++n;
    }
    CHECK(n >= 15);
}

TEST_CASE("ex12.1 prefix_hit_tokens refuses a block size below 1", "[ex12.1]") {
    for (int b : {0, -4})
        check_refused([&] { return your_prefix_hit_tokens({1, 2, 3}, {{1, 2}}, b); },
                      "prompt [1, 2, 3], cached {[1, 2]}, block_size " + std::to_string(b), "a block holds at least one token");
}

TEST_CASE("ex12.1 on cases drawn when the test runs", "[ex12.1]") {
    // 300 prompts and caches over the alphabet 0..2, block sizes 1 to 4: the expected hashes are
    // the library's hash_full_blocks, the expected hits a BlockPool's computed_blocks.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Ids prompt;
        std::vector<Ids> cached;
        int block_size;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 300; ++i) {
        Case c{draw_tokens(rng, 3, 14), {}, 1 + static_cast<int>(rng.next_u64() % 4)};
        for (int k = 0, n = static_cast<int>(rng.next_u64() % 4); k < n; ++k) c.cached.push_back(draw_tokens(rng, 3, 14));
        cases.push_back(c);
    }
    using Found = std::vector<std::tuple<Hashes, int>>;
    const Found found = sandbox::run<Found>("your_prefix_hit_tokens", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const Case& c : cases)
            out.emplace_back(your_hash_full_blocks(c.prompt, c.block_size),
                             your_prefix_hit_tokens(c.prompt, c.cached, c.block_size));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const Hashes expected_hashes = hash_full_blocks(c.prompt, c.block_size);
        const int expected_hits = pool_hit_tokens(c.prompt, c.cached, c.block_size);
        FEEDBACK("a case drawn with seed " << seed << ": prompt " << list(c.prompt) << ", cached " << show(c.cached)
                                          << ", block_size " << c.block_size);
        const Hashes& hashes = std::get<0>(found[i]);
        const int hits = std::get<1>(found[i]);
        FEEDBACK("expected: " << show(expected_hashes) << ", " << expected_hits << " tokens hit\nfound:    " << show(hashes)
                              << ", " << hits << " tokens hit");
        FEEDBACK((hashes == expected_hashes ? std::string() : "hint: " + diagnosis(expected_hashes, hashes, c.prompt, c.block_size)));
        FEEDBACK((hits == expected_hits ? std::string() : "hint: " + hit_diagnosis(expected_hits, hits, c.prompt, c.block_size)));
        REQUIRE(hashes == expected_hashes);
        REQUIRE(hits == expected_hits);
    }
    // The test's own check: its cache by hand agrees with the pool on its hand cases.
    CHECK(chain_by_hand(range(0, 9), 4) == hash_full_blocks(range(0, 9), 4));
}

// ------------------------------------------------------------------------- 12.2 the free queue

TEST_CASE("ex12.2 free_queue_after on the stub's case", "[ex12.2]") {
    // vllm-project/vllm docs/design/prefix_caching.md (01ff8bff), time 5: request 0 (blocks 0-4)
    // is freed while request 1 holds 0 and 1; blocks 0-3 and request 1's 5 are cached.
    const Ids queue{7, 8, 9}, table{0, 1, 2, 3, 4}, counts{2, 2, 1, 1, 1, 1, 1, 0, 0, 0};
    const std::vector<bool> cached = cached_ids(10, {0, 1, 2, 3, 5});
    check_queue(queue, table, counts, cached, FreeOrder::Lru, {7, 8, 9, 4, 3, 2},
                "4, 3, 2 are released in that order and join the tail; 1 and 0 are still held by request 1");
    check_queue(queue, table, counts, cached, FreeOrder::UncachedFirst, {4, 7, 8, 9, 3, 2},
                "4 holds no hash: it goes to the head; 3 and 2 are cached and join the tail");
}

TEST_CASE("ex12.2 free_queue_after in vLLM's worked example at time 6", "[ex12.2]") {
    // The doc's time 6: request 1 (blocks 0 1 5 6) is freed after request 0; every count is 1.
    const Ids queue{7, 8, 9, 4, 3, 2}, table{0, 1, 5, 6}, counts{1, 1, 0, 0, 0, 1, 1, 0, 0, 0};
    const std::vector<bool> cached = cached_ids(10, {0, 1, 2, 3, 5});
    check_queue(queue, table, counts, cached, FreeOrder::Lru, {7, 8, 9, 4, 3, 2, 6, 5, 1, 0},
                "the doc's free queue at time 6: 6 5 1 0 join the tail, request 1's tail first");
    check_queue(queue, table, counts, cached, FreeOrder::UncachedFirst, {6, 7, 8, 9, 4, 3, 2, 5, 1, 0},
                "6 holds no hash (its block is partial): to the head; 5 1 0 to the tail");
}

TEST_CASE("ex12.2 free_queue_after in vLLM's test_evict", "[ex12.2]") {
    // vllm-project/vllm tests/v1/core/test_prefix_caching.py (003df296), test_evict, with vLLM's
    // block ids one lower (its block 0 is a placeholder): blocks of 16, request 0 holds 5 full
    // blocks and a partial one (0..5), request 1 three full blocks (6 7 8); block 9 is free.
    const Ids counts{1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
    const std::vector<bool> cached = cached_ids(10, {0, 1, 2, 3, 4, 6, 7, 8});
    check_queue({9}, range(0, 6), counts, cached, FreeOrder::UncachedFirst, {5, 9, 4, 3, 2, 1, 0},
                "vLLM's [6, 10, 5, 4, 3, 2, 1] (its ids): the partial block 5 to the head, the rest in reverse at the tail");
    check_queue({9}, range(0, 6), counts, cached, FreeOrder::Lru, {9, 5, 4, 3, 2, 1, 0},
                "before vLLM's PR #42656: [10, 6, 5, 4, 3, 2, 1] (its ids), every block at the tail");
    const Ids counts1{0, 0, 0, 0, 0, 0, 1, 1, 1, 0};
    check_queue({5, 9, 4, 3, 2, 1, 0}, range(6, 9), counts1, cached, FreeOrder::UncachedFirst, {5, 9, 4, 3, 2, 1, 0, 8, 7, 6},
                "then request 1: vLLM's [6, 10, 5, 4, 3, 2, 1, 9, 8, 7], its three cached blocks at the tail in reverse");
}

TEST_CASE("ex12.2 free_queue_after by hand", "[ex12.2]") {
    check_queue({}, {0, 1, 2}, {1, 1, 1}, {true, true, false}, FreeOrder::Lru, {2, 1, 0}, "an empty queue: the table reversed");
    check_queue({}, {0, 1, 2}, {1, 1, 1}, {true, true, false}, FreeOrder::UncachedFirst, {2, 1, 0},
                "the uncached 2 at the head of an empty queue, then 1 0 at the tail");
    check_queue({3}, {0, 1, 2}, {1, 1, 1, 0}, {false, false, false, false}, FreeOrder::UncachedFirst, {2, 1, 0, 3},
                "none cached: all three to the head, the first released (2) first");
    check_queue({3}, {0, 1, 2}, {1, 1, 1, 0}, {true, true, true, false}, FreeOrder::UncachedFirst, {3, 2, 1, 0},
                "all cached: UncachedFirst is Lru");
    check_queue({3}, {0, 1, 2}, {2, 1, 2, 0}, {true, true, true, false}, FreeOrder::Lru, {3, 1},
                "blocks 0 and 2 are shared with another request: only 1 reaches 0");
    check_queue({2, 0}, {1}, {0, 1, 0}, {false, true, false}, FreeOrder::Lru, {2, 0, 1}, "a table of one block");
    check_queue({4, 1}, {0, 2, 3}, {1, 0, 1, 1, 0}, {false, false, true, false, false}, FreeOrder::UncachedFirst, {3, 0, 4, 1, 2},
                "3 and 0 hold no hash: to the head as released (3 first); 2 to the tail");
}

TEST_CASE("ex12.2 free_queue_after equals the reference's queues", "[ex12.2]") {
    // tests/data/paged.json, "queues": tests/reference/paged.py's own pool, freed step by step.
    const nlohmann::json file = golden::load("paged.json");
    int n = 0;
    for (const auto& c : file["queues"]) {
        check_queue(c["queue"].get<Ids>(), c["table"].get<Ids>(), c["counts"].get<Ids>(), c["cached"].get<std::vector<bool>>(),
                    order_of(c), c["after"].get<Ids>(), "the reference's case \"" + c["name"].get<std::string>() + "\"");
        ++n;
    }
    CHECK(n >= 10);
}

TEST_CASE("ex12.2 free_queue_after refuses books that do not add up", "[ex12.2]") {
    const auto call = [](Ids table, Ids counts, std::vector<bool> cached) {
        return [=] { return list(your_free_queue_after({}, table, counts, cached, FreeOrder::Lru)); };
    };
    check_refused(call({0}, {1, 1}, {true}), "counts of 2 blocks, cached of 1", "one count and one flag per block");
    check_refused(call({2}, {1, 1}, {true, true}), "table [2] in a pool of 2 blocks", "a table id is a block of the pool");
    check_refused(call({-1}, {1, 1}, {true, true}), "table [-1]", "a table id is a block of the pool");
    check_refused(call({0, 1}, {1, 0}, {true, true}), "table [0, 1], counts [1, 0]",
                  "block 1 is in the table, so a request holds it: its count cannot be 0");
}

TEST_CASE("ex12.2 on cases drawn when the test runs", "[ex12.2]") {
    // Pools of 8 to 24 blocks of 1 to 4 tokens, requests over the alphabet 0..2 admitted and
    // freed at random, in both orders: before each free the test reads the queue, the table,
    // every count and hash from the pool; the expected queue is the pool's after its free.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        Ids queue, table, counts;
        std::vector<bool> cached;
        FreeOrder order;
        Ids after;
    };
    std::vector<Case> cases;
    for (int trial = 0; trial < 40; ++trial) {
        const FreeOrder order = trial % 2 ? FreeOrder::UncachedFirst : FreeOrder::Lru;
        const int num_blocks = 8 + static_cast<int>(rng.next_u64() % 17);
        BlockPool pool(num_blocks, 1 + static_cast<int>(rng.next_u64() % 4), BlockPoolOptions{.caching = true, .free_order = order});
        std::vector<int> held;
        for (int step = 0, next = 0; step < 12; ++step) {
            if (held.empty() || rng.next_u64() % 3) {
                const Ids prompt = join({static_cast<int>(rng.next_u64() % 3)}, draw_tokens(rng, 3, 10));
                if (!pool.can_allocate(prompt)) continue;
                pool.allocate(next, prompt);
                held.push_back(next++);
                continue;
            }
            const size_t at = rng.next_u64() % held.size();
            const int request = held[at];
            Case c{pool.free_queue(), pool.block_table(request), {}, {}, order, {}};
            for (int id = 0; id < num_blocks; ++id) {
                c.counts.push_back(pool.block(id).ref_count);
                c.cached.push_back(pool.block(id).hash.has_value());
            }
            pool.free(request);
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
            c.after = pool.free_queue();
            cases.push_back(c);
        }
    }
    const std::vector<Ids> found = sandbox::run<std::vector<Ids>>("your_free_queue_after", [&] {
        std::vector<Ids> out;
        for (const Case& c : cases) out.push_back(your_free_queue_after(c.queue, c.table, c.counts, c.cached, c.order));
        return out;
    });
    REQUIRE(cases.size() >= 40);
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        FEEDBACK("a free drawn with seed " << seed << ": queue " << list(c.queue) << ", table " << list(c.table)
                                           << ", counts " << list(c.counts) << ", cached blocks "
                                           << show(c.cached, range(0, static_cast<int>(c.cached.size()))) << ", order "
                                           << order_name(c.order));
        FEEDBACK("expected: " << list(c.after) << " (a BlockPool's free)\nfound:    " << list(found[i]));
        FEEDBACK((found[i] == c.after ? std::string() : "hint: " + queue_diagnosis(c.after, found[i], c.queue, c.order)));
        REQUIRE(found[i] == c.after);
    }
}
