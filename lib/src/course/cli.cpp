// Chapter 00 on: every program's command line. cxxopts is slow to compile, so it lives only here,
// and the decoding flags come from the knob table (generation_config.hpp), never spelled here.
#include "decodebook/course/cli.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

#include <unistd.h>

#include <cxxopts.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/safetensors.hpp"

namespace decodebook {
namespace {

bool takes(const ProgramInfo& info, KnobGroup group) {
    for (KnobGroup g : info.knob_groups)
        if (g == group) return true;
    return false;
}

// The Steer that names a knob's flag, or none.
const Steer* steer_of(const ProgramInfo& info, const std::string& flag) {
    for (const Steer& s : info.steers)
        if (std::find(s.flags.begin(), s.flags.end(), flag) != s.flags.end()) return &s;
    return nullptr;
}

// A knob is offered when the program takes its group and, if the program says which knobs steer
// which part, one of its parts names it: every offered flag changes what the program prints.
bool offers(const ProgramInfo& info, const Knob& k) {
    return takes(info, k.group) && (info.steers.empty() || steer_of(info, k.flag));
}

bool offers(const ProgramInfo& info, const std::string& flag) {
    for (const Knob& k : knobs())
        if (k.flag == flag) return offers(info, k);
    return false;
}

bool offers_chain(const ProgramInfo& info) { return info.show_chain && offers(info, "do-sample"); }

const char* group_name(KnobGroup g) {
    switch (g) {
        case KnobGroup::Length: return "";
        case KnobGroup::Stopping: return "stopping";
        case KnobGroup::Sampling: return "sampling";
        case KnobGroup::Penalties: return "penalties";
        case KnobGroup::Beams: return "beam search";
        case KnobGroup::Speculative: return "speculative decoding";
        case KnobGroup::Constraint: return "constrained decoding";
    }
    return "";
}

// The --csv file must be writable before the program runs: its folder exists and is writable, and
// the path is not a folder or a read-only file. Nothing is created here.
void check_writable_file(const std::string& path) {
    namespace fs = std::filesystem;
    const std::string fix = "pass --csv with a path in a folder that exists and is writable";
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::directory) throw Error("the --csv file '" + path + "' is a folder", fix);
    if (fs::exists(st)) {
        if (::access(path.c_str(), W_OK) != 0) throw Error("cannot write the --csv file '" + path + "': it is read-only", fix);
        return;
    }
    fs::path folder = fs::path(path).parent_path();
    if (folder.empty()) folder = ".";
    const fs::file_status dir = fs::status(folder, ec);
    if (dir.type() != fs::file_type::directory) {
        throw Error("cannot write the --csv file '" + path + "': folder '" + folder.string() + "' does not exist", fix);
    }
    if (::access(folder.c_str(), W_OK) != 0) {
        throw Error("cannot write the --csv file '" + path + "': folder '" + folder.string() + "' is not writable", fix);
    }
}

}  // namespace

int CommandLine::extra_int(const std::string& flag, int lo, int hi) const {
    const std::string& text = extra.at(flag);
    size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || value < lo || value > hi) {
        throw UsageError("--" + flag + " = " + text + " is invalid: it must be a whole number in [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]",
                    "pass --" + flag + " with a value in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return value;
}

ProgramInfo sampling_chapter(std::string program, std::string title, std::string default_prompt) {
    ProgramInfo info(std::move(program), std::move(title), std::move(default_prompt));
    info.defaults.do_sample = true;
    info.knob_groups = {KnobGroup::Length, KnobGroup::Stopping, KnobGroup::Sampling, KnobGroup::Penalties};
    return info;
}

namespace {

// Every option a program takes: its own, the common ones, then one flag per knob of its groups.
cxxopts::Options build_options(const ProgramInfo& info) {
    cxxopts::Options options(info.program, info.title);
    if (!info.default_prompt.empty()) {
        options.add_options()("p,prompt", "text to continue", cxxopts::value<std::string>()->default_value(info.default_prompt));
    }
    if (info.show_steps) {
        options.add_options()("show-steps", "print a table of every step: step, id, token, logit, probability, ms");
    }
    options.add_options()
        ("m,model", "model folder (config.json, model.safetensors, vocab.json, merges.txt); "
                    "default: $DECODEBOOK_MODEL, else " + builtin_model_dir(),
         cxxopts::value<std::string>()->default_value(""))
        ("dtype", "how the model holds its weight matrices: f32, f16 (half the bytes, the same logits on an f16 "
                  "checkpoint), or ggml's q8_0 or q4_0 blocks (8.5 or 4.5 bits a weight, quantized at load); "
                  "default: the checkpoint's own (F16 stays f16, F32 and BF16 load as f32)",
         cxxopts::value<std::string>(), "f32|f16|q8_0|q4_0")
        ("show-config", "print every decoding parameter this command line gives, then exit")
        ("verbose", "print notes on standard error, e.g. the checkpoint's tensors the model does not read")
        ("threads", "threads for the cached model's kernels, prefill's GEMM included (1..64; a second thread helps only when "
                    "the second core is idle)",
         cxxopts::value<std::string>()->default_value("1"), "N")
        ("blas", "BLAS library for the prefill's matrix products: openblas (linked), blis (Debian's BLIS), or the "
                 "path of a CBLAS library; decodebook-bench compares them",
         cxxopts::value<std::string>()->default_value("openblas"), "NAME");
    if (takes(info, KnobGroup::Speculative)) {
        options.add_options()("assistant-model",
                              info.draft_by_default
                                  ? "draft model folder for speculative decoding (same tokenizer as the model); " +
                                        info.program + " needs one; default: " + builtin_draft_dir()
                                  : "draft model folder for speculative decoding (same tokenizer as the model), or none; "
                                    "default: none",
                              cxxopts::value<std::string>()->default_value(info.draft_by_default ? builtin_draft_dir() : "none"),
                              "DIR");
    }
    if (!info.csv_columns.empty()) {
        options.add_options()("csv", "write the program's data as CSV to FILE (columns: " + info.csv_columns + ")",
                              cxxopts::value<std::string>()->default_value(""), "FILE");
    }
    if (info.interactive) {
        options.add_options()("i,interactive", "read prompts from standard input; keep settings between them");
    }
    for (const ExtraOption& e : info.extra) {
        options.add_options()(e.flag, e.help, cxxopts::value<std::string>()->default_value(e.default_value));
    }
    // The knobs: one flag per row of the table, in the table's order; the value stays text here
    // and is parsed by the row, so every program prints the same message for a bad value.
    for (const Knob& k : knobs()) {
        if (!offers(info, k)) continue;
        std::string opts = k.flag;
        if (k.flag == "max-new-tokens") opts = "n," + opts;
        if (k.flag == "seed") opts = "s," + opts;
        const Steer* steer = steer_of(info, k.flag);
        options.add_options(group_name(k.group))(opts, k.help + " (" + k.rule + "; default " + k.get(info.defaults) + ")" +
                                                           (steer ? " (" + steer->where + ")" : ""),
                                                 cxxopts::value<std::string>(), "VALUE");
    }
    if (offers_chain(info)) {
        options.add_options("sampling")("show-chain", "print the processor chain");
    }
    options.add_options()("h,help", "show this help");
    return options;
}

// --help: the options by group, then how this program chooses between greedy and sampling.
std::string help_text(cxxopts::Options& options, const ProgramInfo& info) {
    std::string text = options.help({"", "stopping", "sampling", "penalties", "beam search", "speculative decoding",
                                     "constrained decoding"}) +
                       "\n";
    if (!info.steers.empty())
        text += "A knob steers the part named after its help; " + info.program +
                " sets every other knob itself (decodebook-generate takes them all).\n";
    if (!takes(info, KnobGroup::Sampling)) return text + "This program always decodes greedily (argmax).\n";
    if (!offers(info, "do-sample")) return text + "This program sets its own decoding in every part.\n";
    if (info.defaults.do_sample) return text + "This program samples by default; --do-sample false decodes greedily.\n";
    // the flags that turn sampling on, from the table (chapter 10 added its truncations)
    std::string lines;
    std::string line = "With no sampling flag, decoding is greedy (HF's default); --do-sample true, or any of";
    for (const Knob& k : knobs()) {
        if (!k.implies_sampling || !offers(info, k)) continue;
        if (line.size() + k.flag.size() + 3 > 110) {
            lines += line + "\n";
            line.clear();
        }
        line += (line.empty() ? "--" : " --") + k.flag;
    }
    return text + lines + line + ", turns sampling on (--do-sample false keeps it off).\n";
}

// The program's defaults with every knob given applied, in the table's order, and validated.
GenerationConfig read_knobs(const cxxopts::ParseResult& result, const ProgramInfo& info) {
    GenerationConfig config = info.defaults;
    for (const Knob& k : knobs()) {
        if (!offers(info, k) || !result.count(k.flag)) continue;
        if (!k.repeatable) {
            set_knob(config, k.flag, result[k.flag].as<std::string>());
            continue;
        }
        GenerationConfig next = config;  // every occurrence adds, in order, to an empty list
        k.set(next, "[]");
        for (const auto& kv : result.arguments())
            if (kv.key() == k.flag) k.add(next, kv.value());
        config = next;
    }
    // a program's default count of returned beams follows --num-beams down (chapter 05 returns 2
    // by default; `--num-beams 1` alone is greedy, not an error); an explicit count is checked
    if (offers(info, "num-return-sequences") && !result.count("num-return-sequences") &&
        config.num_return_sequences > config.num_beams)
        config.num_return_sequences = config.num_beams;
    if (takes(info, KnobGroup::Constraint)) check_constraint(config);  // a bad pattern is refused where it is given
    if (offers(info, "do-sample") && result.count("do-sample")) {  // an explicit --do-sample wins
        find_knob("do_sample").set(config, result["do-sample"].as<std::string>());
    }
    // a draft model refuses mirostat under every order (decode_loop); refused here first, or
    // validate's refusal of mirostat under --order hf would send the reader to --order llama.cpp,
    // which is then refused for the draft model
    if (takes(info, KnobGroup::Speculative) && config.mirostat != 0 && find_knob("mirostat").valid(config) &&
        !resolve_assistant_dir(result["assistant-model"].as<std::string>()).empty())
        decode_loop(config, true);
    validate(config);
    return config;
}

// --show-config: every knob the program takes, with its value.
std::string config_text(const GenerationConfig& config, const ProgramInfo& info) {
    std::string text;
    for (const Knob& k : knobs())
        if (offers(info, k)) text += k.name + " = " + k.get(config) + "\n";
    return text;
}

// What the knobs leave: the prompt, the folders, the run-time settings and the display flags.
CommandLine read_the_rest(const cxxopts::ParseResult& result, const ProgramInfo& info, GenerationConfig config) {
    CommandLine cl;
    cl.config = std::move(config);
    if (!info.default_prompt.empty()) cl.prompt = result["prompt"].as<std::string>();
    cl.model_dir = resolve_model_dir(result["model"].as<std::string>());
    if (result.count("dtype")) cl.dtype = parse_weight_dtype(result["dtype"].as<std::string>());
    if (takes(info, KnobGroup::Speculative)) {
        cl.assistant_model_dir = resolve_assistant_dir(result["assistant-model"].as<std::string>());
        if (info.draft_by_default && cl.assistant_model_dir.empty())  // a program that drafts with it in every run
            throw UsageError(info.program + " needs a draft model, and --assistant-model is none",
                             "drop --assistant-model (the embedded draft model, " + builtin_draft_dir() +
                                 "), or pass --assistant-model a draft model's folder; decodebook-generate decodes "
                                 "without one");
    }
    cl.extra["threads"] = result["threads"].as<std::string>();  // read like an extra option: a whole number in range
    cl.threads = cl.extra_int("threads", 1, 64);
    cl.extra.erase("threads");
    cl.blas = result["blas"].as<std::string>();
    if (!info.csv_columns.empty()) cl.csv = result["csv"].as<std::string>();
    cl.verbose = result.count("verbose") > 0;
    cl.program = info.program;
    cl.lookahead = info.lookahead;
    cl.show_steps = info.show_steps && result.count("show-steps") > 0;
    cl.show_chain = offers_chain(info) && result.count("show-chain") > 0;
    cl.interactive = info.interactive && result.count("interactive") > 0;
    for (const ExtraOption& e : info.extra) cl.extra[e.flag] = result[e.flag].as<std::string>();
    return cl;
}

// An option the program does not offer. A knob or a display flag that some program offers is
// refused in the project's words, naming the flag and the program that takes it; anything else is
// an unknown option. Either way the command line is refused before any output (exit 2).
[[noreturn]] void refuse_option(const std::string& arg, const ProgramInfo& info) {
    std::string name = arg.substr(arg.rfind('-', 1) + 1);  // "--top-k=5" -> "top-k=5", "-s" -> "s"
    name = name.substr(0, name.find('='));
    if (name == "n") name = "max-new-tokens";
    if (name == "s") name = "seed";
    for (const Knob& k : knobs())
        if (k.flag == name)
            throw UsageError(info.program + " sets its own " + k.name + ": --" + k.flag + " steers none of its parts",
                             "drop --" + k.flag + " (" + info.program + " --help lists the knobs that steer a part); " +
                                 "decodebook-generate takes every knob");
    if (name == "show-steps")
        throw UsageError(info.program + " prints no step table: --show-steps is not offered, its parts print tables of their own",
                         "drop --show-steps (see " + info.program + " --help); decodebook-generate --show-steps prints one run's steps");
    if (name == "show-chain")
        throw UsageError(info.program + " prints no processor chain: --show-chain is not offered, it sets its own chains",
                         "drop --show-chain (see " + info.program + " --help); decodebook-generate --show-chain prints the chain of any knobs");
    throw OptionError("Option '" + name + "' does not exist");
}

}  // namespace

std::vector<std::string> knob_flags(KnobGroup group) {
    std::vector<std::string> out;
    for (const Knob& k : knobs())
        if (k.group == group) out.push_back(k.flag);
    return out;
}

ParsedCommandLine parse_command_line(int argc, char** argv, const ProgramInfo& info) {
    cxxopts::Options options = build_options(info);
    options.allow_unrecognised_options();  // refused below, in the project's words where it knows the flag
    cxxopts::ParseResult result;
    try {
        result = options.parse(argc, argv);
    } catch (const cxxopts::exceptions::exception& e) {
        throw OptionError(e.what());
    }
    for (const std::string& arg : result.unmatched())
        if (arg.size() > 1 && arg[0] == '-') refuse_option(arg, info);
    ParsedCommandLine parsed;
    if (result.count("help")) {
        parsed.output = help_text(options, info);
        return parsed;
    }
    if (!result.unmatched().empty()) {
        throw OptionError("unexpected argument '" + result.unmatched().front() +
                          "' (quote a prompt with spaces: --prompt \"...\")");
    }
    GenerationConfig config = read_knobs(result, info);
    for (const std::string& w : never_winning_stops(config.stop, config.stop_match)) parsed.warnings.push_back(w);
    if (result.count("show-config")) {
        parsed.output = config_text(config, info);
        return parsed;
    }
    parsed.command_line = read_the_rest(result, info, std::move(config));
    return parsed;
}

void apply_command_line(const CommandLine& cl) {
    set_num_threads(cl.threads);
    if (cl.blas != "openblas") {
        const std::string description = use_blas(cl.blas);
        if (cl.verbose) std::cerr << "note: prefill's matrix products run on " << description << "\n";
    }
    if (!cl.csv.empty()) check_writable_file(cl.csv);  // before the run, not after it
}

std::optional<int> read_command_line(int argc, char** argv, const ProgramInfo& info, CommandLine& command_line) {
    try {
        const ParsedCommandLine parsed = parse_command_line(argc, argv, info);
        for (const std::string& w : parsed.warnings) std::cerr << "warning: " << w << "\n";
        if (parsed.output) {
            std::cout << *parsed.output << std::flush;
            return 0;
        }
        apply_command_line(parsed.command_line);
        command_line = parsed.command_line;
    } catch (const OptionError& e) {
        std::cerr << info.program << ": " << e.problem() << "\n  see: " << info.program << " --help" << std::endl;
        return 2;
    } catch (const Error& e) {
        std::cerr << "error: " << e.what() << std::endl;
        return 2;
    }
    if (command_line.verbose) set_load_notes(&std::cerr);
    return std::nullopt;
}

namespace {

// Speculative decoding compares token ids: the draft's must mean what the target's mean.
void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& dir) {
    const Vocabulary& a = target.vocabulary();
    const Vocabulary& b = draft.vocabulary();
    const std::string fix = "train the draft model with the model's tokenizer (models/training/train_model.py --tokenizer DIR)";
    if (a.size() != b.size())
        throw Error("the draft model in '" + dir + "' has " + std::to_string(b.size()) + " tokens and the model " +
                        std::to_string(a.size()),
                    fix);
    for (int id = 0; id < a.size(); ++id)
        if (a.bytes[static_cast<size_t>(id)] != b.bytes[static_cast<size_t>(id)])
            throw Error("the draft model in '" + dir + "' has another tokenizer: token " + std::to_string(id) +
                            " differs from the model's",
                        fix);
}

}  // namespace

std::optional<Gpt2> open_draft_model(const std::string& dir, std::optional<WeightDtype> dtype, const Gpt2& model,
                                     const Tokenizer& tokenizer) {
    if (dir.empty()) return std::nullopt;
    std::optional<Gpt2> draft(Gpt2::load(dir, dtype));
    check_same_vocabulary(tokenizer, Tokenizer::load(dir), dir);
    if (draft->config().vocab_size != model.config().vocab_size)
        throw Error("the draft model in '" + dir + "' scores " + std::to_string(draft->config().vocab_size) +
                        " tokens and the model " + std::to_string(model.config().vocab_size),
                    "use a draft model trained with the model's tokenizer");
    return draft;
}

std::optional<Gpt2> open_assistant(const CommandLine& cl, const Session& s) {
    std::optional<Gpt2> draft = open_draft_model(cl.assistant_model_dir, cl.dtype, s.model, s.tokenizer);
    // the draft's cache holds what the target's does: refused now, naming the draft, not when a
    // part first drafts ("the model's context of 8"). A REPL's prompts come later: run() checks them.
    const long more = std::max<long>(cl.config.max_new_tokens, cl.lookahead);
    const size_t need = s.prompt.size() + static_cast<size_t>(more);
    if (draft && !cl.interactive && need > static_cast<size_t>(draft->config().n_positions)) {
        const int held = draft->config().n_positions;
        throw Error("the draft model in '" + cl.assistant_model_dir + "' holds " + std::to_string(held) +
                        " positions of context, fewer than the " + std::to_string(need) + " this run needs (the prompt's " +
                        std::to_string(s.prompt.size()) + " tokens + " +
                        (cl.config.max_new_tokens >= cl.lookahead
                             ? "max_new_tokens " + std::to_string(cl.config.max_new_tokens)
                             : "the " + std::to_string(cl.lookahead) + " tokens " + cl.program + " continues it by") +
                        ")",
                    "pass --assistant-model a draft model with a context of at least " + std::to_string(need) +
                        " positions, or shorten --prompt and --max-new-tokens to " + std::to_string(held) + " together");
    }
    return draft;
}

Session open_session(const CommandLine& cl) {
    Session s{Gpt2::load(cl.model_dir, cl.dtype), Tokenizer::load(cl.model_dir), {}, cl.config};
    s.prompt = s.tokenizer.encode(cl.prompt);
    try {  // a knob naming a token outside the vocabulary is a bad parameter (exit 2), known only now
        check_knob_ids(s.config, s.tokenizer.vocab_size());
    } catch (const Error& e) {
        throw UsageError(e.problem(), e.fix());
    }
    // the constraint (chapter 09), DRY's breakers and the ids the biases name (chapter 10)
    bind_to_tokenizer(s.config, s.tokenizer, resolve_eos_ids(s.config, s.model.config().eos_token_id));
    check_request(s.model.config(), s.prompt, s.config);  // the one place a request is refused
    const long room = static_cast<long>(s.model.config().n_positions) - cl.lookahead;
    if (cl.lookahead > 0 && static_cast<long>(s.prompt.size()) > room) {
        throw Error("the prompt has " + std::to_string(s.prompt.size()) + " tokens, but " + cl.program +
                        " continues it by " + std::to_string(cl.lookahead) +
                        " tokens for its demonstrations, and the model's context holds " +
                        std::to_string(s.model.config().n_positions),
                    "shorten --prompt to at most " + std::to_string(std::max(room, 1L)) + " tokens");
    }
    return s;
}

int run_program(const std::function<int()>& body) {
    try {
        return body();
    } catch (const Error& e) {
        std::cout.flush();
        std::cerr << "\nerror: " << e.what() << std::endl;
        return dynamic_cast<const UsageError*>(&e) ? 2 : 1;
    }
}

}  // namespace decodebook
