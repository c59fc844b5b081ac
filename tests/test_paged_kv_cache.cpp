// Chapter 12: the paged KV cache. Its bits against chapter 07's contiguous cache (the same
// positions cut into scattered blocks), on every kernel target and on 1 and 2 threads; a prompt
// prefilled in any split on the invariant kernels; sharing and copy-on-write; the refusals.
#include <catch2/catch.hpp>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/paged_kv_cache.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::KernelTarget;
using golden::model;
using golden::Threads;
using golden::tokenizer;

namespace {

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// `n` blocks for a sequence, scattered over the pool: every third id from `first`, wrapping, so
// neighbouring positions never sit in neighbouring blocks.
std::vector<int> scattered(size_t n, size_t first, size_t pool) {
    std::vector<int> table;
    for (size_t i = 0; i < n; ++i) table.push_back(static_cast<int>((first + 3 * i) % pool));
    return table;
}

// Keys (or values) of position p of a sequence, one layer, read through its table.
const float* paged_row(const xt::xtensor<float, 3>& t, std::span<const int> table, size_t p) {
    const size_t bs = t.shape(1), C = t.shape(2);
    return t.data() + (static_cast<size_t>(table[p / bs]) * bs + p % bs) * C;
}

}  // namespace

TEST_CASE("paged prefill and decode give the contiguous cache's bits on every target and thread count", "[paged]") {
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size), C = static_cast<size_t>(mc.n_embd);
    // a prompt longer than several blocks, and one shorter than a block of 16
    const std::vector<std::vector<int>> prompts = {
        tokenizer().encode("Q: What is the difference between a cat and a comma? A: One has claws"),
        tokenizer().encode("A fortune:")};
    const std::vector<int> next = {11, 22};
    const size_t steps = 6, capacity = 64, pool = 70;  // 22 blocks of 3 per table, never wrapping
    // every target on 1 and 2 threads at block size 3 (not a multiple of attention's four-position
    // step, so blocks cut its groups); the best target at 16 (vLLM's default) and 4 too
    struct Run {
        std::string target;
        int threads;
        size_t bs;
    };
    std::vector<Run> runs;
    for (const std::string& target : kernel_targets_supported())
        for (const int threads : {1, 2}) runs.push_back({target, threads, 3});
    for (const size_t bs : {size_t{16}, size_t{4}}) runs.push_back({kernel_targets_supported().front(), 1, bs});
    for (const auto& [target, threads, bs] : runs) {
        KernelTarget use(target);
        Threads t(threads);
        INFO("target " << target << " threads " << threads << " block size " << bs);
        KvCache rows(mc, 2, capacity);
        PagedKvCache paged(mc, pool, bs, 8);
        const std::vector<std::vector<int>> tables = {scattered((capacity + bs - 1) / bs, 0, pool),
                                                      scattered((capacity + bs - 1) / bs, 1, pool)};
        for (size_t r = 0; r < 2; ++r) {
            const xt::xtensor<float, 1> a = model().prefill(prompts[r], rows, r);
            const xt::xtensor<float, 1> b = model().prefill(prompts[r], paged, tables[r], 0);
            CHECK(same_bits(a.data(), b.data(), V));
        }
        for (size_t step = 0; step < steps; ++step) {
            const BatchKernels kernels = step % 2 == 0 ? BatchKernels::Invariant : BatchKernels::Fast;
            model().decode(next, {0, 1}, rows, kernels);
            const std::vector<PagedSlot> slots = {{tables[0], prompts[0].size() + step},
                                                  {tables[1], prompts[1].size() + step}};
            model().decode(next, slots, paged, kernels);
            INFO("step " << step);
            CHECK(same_bits(rows.logits().data(), paged.logits().data(), 2 * V));
        }
        // every position's keys and values, read through the tables, are the rows'
        bool same = true;
        for (size_t l = 0; l < static_cast<size_t>(mc.n_layer); ++l)
            for (size_t r = 0; r < 2; ++r)
                for (size_t p = 0; p < prompts[r].size() + steps; ++p) {
                    const size_t at = (r * capacity + p) * C;
                    same = same && same_bits(rows.keys(l).data() + at, paged_row(paged.keys(l), tables[r], p), C) &&
                           same_bits(rows.values(l).data() + at, paged_row(paged.values(l), tables[r], p), C);
                }
        CHECK(same);
    }
}

TEST_CASE("on the invariant kernels a prompt split any way gives the bits of the whole and of token by token", "[paged]") {
    // what makes a hot prefix cache give the cold run's bits: the cached blocks plus the rest,
    // chunked prefill, and one token per call all sum every product in one order
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size);
    const std::vector<int> prompt =
        tokenizer().encode("Q: Why did the chicken cross the road twice? A: To prove it was no accident.");
    REQUIRE(prompt.size() > 12);
    const std::vector<int> head(prompt.begin(), prompt.begin() + 8), tail(prompt.begin() + 8, prompt.end());
    for (const int threads : {1, 2}) {
        Threads t(threads);
        INFO("threads " << threads);
        PagedKvCache whole_cache(mc, 40, 4, 64), split_cache(mc, 40, 4, 3), one_cache(mc, 40, 4, 1);
        const std::vector<int> table = scattered(prompt.size() / 4 + 1, 5, 40);
        REQUIRE(5 + 3 * (table.size() - 1) < 40);  // distinct blocks
        const xt::xtensor<float, 1> whole = model().prefill(prompt, whole_cache, table, 0, BatchKernels::Invariant);
        // the first two blocks first (a prefix cache's hit), then the rest in calls of 3 tokens
        model().prefill(head, split_cache, table, 0, BatchKernels::Invariant);
        const xt::xtensor<float, 1> split = model().prefill(tail, split_cache, table, head.size(), BatchKernels::Invariant);
        CHECK(same_bits(whole.data(), split.data(), V));
        // one token per call: the first by prefill, the rest by decode
        model().prefill({prompt[0]}, one_cache, table, 0, BatchKernels::Invariant);
        for (size_t p = 1; p < prompt.size(); ++p)
            model().decode({prompt[p]}, {PagedSlot{table, p}}, one_cache, BatchKernels::Invariant);
        CHECK(same_bits(whole.data(), one_cache.logits().data(), V));
    }
}

TEST_CASE("two sequences share a prefix's blocks and a fork copies its partial block before writing", "[paged]") {
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size), bs = 4;
    const std::vector<int> prompt = tokenizer().encode("Q: What do you call a fish with no eyes? A:");
    REQUIRE(prompt.size() % bs != 0);  // the last block is partial: a fork must copy it
    const size_t full = prompt.size() / bs;
    PagedKvCache cache(mc, 32, bs, 4);
    std::vector<int> parent;
    for (size_t i = 0; i <= full + 2; ++i) parent.push_back(static_cast<int>(i));
    model().prefill(prompt, cache, parent, 0, BatchKernels::Invariant);
    // the child shares the full blocks and gets a copy of the partial one
    std::vector<int> child(parent.begin(), parent.begin() + static_cast<long>(full));
    child.push_back(20);
    child.push_back(21);
    child.push_back(22);
    cache.copy_block(parent[full], 20, prompt.size() % bs);
    // each continues with its own token; alone, in a fresh cache, each gives the same bits
    const std::vector<int> tokens = {7, 9};
    model().decode(tokens, {{parent, prompt.size()}, {child, prompt.size()}}, cache, BatchKernels::Invariant);
    for (size_t i = 0; i < 2; ++i) {
        PagedKvCache alone(mc, 8, bs, 4);
        const std::vector<int> table = {3, 1, 4, 0, 5, 2, 6, 7};
        model().prefill(prompt, alone, table, 0, BatchKernels::Invariant);
        model().decode({tokens[i]}, {PagedSlot{table, prompt.size()}}, alone, BatchKernels::Invariant);
        INFO("sequence " << i);
        CHECK(same_bits(cache.logits().data() + i * V, alone.logits().data(), V));
    }
    // a fork that forgot the copy overwrites its parent's position: the parent's next step changes
    PagedKvCache careless(mc, 32, bs, 4), careful(mc, 32, bs, 4);
    std::vector<int> sharing(parent.begin(), parent.begin() + static_cast<long>(full) + 1);
    sharing.push_back(23);
    for (PagedKvCache* c : {&careless, &careful}) {
        model().prefill(prompt, *c, parent, 0, BatchKernels::Invariant);
        model().decode({7}, {PagedSlot{parent, prompt.size()}}, *c, BatchKernels::Invariant);
    }
    model().decode({9}, {PagedSlot{sharing, prompt.size()}}, careless, BatchKernels::Invariant);
    for (PagedKvCache* c : {&careless, &careful})
        model().decode({5}, {PagedSlot{parent, prompt.size() + 1}}, *c, BatchKernels::Invariant);
    CHECK_FALSE(same_bits(careless.logits().data(), careful.logits().data(), V));
}

TEST_CASE("the paged cache counts its bytes and refuses what does not fit with a fix", "[paged][errors]") {
    const ModelConfig& mc = model().config();
    const size_t C = static_cast<size_t>(mc.n_embd);
    PagedKvCache cache(mc, 10, 16, 4);
    CHECK(cache.block_bytes() == 2u * static_cast<uint64_t>(mc.n_layer) * 16 * C * 4);
    CHECK(cache.bytes() == 10 * cache.block_bytes());
    CHECK(cache.max_positions() == static_cast<size_t>(mc.n_positions));
    CHECK(cache.max_tokens_per_step() == 4);
    const std::vector<int> prompt =
        tokenizer().encode("The cat sat on the mat, and then a dog came by and sat on the cat, who left.");
    REQUIRE(prompt.size() > 16);
    const std::vector<int> one = {0};
    const std::string blocks = std::to_string((prompt.size() + 15) / 16);
    CHECK_THROWS_WITH(model().prefill(prompt, cache, one, 0), Catch::Contains("give the sequence " + blocks + " blocks"));
    CHECK_THROWS_WITH(model().prefill(prompt, cache, std::vector<int>{0, 10, 1, 2}, 0), Catch::Contains("outside the pool"));
    CHECK_THROWS_WITH(model().prefill({}, cache, one, 0), Catch::Contains("no tokens"));
    CHECK_THROWS_WITH(model().prefill({static_cast<int>(mc.vocab_size)}, cache, one, 0), Catch::Contains("vocabulary"));
    CHECK_THROWS_WITH(model().decode({1, 2, 3, 4, 5}, std::vector<PagedSlot>(5, PagedSlot{one, 0}), cache),
                      Catch::Contains("up to 4 tokens"));
    CHECK_THROWS_WITH(model().decode({1}, {PagedSlot{one, 16}}, cache), Catch::Contains("give the sequence 2 blocks"));
    CHECK_THROWS_WITH(model().decode({1}, {PagedSlot{std::vector<int>(20, 0), static_cast<size_t>(mc.n_positions)}}, cache),
                      Catch::Contains("max_positions"));
    CHECK_THROWS_WITH(cache.copy_block(0, 0, 4), Catch::Contains("twice"));
    CHECK_THROWS_WITH(cache.copy_block(0, 10, 4), Catch::Contains("outside the pool"));
    CHECK_THROWS_WITH(cache.copy_block(0, 1, 17), Catch::Contains("at most block_size"));
    CHECK_THROWS_WITH(PagedKvCache(mc, 0, 16), Catch::Contains("at least one block"));
    CHECK_THROWS_WITH(PagedKvCache(mc, 4, 0), Catch::Contains("at least one block"));
    CHECK_THROWS_WITH(PagedKvCache(mc, 4, 16, 0), Catch::Contains("max_tokens_per_step >= 1"));
    CHECK_THROWS_WITH(PagedKvCache(mc, 4, 16, 65), Catch::Contains("num_blocks x block_size"));
    CHECK_THROWS_WITH(PagedKvCache(mc, 4, 16, 4, static_cast<size_t>(mc.n_positions) + 1), Catch::Contains("context"));
}
