// Chapter 12, parts 1 and 2: block tables drawn for three prompts, and vLLM's worked example of
// prefix caching replayed on the block manager (BlockPool, decoding/block_pool.hpp).
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chapter12.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/block_pool.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace chapter12 {
namespace {

// "[ 0* 1* 2  9]": a table's blocks, * on those another table holds too.
std::string table_text(const BlockPool& pool, const std::vector<int>& table) {
    std::string out = "[";
    char buf[16];
    for (size_t k = 0; k < table.size(); ++k) {
        std::snprintf(buf, sizeof buf, "%s%2d%s", k ? " " : "", table[k], pool.block(table[k]).ref_count > 1 ? "*" : " ");
        out += buf;
    }
    return out + "]";
}

// "A: ...ing of life? A:": a request's label, the last 12 characters of its question (all of a
// shorter one)
std::string label(const char* name, const std::string& question) {
    return std::string(name) + ": " + (question.size() > 12 ? "..." + question.substr(question.size() - 12) : question);
}

std::vector<int> range(int from, int to) {
    std::vector<int> t;
    for (int i = from; i < to; ++i) t.push_back(i);
    return t;
}

std::vector<int> join(std::vector<int> a, const std::vector<int>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

std::string ids_text(const std::vector<int>& ids) {
    std::string out;
    for (size_t k = 0; k < ids.size(); ++k) {
        if (k) out += ' ';
        out += std::to_string(ids[k]);
    }
    return out;
}

void block_tables(const Session& s, const Questions& questions) {
    const int block_size = 4, num_blocks = 24;
    BlockPool pool(num_blocks, block_size);
    const std::vector<int> a = s.tokenizer.encode(kPreamble + questions[0]);
    const std::vector<int> b = s.tokenizer.encode(kPreamble + questions[1]);
    std::printf("A pool of %d blocks of %d positions. Both prompts start with the same %zu-character preamble:\n  \"%s\"\n",
                num_blocks, block_size, kPreamble.size(), one_line(kPreamble).c_str());
    const Admission first = pool.allocate(0, a);
    const Admission second = pool.allocate(1, b);
    const std::optional<std::pair<int, int>> copy = pool.fork(0, 2);  // a second sample of A
    std::printf("\n  %-24s %7s %6s  %s\n", "request", "tokens", "cached", "block table (* held by more than one)");
    std::printf("  %-24s %7zu %6d  %s\n", label("A", questions[0]).c_str(), a.size(),
                first.cached_tokens, table_text(pool, pool.block_table(0)).c_str());
    std::printf("  %-24s %7zu %6d  %s\n", label("B", questions[1]).c_str(), b.size(),
                second.cached_tokens, table_text(pool, pool.block_table(1)).c_str());
    std::printf("  %-24s %7zu %6s  %s\n", "A's second sample", a.size(), "fork", table_text(pool, pool.block_table(2)).c_str());
    std::printf("\n  B found its first %d tokens cached (%d whole blocks, hashed over A's tokens) and computed %zu.\n",
                second.cached_tokens, second.cached_tokens / block_size, b.size() - static_cast<size_t>(second.cached_tokens));
    if (copy)
        std::printf("  The fork shares A's full blocks and got block %d, a copy of A's partial block %d (%zu of %d\n"
                    "  positions filled), since each sample writes its next token there.\n",
                    copy->second, copy->first, a.size() % block_size, block_size);
    const int held = num_blocks - pool.num_free_blocks();
    std::printf("  Blocks held: %d of %d (%d positions) for three sequences of %zu positions in all.\n", held,
                num_blocks, held * block_size, a.size() + b.size() + a.size());
    std::printf("  Free queue, taken from the left: %s\n", ids_text(pool.free_queue()).c_str());
    for (int r : {0, 1, 2}) pool.free(r);
}

void vllm_example() {
    // docs/design/prefix_caching.md's example: block size 4, 10 blocks; request 0 has 15 tokens,
    // request 1 has 14 (its first 10 request 0's), request 2 has 29 (its first 12 request 0's)
    BlockPool pool(10, 4);
    const std::vector<int> r0 = range(100, 115), r1 = join(range(100, 110), range(200, 204)),
                           r2 = join(range(100, 112), range(300, 317));
    const auto line = [&](const char* when, const std::string& what, const std::vector<int>& table) {
        std::printf("  %-7s %-50s %-26s %s\n", when, what.c_str(), ids_text(table).c_str(),
                    ids_text(pool.free_queue()).c_str());
    };
    std::printf("  %-7s %-50s %-26s %s\n", "time", "", "its blocks", "free queue (taken from the left)");
    line("1", "request 0 arrives: 15 tokens, nothing cached", pool.allocate(0, r0).blocks);
    pool.append(0, std::vector<int>{115});
    line("2, 3", "request 0 decodes 2 tokens (block 3 fills)", pool.append(0, std::vector<int>{116}));
    const Admission a1 = pool.allocate(1, r1);
    line("4", "request 1: 14 tokens, 10 shared, " + std::to_string(a1.cached_tokens) + " hit", a1.blocks);
    pool.free(0);
    line("5", "request 0 ends: its blocks freed tail first", {});
    pool.free(1);
    line("6", "request 1 ends", {});
    const Admission a2 = pool.allocate(2, r2);
    line("7", "request 2: 29 tokens, 12 shared, " + std::to_string(a2.cached_tokens) + " hit", a2.blocks);
    pool.free(2);
    std::printf("  At time 7 the three hits (0 1 2) were taken out of the queue before any new block, and the\n"
                "  new ones came from its head: 7 8 9, then 4 and 3, whose cached prefix was evicted then.\n");
}

}  // namespace chapter12
