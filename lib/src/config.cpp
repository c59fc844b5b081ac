// Chapter 00: the model's shape.
#include "decodebook/config.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "decodebook/error.hpp"

namespace decodebook {

ModelConfig load_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw Error("cannot open model config '" + path + "'",
                    "pass --model DIR with a folder holding config.json, model.safetensors, "
                    "vocab.json and merges.txt");
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + path + "' is not valid JSON (" + e.what() + ")", "repair or re-export config.json");
    }
    const auto fix = std::string("config.json must hold HF GPT2Config keys: vocab_size, n_positions (or n_ctx), "
                                 "n_embd, n_layer, n_head");
    const auto positive = [&](const char* key, const char* fallback = nullptr) {
        const char* k = j.contains(key) ? key : fallback;
        if (!k || !j.contains(k)) throw Error("'" + path + "' has no '" + key + "'", fix);
        if (!j[k].is_number_integer() || j[k].get<long long>() <= 0 || j[k].get<long long>() > (1 << 24)) {
            throw Error("'" + path + "': '" + k + "' must be a positive integer", fix);
        }
        return j[k].get<int>();
    };
    ModelConfig c;
    c.vocab_size = positive("vocab_size");
    c.n_positions = positive("n_positions", "n_ctx");
    c.n_embd = positive("n_embd");
    c.n_layer = positive("n_layer");
    c.n_head = positive("n_head");
    if (c.n_embd % c.n_head != 0) {
        throw Error("'" + path + "': n_embd " + std::to_string(c.n_embd) + " is not divisible by n_head " +
                        std::to_string(c.n_head),
                    fix);
    }
    if (j.contains("layer_norm_epsilon")) {
        if (!j["layer_norm_epsilon"].is_number() || j["layer_norm_epsilon"].get<double>() <= 0) {
            throw Error("'" + path + "': layer_norm_epsilon must be a positive number", fix);
        }
        c.layer_norm_epsilon = j["layer_norm_epsilon"].get<float>();
    }
    if (j.contains("activation_function") && j["activation_function"] != "gelu_new" &&
        j["activation_function"] != "gelu_pytorch_tanh") {
        throw Error("'" + path + "': activation_function " + j["activation_function"].dump() +
                        " is not supported (decodebook implements GPT-2's tanh GELU, \"gelu_new\")",
                    "use a GPT-2 model");
    }
    if (j.contains("eos_token_id") && j["eos_token_id"].is_number_integer()) {
        c.eos_token_id = j["eos_token_id"].get<int>();
        if (c.eos_token_id < 0 || c.eos_token_id >= c.vocab_size) {
            throw Error("'" + path + "': eos_token_id is outside the vocabulary", fix);
        }
    }
    return c;
}

}  // namespace decodebook

namespace decodebook {

void save_config(const std::string& path, const ModelConfig& c) {
    const nlohmann::json j = {
        {"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"},
        {"vocab_size", c.vocab_size}, {"n_positions", c.n_positions}, {"n_ctx", c.n_positions},
        {"n_embd", c.n_embd}, {"n_layer", c.n_layer}, {"n_head", c.n_head},
        {"layer_norm_epsilon", c.layer_norm_epsilon}, {"activation_function", "gelu_new"},
        {"bos_token_id", c.eos_token_id}, {"eos_token_id", c.eos_token_id}};
    std::ofstream out(path);
    if (!out) throw Error("cannot write '" + path + "'", "check that the folder exists and is writable");
    out << j.dump(2) << "\n";
}

}  // namespace decodebook
