#pragma once
// decodebook-bench's constrained-decoding part (chapter 09): what a token mask costs per decoding
// step, on the embedded model's vocabulary and on GPT-2's real one. Not a test: it prints figures.
#include <nlohmann/json.hpp>

#include <string>

namespace decodebook {

struct MaskBenchOptions {
    std::string embedded_dir;    ///< the embedded model's folder (its vocab.json and merges.txt)
    std::string gpt2_vocab_dir;  ///< GPT-2's vocabulary (vocab.json + merges.txt); measured when present
    int documents = 40;          ///< valid outputs per constraint whose steps are timed
};

/// Where `tools/install-deps.sh --bench` puts GPT-2's vocabulary:
/// ${DECODEBOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/decodebook}/gpt2-vocab.
std::string default_gpt2_vocab_dir();

/// Measure, print a table, and return the figures for `--json`.
nlohmann::json run_mask_bench(const MaskBenchOptions& options);

}  // namespace decodebook
