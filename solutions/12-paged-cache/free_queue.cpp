// Solution 12.2 - The free queue's order after a request is freed.    Chapter 12: paged cache
// vLLM v1 (vllm-project/vllm): the manager frees a request's blocks in reverse order
// (vllm/v1/core/single_type_kv_cache_manager.py at 129ab7c6, free); BlockPool.free_blocks
// (block_pool.py at c59cb794) decrements each count and queues the blocks that reach 0: since its
// PR #42656 those with no hash are prepended (prepend_n keeps their order) and cached ones
// appended; before it, all were appended (FreeOrder::Lru, the design doc's example).
#include <deque>
#include <string>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_free_queue_after(const std::vector<int>& queue, const std::vector<int>& table,
                                       const std::vector<int>& counts, const std::vector<bool>& cached, FreeOrder order) {
    if (counts.size() != cached.size())
        throw Error("counts holds " + std::to_string(counts.size()) + " blocks and cached " +
                        std::to_string(cached.size()),
                    "give one count and one cached flag per block of the pool");
    std::vector<int> left = counts;
    std::vector<int> released;
    for (auto it = table.rbegin(); it != table.rend(); ++it) {
        const int id = *it;
        if (id < 0 || static_cast<size_t>(id) >= left.size())
            throw Error("block " + std::to_string(id) + " of the table is outside the pool of " +
                            std::to_string(left.size()) + " blocks",
                        "give block ids 0.." + std::to_string(static_cast<int>(left.size()) - 1));
        if (left[static_cast<size_t>(id)] < 1)
            throw Error("block " + std::to_string(id) + " of the table has count " +
                            std::to_string(left[static_cast<size_t>(id)]) + ", so no request holds it",
                        "give the counts before the free: every block of the table is held at least once");
        if (--left[static_cast<size_t>(id)] == 0) released.push_back(id);
    }
    std::deque<int> out(queue.begin(), queue.end());
    if (order == FreeOrder::UncachedFirst) {
        for (auto it = released.rbegin(); it != released.rend(); ++it)
            if (!cached[static_cast<size_t>(*it)]) out.push_front(*it);  // prepend_n: their order kept
    }
    for (int id : released)
        if (order == FreeOrder::Lru || cached[static_cast<size_t>(id)]) out.push_back(id);
    return {out.begin(), out.end()};
}

}  // namespace decodebook
