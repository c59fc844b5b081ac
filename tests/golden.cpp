#include "golden.hpp"

#include <fstream>
#include <random>
#include <stdexcept>

namespace golden {

std::string model_dir() { return std::string(DECODEBOOK_SOURCE_DIR) + "/models/fortunes-gpt2"; }

nlohmann::json load(const std::string& name) {
    const std::string path = std::string(DECODEBOOK_TEST_DATA) + "/" + name;
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("golden file " + path +
                                 " is missing: regenerate with /usr/bin/python3 tools/reference/make_goldens.py");
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

}  // namespace golden
