// Chapter 07: GPT-2 on the KV cache. prefill: new tokens in one pass, keys and values kept;
// decode: one new position per row, attention over the cache, lm_head on that position only.
// Chapter 00's Gpt2::forward (gpt2_forward.cpp) stays the lesson it is.
#include <algorithm>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"

namespace decodebook {
namespace {

void check_token(const ModelConfig& config, int id) {
    if (id < 0 || id >= config.vocab_size) {
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                        std::to_string(config.vocab_size - 1) + ")",
                    "use ids produced by this model's tokenizer");
    }
}

// GEMM over weights held in f16 in a decode call (a batch of kGemmFromRows rows or more, or
// BatchKernels::Gemm) widens each matrix into this buffer: one per thread, grown once, so decode
// allocates nothing after the first such call.
std::vector<float>& widened_for_gemm() {
    thread_local std::vector<float> buffer;
    return buffer;
}

void check_row(const KvCache& cache, size_t row) {
    if (row >= cache.rows()) {
        throw Error("cache row " + std::to_string(row) + " does not exist (the cache has " +
                        std::to_string(cache.rows()) + " rows)",
                    "make the KvCache with enough rows");
    }
}

// y (T, out) = x (T, in) W^T + bias, W held (out, in), by the BLAS's GEMM; W held in f16 or blocks is
// widened or dequantized first into `scratch` (out x in floats, grown once), exactly, so the
// product gives the bits of the float32 values W stands for.
void gemm_any(const float* x, size_t T, const WeightMatrix& w, const float* bias, float* y,
              std::vector<float>& scratch) {
    const float* W = w.f32();
    if (!W) {
        if (scratch.size() < w.size()) scratch.resize(w.size());
        w.widen_rows(0, w.rows(), scratch.data());
        W = scratch.data();
    }
    gemm(x, T, W, bias, w.rows(), w.cols(), y);
}

}  // namespace

uint64_t Gpt2::decode_weight_bytes() const {
    // float32 vectors: one row of wpe, every bias and LayerNorm; matrices: 4 or 2 bytes a weight
    uint64_t floats = wpe_.shape(1) + ln_f_g_.size() + ln_f_b_.size(), matrix_bytes = wte_.bytes();
    for (const BlockWeights& b : blocks_) {
        for (const auto* v : {&b.ln_1_g, &b.ln_1_b, &b.c_attn_b, &b.attn_proj_b, &b.ln_2_g, &b.ln_2_b, &b.c_fc_b,
                              &b.mlp_proj_b})
            floats += v->size();
        for (const auto* m : {&b.c_attn_w, &b.attn_proj_w, &b.c_fc_w, &b.mlp_proj_w}) matrix_bytes += m->bytes();
    }
    return floats * sizeof(float) + matrix_bytes;
}

xt::xtensor<float, 1> Gpt2::prefill(const std::vector<int>& ids, KvCache& cache, size_t row) const {
    check_row(cache, row);
    const size_t T = ids.size(), L0 = cache.length(row);
    if (T == 0) throw Error("prefill got no tokens", "give a non-empty prompt");
    if (L0 + T > cache.capacity()) {
        throw Error("the cache row holds " + std::to_string(L0) + " positions and " + std::to_string(T) +
                        " more do not fit its " + std::to_string(cache.capacity()),
                    "make the KvCache with capacity >= prompt + new tokens");
    }
    for (int id : ids) check_token(config_, id);
    const int table[] = {static_cast<int>(row)};  // the row is one block of `capacity` positions
    xt::xtensor<float, 1> logits = prefill_blocks(ids, L0, table, {cache.keys_, cache.values_, cache.capacity()});
    cache.set_length(row, L0 + T);
    return logits;
}

// [ch07:prefill]
// The cache is read through a block table: position p of the sequence is slot p % block_size of
// block table[p / block_size]. Chapter 07's rows are one block each; chapter 12 cuts them up.
xt::xtensor<float, 1> Gpt2::prefill_blocks(const std::vector<int>& ids, size_t L0, const int* table,
                                           Blocks cache) const {
    const size_t T = ids.size(), L = L0 + T, C = static_cast<size_t>(config_.n_embd), bs = cache.block_size;
    const auto slot = [&](size_t p) { return (static_cast<size_t>(table[p / bs]) * bs + p % bs) * C; };
    const float eps = config_.layer_norm_epsilon;
    // x = token embedding + position embedding, positions L0..L-1   (T, C)
    std::vector<float> x(T * C), xn(T * C), qkv(T * 3 * C), att(T * C), proj(T * C), hidden(T * 4 * C);
    std::vector<float> widened;  // weights held in f16: one matrix at a time as float32 for the GEMM
    for (size_t t = 0; t < T; ++t) {
        wte_.widen_rows(static_cast<size_t>(ids[t]), 1, x.data() + t * C);  // the token's row, as float32
        for (size_t j = 0; j < C; ++j) x[t * C + j] += wpe_(L0 + t, j);
    }
    std::vector<float> scores(static_cast<size_t>(num_threads()) * T * L);  // one (T, L) block per thread
    // attention reads positions 0..L-1 as one (L, C) matrix: the block itself when one block holds
    // them all, else a copy gathered block by block
    const bool one_block = L <= bs;
    std::vector<float> gathered_k(one_block ? 0 : L * C), gathered_v(one_block ? 0 : L * C);
    for (size_t l = 0; l < blocks_.size(); ++l) {
        const BlockWeights& b = blocks_[l];
        float* K = cache.keys[l].data();  // (blocks, block_size, C) this layer's keys
        float* V = cache.values[l].data();
        // attention: qkv = ln_1(x) W_attn (T, 3C); keep k and v; each query attends to 0..its position
        layer_norm_rows(x.data(), T, C, b.ln_1_g.data(), b.ln_1_b.data(), eps, xn.data());
        gemm_any(xn.data(), T, b.c_attn_w, b.c_attn_b.data(), qkv.data(), widened);
        for (size_t t = 0; t < T; ++t) {
            std::copy_n(qkv.data() + t * 3 * C + C, C, K + slot(L0 + t));
            std::copy_n(qkv.data() + t * 3 * C + 2 * C, C, V + slot(L0 + t));
        }
        const float *Ks = K + slot(0), *Vs = V + slot(0);
        if (!one_block) {
            for (size_t p = 0; p < L; ++p) {
                std::copy_n(K + slot(p), C, gathered_k.data() + p * C);
                std::copy_n(V + slot(p), C, gathered_v.data() + p * C);
            }
            Ks = gathered_k.data();
            Vs = gathered_v.data();
        }
        attend_causal(qkv.data(), 3 * C, T, Ks, Vs, L0, C, config_.n_head, scores.data(), att.data());
        gemm_any(att.data(), T, b.attn_proj_w, b.attn_proj_b.data(), proj.data(), widened);
        for (size_t i = 0; i < T * C; ++i) x[i] += proj[i];
        // MLP: x += gelu(ln_2(x) W_fc) W_proj
        layer_norm_rows(x.data(), T, C, b.ln_2_g.data(), b.ln_2_b.data(), eps, xn.data());
        gemm_any(xn.data(), T, b.c_fc_w, b.c_fc_b.data(), hidden.data(), widened);
        gelu_in_place(hidden.data(), T * 4 * C);
        gemm_any(hidden.data(), T, b.mlp_proj_w, b.mlp_proj_b.data(), proj.data(), widened);
        for (size_t i = 0; i < T * C; ++i) x[i] += proj[i];
    }
    // only the last position's logits are needed: ln_f and lm_head on that row alone   (V)
    const size_t Vn = static_cast<size_t>(config_.vocab_size);
    layer_norm_rows(x.data() + (T - 1) * C, 1, C, ln_f_g_.data(), ln_f_b_.data(), eps, xn.data());
    xt::xtensor<float, 1> logits = xt::xtensor<float, 1>::from_shape({Vn});
    wte_.matvec(xn.data(), 1, nullptr, logits.data());  // the tied lm_head
    return logits;
}
// [/ch07:prefill]

void Gpt2::decode(const std::vector<int>& tokens, const std::vector<size_t>& rows, KvCache& cache,
                  BatchKernels kernels) const {
    const size_t B = tokens.size(), cap = cache.capacity();
    if (B == 0 || B != rows.size() || B > cache.max_tokens_per_step()) {
        throw Error("decode got " + std::to_string(B) + " tokens for " + std::to_string(rows.size()) +
                        " rows (the cache takes up to " + std::to_string(cache.max_tokens_per_step()) +
                        " tokens per call)",
                    "pass one cache row per token, at most the cache's max_tokens_per_step tokens");
    }
    DecodeScratch& s = cache.scratch_;
    for (size_t i = 0; i < B; ++i) {
        check_row(cache, rows[i]);
        check_token(config_, tokens[i]);
        if (cache.length(rows[i]) == 0) throw Error("cache row " + std::to_string(rows[i]) + " is empty", "prefill it first");
        // a row's k-th token in this call goes k positions after what the row holds
        size_t pos = cache.length(rows[i]);
        for (size_t j = 0; j < i; ++j) pos += rows[j] == rows[i];
        if (pos >= cap) {
            throw Error("cache row " + std::to_string(rows[i]) + " is full (" + std::to_string(cap) + " positions)",
                        "make the KvCache with capacity >= prompt + new tokens");
        }
        s.positions[i] = pos;
        s.row_blocks[i] = static_cast<int>(rows[i]);  // the row is one block of `capacity` positions
        s.tables[i] = &s.row_blocks[i];
    }
    decode_blocks(tokens.data(), B, s.tables.data(), s.positions.data(), {cache.keys_, cache.values_, cap}, s,
                  kernels, 0);
    for (size_t i = 0; i < B; ++i) cache.set_length(rows[i], s.positions[i] + 1);  // in order: the last occurrence wins
}

// [ch07:decode]
void Gpt2::decode_blocks(const int* tokens, size_t B, const int* const* tables, const size_t* positions,
                         Blocks cache, DecodeScratch& s, BatchKernels kernels, size_t first_logits) const {
    const size_t C = static_cast<size_t>(config_.n_embd), bs = cache.block_size;
    float *x = s.x.data(), *xn = s.xn.data(), *qkv = s.qkv.data(), *att = s.att.data(), *proj = s.proj.data(),
          *hidden = s.hidden.data();
    // y (B, out) = x (B, in) W + bias: a few rows stream the weights (matvec), a large batch goes to
    // GEMM, unless the caller asks for one kernel at every size (Invariant: the matvec; Gemm: GEMM)
    const bool use_gemm = kernels == BatchKernels::Gemm || (kernels == BatchKernels::Fast && B >= kGemmFromRows);
    const auto product = [&](const float* in_rows, const WeightMatrix& w, const WeightTensor<1>& bias,
                             float* out_rows) {
        if (use_gemm) gemm_any(in_rows, B, w, bias.data(), out_rows, widened_for_gemm());
        else w.matvec(in_rows, B, bias.data(), out_rows);
    };
    // x = token embedding + position embedding of each token's position   (B, C)
    for (size_t i = 0; i < B; ++i) {
        wte_.widen_rows(static_cast<size_t>(tokens[i]), 1, x + i * C);  // the token's row, as float32
        for (size_t j = 0; j < C; ++j) x[i * C + j] += wpe_(positions[i], j);
        s.lengths[i] = positions[i] + 1;  // it attends over positions 0..its own
    }
    const float eps = config_.layer_norm_epsilon;
    for (size_t l = 0; l < blocks_.size(); ++l) {
        const BlockWeights& b = blocks_[l];
        float* K = cache.keys[l].data();  // (blocks, block_size, C)
        float* V = cache.values[l].data();
        layer_norm_rows(x, B, C, b.ln_1_g.data(), b.ln_1_b.data(), eps, xn);
        product(xn, b.c_attn_w, b.c_attn_b, qkv);  // (B, 3C)
        for (size_t i = 0; i < B; ++i) {
            // append this token's key and value at slot p % block_size of block table[p / block_size]
            // (every token's key is written before any attends: a later token of the same sequence
            // sees the earlier ones, an earlier token never reads past its own position)
            const size_t p = positions[i], slot = (static_cast<size_t>(tables[i][p / bs]) * bs + p % bs) * C;
            std::copy_n(qkv + i * 3 * C + C, C, K + slot);
            std::copy_n(qkv + i * 3 * C + 2 * C, C, V + slot);
            s.keys[i] = K;
            s.values[i] = V;
        }
        attend_rows(qkv, 3 * C, B, s.keys.data(), s.values.data(), tables, bs, s.lengths.data(), C, config_.n_head,
                    s.scores.data(), s.scores.shape(1), att);
        product(att, b.attn_proj_w, b.attn_proj_b, proj);
        for (size_t i = 0; i < B * C; ++i) x[i] += proj[i];
        layer_norm_rows(x, B, C, b.ln_2_g.data(), b.ln_2_b.data(), eps, xn);
        product(xn, b.c_fc_w, b.c_fc_b, hidden);  // (B, 4C)
        gelu_in_place(hidden, B * 4 * C);
        product(hidden, b.mlp_proj_w, b.mlp_proj_b, proj);
        for (size_t i = 0; i < B * C; ++i) x[i] += proj[i];
    }
    // ln_f, then the tied lm_head on the tokens whose logits are wanted: logits (B, V) = ln_f(x) wte^T
    if (first_logits >= B) return;
    const size_t n = B - first_logits;
    layer_norm_rows(x + first_logits * C, n, C, ln_f_g_.data(), ln_f_b_.data(), eps, xn);
    wte_.matvec(xn, n, nullptr, s.logits.data());  // the tied lm_head
}
// [/ch07:decode]

}  // namespace decodebook
