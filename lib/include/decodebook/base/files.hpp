#pragma once
/// @file base/files.hpp
/// @brief Opening a model folder's files safely: a regular file of a sensible size, read whole
/// (chapter 00).
#include <cstdint>
#include <string>

namespace decodebook {

/// Check that `path` is a regular file (symlinks followed) of at most `max_bytes`, and return
/// its size. A directory, a device such as /dev/urandom, a pipe, a symlink loop or an
/// oversized file is refused before anything is read. Introduced in chapter 00.
/// @param path the file to check
/// @param what what the file is, for the message: "model weights", "tokenizer file", ...
/// @param max_bytes the largest size accepted
/// @param fix the fix to print when the file is missing or unusable
/// @throws Error naming the file and the problem.
uint64_t check_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const std::string& fix);

/// The whole of a small file (config.json, vocab.json, merges.txt), after check_regular_file.
/// Introduced in chapter 00.
/// @throws Error as check_regular_file, or when reading fails.
std::string read_small_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const std::string& fix);

}  // namespace decodebook
