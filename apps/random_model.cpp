// decodebook-random-model: write a GPT-2 model with deterministic random weights.
//
//   decodebook-random-model DIR [--gpt2-small] [--seed N] [--dtype f32|f16|bf16]
//
// Writes DIR/config.json and DIR/model.safetensors (Hugging Face names and orientation). With
// --gpt2-small the shape is openai-community/gpt2's (124M parameters, ~250 MB in f16): the
// loader's test at full size and, later, the benchmark model. Without it, the embedded model's
// shape. No tokenizer is written: feed token ids directly.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "decodebook/error.hpp"
#include "decodebook/random_model.hpp"

using namespace decodebook;

int main(int argc, char** argv) {
    std::string dir;
    ModelConfig config;
    config.vocab_size = 2048; config.n_positions = 256; config.n_embd = 192; config.n_layer = 4; config.n_head = 4;
    config.eos_token_id = 2047;
    uint64_t seed = 1;
    DType dtype = DType::F16;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--help" || a == "-h") {
            std::printf("usage: decodebook-random-model DIR [--gpt2-small] [--seed N] [--dtype f32|f16|bf16]\n");
            return 0;
        } else if (a == "--gpt2-small") {
            config = gpt2_small_config();
        } else if (a == "--seed" && has_value) {
            seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--dtype" && has_value) {
            const std::string d = argv[++i];
            if (d == "f32") dtype = DType::F32;
            else if (d == "f16") dtype = DType::F16;
            else if (d == "bf16") dtype = DType::BF16;
            else { std::fprintf(stderr, "decodebook-random-model: --dtype must be f32, f16 or bf16\n"); return 2; }
        } else if (a[0] != '-' && dir.empty()) {
            dir = a;
        } else {
            std::fprintf(stderr, "decodebook-random-model: unexpected argument '%s' (see --help)\n", a.c_str());
            return 2;
        }
    }
    if (dir.empty()) {
        std::fprintf(stderr, "decodebook-random-model: give the folder to write (see --help)\n");
        return 2;
    }
    try {
        std::filesystem::create_directories(dir);
        write_random_gpt2(dir, config, seed, dtype);
        std::printf("wrote %s/config.json and %s/model.safetensors (%d layers, width %d, vocabulary %d)\n", dir.c_str(),
                    dir.c_str(), config.n_layer, config.n_embd, config.vocab_size);
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "decodebook-random-model: error: %s\n", e.what());
        return 1;
    }
}
