// Chapter 00: GPT-2's forward pass, over the whole sequence (no KV cache yet).
#include "decodebook/model/gpt2.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/model/kernels.hpp"

namespace decodebook {
namespace {

using Matrix = xt::xtensor<float, 2>;
using Vector = xt::xtensor<float, 1>;
using Gains = WeightTensor<1>;  // a weight vector: a bias or a LayerNorm gain (chapter 07: in huge pages)

// Find a tensor by its HF name, with or without the "transformer." prefix, and check its shape.
// The tensor's memory moves into the result (no copy: loading peaks at one copy of the weights).
template <size_t N>
WeightTensor<N> take(TensorMap& tensors, const std::string& name, std::vector<size_t> shape) {
    auto it = tensors.find(name);
    if (it == tensors.end()) it = tensors.find("transformer." + name);
    if (it == tensors.end()) {
        throw Error("model weights have no tensor '" + name + "'",
                    "use a GPT-2 checkpoint with Hugging Face tensor names (h.0.attn.c_attn.weight, ...)");
    }
    const WeightArray& t = it->second;
    if (std::vector<size_t>(t.shape().begin(), t.shape().end()) != shape) {
        std::string want, got;
        for (size_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
        for (size_t d : t.shape()) got += (got.empty() ? "" : ", ") + std::to_string(d);
        throw Error("tensor '" + name + "' has shape (" + got + ") but config.json implies (" + want + ")",
                    "config.json and model.safetensors must describe the same model");
    }
    std::array<size_t, N> dims;
    std::copy(shape.begin(), shape.end(), dims.begin());
    std::array<std::ptrdiff_t, N> strides;
    xt::compute_strides(dims, xt::layout_type::row_major, strides);
    return WeightTensor<N>(std::move(it->second.storage()), std::move(dims), std::move(strides));
}

// A weight matrix (rows, cols) as float32 for the BLAS: its own values when held in f32; held in
// f16 (chapter 07), widened into `scratch` (exact, so the products give the same bits).
auto as_f32(const WeightMatrix& w, std::vector<float>& scratch) {
    const float* p = w.f32();
    if (!p) {
        scratch.resize(w.size());
        w.widen_rows(0, w.rows(), scratch.data());
        p = scratch.data();
    }
    return xt::adapt(p, w.size(), xt::no_ownership(), std::array<size_t, 2>{w.rows(), w.cols()});
}

// y = x W + b for every row of x.   x: (T, in), W: (in, out), b: (out) -> (T, out)
// The model holds W transposed, (out, in) (chapter 07 reads each output's weights as one row), so
// the product is x times the transpose of what it holds.
Matrix linear(const Matrix& x, const WeightMatrix& w, const Gains& b, std::vector<float>& scratch) {
    Matrix y = xt::linalg::dot(x, xt::transpose(as_f32(w, scratch)));
    const size_t rows = y.shape(0), cols = y.shape(1);
    float* py = y.data();
    for (size_t t = 0; t < rows; ++t)
        for (size_t j = 0; j < cols; ++j) py[t * cols + j] += b(j);
    return y;
}

// Normalise each row to zero mean and unit variance, then scale and shift.   x: (T, C)
// (kernels/elementwise.cpp holds the arithmetic, shared with chapter 07's cached path.)
Matrix layer_norm(const Matrix& x, const Gains& g, const Gains& b, float eps) {
    Matrix y = Matrix::from_shape({x.shape(0), x.shape(1)});
    layer_norm_rows(x.data(), x.shape(0), x.shape(1), g.data(), b.data(), eps, y.data());
    return y;
}

// GPT-2's GELU, the tanh approximation ("gelu_new"), in place:
//   gelu(v) = 0.5 v (1 + tanh(u)),  u = sqrt(2 / pi) (v + 0.044715 v^3)   (kernels/elementwise.cpp)
void gelu(Matrix& x) { gelu_in_place(x.data(), x.size()); }

// Causal multi-head self-attention on the fused projection.   qkv: (T, 3C) -> (T, C)
// Row t of qkv holds [q | k | v], each C wide and split into H heads of D = C / H.
Matrix causal_attention(const Matrix& qkv, int n_head) {
    const size_t T = qkv.shape(0), C = qkv.shape(1) / 3, H = static_cast<size_t>(n_head), D = C / H;
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    Matrix out = xt::zeros<float>({T, C});
    std::vector<float> kt(D * T);  // this head's keys, transposed: kt[d * T + s]
    std::vector<float> att(T);     // scores of one query against keys 0..t
    const float* p = qkv.data();
    for (size_t h = 0; h < H; ++h) {
        for (size_t s = 0; s < T; ++s)
            for (size_t d = 0; d < D; ++d) kt[d * T + s] = p[s * 3 * C + C + h * D + d];
        for (size_t t = 0; t < T; ++t) {
            const float* q = p + t * 3 * C + h * D;
            // scores q . k_s for every earlier position s <= t (the causal mask), one query
            // component at a time so the inner loop runs along contiguous memory
            std::fill(att.begin(), att.begin() + static_cast<long>(t) + 1, 0.0f);
            for (size_t d = 0; d < D; ++d) {
                const float qd = q[d] * scale;
                const float* k = kt.data() + d * T;
                for (size_t s = 0; s <= t; ++s) att[s] += qd * k[s];
            }
            float max = -INFINITY;
            for (size_t s = 0; s <= t; ++s) max = std::max(max, att[s]);
            float sum = 0;
            for (size_t s = 0; s <= t; ++s) {
                att[s] = std::exp(att[s] - max);
                sum += att[s];
            }
            // out_t = sum_s softmax(scores)_s v_s
            float* o = out.data() + t * C + h * D;
            for (size_t s = 0; s <= t; ++s) {
                const float* v = p + s * 3 * C + 2 * C + h * D;
                const float w = att[s] / sum;
                for (size_t d = 0; d < D; ++d) o[d] += w * v[d];
            }
        }
    }
    return out;
}

}  // namespace

void check_token_ids(const ModelConfig& config, const std::vector<int>& ids) {
    if (ids.empty()) throw Error("the input has no tokens", "give a non-empty prompt");
    if (ids.size() > static_cast<size_t>(config.n_positions)) {
        throw Error("the input has " + std::to_string(ids.size()) + " tokens but the model's context holds " +
                        std::to_string(config.n_positions),
                    "shorten the prompt or ask for fewer new tokens");
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= config.vocab_size) {
            throw Error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                            " is outside the vocabulary (0.." + std::to_string(config.vocab_size - 1) + ")",
                        "use ids produced by this model's tokenizer");
        }
    }
}

Gpt2 Gpt2::load(const std::string& model_dir, std::optional<WeightDtype> dtype) {
    const ModelConfig config = load_config(model_dir + "/config.json");
    // only what the model reads, the held matrices in their dtype
    Gpt2Weights weights = load_gpt2_weights(model_dir + "/model.safetensors", config, dtype);
    return build(config, weights);  // the weights move into the model: no second copy
}

std::vector<TensorSpec> gpt2_tensor_schema(const ModelConfig& c) {
    const size_t V = static_cast<size_t>(c.vocab_size), P = static_cast<size_t>(c.n_positions),
                 C = static_cast<size_t>(c.n_embd);
    using I = TensorInit;
    std::vector<TensorSpec> s{{"wte.weight", {V, C}, I::Random, true}, {"wpe.weight", {P, C}, I::Random}};
    for (int i = 0; i < c.n_layer; ++i) {
        const std::string h = "h." + std::to_string(i) + ".";
        s.insert(s.end(), {{h + "ln_1.weight", {C}, I::Ones},
                           {h + "ln_1.bias", {C}, I::Zeros},
                           {h + "attn.c_attn.weight", {C, 3 * C}, I::Random, true},
                           {h + "attn.c_attn.bias", {3 * C}, I::Zeros},
                           {h + "attn.c_proj.weight", {C, C}, I::Random, true},
                           {h + "attn.c_proj.bias", {C}, I::Zeros},
                           {h + "ln_2.weight", {C}, I::Ones},
                           {h + "ln_2.bias", {C}, I::Zeros},
                           {h + "mlp.c_fc.weight", {C, 4 * C}, I::Random, true},
                           {h + "mlp.c_fc.bias", {4 * C}, I::Zeros},
                           {h + "mlp.c_proj.weight", {4 * C, C}, I::Random, true},
                           {h + "mlp.c_proj.bias", {C}, I::Zeros}});
    }
    s.insert(s.end(), {{"ln_f.weight", {C}, I::Ones}, {"ln_f.bias", {C}, I::Zeros}});
    return s;
}

Gpt2 Gpt2::from_tensors(const ModelConfig& c, const TensorMap& tensors, WeightDtype dtype) {
    Gpt2Weights w{tensors, {}, dtype};
    return build(c, w);
}

Gpt2 Gpt2::build(const ModelConfig& c, Gpt2Weights& w) {
    Gpt2 m;
    m.config_ = c;
    TensorMap& t = w.tensors;
    // Walk gpt2_tensor_schema in its order; each take checks the name and the shape.
    const std::vector<TensorSpec> schema = gpt2_tensor_schema(c);
    size_t next = 0;
    const auto matrix = [&] { const TensorSpec& s = schema[next++]; return take<2>(t, s.name, s.shape); };
    const auto vector = [&] { const TensorSpec& s = schema[next++]; return take<1>(t, s.name, s.shape); };
    // a held matrix: its binary16 bits as loaded, or float32 held in w.dtype (rounded once for F16)
    const auto held = [&] {
        const TensorSpec& s = schema[next];
        const auto it = w.matrices.find(s.name);
        if (it == w.matrices.end()) return WeightMatrix::hold(matrix(), w.dtype, s.name);
        ++next;
        return WeightMatrix(s.shape[0], s.shape[1], std::move(it->second));
    };
    // a block's matrix, stored (in, out) as Hugging Face's Conv1D, held (out, in): each output's
    // weights one contiguous row, the dot products decode reads fastest (chapter 07);
    // the 48 of them one after another in one mapping, in the order decode reads them (room for
    // float32; an f16 model fills half, and pages never written take no memory)
    const size_t C = static_cast<size_t>(c.n_embd);
    WeightArena arena(static_cast<size_t>(c.n_layer) * (12 * C * C * sizeof(float) + 4 * 64));
    // quantized, a block matrix is turned in float32 first: a block's 32 weights lie along a row
    // of (out, in), as ggml quantizes along a row's inputs (chapter 13)
    const auto held_linear = [&] {
        if (!is_quantized(w.dtype)) return held().transposed(&arena);
        const std::string name = schema[next].name;
        return WeightMatrix(matrix()).transposed().quantized(w.dtype, name, &arena);
    };
    m.wte_ = held();
    m.wpe_ = matrix();
    for (int i = 0; i < c.n_layer; ++i) {
        BlockWeights b;
        b.ln_1_g = vector();
        b.ln_1_b = vector();
        b.c_attn_w = held_linear();
        b.c_attn_b = vector();
        b.attn_proj_w = held_linear();
        b.attn_proj_b = vector();
        b.ln_2_g = vector();
        b.ln_2_b = vector();
        b.c_fc_w = held_linear();
        b.c_fc_b = vector();
        b.mlp_proj_w = held_linear();
        b.mlp_proj_b = vector();
        m.blocks_.push_back(std::move(b));
    }
    m.ln_f_g_ = vector();
    m.ln_f_b_ = vector();
    return m;
}

xt::xtensor<float, 2> Gpt2::forward(const std::vector<int>& ids) const {
    check_token_ids(config_, ids);
    const size_t T = ids.size(), C = static_cast<size_t>(config_.n_embd);
    // x = token embedding + position embedding   (T, C)
    Matrix x = Matrix::from_shape({T, C});
    for (size_t t = 0; t < T; ++t) {
        wte_.widen_rows(static_cast<size_t>(ids[t]), 1, &x(t, 0));  // the token's row of wte, as float32
        for (size_t j = 0; j < C; ++j) x(t, j) += wpe_(t, j);
    }
    const float eps = config_.layer_norm_epsilon;
    std::vector<float> scratch;  // one matrix widened at a time when the weights are held in f16
    for (const BlockWeights& b : blocks_) {
        // attention sub-block: x += proj(attention(ln_1(x)))
        const Matrix qkv = linear(layer_norm(x, b.ln_1_g, b.ln_1_b, eps), b.c_attn_w, b.c_attn_b, scratch);  // (T, 3C)
        x += linear(causal_attention(qkv, config_.n_head), b.attn_proj_w, b.attn_proj_b, scratch);
        // MLP sub-block: x += proj(gelu(fc(ln_2(x))))
        Matrix hidden = linear(layer_norm(x, b.ln_2_g, b.ln_2_b, eps), b.c_fc_w, b.c_fc_b, scratch);  // (T, 4C)
        gelu(hidden);
        x += linear(hidden, b.mlp_proj_w, b.mlp_proj_b, scratch);
    }
    const Matrix final_x = layer_norm(x, ln_f_g_, ln_f_b_, eps);
    // tied lm_head: logits = x wte^T   (T, V)
    Matrix logits = xt::linalg::dot(final_x, xt::transpose(as_f32(wte_, scratch)));
    return logits;
}

}  // namespace decodebook
