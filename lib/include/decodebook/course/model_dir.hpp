#pragma once
/// @file course/model_dir.hpp
/// @brief Finding the embedded model wherever a chapter binary is run from (chapter 00). The
/// folder is baked in at configure time: a course concern, so the engine never sees it.
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

/// The embedded draft model's folder (`models/fortunes-draft`), baked in at configure time.
/// Introduced in chapter 08.
std::string builtin_draft_dir();

/// The folder of the data chapter 11 scores (`models/tasks`: the held-out fortunes), baked in at
/// configure time. Introduced in chapter 11.
std::string builtin_tasks_dir();

/// The author-choice task file (`models/tasks/author_choice.json`: 200 held-out fortunes, each
/// author among four), in builtin_tasks_dir(); decoding/choices.hpp's read_choice_task reads it.
/// Introduced in chapter 11.
std::string builtin_author_choice_task();

/// The draft model folder of `--assistant-model`: "none" or empty for none (""), else the folder,
/// checked as resolve_model_dir checks one. Introduced in chapter 08.
/// @throws Error when the folder does not exist, is not a folder or cannot be read.
std::string resolve_assistant_dir(const std::string& cli_value);

/// How a program shows the model folder it loaded: the embedded model (or draft model) by its folder's
/// name, `fortunes-gpt2 (embedded)`, any other folder as given. The course site is built from program output, so it never
/// shows the build machine's own paths. Introduced in chapter 00.
/// @param dir the folder resolve_model_dir returned
std::string display_model_dir(const std::string& dir);

}  // namespace decodebook
