// Chapter 00: random GPT-2 weights of any shape, for testing the loader at GPT-2 small's size.
#include "decodebook/random_model.hpp"

#include "decodebook/rng.hpp"

namespace decodebook {

ModelConfig gpt2_small_config() {
    ModelConfig c;
    c.vocab_size = 50257;
    c.n_positions = 1024;
    c.n_embd = 768;
    c.n_layer = 12;
    c.n_head = 12;
    c.layer_norm_epsilon = 1e-5f;
    c.eos_token_id = 50256;
    return c;
}

TensorMap random_gpt2_tensors(const ModelConfig& c, uint64_t seed) {
    Rng rng(seed);
    const size_t V = static_cast<size_t>(c.vocab_size), P = static_cast<size_t>(c.n_positions),
                 C = static_cast<size_t>(c.n_embd);
    TensorMap t;
    const auto random = [&](const std::string& name, std::vector<size_t> shape) {
        xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
        for (float& v : a) v = static_cast<float>(0.02 * (2.0 * rng.coin() - 1.0));
        t.emplace(name, std::move(a));
    };
    const auto constant = [&](const std::string& name, size_t n, float value) {
        xt::xarray<float> a = xt::xarray<float>::from_shape({n});
        a.fill(value);
        t.emplace(name, std::move(a));
    };
    random("wte.weight", {V, C});
    random("wpe.weight", {P, C});
    for (int i = 0; i < c.n_layer; ++i) {
        const std::string h = "h." + std::to_string(i) + ".";
        constant(h + "ln_1.weight", C, 1.0f);
        constant(h + "ln_1.bias", C, 0.0f);
        random(h + "attn.c_attn.weight", {C, 3 * C});
        constant(h + "attn.c_attn.bias", 3 * C, 0.0f);
        random(h + "attn.c_proj.weight", {C, C});
        constant(h + "attn.c_proj.bias", C, 0.0f);
        constant(h + "ln_2.weight", C, 1.0f);
        constant(h + "ln_2.bias", C, 0.0f);
        random(h + "mlp.c_fc.weight", {C, 4 * C});
        constant(h + "mlp.c_fc.bias", 4 * C, 0.0f);
        random(h + "mlp.c_proj.weight", {4 * C, C});
        constant(h + "mlp.c_proj.bias", C, 0.0f);
    }
    constant("ln_f.weight", C, 1.0f);
    constant("ln_f.bias", C, 0.0f);
    return t;
}

void write_random_gpt2(const std::string& dir, const ModelConfig& config, uint64_t seed, DType dtype) {
    save_config(dir + "/config.json", config);
    save_safetensors(dir + "/model.safetensors", random_gpt2_tensors(config, seed), dtype);
}

}  // namespace decodebook
