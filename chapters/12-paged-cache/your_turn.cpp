// Chapter 12: the chapter's examples through your exercises (exercises/12-paged-cache/).
#include <cstdio>
#include <string>
#include <vector>

#include "chapter12.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/decoding/block_pool.hpp"
#include "decodebook/exercises.hpp"

using namespace decodebook;

namespace chapter12 {
namespace {

// "7 hashes, 3 tokens hit": what 12.1 returned, for a status line
std::string hit_text(size_t hashes, int hit) {
    return std::to_string(hashes) + " block hashes, " + std::to_string(hit) + " tokens hit";
}

}  // namespace

void report_exercises(const Session& s, const Questions& questions) {
    // 12.1: part 1's prompts at block size 4: A's chained hashes, and what B hits once A is cached
    const int block_size = 4;
    const std::vector<int> a = s.tokenizer.encode(kPreamble + questions[0]);
    const std::vector<int> b = s.tokenizer.encode(kPreamble + questions[1]);
    std::vector<BlockHash> your_hashes;
    int your_hit = 0;
    const ExerciseAttempt first = try_exercise([&] {
        your_hashes = your_hash_full_blocks(a, block_size);
        your_hit = your_prefix_hit_tokens(b, {a}, block_size);
    });
    BlockPool pool(64, block_size);
    pool.allocate(0, a);
    const int library_hit = static_cast<int>(pool.computed_blocks(b).size()) * block_size;
    pool.free(0);
    const std::vector<BlockHash> library_hashes = hash_full_blocks(a, block_size);
    print_exercise_status(course_exercise("your_hash_full_blocks"), first,
                          your_hashes == library_hashes && your_hit == library_hit,
                          hit_text(your_hashes.size(), your_hit) + (your_hashes == library_hashes ? "" : " (hashes differ)"),
                          hit_text(library_hashes.size(), library_hit));

    // 12.2: part 2's time 5 (vLLM's worked example): request 0 is freed while request 1 shares
    // its first two blocks; the books are read from a pool, and the pool's own free is the answer
    std::vector<int> yours[2], library[2];
    std::string error;
    bool implemented = true;
    for (const FreeOrder order : {FreeOrder::Lru, FreeOrder::UncachedFirst}) {
        BlockPool example(10, 4, BlockPoolOptions{.caching = true, .free_order = order});
        std::vector<int> r0, r1;
        for (int t = 100; t < 115; ++t) r0.push_back(t);
        for (int t = 100; t < 110; ++t) r1.push_back(t);
        for (int t = 200; t < 204; ++t) r1.push_back(t);
        example.allocate(0, r0);
        example.append(0, std::vector<int>{115});
        example.append(0, std::vector<int>{116});
        example.allocate(1, r1);
        std::vector<int> counts;
        std::vector<bool> cached;
        for (int id = 0; id < example.num_blocks(); ++id) {
            counts.push_back(example.block(id).ref_count);
            cached.push_back(example.block(id).hash.has_value());
        }
        const size_t k = order == FreeOrder::Lru ? 0 : 1;
        const ExerciseAttempt attempt = try_exercise([&] {
            yours[k] = your_free_queue_after(example.free_queue(), example.block_table(0), counts, cached, order);
        });
        implemented = implemented && attempt.implemented;
        if (error.empty()) error = attempt.error;
        example.free(0);
        library[k] = example.free_queue();
        example.free(1);
    }
    print_exercise_status(course_exercise("your_free_queue_after"), ExerciseAttempt{implemented, error},
                          yours[0] == library[0] && yours[1] == library[1],
                          "Lru " + ids_text(yours[0]) + ", UncachedFirst " + ids_text(yours[1]),
                          "Lru " + ids_text(library[0]) + ", UncachedFirst " + ids_text(library[1]));
}

}  // namespace chapter12
