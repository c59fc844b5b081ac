// Chapter 00: random GPT-2 weights of any shape, for testing the loader at GPT-2 small's size.
#include "decodebook/course/random_model.hpp"

#include <deque>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

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
        WeightArray a = WeightArray::from_shape(spec.shape);
        for (float& v : a) {
            v = spec.init == TensorInit::Random ? static_cast<float>(0.02 * (2.0 * rng.coin() - 1.0))
                : spec.init == TensorInit::Ones ? 1.0f
                                                : 0.0f;
        }
        t.emplace(spec.name, std::move(a));
    }
    return t;
}

void write_gpt2_tokenizer(const std::string& dir, int vocab_size) {
    if (vocab_size < 258) {
        throw Error("a GPT-2 tokenizer needs at least 258 ids (256 bytes, one merge and <|endoftext|>), not " +
                        std::to_string(vocab_size),
                    "use a vocab_size of at least 258");
    }
    const std::vector<std::string> symbols = gpt2_byte_symbols();
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    // ids 0-255: the printable bytes first, then the others, as GPT-2's vocab.json numbers them
    int id = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            if (printable == (pass == 0)) vocab[symbols[static_cast<size_t>(b)]] = id++;
        }
    }
    // The merges, breadth first: words that start with a space (" e", " t", ..., " ee", " et", ...)
    // grow by one letter, in English letter frequency order. Growing on the right only, from the
    // space, lets BPE build each word left to right; every merged token is new (a word has one
    // parent: itself minus its last letter).
    const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
    std::deque<std::string> grow{symbols[static_cast<unsigned char>(' ')]};
    std::string merges = "#version: 0.2\n";
    const int n_merges = vocab_size - 257;
    for (int made = 0; made < n_merges;) {
        const std::string left = grow.front();
        grow.pop_front();
        for (size_t i = 0; i < letters.size() && made < n_merges; ++i, ++made) {
            const std::string& right = symbols[static_cast<unsigned char>(letters[i])];
            merges += left + " " + right + "\n";
            vocab[left + right] = id++;
            grow.push_back(left + right);
        }
    }
    vocab["<|endoftext|>"] = id++;
    const auto write = [](const std::string& path, const std::string& text) {
        std::ofstream out(path, std::ios::binary);
        out << text;
        if (!out.flush()) throw Error("cannot write '" + path + "'", "check that the folder exists and is writable");
    };
    write(dir + "/vocab.json", vocab.dump());
    write(dir + "/merges.txt", merges);
}

void write_random_gpt2(const std::string& dir, const ModelConfig& config, uint64_t seed, DType dtype) {
    save_config(dir + "/config.json", config);
    save_safetensors(dir + "/model.safetensors", random_gpt2_tensors(config, seed), dtype);
    write_gpt2_tokenizer(dir, config.vocab_size);
}

}  // namespace decodebook
