#pragma once
/// @file paths.hpp
/// @brief Finding the embedded model wherever a chapter binary is run from (chapter 00).
#include <string>

namespace decodebook {

/// The model folder to use: `cli_value` if not empty, else the environment variable
/// `DECODEBOOK_MODEL`, else the folder baked in at configure time (`models/fortunes-gpt2`).
/// Introduced in chapter 00.
/// @throws Error when the chosen folder does not exist.
std::string resolve_model_dir(const std::string& cli_value);

/// The folder baked in at configure time. Introduced in chapter 00.
std::string builtin_model_dir();

}  // namespace decodebook
