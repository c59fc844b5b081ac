#pragma once
/// @file random_model.hpp
/// @brief GPT-2 models with random weights: the loader's stress test and the benchmark model.
#include <cstdint>
#include <string>

#include "decodebook/config.hpp"
#include "decodebook/safetensors.hpp"

namespace decodebook {

/// GPT-2 small's shape (openai-community/gpt2): 12 layers, 12 heads, width 768,
/// 50257 tokens, 1024 positions; about 124M parameters. Introduced in chapter 00.
ModelConfig gpt2_small_config();

/// Deterministic random weights for `config` with Hugging Face names, drawn from Rng(seed):
/// weight (i) of every matrix is 0.02 * (2 * coin - 1); LayerNorm gains 1, biases 0.
/// Introduced in chapter 00.
TensorMap random_gpt2_tensors(const ModelConfig& config, uint64_t seed);

/// Write config.json and model.safetensors for random weights into `dir` (which must exist).
/// Introduced in chapter 00.
void write_random_gpt2(const std::string& dir, const ModelConfig& config, uint64_t seed, DType dtype);

}  // namespace decodebook
