#pragma once
/// @file model/config.hpp
/// @brief The model's shape, read from Hugging Face's GPT-2 `config.json` (chapter 00).
#include <string>

namespace decodebook {

/// The numbers that fix a GPT-2 model's shape. Introduced in chapter 00.
struct ModelConfig {
    int vocab_size = 0;              ///< number of token ids
    int n_positions = 0;             ///< context length n_ctx: prompt + new tokens must fit
    int n_embd = 0;                  ///< width of the residual stream C
    int n_layer = 0;                 ///< number of transformer blocks
    int n_head = 0;                  ///< attention heads; n_embd must divide evenly
    float layer_norm_epsilon = 1e-5f;  ///< LayerNorm's epsilon
    int eos_token_id = -1;           ///< end-of-text id (`<|endoftext|>` for GPT-2)
};

/// Read and validate `config.json` (keys as in HF's GPT2Config). Introduced in chapter 00.
/// @throws Error naming the key when a value is missing, of the wrong type or out of range.
ModelConfig load_config(const std::string& path);

}  // namespace decodebook

namespace decodebook {

/// Write a config.json that Hugging Face's GPT2Config (and load_config) reads. Introduced in chapter 00.
void save_config(const std::string& path, const ModelConfig& config);

}  // namespace decodebook
