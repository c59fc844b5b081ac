// Exercise 07.3 - Reordering the cache for beam search.                    Chapter 07: the KV cache
//
// After a beam-search step, beam r continues the sequence of beam source[r] (its parent), so its
// cache row must become the parent's. `rows` is one layer's keys (or values), (R, positions, C).
// Afterwards row r holds what row source[r] held BEFORE the call, for every r at once: a row may
// be copied to several rows, or dropped. Throw decodebook::Error (problem, fix) when source.size()
// is not R or an index is outside 0..R-1, before changing anything.
//
//   rows A B C, source {1, 0, 2} -> B A C        source {0, 0, 1} -> A A B
//   rows A B,   source {1, 0}    -> B A          source {1, 1}    -> B B
//
// Tested by: "ex07.3 ..." in tests/exercises/test_07_kv_cache.cpp (swaps, a row copied to several,
// chains such as {0, 0, 1} and {2, 0, 1}, the identity, every value of every position checked,
// and bad sources refused with the rows untouched).
// Do not call decodebook::reorder_rows or KvCache::reorder: they are the answer.
// Graded by: ./grade 07
#include <algorithm>

#include "decodebook/exercises.hpp"

namespace decodebook {

void your_reorder_rows(xt::xtensor<float, 3>& rows, const std::vector<int>& source) {
    // TODO: make row r a copy of the old row source[r], for every r.
    (void)rows, (void)source;
    throw NotImplemented("07.3 (your_reorder_rows)", "exercises/07-kv-cache/reorder.cpp");
}

}  // namespace decodebook
