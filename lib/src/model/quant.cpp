// Chapter 13: ggml's q8_0 and q4_0 blocks. Every operation is float32 as written (the library
// is compiled without -ffast-math, and the default target has no FMA to contract into), so the
// bits are ggml's reference quantizers' bits.
#include "decodebook/model/quant.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "decodebook/base/error.hpp"
#include "decodebook/model/safetensors.hpp"  // float_to_half, half_to_float

namespace decodebook {
namespace {

void check_length(size_t n, const std::string& name) {
    if (n % kQuantBlock != 0) {
        throw Error(name + " has " + std::to_string(n) + " values a row, not a multiple of " +
                        std::to_string(kQuantBlock) + " (q8_0 and q4_0 quantize blocks of 32)",
                    "hold this model in f16 or f32: --dtype f16");
    }
}

// The block's scale in binary16, refusing what ggml would store as infinity or NaN.
uint16_t scale_bits(float d, const float* block, size_t first, const std::string& name, const char* type) {
    const uint16_t bits = float_to_half(d);
    if ((bits & 0x7c00u) == 0x7c00u) {
        float largest = 0;
        for (size_t j = 0; j < kQuantBlock; ++j) largest = std::fmax(largest, std::fabs(block[j]));
        std::ostringstream what;
        what << name << " holds " << largest << " in the block at element " << first << ", so its " << type
             << " scale overflows float16 (its largest value is 65504)";
        throw Error(what.str(), "hold this model in f32: --dtype f32");
    }
    return bits;
}

void check_finite(const float* block, size_t first, const std::string& name) {
    for (size_t j = 0; j < kQuantBlock; ++j) {
        if (!std::isfinite(block[j])) {
            std::ostringstream what;
            what << name << " holds " << block[j] << " at element " << first + j << ", which has no quantized value";
            throw Error(what.str(), "check the checkpoint: its weights must be finite");
        }
    }
}

}  // namespace

void quantize_q8_0(const float* x, size_t n, BlockQ8_0* out, const std::string& name) {
    check_length(n, name);
    for (size_t b = 0; b < n / kQuantBlock; ++b) {
        const float* block = x + b * kQuantBlock;
        check_finite(block, b * kQuantBlock, name);
        float amax = 0.0f;
        for (size_t j = 0; j < kQuantBlock; ++j) amax = std::fmax(amax, std::fabs(block[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = scale_bits(d, block, b * kQuantBlock, name, "q8_0");
        for (size_t j = 0; j < kQuantBlock; ++j) out[b].qs[j] = static_cast<int8_t>(std::round(block[j] * id));
    }
}

void quantize_q4_0(const float* x, size_t n, BlockQ4_0* out, const std::string& name) {
    check_length(n, name);
    constexpr size_t half = kQuantBlock / 2;
    for (size_t b = 0; b < n / kQuantBlock; ++b) {
        const float* block = x + b * kQuantBlock;
        check_finite(block, b * kQuantBlock, name);
        float amax = 0.0f, max = 0.0f;  // the first value of largest magnitude, and its sign
        for (size_t j = 0; j < kQuantBlock; ++j) {
            if (amax < std::fabs(block[j])) {
                amax = std::fabs(block[j]);
                max = block[j];
            }
        }
        const float d = max / -8.0f;  // so max becomes q = 0, i.e. -8 d
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = scale_bits(d, block, b * kQuantBlock, name, "q4_0");
        for (size_t j = 0; j < half; ++j) {
            const auto low = static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(block[j] * id + 8.5f))));
            const auto high =
                static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(block[j + half] * id + 8.5f))));
            out[b].qs[j] = static_cast<uint8_t>(low | (high << 4));
        }
    }
}

void dequantize_q8_0(const BlockQ8_0* blocks, size_t n, float* out) {
    for (size_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = half_to_float(blocks[b].d);
        for (size_t j = 0; j < kQuantBlock; ++j) out[b * kQuantBlock + j] = static_cast<float>(blocks[b].qs[j]) * d;
    }
}

void dequantize_q4_0(const BlockQ4_0* blocks, size_t n, float* out) {
    constexpr size_t half = kQuantBlock / 2;
    for (size_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = half_to_float(blocks[b].d);
        for (size_t j = 0; j < half; ++j) {
            out[b * kQuantBlock + j] = static_cast<float>((blocks[b].qs[j] & 0x0f) - 8) * d;
            out[b * kQuantBlock + j + half] = static_cast<float>((blocks[b].qs[j] >> 4) - 8) * d;
        }
    }
}

float dot_q8_0(const BlockQ8_0* x, const BlockQ8_0* y, size_t n) {
    float sum = 0.0f;
    for (size_t b = 0; b < n / kQuantBlock; ++b) {
        int sumi = 0;
        for (size_t j = 0; j < kQuantBlock; ++j) sumi += x[b].qs[j] * y[b].qs[j];
        sum += static_cast<float>(sumi) * (half_to_float(x[b].d) * half_to_float(y[b].d));
    }
    return sum;
}

float dot_q4_0_q8_0(const BlockQ4_0* x, const BlockQ8_0* y, size_t n) {
    constexpr size_t half = kQuantBlock / 2;
    float sum = 0.0f;
    for (size_t b = 0; b < n / kQuantBlock; ++b) {
        int low = 0, high = 0;
        for (size_t j = 0; j < half; ++j) {
            low += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j];
            high += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + half];
        }
        sum += static_cast<float>(low + high) * half_to_float(x[b].d) * half_to_float(y[b].d);
    }
    return sum;
}

}  // namespace decodebook
