// Shared by the libFuzzer targets (tests/fuzz/README.md): a private scratch folder for the inputs
// that the library reads from files, and the one rule every target checks: bad input may throw
// decodebook::Error (a clear message), nothing else may happen (no crash, no other exception, no
// sanitizer report, no hang).
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fuzz {

/// A folder of this process's own (under TMPDIR, or /tmp), created once.
inline const std::filesystem::path& scratch() {
    static const std::filesystem::path dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::filesystem::path d = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                                  ("decodebook-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

/// Write `bytes` to scratch()/name and return the path.
inline std::string write_file(const std::string& name, std::string_view bytes) {
    const std::filesystem::path path = scratch() / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
        std::abort();
    }
    return path.string();
}

/// Stop the run with a message: libFuzzer records the input that got here as a crash.
[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
    std::abort();
}

}  // namespace fuzz
