// Exercise 07.1 - The cached attention step.                               Chapter 07: the KV cache
//
// One layer, one sequence, one new token at `position`. `keys` and `values` are the layer's cache
// (capacity, C): rows 0..position-1 hold the earlier tokens' keys and values; the rows after
// `position` are not filled yet and must not be read (their content is anything, even NaN).
// `qkv` (3C) is the new token's fused projection [q | k | v], n_head heads of D = C / n_head.
//   - afterwards row `position` of keys is k, row `position` of values is v; no other row changes;
//   - return (C), head h in columns h*D .. h*D+D-1:
//       score_s = q_h . k_s,h / sqrt(D) for s = 0..position (the new token included),
//       p = softmax(score),   out_h = sum_s p_s v_s,h
//
//   C 2, one head, position 0, qkv [5, -1 | 2, 3 | 7, -4]: out [7, -4] (a softmax of one score is 1)
//   C 2, two heads (D 1), position 1, keys row 0 (0, 5), values row 0 (10, 2),
//   qkv [ln 3, 0 | 1, 7 | 20, 4]: head 0 scores (0, ln 3), p (1/4, 3/4), out 17.5;
//                                 head 1 scores (0, 0),    p (1/2, 1/2), out 3      -> [17.5, 3]
//
// Tested by: "ex07.1 ..." in tests/exercises/test_07_kv_cache.cpp (the two cases above, the
// 1/sqrt(D) scale, what the cache holds afterwards, unfilled rows full of NaN, and whole sequences
// fed one position at a time against tests/data/kv_cache.json, causal attention computed in one go
// in float64 by tests/reference/kv_cache.py, one of them on the embedded model's layer 0).
// decodebook::softmax (sampling.hpp) is a stable softmax if you want one.
// Do not call decodebook::cached_attention_step or decodebook::attend: they are the answer.
// Graded by: ./grade 07
#include "decodebook/exercises.hpp"

namespace decodebook {

xt::xtensor<float, 1> your_cached_attention_step(xt::xtensor<float, 2>& keys, xt::xtensor<float, 2>& values,
                                                 size_t position, const xt::xtensor<float, 1>& qkv, int n_head) {
    // TODO: store this position's key and value, then attend over positions 0..position, head by head.
    (void)keys, (void)values, (void)position, (void)qkv, (void)n_head;
    throw NotImplemented("07.1 (your_cached_attention_step)", "exercises/07-kv-cache/attention_step.cpp");
}

}  // namespace decodebook
