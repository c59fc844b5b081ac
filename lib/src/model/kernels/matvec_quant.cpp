// Chapter 13: decode's product over weights held in ggml's blocks (WeightDtype::Q8_0, Q4_0;
// model/quant.hpp). Sixteen weights never span two blocks (a row is whole blocks of 32, and the
// body reads from multiples of 16), so each read takes one block's scale d, widens sixteen small
// integers q to float32 in registers and multiplies: q d (q4_0: (q - 8) d) is exactly the float32
// the block stands for (at most 8 bits times binary16's 11), and the sums run in the float32
// kernel's order (the one body, kernels/dots.hpp). So a quantized matrix gives, bit for bit, the
// float32 kernel's result on its dequantized values, from 8.5 or 4.5 bits a weight.
// Shapes are in the comments; every matrix is row-major.
#include <omp.h>

#include <cstdint>
#include <string_view>

#include "common.hpp"
#include "dots.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/quant.hpp"

namespace decodebook {

using namespace kernels_detail;

namespace {

// L bytes at p, each sign-extended to one int32 lane of a register (L = 4, 8 or 16: the register
// of floats of each target). One instruction where the target has it (vpmovsxbd on x86-64-v3 and
// v4), written as inline assembly as the f16 widening is (kernels/matvec_f16.cpp: GCC 12 widened
// a vector of bytes one value at a time, through general registers); on plain x86-64 (SSE2, no
// pmovsx) each byte is spread over its lane by two unpacks and shifted down with its sign.
template <size_t L>
struct Bytes;
template <>
struct Bytes<4> {
    typedef int32_t I __attribute__((vector_size(16)));
    static inline __attribute__((always_inline)) I widen(const void* p) {
        I v;
        asm("movd %1, %0\n\tpunpcklbw %0, %0\n\tpunpcklwd %0, %0\n\tpsrad $24, %0"
            : "=x"(v)
            : "m"(*reinterpret_cast<const char(*)[4]>(p)));
        return v;
    }
    // a block's scale as float32: the integer widening (common.hpp)
    static inline __attribute__((always_inline)) float scale(const uint16_t* d) { return widen_one(*d); }
};
#if DECODEBOOK_MULTI_TARGET
template <>
struct Bytes<8> {
    typedef int32_t I __attribute__((vector_size(32)));
    static inline __attribute__((always_inline)) I widen(const void* p) {
        I v;
        asm("vpmovsxbd %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const char(*)[8]>(p)));
        return v;
    }
    // a block's scale as float32 by F16C's vcvtph2ps, which reads four halves: the scale and the
    // block's first six bytes of quants (every block has at least sixteen), lane 0 kept
    static inline __attribute__((always_inline)) float scale(const uint16_t* d) {
        typedef float F4 __attribute__((vector_size(16)));
        F4 v;
        asm("vcvtph2ps %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const char(*)[8]>(d)));
        return v[0];
    }
};
template <>
struct Bytes<16> {
    typedef int32_t I __attribute__((vector_size(64)));
    static inline __attribute__((always_inline)) I widen(const void* p) {
        I v;
        asm("vpmovsxbd %1, %0" : "=v"(v) : "m"(*reinterpret_cast<const char(*)[16]>(p)));
        return v;
    }
    static inline __attribute__((always_inline)) float scale(const uint16_t* d) { return Bytes<8>::scale(d); }
};
#endif

// How a target reads q8_0 weights: row r of n weights is n / 32 blocks from M + r n / 32; weight i
// is quant i % 32 of block i / 32. Sixteen of them: the block's scale widened once, the quants
// widened lane by lane (sign-extended, converted), times the scale.
template <size_t W_>
struct ReadQ8_0 {
    using Weight = BlockQ8_0;
    using Sums = Partials<16, W_>;
    static inline __attribute__((always_inline)) const BlockQ8_0* row(const BlockQ8_0* M, size_t r, size_t n) {
        return M + r * (n / kQuantBlock);
    }
    static constexpr size_t bytes(size_t i) { return i / kQuantBlock * sizeof(BlockQ8_0) + 2 + i % kQuantBlock; }
    static inline __attribute__((always_inline)) Sums sixteen(const BlockQ8_0* m, size_t i) {
        const BlockQ8_0& block = m[i / kQuantBlock];
        const int8_t* q = block.qs + i % kQuantBlock;
        const float d = Bytes<Sums::kWidth>::scale(&block.d);
        Sums r;
#pragma GCC unroll 4
        for (size_t k = 0; k < Sums::kParts; ++k)
            r.part[k] = __builtin_convertvector(Bytes<Sums::kWidth>::widen(q + k * Sums::kWidth), typename Sums::V) * d;
        return r;
    }
    static inline __attribute__((always_inline)) float one(const BlockQ8_0* m, size_t i) {
        const BlockQ8_0& block = m[i / kQuantBlock];
        return static_cast<float>(block.qs[i % kQuantBlock]) * widen_one(block.d);
    }
};

// How a target reads q4_0 weights: weight i of a block is the low four bits of byte i (i < 16) or
// the high four of byte i - 16. Sixteen from a multiple of 16 are one half of a block: all low
// nibbles or all high, of the same sixteen bytes.
template <size_t W_>
struct ReadQ4_0 {
    using Weight = BlockQ4_0;
    using Sums = Partials<16, W_>;
    static constexpr size_t kHalf = kQuantBlock / 2;
    static inline __attribute__((always_inline)) const BlockQ4_0* row(const BlockQ4_0* M, size_t r, size_t n) {
        return M + r * (n / kQuantBlock);
    }
    static constexpr size_t bytes(size_t i) { return i / kQuantBlock * sizeof(BlockQ4_0) + 2 + i % kHalf; }
    static inline __attribute__((always_inline)) Sums sixteen(const BlockQ4_0* m, size_t i) {
        const BlockQ4_0& block = m[i / kQuantBlock];
        const bool high = i % kQuantBlock >= kHalf;
        const float d = Bytes<Sums::kWidth>::scale(&block.d);
        Sums r;
#pragma GCC unroll 4
        for (size_t k = 0; k < Sums::kParts; ++k) {
            auto v = Bytes<Sums::kWidth>::widen(block.qs + k * Sums::kWidth) & 0xff;  // the byte, unsigned
            v = high ? v >> 4 : v & 0x0f;
            r.part[k] = (__builtin_convertvector(v, typename Sums::V) - 8.0f) * d;
        }
        return r;
    }
    static inline __attribute__((always_inline)) float one(const BlockQ4_0* m, size_t i) {
        const BlockQ4_0& block = m[i / kQuantBlock];
        const uint8_t byte = block.qs[i % kHalf];
        const int q = i % kQuantBlock >= kHalf ? byte >> 4 : byte & 0x0f;
        return static_cast<float>(q - 8) * widen_one(block.d);
    }
};

// One version of each kernel per target: the one body, compiled for it.
template <class Block>
using QuantDotsFn = void (*)(const float*, size_t, const Block*, const float*, size_t, size_t, size_t, size_t, float*);
struct QuantKernels {
    QuantDotsFn<BlockQ8_0> q8_0;
    QuantDotsFn<BlockQ4_0> q4_0;
};

#define DECODEBOOK_QUANT_VERSION(NS, TARGET, W)                                                                  \
    namespace NS {                                                                                               \
    TARGET void dots_q8_0(const float* x, size_t B, const BlockQ8_0* M, const float* bias, size_t rows, size_t n, \
                          size_t r0, size_t r1, float* y) {                                                     \
        dot_rows<ReadQ8_0<W>, W>(x, B, M, bias, rows, n, r0, r1, y);                                             \
    }                                                                                                            \
    TARGET void dots_q4_0(const float* x, size_t B, const BlockQ4_0* M, const float* bias, size_t rows, size_t n, \
                          size_t r0, size_t r1, float* y) {                                                     \
        dot_rows<ReadQ4_0<W>, W>(x, B, M, bias, rows, n, r0, r1, y);                                             \
    }                                                                                                            \
    constexpr QuantKernels kKernels{dots_q8_0, dots_q4_0};                                                       \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_QUANT_VERSION)

// The version of the target whose float32 kernels run (kernels()), as the f16 kernels choose.
const QuantKernels& quant_kernels() {
#if DECODEBOOK_MULTI_TARGET
    const std::string_view target = kernels().name;
    if (target == "x86-64-v4") return v4::kKernels;
    if (target == "x86-64-v3") return v3::kKernels;
#endif
    return x86_64::kKernels;
}

// matvec's plan exactly (kernels/matvec.cpp): one thread reads all of W, more share the outputs.
template <class Block>
void matvec_blocks(QuantDotsFn<Block> dots, const float* x, size_t B, const Block* W, const float* bias, size_t out,
                   size_t in, float* y) {
    const int threads = g_threads;
    if (threads == 1) return dots(x, B, W, bias, out, in, 0, out, y);
#pragma omp parallel num_threads(threads)
    {
        const auto [r0, r1] = chunk(out, omp_get_num_threads(), omp_get_thread_num());
        dots(x, B, W, bias, out, in, r0, r1, y);
    }
}

}  // namespace

void matvec_q8_0(const float* x, size_t B, const BlockQ8_0* W, const float* bias, size_t out, size_t in, float* y) {
    matvec_blocks(quant_kernels().q8_0, x, B, W, bias, out, in, y);
}

void matvec_q4_0(const float* x, size_t B, const BlockQ4_0* W, const float* bias, size_t out, size_t in, float* y) {
    matvec_blocks(quant_kernels().q4_0, x, B, W, bias, out, in, y);
}

}  // namespace decodebook
