#pragma once
/// @file model/gpt2.hpp
/// @brief GPT-2's forward pass: token ids in, next-token logits out (chapter 00).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/model/config.hpp"
#include "decodebook/model/safetensors.hpp"

namespace decodebook {

class KvCache;
class PagedKvCache;
struct PagedSlot;
struct DecodeScratch;

/// How a batch of decode rows is multiplied by the weights (chapter 07).
enum class BatchKernels {
    Fast,       ///< the fastest kernel for the batch: the streaming matvec below kGemmFromRows rows, the
                ///< BLAS's GEMM from there (as engines do for large batches)
    Invariant,  ///< every batch size on the streaming matvec: a row gets the same bits alone and in a batch
    Gemm,       ///< every batch size on the BLAS's GEMM, one row included (chapter 07 measures it)
};

/// The batch size from which BatchKernels::Fast multiplies by GEMM instead of the streaming
/// matvec (chapter 07): where OpenBLAS's `sgemm` overtook the matvec on a decode step's products
/// (docs/measurements.md).
inline constexpr size_t kGemmFromRows = 16;

/// How a fresh model fills a tensor (random_gpt2_tensors). Introduced in chapter 00.
enum class TensorInit {
    Random,  ///< 0.02 * (2 * coin - 1)
    Ones,    ///< LayerNorm gains
    Zeros,   ///< biases
};

/// One tensor of a GPT-2 checkpoint. Introduced in chapter 00.
struct TensorSpec {
    std::string name;           ///< Hugging Face's name, e.g. "h.0.attn.c_attn.weight"
    std::vector<size_t> shape;  ///< e.g. (C, 3C)
    TensorInit init;            ///< how a random model fills it
    /// A matrix decode streams (wte and each block's four), held in the model's WeightDtype;
    /// every other tensor is float32. Chapter 07.
    bool held = false;
};

/// Every tensor of a GPT-2 with this config, in this order: wte (V, C), wpe (P, C); for each block
/// h.i: ln_1 weight and bias (C), attn.c_attn weight (C, 3C) and bias (3C), attn.c_proj (C, C) and
/// (C), ln_2 (C) and (C), mlp.c_fc (C, 4C) and (4C), mlp.c_proj (4C, C) and (C); then ln_f (C) and (C).
/// The one list of GPT-2's tensors: the loader and the random model both read it.
/// Introduced in chapter 00.
std::vector<TensorSpec> gpt2_tensor_schema(const ModelConfig& config);

/// One transformer block's weights. The checkpoint stores each matrix in HF Conv1D orientation
/// (in, out), y = x W + b; the model holds it transposed, (out, in) as nn.Linear and llama.cpp do,
/// so y = x W^T + b and each output's weights are one contiguous row (chapter 07's decode reads
/// them as dot products), in the model's WeightDtype (chapter 07); biases and gains are float32.
struct BlockWeights {
    /// (C) LayerNorm before attention: gain
    WeightTensor<1> ln_1_g, ln_1_b;          ///< (C) LayerNorm before attention: bias
    WeightMatrix c_attn_w;                   ///< (3C, C) fused query, key, value projection
    WeightTensor<1> c_attn_b;                ///< (3C)
    WeightMatrix attn_proj_w;                ///< (C, C) attention output projection
    WeightTensor<1> attn_proj_b;             ///< (C)
    /// (C) LayerNorm before the MLP: gain
    WeightTensor<1> ln_2_g, ln_2_b;          ///< (C) LayerNorm before the MLP: bias
    WeightMatrix c_fc_w;                     ///< (4C, C) MLP up projection
    WeightTensor<1> c_fc_b;                  ///< (4C)
    WeightMatrix mlp_proj_w;                 ///< (C, 4C) MLP down projection
    WeightTensor<1> mlp_proj_b;              ///< (C)
};

/// A GPT-2 language model: learned positions, pre-LayerNorm blocks, tanh GELU, lm_head tied to
/// the token embedding. Loads Hugging Face's files unchanged. Introduced in chapter 00.
class Gpt2 {
public:
    /// Load `config.json` and `model.safetensors` from a model folder. Introduced in chapter 00;
    /// `dtype` in chapter 07.
    /// @param model_dir the folder
    /// @param dtype how to hold wte and the blocks' matrices (`--dtype`); none: the checkpoint's
    ///        own (F16 stays f16, F32 and BF16 load as f32). See load_gpt2_weights.
    /// @throws Error when a file is missing, malformed, or a tensor is missing or has the wrong
    /// shape, or a value does not fit the dtype asked for.
    static Gpt2 load(const std::string& model_dir, std::optional<WeightDtype> dtype = std::nullopt);
    /// Build from tensors already in memory (HF names, optionally prefixed `transformer.`).
    /// Introduced in chapter 00; `dtype` in chapter 07.
    /// @param config the shape
    /// @param tensors float32 tensors (copied)
    /// @param dtype how to hold wte and the blocks' matrices: F16 rounds them once to binary16
    /// @throws Error on a missing tensor, a wrong shape, or a value float16 cannot hold.
    static Gpt2 from_tensors(const ModelConfig& config, const TensorMap& tensors,
                             WeightDtype dtype = WeightDtype::F32);

    /// Run the whole sequence through the model. Introduced in chapter 00.
    /// @param ids token ids, 1 <= size <= n_positions, each in [0, vocab_size)
    /// @return logits (T, V): row t scores the token that follows ids[0..t]
    /// @throws Error on an empty, too long or out-of-vocabulary input.
    xt::xtensor<float, 2> forward(const std::vector<int>& ids) const;

    /// Run a prompt through the model in one pass (each product a GEMM), writing its keys and
    /// values into `row` of the cache after the positions it already holds. Introduced in chapter 07.
    /// @param ids the new tokens; the row's length + ids.size() must fit the cache's capacity
    /// @param cache the caller's cache: the row's keys and values grow by ids.size() positions
    /// @param row which of the cache's sequences the tokens continue
    /// @return logits (V) of the last position: they score the token that follows
    /// @throws Error on empty, too long or out-of-vocabulary input, or a row outside the cache.
    xt::xtensor<float, 1> prefill(const std::vector<int>& ids, KvCache& cache, size_t row = 0) const;

    /// B new tokens, each after the positions its cache row holds: `tokens[b]` goes into row
    /// `rows[b]`; attention reads that row's cached keys and values; LayerNorm and lm_head run on
    /// the new positions only. Logits land in `cache.logits()` row b. Allocates nothing.
    ///
    /// A row may come several times: its occurrences go at successive positions, in order, each
    /// attending to its own prefix (the row's cached positions and the earlier occurrences), as
    /// llama.cpp's batch of [last token, drafts...] for speculative decoding. Invariant: with
    /// BatchKernels::Invariant, at any B and any thread count, the logits equal, bit for bit,
    /// those of one decode call per token in the same order; BatchKernels::Fast gives the same
    /// below kGemmFromRows tokens (from there it multiplies by GEMM, which sums in another order).
    /// Introduced in chapter 07 (repeated rows: chapter 08).
    /// @throws Error when sizes differ, there are more tokens than the cache's
    /// max_tokens_per_step, a row is out of range, empty or would overflow, or a token is
    /// outside the vocabulary.
    void decode(const std::vector<int>& tokens, const std::vector<size_t>& rows, KvCache& cache,
                BatchKernels kernels = BatchKernels::Fast) const;

    /// Prefill into a paged cache (chapter 12): `ids` continue a sequence whose block table is
    /// `blocks` and whose first `cached` positions are already in the cache (a prefix cache's hit,
    /// or the earlier chunks of a chunked prefill); their keys and values go through the table
    /// into positions cached..cached + ids.size() - 1. Blocks before position `cached` are only
    /// read, so they may be shared. BatchKernels::Fast (and Gemm) runs chapter 07's prefill on the
    /// gathered positions: the bits of prefill() on a KvCache holding the same tokens.
    /// BatchKernels::Invariant runs decode's kernels, max_tokens_per_step tokens at a time, the
    /// lm_head on the last token only: the same bits however the prompt is split between the
    /// cache and this call, or between calls. Introduced in chapter 12.
    /// @param ids the new tokens
    /// @param cache the pool of blocks
    /// @param blocks the sequence's block table: at least ceil((cached + ids.size()) / block_size) blocks
    /// @param cached positions of the sequence already computed
    /// @param kernels how the products are made
    /// @return logits (V) of the last position
    /// @throws Error on empty or out-of-vocabulary input, a table too short or naming a block
    /// outside the pool, or a sequence longer than the cache's max_positions.
    xt::xtensor<float, 1> prefill(const std::vector<int>& ids, PagedKvCache& cache, std::span<const int> blocks,
                                  size_t cached, BatchKernels kernels = BatchKernels::Fast) const;
    /// decode() on a paged cache (chapter 12): `tokens[b]` goes at `slots[b].position` of the
    /// sequence whose block table is `slots[b].blocks`, and attends over its positions
    /// 0..position (tokens of one sequence in one call: at successive positions, in order).
    /// Every token's keys and values are written before any token attends, so the tokens may come
    /// in any order: a step of a serving loop can mix decodes and chunks of prompts in one call
    /// (vLLM's flat batch). The lm_head runs on tokens logits_from..B - 1 only (a prompt chunk's
    /// tokens need no logits, save the last of a finished prompt): their logits land in
    /// `cache.logits()` rows 0, 1, .... Allocates nothing. Invariant: the bits of decode() on a
    /// KvCache holding the same positions, at any block size and any thread count.
    /// Introduced in chapter 12.
    /// @throws Error when sizes differ, there are more tokens than max_tokens_per_step, a table is
    /// too short or names a block outside the pool, or a token is outside the vocabulary.
    void decode(const std::vector<int>& tokens, const std::vector<PagedSlot>& slots, PagedKvCache& cache,
                BatchKernels kernels = BatchKernels::Fast, size_t logits_from = 0) const;
    /// Bytes of the weights one decode step reads: every matrix and vector except the position
    /// table, of which one row is read; a matrix held in f16 counts 2 bytes per weight.
    /// Introduced in chapter 07.
    uint64_t decode_weight_bytes() const;

    /// How wte and the blocks' matrices are held (`--dtype`). Introduced in chapter 07.
    WeightDtype weight_dtype() const { return wte_.dtype(); }

    /// The model's shape. Introduced in chapter 00.
    const ModelConfig& config() const { return config_; }

private:
    // Walk gpt2_tensor_schema, checking names and shapes; the tensors move out of `w`, the held
    // matrices held in w.dtype (rounded once when they came as float32).
    static Gpt2 build(const ModelConfig& config, Gpt2Weights& w);
    // A cache as the bodies below see it: every layer's keys and values, (blocks, block_size, C).
    // Chapter 07's KvCache is one block of `capacity` positions per row; chapter 12's is a pool.
    struct Blocks {
        std::vector<xt::xtensor<float, 3>>& keys;
        std::vector<xt::xtensor<float, 3>>& values;
        size_t block_size;
    };
    // Prefill's body: `ids` at positions L0.. of the sequence whose table is `table`.
    xt::xtensor<float, 1> prefill_blocks(const std::vector<int>& ids, size_t L0, const int* table, Blocks cache) const;
    // Decode's body: token i at positions[i] of the sequence whose table is tables[i], attending
    // over 0..positions[i]; lm_head on tokens [first_logits, B) into s.logits rows 0, 1, ...
    void decode_blocks(const int* tokens, size_t B, const int* const* tables, const size_t* positions, Blocks cache,
                       DecodeScratch& s, BatchKernels kernels, size_t first_logits) const;

    ModelConfig config_;
    WeightMatrix wte_;     // (V, C) token embeddings, also the lm_head
    WeightTensor<2> wpe_;  // (n_positions, C) position embeddings
    std::vector<BlockWeights> blocks_;
    WeightTensor<1> ln_f_g_, ln_f_b_;  // (C) final LayerNorm
};

/// Check that `ids` can be fed to a model with this config. Introduced in chapter 00.
/// @throws Error naming the problem: empty, longer than n_positions, or an id outside the vocabulary.
void check_token_ids(const ModelConfig& config, const std::vector<int>& ids);

}  // namespace decodebook
