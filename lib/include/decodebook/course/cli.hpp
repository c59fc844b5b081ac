#pragma once
/// @file course/cli.hpp
/// @brief Every program's command line (chapters and tools), built from the knob table of
/// generation_config.hpp. cxxopts is slow to compile, so it lives in one file (cli.cpp).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

/// An option of one program only (e.g. decodebook-diversity's `--prompts`). Introduced in chapter 04.
struct ExtraOption {
    std::string flag;           ///< without dashes, e.g. "prompts"
    std::string help;           ///< one line for `--help`
    std::string default_value;  ///< text; read it back with CommandLine::extra_int
};

/// Knobs that steer one part of a program, e.g. chapter 08's `{"part 1", {"num-assistant-tokens"}}`.
/// Introduced in chapter 00.
struct Steer {
    std::string where;               ///< shown by `--help` after the knob's help: "part 1", "parts 2-4"
    std::vector<std::string> flags;  ///< knob flags without dashes, e.g. "top-k" (knob_flags gives a group's)
};

/// The flags of every knob of `group`, in the table's order, e.g. for a Steer that takes a whole group.
/// Introduced in chapter 00.
std::vector<std::string> knob_flags(KnobGroup group);

/// What a program is and which knobs it takes, shown by `--help`. Introduced in chapter 00.
struct ProgramInfo {
    /// A program with the library's defaults and the Length knobs only. Introduced in chapter 00.
    ProgramInfo(std::string program_name, std::string one_line, std::string prompt)
        : program(std::move(program_name)), title(std::move(one_line)), default_prompt(std::move(prompt)) {}
    std::string program;         ///< e.g. "chapter-00"
    std::string title;           ///< one line: what the program shows
    std::string default_prompt;  ///< used when `--prompt` is not given; empty: the program takes no `--prompt`
    GenerationConfig defaults{};  ///< this program's defaults (chapters 02-04 and 06 sample by default)
    /// The knob groups it accepts: every program takes Length; the greedy chapters 00-01 nothing
    /// else, every later chapter and decodebook-generate all of them.
    std::vector<KnobGroup> knob_groups{KnobGroup::Length};
    /// Which knobs of knob_groups steer which part. Every flag a program offers changes what it
    /// prints: a knob of knob_groups that no Steer names is not offered (not in `--help` or
    /// `--show-config`) and, given on a command line, is refused with exit 2 before any output
    /// ("chapter-10 sets its own top-k"; the fix names decodebook-generate). Empty: every knob of
    /// knob_groups steers the program's one run (the tools). A flag is named by one Steer at most.
    std::vector<Steer> steers{};
    /// The columns `--csv FILE` writes, e.g. "step,context_length,milliseconds,token"; empty: no `--csv`.
    std::string csv_columns{};
    bool interactive = false;             ///< offers `--interactive` (decodebook-generate's REPL)
    /// offers `--show-steps` (a table of the one sequence's steps); chapter 05's beams have none
    bool show_steps = true;
    /// offers `--show-chain` (print the processor chain): the programs that print it (with `do-sample` offered)
    bool show_chain = false;
    std::vector<ExtraOption> extra{};     ///< options of this program only
    /// With KnobGroup::Speculative: `--assistant-model DIR` defaults to the embedded draft model
    /// (chapter 08) instead of none (decodebook-generate: speculative only when asked), and
    /// `--assistant-model none` is refused (exit 2): the program needs a draft model.
    bool draft_by_default = false;
    /// Positions the program itself runs past the prompt, whatever `-n` is (e.g. chapter 03 walks
    /// 15 greedy steps to find a peaked and a flat step): open_session refuses, before any output,
    /// a prompt that leaves no room for them, with a message about the prompt.
    int lookahead = 0;
};

/// A chapter from 02 on: it takes every knob and samples by default (sampling is its subject).
/// Introduced in chapter 02.
ProgramInfo sampling_chapter(std::string program, std::string title, std::string default_prompt);

/// A parsed command line. Introduced in chapter 00.
struct CommandLine {
    std::string prompt;          ///< `-p, --prompt TEXT`
    std::string model_dir;       ///< `-m, --model DIR`, resolved (see resolve_model_dir)
    /// `--dtype f32|f16|q8_0|q4_0`: how the model holds its matrices; none: the checkpoint's own (chapter 07; q8_0 and q4_0: chapter 13).
    std::optional<WeightDtype> dtype;
    /// `--assistant-model DIR` (with KnobGroup::Speculative), resolved; empty: no draft model.
    std::string assistant_model_dir;
    GenerationConfig config;     ///< the program's defaults with every knob given applied, validated
    bool show_steps = false;     ///< `--show-steps`: a table of every step
    bool show_chain = false;     ///< `--show-chain`: print the processor chain (with the sampling knobs)
    bool interactive = false;    ///< `-i, --interactive` (with ProgramInfo::interactive)
    std::string csv;             ///< `--csv FILE` (with ProgramInfo::csv_columns); empty: no file
    int threads = 1;             ///< `--threads N` (1..64): the kernels' threads, set by apply_command_line
    std::string blas = "openblas";  ///< `--blas NAME`: prefill's BLAS library, loaded by apply_command_line
    bool verbose = false;        ///< `--verbose`: notes on standard error
    std::map<std::string, std::string> extra;  ///< ProgramInfo::extra, by flag
    std::string program;         ///< ProgramInfo::program
    int lookahead = 0;           ///< ProgramInfo::lookahead
    /// An extra option as a whole number in [lo, hi]. Introduced in chapter 04.
    /// @throws Error naming the flag and the range.
    int extra_int(const std::string& flag, int lo, int hi) const;
};

class OptionError;

/// What a command line asks for: a run with `command_line`, or only `output` printed. Introduced in chapter 00.
struct ParsedCommandLine {
    CommandLine command_line;           ///< the run (empty when `output` is set)
    std::optional<std::string> output;  ///< `--help` or `--show-config`: print this on standard output, exit 0
    std::vector<std::string> warnings;  ///< for standard error, "warning: " each (a stop string that can never win)
};

/// Parse argv against the knob table: a pure function of argv and the program (nothing printed,
/// nothing exits, no process-wide setting changed; the model folders are only resolved, not read).
/// Introduced in chapter 00.
/// @throws OptionError for what cxxopts cannot read; Error (the same message in every program)
/// for a bad value of a knob, a folder, `--dtype` or `--threads`.
ParsedCommandLine parse_command_line(int argc, char** argv, const ProgramInfo& info);

/// The process-wide settings a parsed command line asks for: the kernels' threads (`--threads`),
/// prefill's BLAS library (`--blas`, named on standard error with `--verbose`); and the `--csv`
/// file is checked writable, before the run rather than after it. Introduced in chapter 00.
/// @throws Error for a BLAS library that does not load or a `--csv` file that cannot be written.
void apply_command_line(const CommandLine& command_line);

/// A program's start: parse_command_line, its warnings on standard error, then `--help` or
/// `--show-config` printed, or apply_command_line (and `--verbose`'s load notes). Returns the exit
/// code when the program should stop now (0 after `--help` or `--show-config`; 2, with the problem
/// and the fix printed, for a bad command line), else nothing, and `command_line` is the run's.
/// Introduced in chapter 00.
std::optional<int> read_command_line(int argc, char** argv, const ProgramInfo& info, CommandLine& command_line);

/// What a program works on: the model, its tokenizer, the prompt's ids and the config.
/// Introduced in chapter 02.
struct Session {
    Gpt2 model;               ///< loaded from CommandLine::model_dir
    Tokenizer tokenizer;      ///< the model's tokenizer
    std::vector<int> prompt;  ///< CommandLine::prompt, encoded
    GenerationConfig config;  ///< CommandLine::config
};

/// Load the model and tokenizer, encode the prompt and refuse a bad request (empty prompt,
/// prompt + max_new_tokens or prompt + the program's lookahead beyond the context) before any
/// output. Introduced in chapter 02.
/// @throws Error from loading or from check_generation_request.
Session open_session(const CommandLine& command_line);

/// The draft model of `--assistant-model` (chapter 08), or none when none was given.
/// Introduced in chapter 08.
/// @param command_line its assistant_model_dir
/// @param session the target: the draft's tokenizer must be its tokenizer, token by token
/// @throws Error from loading, when the tokenizers or vocabulary sizes differ, or (not
/// interactive) when the draft's context cannot hold the prompt and max_new_tokens (or the
/// program's lookahead).
std::optional<Gpt2> open_assistant(const CommandLine& command_line, const Session& session);

/// The draft model in `dir` (none when `dir` is empty), checked against a target as
/// open_assistant checks it, for a program that holds no Session (decodebook-bench): before it
/// measures anything. Introduced in chapter 08.
/// @param dir the draft's folder, resolved (resolve_assistant_dir)
/// @param dtype how it holds its matrices (none: the checkpoint's own)
/// @param model the target, whose vocabulary size the draft must score
/// @param tokenizer the target's tokenizer, which the draft's must equal token by token
/// @throws Error from loading, or when the tokenizers or vocabulary sizes differ.
std::optional<Gpt2> open_draft_model(const std::string& dir, std::optional<WeightDtype> dtype, const Gpt2& model,
                                     const Tokenizer& tokenizer);

/// A bad value of a program's own flag found after parsing (`--part foo`, `--samples 3`): a usage
/// error like a bad knob, so run_program exits 2 for it, as read_command_line does. Introduced in chapter 00.
class UsageError : public Error {
public:
    using Error::Error;
};

/// A command line cxxopts cannot read (an unknown option, a missing value, an argument that is
/// no option): read_command_line prints "PROGRAM: PROBLEM\n  see: PROGRAM --help" and exit code 2.
/// Introduced in chapter 00.
class OptionError : public UsageError {
public:
    /// @param problem cxxopts' message, e.g. "Option 'bogus' does not exist"
    explicit OptionError(const std::string& problem) : UsageError(problem, "see --help") {}
};

/// Run a program's body, turning a decodebook::Error into "error: ..." on stderr and exit code 1
/// (2 for a UsageError: a bad parameter, not a failed run). Introduced in chapter 00.
int run_program(const std::function<int()>& body);

}  // namespace decodebook
