// Chapter 00: the model's shape.
#include "decodebook/model/config.hpp"

#include <cstdint>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/files.hpp"

namespace decodebook {
namespace {

constexpr const char* kConfigFix = "config.json must hold HF GPT2Config keys: vocab_size, n_positions (or n_ctx), "
                                   "n_embd, n_layer, n_head";

// A value as a message shows it: a number or a short string as written, an array or an object by
// its kind (dump() recurses, and a 1 MB file can nest a value half a million levels deep).
std::string brief(const nlohmann::json& v) {
    if (v.is_array()) return "an array";
    if (v.is_object()) return "an object";
    const std::string text = v.dump();
    return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

// config.json's text, parsed: it must be a JSON object (of GPT2Config keys).
nlohmann::json read_config_json(const std::string& path) {
    const std::string text = read_small_file(path, "model config", 1u << 20,
                                             "pass --model DIR with a folder holding config.json, model.safetensors, "
                                             "vocab.json and merges.txt");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + path + "' is not valid JSON (" + e.what() + ")", "repair or re-export config.json");
    }
    if (!j.is_object()) throw Error("'" + path + "' is not a JSON object of GPT2Config keys", kConfigFix);
    return j;
}

// A whole number in [1, most]: the caps keep every tensor size and the schema itself sane.
// `key` is read, else `fallback` (n_ctx for n_positions); a message names `key` when both lack.
int positive(const nlohmann::json& j, const std::string& path, const char* key, long long most,
             const char* fallback = nullptr) {
    const char* k = j.contains(key) ? key : fallback;
    if (!k || !j.contains(k)) throw Error("'" + path + "' has no '" + key + "'", kConfigFix);
    const nlohmann::json& v = j[k];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(most)) ||
        v.get<long long>() <= 0 || v.get<long long>() > most) {
        throw Error("'" + path + "': '" + k + "' is " + brief(v) + " but must be a whole number in [1, " +
                        std::to_string(most) + "]",
                    kConfigFix);
    }
    return v.get<int>();
}

// The five sizes, in this order; n_head must divide n_embd.
ModelConfig read_sizes(const nlohmann::json& j, const std::string& path) {
    ModelConfig c;
    c.vocab_size = positive(j, path, "vocab_size", 1 << 24);
    c.n_positions = positive(j, path, "n_positions", 1 << 20, "n_ctx");
    c.n_embd = positive(j, path, "n_embd", 1 << 16);
    c.n_layer = positive(j, path, "n_layer", 1024);
    c.n_head = positive(j, path, "n_head", 1 << 16);
    if (c.n_embd % c.n_head != 0) {
        throw Error("'" + path + "': n_embd " + std::to_string(c.n_embd) + " is not divisible by n_head " +
                        std::to_string(c.n_head),
                    kConfigFix);
    }
    return c;
}

// GPT-2 has one context length (n_ctx, where given with n_positions, equals it) and one MLP width.
void check_context_and_width(const nlohmann::json& j, const std::string& path, const ModelConfig& c) {
    if (j.contains("n_ctx") && j.contains("n_positions") &&
        (!j["n_ctx"].is_number_integer() || j["n_ctx"].get<long long>() != c.n_positions)) {
        throw Error("'" + path + "': n_ctx " + brief(j["n_ctx"]) + " differs from n_positions " +
                        std::to_string(c.n_positions),
                    "GPT-2 has one context length: make n_ctx equal n_positions (or drop it)");
    }
    // n_inner: the MLP's width; null means 4 * n_embd, the only width decodebook's GPT-2 has.
    if (j.contains("n_inner") && !j["n_inner"].is_null() &&
        !(j["n_inner"].is_number_integer() && j["n_inner"].get<long long>() == 4LL * c.n_embd)) {
        throw Error("'" + path + "': n_inner " + brief(j["n_inner"]) + " is not supported (decodebook's GPT-2 MLP is "
                        "4 * n_embd = " + std::to_string(4 * c.n_embd) + " wide)",
                    "use a GPT-2 with n_inner null or " + std::to_string(4 * c.n_embd));
    }
}

// layer_norm_epsilon, where given, into c.
void read_epsilon(const nlohmann::json& j, const std::string& path, ModelConfig& c) {
    if (!j.contains("layer_norm_epsilon")) return;
    // Stored as a float: it must stay a positive normal float (1e-50 would become 0, 1e300 inf).
    const nlohmann::json& eps = j["layer_norm_epsilon"];
    const double most = 1.0, least = std::numeric_limits<float>::min();
    if (!eps.is_number() || !(eps.get<double>() >= least && eps.get<double>() <= most)) {
        throw Error("'" + path + "': layer_norm_epsilon " + brief(eps) + " must be a number in [1.2e-38, 1] "
                        "(it is stored as a float; GPT-2 uses 1e-05)",
                    kConfigFix);
    }
    c.layer_norm_epsilon = eps.get<float>();
}

// `key`, where given, must be `wanted`.
void must_be(const nlohmann::json& j, const std::string& path, const char* key, bool wanted) {
    if (j.contains(key) && j[key] != wanted) {
        throw Error("'" + path + "': " + key + " " + brief(j[key]) + " is not supported (decodebook's GPT-2 has " +
                        key + " " + (wanted ? "true" : "false") + ")",
                    "use a GPT-2 model");
    }
}

// The GPT2Config variants decodebook's GPT-2 does not implement: another activation, or another attention.
void check_gpt2_variant(const nlohmann::json& j, const std::string& path) {
    if (j.contains("activation_function") && j["activation_function"] != "gelu_new" &&
        j["activation_function"] != "gelu_pytorch_tanh") {
        throw Error("'" + path + "': activation_function " + brief(j["activation_function"]) +
                        " is not supported (decodebook implements GPT-2's tanh GELU, \"gelu_new\")",
                    "use a GPT-2 model");
    }
    // Attention variants of GPT2Config that decodebook's GPT-2 does not implement.
    must_be(j, path, "scale_attn_weights", true);
    must_be(j, path, "scale_attn_by_inverse_layer_idx", false);
    must_be(j, path, "reorder_and_upcast_attn", false);
    must_be(j, path, "add_cross_attention", false);
    must_be(j, path, "tie_word_embeddings", true);
}

// eos_token_id, where given and not null, into c: an id of the vocabulary.
void read_eos(const nlohmann::json& j, const std::string& path, ModelConfig& c) {
    if (!j.contains("eos_token_id") || j["eos_token_id"].is_null()) return;
    const nlohmann::json& eos = j["eos_token_id"];
    if (!eos.is_number_integer() || eos.get<long long>() < 0 || eos.get<long long>() >= c.vocab_size ||
        (eos.is_number_unsigned() && eos.get<uint64_t>() >= static_cast<uint64_t>(c.vocab_size))) {
        throw Error("'" + path + "': eos_token_id " + brief(eos) + " must be a whole number in [0, " +
                        std::to_string(c.vocab_size - 1) + "] (an id of the vocabulary) or null",
                    "write it as a number, e.g. \"eos_token_id\": " + std::to_string(c.vocab_size - 1));
    }
    c.eos_token_id = eos.get<int>();
}

}  // namespace

// The checks run in this order: a file with several problems reports the first one met.
ModelConfig load_config(const std::string& path) {
    const nlohmann::json j = read_config_json(path);
    ModelConfig c = read_sizes(j, path);
    check_context_and_width(j, path, c);
    read_epsilon(j, path, c);
    check_gpt2_variant(j, path);
    read_eos(j, path, c);
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
