#pragma once
/// @file cli.hpp
/// @brief Command-line options shared by every chapter binary (parsed with cxxopts in one file).
#include <functional>
#include <string>

namespace decodebook {

/// What a chapter binary is and its defaults, shown by --help. Introduced in chapter 00.
struct ChapterInfo {
    std::string program;          ///< e.g. "chapter-00"
    std::string title;            ///< one line: what the chapter shows
    std::string default_prompt;   ///< used when --prompt is not given
    int default_max_new_tokens = 32;  ///< used when --max-new-tokens is not given
};

/// The options every chapter accepts. Introduced in chapter 00.
struct ChapterOptions {
    std::string prompt;          ///< --prompt TEXT
    int max_new_tokens = 32;     ///< --max-new-tokens N
    std::string model_dir;       ///< --model DIR, resolved (see resolve_model_dir)
    bool show_steps = false;     ///< --show-steps: a table of step, id, token, logit, probability, ms
};

/// Parse argv. `--help` prints usage and exits 0; a bad option prints the problem and exits 2.
/// Introduced in chapter 00.
ChapterOptions parse_chapter_options(int argc, char** argv, const ChapterInfo& info);

/// Run a chapter's body, turning a decodebook::Error into "error: ..." on stderr and exit code 1.
/// Introduced in chapter 00.
int run_chapter(const std::function<int()>& body);

}  // namespace decodebook
