#pragma once
/// @file cli.hpp
/// @brief Command-line options shared by every chapter binary (parsed with cxxopts in one file).
#include <functional>
#include <cstdint>
#include <string>
#include <vector>

#include "decodebook/chain.hpp"
#include "decodebook/model.hpp"
#include "decodebook/tokenizer.hpp"

namespace decodebook {

/// What a chapter binary is and its defaults, shown by --help. Introduced in chapter 00.
struct ChapterInfo {
    std::string program;          ///< e.g. "chapter-00"
    std::string title;            ///< one line: what the chapter shows
    std::string default_prompt;   ///< used when --prompt is not given
    int default_max_new_tokens = 32;  ///< used when --max-new-tokens is not given
    /// The columns a chapter writes with `--csv FILE`, e.g. "step,context_length,milliseconds,token".
    /// Empty (the default): the chapter has no `--csv` option. Introduced in chapter 00.
    std::string csv_columns{};  // "{}": chapters that leave it out get no -Wmissing-field-initializers
    /// True: the chapter also takes --temperature, --top-k, --top-p, --min-p, --repetition-penalty,
    /// --seed and --show-chain (chapters 02-04). Introduced in chapter 02.
    bool sampling = false;
};

/// The options every chapter accepts. Introduced in chapter 00.
struct ChapterOptions {
    std::string prompt;          ///< --prompt TEXT
    int max_new_tokens = 32;     ///< --max-new-tokens N
    std::string model_dir;       ///< --model DIR, resolved (see resolve_model_dir)
    bool show_steps = false;     ///< --show-steps: a table of step, id, token, logit, probability, ms
    /// --csv FILE: where to write one row per step (columns: ChapterInfo::csv_columns), e.g. for
    /// the course site's plots; empty: no file. Introduced in chapter 00.
    std::string csv;
    /// The sampling flags (only with ChapterInfo::sampling), validated. Introduced in chapter 02.
    SamplingParams params{};
    uint64_t seed = 42;        ///< --seed N: the coin stream (only with ChapterInfo::sampling)
    bool show_chain = false;   ///< --show-chain: print the processor chain (only with ChapterInfo::sampling)
};

/// Parse argv. `--help` prints usage and exits 0; a bad option prints the problem and exits 2.
/// Introduced in chapter 00.
ChapterOptions parse_chapter_options(int argc, char** argv, const ChapterInfo& info);

/// What a sampling chapter works on: the model, its tokenizer and the prompt's ids.
/// Introduced in chapter 02.
struct ChapterSession {
    Gpt2 model;               ///< loaded from ChapterOptions::model_dir
    Tokenizer tokenizer;      ///< the model's tokenizer
    std::vector<int> prompt;  ///< ChapterOptions::prompt, encoded
};

/// Load the model and tokenizer, encode the prompt and refuse a bad request (empty prompt,
/// prompt + max_new_tokens beyond the context) before any output. Introduced in chapter 02.
/// @throws Error from loading or from check_generation_request.
ChapterSession open_session(const ChapterOptions& options);

/// Run a chapter's body, turning a decodebook::Error into "error: ..." on stderr and exit code 1.
/// Introduced in chapter 00.
int run_chapter(const std::function<int()>& body);

}  // namespace decodebook
