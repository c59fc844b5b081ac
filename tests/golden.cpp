#include "golden.hpp"

#include <cmath>
#include <cstdio>
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

std::string c_literal(std::string_view bytes) {
    std::string out = "\"";
    for (char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        if (b >= 0x20 && b < 0x7F && c != '"' && c != '\\') {
            out += c;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", b);
            out += buf;
        }
    }
    return out + "\"";
}

namespace {

std::string json_of_depth_2() {
    const std::string ws = "[ \\n\\t]*";
    const std::string string = "\"([^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*\"";
    const std::string number = "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";
    const std::string scalar = "(" + string + "|" + number + "|true|false|null)";
    auto object = [&](const std::string& value) {
        const std::string member = string + ws + ":" + ws + value;
        return "\\{" + ws + "(" + member + ws + "(," + ws + member + ws + ")*)?\\}";
    };
    auto array = [&](const std::string& value) {
        return "\\[" + ws + "(" + value + ws + "(," + ws + value + ws + ")*)?\\]";
    };
    const std::string value1 = "(" + scalar + "|" + object(scalar) + "|" + array(scalar) + ")";
    return object(value1) + "|" + array(value1);
}

}  // namespace

const TokenOperationsCase& xgrammar_token_operations() {
    static const TokenOperationsCase c{
        {"<s>", "</s>", "a", "abc", "b\"", "\"", ":\"", "{", "}", ", ", "6", ":", "\n", " ", "\"a\":true"},
        {"{", "\"", "abc", "b\"", ":", "6", ", ", " ", "\"a\":true", "}"},
        {
            {"{"},
            {"\"", "}", "\n", " ", "\"a\":true"},
            {"<s>", "a", "abc", "b\"", "\"", ":\"", "{", "}", ", ", "6", ":", " "},
            {"<s>", "a", "abc", "b\"", "\"", ":\"", "{", "}", ", ", "6", ":", " "},
            {":", "\n", " ", ":\""},
            {"\"", "{", "6", "\n", " "},
            {"}", ", ", "6", "\n", " "},
            {" ", "\n", "\"", "\"a\":true"},
            {" ", "\n", "\"", "\"a\":true"},
            {"}", ", ", "\n", " "},
            {"</s>"},
        },
        json_of_depth_2()};
    return c;
}

}  // namespace golden
