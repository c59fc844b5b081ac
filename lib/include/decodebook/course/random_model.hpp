#pragma once
/// @file course/random_model.hpp
/// @brief GPT-2 models with random weights: the loader's stress test and the benchmark model.
#include <cstdint>
#include <string>

#include "decodebook/model/config.hpp"
#include "decodebook/model/safetensors.hpp"

namespace decodebook {

/// GPT-2 small's shape (openai-community/gpt2): 12 layers, 12 heads, width 768,
/// 50257 tokens, 1024 positions; about 124M parameters. Introduced in chapter 00.
ModelConfig gpt2_small_config();

/// Deterministic random weights for `config` with Hugging Face names, drawn from Rng(seed):
/// weight (i) of every matrix is 0.02 * (2 * coin - 1); LayerNorm gains 1, biases 0.
/// Introduced in chapter 00.
TensorMap random_gpt2_tensors(const ModelConfig& config, uint64_t seed);

/// Write a GPT-2 byte-level BPE tokenizer of exactly `vocab_size` ids into `dir` (vocab.json and
/// merges.txt), made by a fixed rule rather than trained: ids 0-255 are the bytes in GPT-2's order,
/// then one merge per id growing a word that starts with a space by one letter at a time
/// (breadth first: " e", " t", ..., " ee", " et", ...), and `<|endoftext|>` is the last id, as in
/// GPT-2.
/// Any text encodes (every byte has its token) and decodes back to itself. Introduced in chapter 00.
/// @throws Error when vocab_size < 258 (the 256 bytes, one merge and `<|endoftext|>`) or a file
/// cannot be written.
void write_gpt2_tokenizer(const std::string& dir, int vocab_size);

/// Write config.json, model.safetensors and a tokenizer (write_gpt2_tokenizer) for random weights
/// into `dir` (which must exist): every chapter and tool runs on the folder. Introduced in chapter 00.
void write_random_gpt2(const std::string& dir, const ModelConfig& config, uint64_t seed, DType dtype);

}  // namespace decodebook
