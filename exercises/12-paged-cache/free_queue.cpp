// Exercise 12.2 - The free queue's order after a request is freed.    Chapter 12: paged cache
//
// Blocks no request holds wait in the free queue; a new block is taken from its head, evicting
// whatever prefix it cached. So the order in which a finished request's blocks join the queue
// decides what the cache forgets first. Return the queue after the request holding `table` is
// freed:
//   - walk `table` from its LAST block to its first; each block's count (counts[id], how many
//     requests hold it) drops by 1;
//   - a block whose count reaches 0 is released; one still held by another request is not;
//   - FreeOrder::Lru (vLLM's design doc): every released block joins the tail, in the order
//     released, so the request's tail, the least shareable part, is evicted first;
//   - FreeOrder::UncachedFirst (vLLM since May 2026): released blocks that hold no hash
//     (cached[id] false) go to the HEAD, keeping the order they were released in (the first one
//     released ends up first in the queue), and the cached ones join the tail as above: a block
//     worth nothing to the cache is reused before any cached one.
//   - `queue` is given head first; the blocks already in it keep their order.
//
//   vLLM's worked example (docs/design/prefix_caching.md), time 5: queue 7 8 9, request 0's
//   table 0 1 2 3 4, counts 2 2 1 1 1 (blocks 0 and 1 are shared with request 1), blocks 0-3 cached:
//     Lru            -> 7 8 9 4 3 2    (4, 3, 2 released in that order; 1 and 0 stay held)
//     UncachedFirst  -> 4 7 8 9 3 2    (4 holds no hash: to the head)
//
// Throw decodebook::Error (problem, fix) when counts and cached differ in length, a table id is
// outside 0..counts.size() - 1, or a table block's count is below 1 (a free block is held by no one).
//
// Tested by: "ex12.2 ..." in tests/exercises/test_12_paged_cache.cpp (the cases above and more,
// vLLM's test_evict and test_prefill orders, the independent reference's queues
// (tests/data/paged.json), and frees drawn when the tests run, checked against a BlockPool).
// Do not call a BlockPool or FreeBlockQueue: they are the answer.
// Graded by: ./grade 12
#include <deque>
#include <vector>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_free_queue_after(const std::vector<int>& queue, const std::vector<int>& table,
                                       const std::vector<int>& counts, const std::vector<bool>& cached, FreeOrder order) {
    // TODO: check the inputs; walk the table backwards, dropping counts; place each block that
    // reaches 0 by `order`.
    (void)queue, (void)table, (void)counts, (void)cached, (void)order;
    throw NotImplemented("12.2 (your_free_queue_after)", "exercises/12-paged-cache/free_queue.cpp");
}

}  // namespace decodebook
