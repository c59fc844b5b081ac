#pragma once
/// @file paths.hpp
/// @brief Finding the embedded model wherever a chapter binary is run from, and opening the
/// model folder's files safely (chapter 00).
#include <cstdint>
#include <string>

namespace decodebook {

/// The model folder to use: `cli_value` if not empty, else the environment variable
/// `DECODEBOOK_MODEL`, else the folder baked in at configure time (`models/fortunes-gpt2`).
/// Introduced in chapter 00.
/// @throws Error when the chosen folder does not exist, is not a folder or cannot be read
/// (e.g. a symlink loop).
std::string resolve_model_dir(const std::string& cli_value);

/// The folder baked in at configure time. Introduced in chapter 00.
std::string builtin_model_dir();

/// How a program shows the model folder it loaded: the embedded model by its folder's name, `fortunes-gpt2
/// (embedded)`, any other folder as given. The course site is built from program output, so it never
/// shows the build machine's own paths. Introduced in chapter 00.
/// @param dir the folder resolve_model_dir returned
std::string display_model_dir(const std::string& dir);

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
