#pragma once
/// @file model/quant.hpp
/// @brief Fewer bits per weight (chapter 13): ggml's q8_0 and q4_0 block formats, byte for byte.
///
/// A row of weights is cut into blocks of 32; each block keeps one scale d (IEEE binary16) and 32
/// small integers q, and stands for the values q d. q8_0 keeps 8-bit q (34 bytes a block, 8.5
/// bits a weight), q4_0 4-bit q (18 bytes, 4.5 bits), against 16 bits in f16 and 32 in f32: a
/// decode step, which reads every weight once, reads that much less. The rules are ggml's
/// reference quantizers (`quantize_row_q8_0_ref`, `quantize_row_q4_0_ref` in
/// ggml/src/ggml-quants.c) and its generic dot products (`ggml_vec_dot_q8_0_q8_0_generic`,
/// `ggml_vec_dot_q4_0_q8_0_generic` in ggml/src/ggml-cpu/quants.c), so a block made here is the
/// block llama.cpp makes from the same floats.
#include <cstddef>
#include <cstdint>
#include <string>

namespace decodebook {

/// Weights per block, in q8_0 and q4_0 alike (ggml's QK8_0 and QK4_0). Introduced in chapter 13.
inline constexpr size_t kQuantBlock = 32;

/// One q8_0 block: 32 weights as q[j] d, q[j] in [-127, 127]. ggml's `block_q8_0`.
/// Introduced in chapter 13.
struct BlockQ8_0 {
    uint16_t d;                 ///< the scale, binary16 bits: amax / 127
    int8_t qs[kQuantBlock];     ///< the quants, in order
};
static_assert(sizeof(BlockQ8_0) == 34, "q8_0 blocks are 34 bytes, as ggml's");

/// One q4_0 block: 32 weights as (q[j] - 8) d, q[j] in [0, 15], two to a byte: weight j in the low
/// four bits of qs[j] and weight j + 16 in its high four. ggml's `block_q4_0`.
/// Introduced in chapter 13.
struct BlockQ4_0 {
    uint16_t d;                      ///< the scale, binary16 bits: max / -8, max the value of largest magnitude
    uint8_t qs[kQuantBlock / 2];     ///< the quants, two per byte
};
static_assert(sizeof(BlockQ4_0) == 18, "q4_0 blocks are 18 bytes, as ggml's");

/// Quantize n floats (n a multiple of 32) to n / 32 q8_0 blocks, as ggml's reference does: per
/// block amax = the largest |x|, d = amax / 127 in float32, id = 1 / d (0 when d is 0), each
/// q = roundf(x id) (halves away from zero) with that float32 d, then d stored rounded to
/// binary16 (ties to even). Introduced in chapter 13.
/// @param x (n) the values
/// @param n how many, a multiple of 32
/// @param out (n / 32) the blocks, overwritten
/// @param name what the values are (a tensor's name), for the error
/// @throws Error when n is not a multiple of 32, or a value is not finite or so large that the
/// block's scale overflows binary16 (beyond 65504 x 127), naming `name` and the element.
void quantize_q8_0(const float* x, size_t n, BlockQ8_0* out, const std::string& name = "the values");

/// Quantize n floats (n a multiple of 32) to n / 32 q4_0 blocks, as ggml's reference does: per
/// block max = the first value whose |x| is largest, with its sign; d = max / -8, id = 1 / d (0
/// when d is 0), q = min(15, (int8)(x id + 8.5)) (truncation toward zero), d stored rounded to
/// binary16. So max itself becomes q = 0, i.e. -8 d; a block of zeros gets d = -0 (0x8000) and
/// q = 8. Introduced in chapter 13.
/// @param x (n) the values
/// @param n how many, a multiple of 32
/// @param out (n / 32) the blocks, overwritten
/// @param name what the values are (a tensor's name), for the error
/// @throws Error as quantize_q8_0 (the scale overflows beyond 65504 x 8).
void quantize_q4_0(const float* x, size_t n, BlockQ4_0* out, const std::string& name = "the values");

/// The n floats that n / 32 q8_0 blocks stand for: q[j] d in float32 (d widened exactly).
/// Introduced in chapter 13.
void dequantize_q8_0(const BlockQ8_0* blocks, size_t n, float* out);

/// The n floats that n / 32 q4_0 blocks stand for: (q[j] - 8) d in float32.
/// Introduced in chapter 13.
void dequantize_q4_0(const BlockQ4_0* blocks, size_t n, float* out);

/// The dot product of two q8_0 rows of n values as ggml's generic `vec_dot` computes it: per block
/// the integer sum of q_x q_y, then sum += sumi (d_x d_y) in float32, block by block.
/// Introduced in chapter 13.
float dot_q8_0(const BlockQ8_0* x, const BlockQ8_0* y, size_t n);

/// The dot product of a q4_0 row with a q8_0 row (the activations, quantized: ggml's
/// `vec_dot_type` for q4_0) as ggml's generic `vec_dot` computes it: per block the integer sums of
/// the low and the high nibbles' (q - 8) q_y, then sum += sumi d_x d_y in float32 (left to right).
/// Introduced in chapter 13.
float dot_q4_0_q8_0(const BlockQ4_0* x, const BlockQ8_0* y, size_t n);

}  // namespace decodebook
