#include "golden.hpp"

#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>

namespace golden {

std::string model_dir() {
    std::string dir = DECODEBOOK_SOURCE_DIR;  // appended, not operator+: GCC 12 warns falsely on that
    dir += "/models/fortunes-gpt2";
    return dir;
}

nlohmann::json load(const std::string& name) {
    const std::string path = std::string(DECODEBOOK_TEST_DATA) + "/" + name;
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("golden file " + path +
                                 " is missing: regenerate with /usr/bin/python3 tests/reference/make_goldens.py");
    }
    return nlohmann::json::parse(in);
}

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return out;
}

TempDir::TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("decodebook-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string join(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ", ") + std::to_string(id);
    return s;
}

const decodebook::Gpt2& model() {
    static const decodebook::Gpt2 m = decodebook::Gpt2::load(model_dir());
    return m;
}

decodebook::Picker scripted(std::vector<int> script) {
    auto next = std::make_shared<size_t>(0);
    return [script, next](const xt::xtensor<float, 1>&) { return script[(*next)++ % script.size()]; };
}

decodebook::GenerationConfig config(const nlohmann::json& c) {
    decodebook::GenerationConfig config;
    const auto set = [&](const std::string& name, const nlohmann::json& value) {
        decodebook::set_knob(config, name, value.is_string() ? value.get<std::string>() : value.dump());
    };
    for (const auto& [name, value] : c.at("params").items()) set(name, value);
    for (const char* key : {"order", "seed", "max_new_tokens"})
        if (c.contains(key)) set(key, c[key]);
    return config;
}

const decodebook::Tokenizer& tokenizer() {
    static const decodebook::Tokenizer t = decodebook::Tokenizer::load(model_dir());
    return t;
}

std::vector<int> finite_ids(const xt::xtensor<float, 1>& logits) {
    std::vector<int> ids;
    for (size_t i = 0; i < logits.size(); ++i)
        if (std::isfinite(logits(i))) ids.push_back(static_cast<int>(i));
    return ids;
}

std::vector<int> kept_ids(const std::vector<bool>& keep) {
    std::vector<int> ids;
    for (size_t i = 0; i < keep.size(); ++i)
        if (keep[i]) ids.push_back(static_cast<int>(i));
    return ids;
}

}  // namespace golden
