// Chapter 00: where the model lives, and opening its files without surprises.
#include "decodebook/paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "decodebook/error.hpp"

namespace decodebook {

namespace fs = std::filesystem;

std::string builtin_model_dir() { return DECODEBOOK_MODEL_DIR; }

std::string display_model_dir(const std::string& dir) {
    std::error_code ec;
    if (!fs::equivalent(dir, builtin_model_dir(), ec) || ec) return dir;
    fs::path name = fs::path(builtin_model_dir()).lexically_normal();
    if (name.filename().empty()) name = name.parent_path();  // a trailing '/'
    return name.filename().string() + " (embedded)";
}

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
    const std::string fix =
        "pass --model DIR, set DECODEBOOK_MODEL, or re-run cmake from the repository so the embedded model's "
        "path is baked in";
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);  // follows symlinks; a loop is an error, not a throw
    if (st.type() == fs::file_type::not_found) {
        throw Error("model folder '" + dir + "' (from " + source + ") does not exist", fix);
    }
    if (ec) {
        throw Error("model folder '" + dir + "' (from " + source + ") cannot be read: " + ec.message(), fix);
    }
    if (st.type() != fs::file_type::directory) {
        throw Error("model folder '" + dir + "' (from " + source + ") is not a folder", fix);
    }
    return dir;
}

uint64_t check_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const std::string& fix) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) throw Error("cannot open " + what + " '" + path + "': no such file", fix);
    if (ec) throw Error("cannot open " + what + " '" + path + "': " + ec.message(), fix);
    if (st.type() == fs::file_type::directory) {
        throw Error(what + " '" + path + "' is a folder, not a file", fix);
    }
    if (st.type() != fs::file_type::regular) {
        throw Error(what + " '" + path + "' is not a regular file (a device, pipe or socket)", fix);
    }
    const uintmax_t size = fs::file_size(path, ec);
    if (ec) throw Error("cannot open " + what + " '" + path + "': " + ec.message(), fix);
    if (size > max_bytes) {
        throw Error(what + " '" + path + "' is " + std::to_string(size) + " bytes, more than the " +
                        std::to_string(max_bytes) + " such a file can sensibly hold",
                    fix);
    }
    return size;
}

std::string read_small_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const std::string& fix) {
    const uint64_t size = check_regular_file(path, what, max_bytes, fix);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open " + what + " '" + path + "'", fix);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    // The file may have shrunk since its size was taken: keep what was read, never more.
    text.resize(static_cast<size_t>(in.gcount()));
    if (in.bad()) throw Error("reading " + what + " '" + path + "' failed", fix);
    return text;
}

}  // namespace decodebook
