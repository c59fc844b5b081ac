// Chapter 00: opening a model folder's files without surprises.
#include "decodebook/base/files.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "decodebook/base/error.hpp"

namespace decodebook {

namespace fs = std::filesystem;

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
