// Shared by the engine tests: the embedded model, golden files from the independent reference
// (tools/reference/, see tests/data/*.json "regenerate"), and temporary folders.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace golden {

/// The model the goldens were made with.
std::string model_dir();
/// Parse tests/data/<name>; fails the test with the regenerate command if it is missing.
nlohmann::json load(const std::string& name);
/// "48656c6c6f" -> "Hello"
std::string from_hex(const std::string& hex);
/// A fresh empty folder under the system temp dir, removed when the object dies.
struct TempDir {
    TempDir();
    ~TempDir();
    std::filesystem::path path;
    std::string file(const std::string& name) const { return (path / name).string(); }
};
/// Write bytes to a file.
void write_file(const std::string& path, const std::string& bytes);
/// "1, 2, 3" for messages.
std::string join(const std::vector<int>& ids);

}  // namespace golden
