// Exercise 07.2 - How big the KV cache is.                                 Chapter 07: the KV cache
//
// A KV cache keeps a key and a value (2) for every layer, every position and every row (sequence
// of a batch), each `width` values of `bytes_per_value` bytes. Return its size in bytes:
//   2 x n_layer x positions x width x bytes_per_value x rows
// `width` is the key (or value) width of one layer: n_embd for GPT-2, n_kv_heads x head_dim with
// grouped-query attention. Throw decodebook::Error (problem, fix) when a count is negative (any of
// them, wherever it stands) or the exact size does not fit in 64 unsigned bits; never return a
// wrapped-around number. A count of 0 gives 0, which fits, however large the others are.
//
//   GPT-2 124M (12 layers, 768 wide, 1024 positions, float32 = 4 bytes):  75,497,472 bytes (72 MiB)
//   a 7B model (32 layers, 4096 wide), 8,192 tokens in bf16 (2 bytes):   4,294,967,296 (4 GiB)
//   2 x 2^20 x 2^20 x 2^20 x 4 = 2^63 fits (uint64_t, not int64_t); with rows 2 it is 2^64: throw
//
// Tested by: "ex07.2 ..." in tests/exercises/test_07_kv_cache.cpp (the cases above worked by hand,
// published model shapes and batches from tests/data/kv_cache.json, which
// tests/reference/kv_cache.py computes with Python's unbounded integers, negative counts, and
// sizes at and beyond 2^64).
// Do not call decodebook::kv_cache_bytes or KvCache::bytes: they are the answer.
// Graded by: ./grade 07
#include <limits>

#include "decodebook/exercises.hpp"

namespace decodebook {

uint64_t your_kv_cache_bytes(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value,
                             int64_t rows) {
    // TODO: multiply the six factors, refusing negative counts and a product beyond 64 bits.
    (void)n_layer, (void)positions, (void)width, (void)bytes_per_value, (void)rows;
    throw NotImplemented("07.2 (your_kv_cache_bytes)", "exercises/07-kv-cache/kv_size.cpp");
}

}  // namespace decodebook
