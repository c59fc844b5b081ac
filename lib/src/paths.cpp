// Chapter 00: where the model lives.
#include "decodebook/paths.hpp"

#include <cstdlib>
#include <filesystem>

#include "decodebook/error.hpp"

namespace decodebook {

std::string builtin_model_dir() { return DECODEBOOK_MODEL_DIR; }

std::string resolve_model_dir(const std::string& cli_value) {
    std::string dir = cli_value;
    std::string source = "--model";
    if (dir.empty()) {
        if (const char* env = std::getenv("DECODEBOOK_MODEL"); env && *env) {
            dir = env;
            source = "DECODEBOOK_MODEL";
        } else {
            dir = builtin_model_dir();
            source = "the build's default";
        }
    }
    if (!std::filesystem::is_directory(dir)) {
        throw Error("model folder '" + dir + "' (from " + source + ") does not exist",
                    "pass --model DIR, set DECODEBOOK_MODEL, or re-run cmake from the repository "
                    "so the embedded model's path is baked in");
    }
    return dir;
}

}  // namespace decodebook
