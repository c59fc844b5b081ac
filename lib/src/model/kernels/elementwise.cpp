// Chapter 07: the row-wise steps between the products: LayerNorm and GELU.
// Shapes are in the comments; every matrix is row-major. See model/kernels.hpp for why two kinds.
#include "decodebook/model/kernels.hpp"

#include <cmath>

#include "common.hpp"

namespace decodebook {

using namespace kernels_detail;

void layer_norm_rows(const float* x, size_t T, size_t C, const float* g, const float* b, float eps, float* y) {
    for (size_t t = 0; t < T; ++t) {
        const float* px = x + t * C;
        float* py = y + t * C;
        double mean = 0, var = 0;
        for (size_t j = 0; j < C; ++j) mean += px[j];
        mean /= static_cast<double>(C);
        for (size_t j = 0; j < C; ++j) var += (px[j] - mean) * (px[j] - mean);
        var /= static_cast<double>(C);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
        for (size_t j = 0; j < C; ++j) py[j] = (px[j] - static_cast<float>(mean)) * inv * g[j] + b[j];
    }
}

namespace {

// e^-a for 0 <= a <= 100, to about 2 ulp, in plain arithmetic the compiler puts in vector lanes
// (glibc's expf is one call per element): e^-a = 2^n e^r with n = round(-a / ln 2) and
// r = -a - n ln 2 (ln 2 in two parts, so r is exact), e^r by its Taylor series to r^7; below
// 2^-126 the result stays a tiny positive number instead of going to 0.
inline __attribute__((always_inline)) float exp_minus(float a) {
    const float x = -a;
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
    const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t exponent = static_cast<int32_t>(n);
    exponent = exponent < -126 ? -126 : exponent;
    const int32_t bits = (exponent + 127) << 23;  // 2^n as a float's bits
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// min(a, 100) for a >= 0, on the float's bits (for non-negative floats their order is the
// integers' order): an integer min, which vectorises where a float min would need -ffast-math.
inline __attribute__((always_inline)) float at_most_100(float a) {
    int32_t bits, cap;
    const float hundred = 100.0f;
    std::memcpy(&bits, &a, sizeof bits);
    std::memcpy(&cap, &hundred, sizeof cap);
    bits = bits < cap ? bits : cap;
    std::memcpy(&a, &bits, sizeof a);
    return a;
}

// gelu(v) = 0.5 v (1 + tanh(u)). With e = e^-2|u| (never overflows), 1 + tanh(u) is 2 / (1 + e)
// for u >= 0 and 2e / (1 + e) for u < 0, so gelu(v) = v s / (1 + e) with s = 1 or e: no
// cancellation for negative v, and the loop runs in vector lanes. (With glibc's expf this loop
// was a tenth of chapter 07's prefill.)
inline __attribute__((always_inline)) void gelu_body(float* x, size_t n) {
    constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
    for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float u = k * (v + 0.044715f * v * v * v);
        const float e = exp_minus(at_most_100(2.0f * std::fabs(u)));  // e^-2|u|
        // s = e when u < 0, else 1: picked bit by bit with u's sign as the mask
        int32_t u_bits, e_bits, s_bits;
        const float one = 1.0f;
        int32_t one_bits;
        std::memcpy(&u_bits, &u, sizeof u_bits);
        std::memcpy(&e_bits, &e, sizeof e_bits);
        std::memcpy(&one_bits, &one, sizeof one_bits);
        const int32_t negative = u_bits >> 31;  // all ones when u < 0, else 0
        s_bits = (e_bits & negative) | (one_bits & ~negative);
        float s;
        std::memcpy(&s, &s_bits, sizeof s);
        x[i] = v * s / (1.0f + e);
    }
}

}  // namespace

// Each target's version of the loop above, vectorised by GCC for its registers (the table of
// pointers is in blas.cpp).
#define DECODEBOOK_DEFINE_GELU(NS, ATTR, W_) \
    namespace kernels_detail::NS {            \
    ATTR void gelu_in_place(float* x, size_t n) { gelu_body(x, n); } \
    }
DECODEBOOK_FOR_EACH_TARGET(DECODEBOOK_DEFINE_GELU)

void gelu_in_place(float* x, size_t n) { kernels().gelu_in_place(x, n); }

}  // namespace decodebook
