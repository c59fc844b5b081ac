// Chapter 00: random GPT-2 weights of any shape, for testing the loader at GPT-2 small's size.
#include "decodebook/random_model.hpp"

#include "decodebook/model.hpp"
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
    TensorMap t;
    for (const TensorSpec& spec : gpt2_tensor_schema(c)) {  // the loader's own list, in its order
        xt::xarray<float> a = xt::xarray<float>::from_shape(spec.shape);
        for (float& v : a) {
            v = spec.init == TensorInit::Random ? static_cast<float>(0.02 * (2.0 * rng.coin() - 1.0))
                : spec.init == TensorInit::Ones ? 1.0f
                                                : 0.0f;
        }
        t.emplace(spec.name, std::move(a));
    }
    return t;
}

void write_random_gpt2(const std::string& dir, const ModelConfig& config, uint64_t seed, DType dtype) {
    save_config(dir + "/config.json", config);
    save_safetensors(dir + "/model.safetensors", random_gpt2_tensors(config, seed), dtype);
}

}  // namespace decodebook
