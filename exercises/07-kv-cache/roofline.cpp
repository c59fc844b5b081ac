// Exercise 07.4 - The decode roofline of any GPT-2.                         Chapter 07: the KV cache
//
// A decode step reads every weight once, so no step can be faster than
//     (bytes of weights one step reads) / (bytes per second the memory delivers).
// Return that time in milliseconds for a GPT-2 of this shape (config.vocab_size, config.n_embd,
// config.n_layer) stored with `bytes_per_weight` bytes per weight, at `bytes_per_second`.
// Count what one decode step of chapter 07's model reads: every tensor of gpt2_tensor_schema (see
// model/gpt2.hpp) once, except the position table wpe, of which a step reads the one row of its
// position. GPT-2 ties its lm_head to wte: wte is read once, not twice.
// Throw decodebook::Error (problem, fix) when bytes_per_weight < 1, when the bandwidth is not a
// positive finite number, or when a dimension is negative.
//
//   GPT-2 124M (V 50257, C 768, 12 layers), float32, at 49.46 GB/s:  494,616,576 bytes -> 10.0 ms
//   a 70B model in bf16 on a 3 TB/s GPU (not a GPT-2 shape, same arithmetic): 46.7 ms
//
// Tested by: "ex07.4 ..." in tests/exercises/test_07_kv_cache.cpp (the embedded model and GPT-2
// 124M worked by hand, GPT-2 small's and XL's published parameter counts, a 7B-sized shape
// worked by hand, the loaded embedded model's own count, other byte widths and bandwidths, bad
// arguments).
// Do not call decodebook::decode_roofline_ms, gpt2_decode_bytes or Gpt2::decode_weight_bytes:
// they are the answer.
// Graded by: ./grade 07
#include "decodebook/exercises.hpp"

namespace decodebook {

double your_decode_roofline_ms(const ModelConfig& config, int bytes_per_weight, double bytes_per_second) {
    // TODO: count the weights one decode step reads, then bytes / bandwidth, in milliseconds.
    (void)config, (void)bytes_per_weight, (void)bytes_per_second;
    throw NotImplemented("07.4 (your_decode_roofline_ms)", "exercises/07-kv-cache/roofline.cpp");
}

}  // namespace decodebook
