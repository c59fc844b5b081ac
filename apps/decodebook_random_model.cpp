// decodebook-random-model: write a GPT-2 model with deterministic random weights.
//
//   decodebook-random-model DIR [--gpt2-small] [--seed N] [--dtype f32|f16|bf16]
//
// Writes DIR/config.json, DIR/model.safetensors (Hugging Face names and orientation) and a
// tokenizer of the model's vocabulary size (vocab.json, merges.txt: made by rule, not trained),
// so every chapter and tool runs on the folder. With --gpt2-small the shape is
// openai-community/gpt2's (124M parameters, ~250 MB in f16): the loader's test at full size and
// the benchmark model. Without it, the embedded model's shape.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "decodebook/base/error.hpp"
#include "decodebook/course/random_model.hpp"

using namespace decodebook;

namespace {

constexpr const char* kUsage = "usage: decodebook-random-model DIR [--gpt2-small] [--seed N] [--dtype f32|f16|bf16]";

// A bad command line: main prints it with "see: --help" and exits 2.
class UsageProblem : public Error {
public:
    using Error::Error;
};

[[noreturn]] void usage_error(const std::string& problem, const std::string& fix) { throw UsageProblem(problem, fix); }

// What to write.
struct Request {
    std::string dir;
    ModelConfig config;
    uint64_t seed = 1;
    DType dtype = DType::F16;
    bool help = false;
};

// The folder to write: made if missing; refused (not thrown through) when it cannot be a folder.
void make_folder(const std::string& dir) {
    namespace fs = std::filesystem;
    const std::string fix = "give a folder that exists or can be created, and is writable";
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (st.type() == fs::file_type::directory) return;
    if (fs::exists(st)) throw Error("'" + dir + "' exists and is not a folder", fix);
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot make the folder '" + dir + "': " + ec.message(), fix);
}

Request parse_arguments(int argc, char** argv) {
    Request r;
    ModelConfig& config = r.config;
    config.vocab_size = 2048; config.n_positions = 256; config.n_embd = 192; config.n_layer = 4; config.n_head = 4;
    config.eos_token_id = 2047;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--help" || a == "-h") {
            r.help = true;
            return r;
        } else if (a == "--gpt2-small") {
            config = gpt2_small_config();
        } else if ((a == "--seed" || a == "--dtype") && !has_value) {
            usage_error(a + " needs a value", "e.g. " + a + (a == "--seed" ? " 7" : " f32"));
        } else if (a == "--seed") {
            const std::string text = argv[++i];
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, r.seed);
            if (text.empty() || ec != std::errc() || ptr != end) {
                usage_error("--seed = " + text + " is invalid: it must be a whole number in [0, 2^64)", "e.g. --seed 7");
            }
        } else if (a == "--dtype") {
            const std::string d = argv[++i];
            if (d == "f32") r.dtype = DType::F32;
            else if (d == "f16") r.dtype = DType::F16;
            else if (d == "bf16") r.dtype = DType::BF16;
            else usage_error("--dtype = " + d + " is invalid: it must be f32, f16 or bf16", "e.g. --dtype f32");
        } else if (!a.empty() && a[0] != '-' && r.dir.empty()) {
            r.dir = a;
        } else {
            usage_error("unexpected argument '" + a + "'", kUsage);
        }
    }
    if (r.dir.empty()) usage_error("give the folder to write", kUsage);
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    Request r;
    try {
        r = parse_arguments(argc, argv);
    } catch (const UsageProblem& e) {
        std::fprintf(stderr, "error: %s\n  fix: %s\n  see: decodebook-random-model --help\n", e.problem().c_str(),
                     e.fix().c_str());
        return 2;
    }
    if (r.help) {
        std::printf("%s\nWrites config.json, model.safetensors, vocab.json and merges.txt into DIR (made if missing).\n"
                    "  --gpt2-small   openai-community/gpt2's shape (124M parameters, vocabulary 50257)\n"
                    "  --seed N       seed of the weights, a whole number in [0, 2^64) (default 1)\n"
                    "  --dtype T      f32, f16 or bf16 (default f16)\n",
                    kUsage);
        return 0;
    }
    const std::string& dir = r.dir;
    const ModelConfig& config = r.config;
    try {
        make_folder(dir);
        write_random_gpt2(dir, config, r.seed, r.dtype);
        std::printf("wrote %s/config.json, model.safetensors, vocab.json and merges.txt (%d layers, width %d, vocabulary %d)\n",
                    dir.c_str(), config.n_layer, config.n_embd, config.vocab_size);
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
