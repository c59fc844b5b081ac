// decodebook-generate: every decoding parameter of chapters 00-10 on the command line, on the KV cache.
//
//   decodebook-generate --prompt "The best way to" --temperature 0.8 --top-p 0.9 --seed 7 --show-chain
//   decodebook-generate --interactive          (a REPL that keeps its settings between prompts)
//
// Every flag comes from the knob table (generation_config.hpp), with Hugging Face's names (dashes
// for underscores). Like HF's generate it decodes greedily unless --do-sample true, or a sampling flag
// (--temperature --top-k --top-p --min-p, chapter 10's --typical-p ... --mirostat), turns sampling on. Bad parameters print a clear error
// and exit with code 2. Text streams as it is generated; tokens/s goes to stderr. With
// --num-beams N > 1 it runs beam search (chapter 05) and prints each returned sequence with its score.
// Both run on the KV cache (chapter 07): one position per step, as fast as this machine's memory allows.
// With --assistant-model DIR or --prompt-lookup-num-tokens N it decodes speculatively (chapter 08) and
// reports how many drafts the model kept and how many tokens each target forward produced.
// With --logprobs K (chapter 11) it prints each generated token's value, rank and top K in
// --logprobs-mode (vLLM's four), with --prompt-logprobs K each prompt token's, and --json FILE
// writes the run as an OpenAI completions response (the `logprobs` object as vLLM's server builds it).
#include <chrono>
#include <ctime>
#include <fstream>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/logprobs_report.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/scoring.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/decoding/token_logprobs.hpp"

using namespace decodebook;

namespace {

const std::vector<KnobGroup> kAllKnobs{KnobGroup::Length, KnobGroup::Stopping, KnobGroup::Sampling, KnobGroup::Penalties,
                                       KnobGroup::Beams, KnobGroup::Speculative, KnobGroup::Constraint};

struct Display {
    bool show_steps = false;
    bool show_chain = false;
};

// Chapter 11: what to report about the numbers behind the text, and where the JSON goes.
struct Report {
    std::optional<int> logprobs;         // --logprobs K: per generated token (none: not asked)
    std::optional<int> prompt_logprobs;  // --prompt-logprobs K: per prompt token
    LogprobsMode mode = LogprobsMode::RawLogprobs;  // --logprobs-mode (the generated tokens')
    std::string json;                    // --json FILE; empty: none
    std::string model;                   // the response's `model`: the model folder as programs name it
    LogprobsRequest request() const { return {logprobs.value_or(0), mode}; }
};

// The JSON response's choices, one per returned sequence, filled as the loops finish.
struct Completion {
    nlohmann::ordered_json choices = nlohmann::ordered_json::array();
    size_t prompt_tokens = 0, completion_tokens = 0;
};

// OpenAI's finish_reason: "stop" for an EOS or a stop string (as vLLM reports both), else "length".
std::string api_finish_reason(FinishReason r) {
    return r == FinishReason::Eos || r == FinishReason::StopString ? "stop" : "length";
}

// One returned sequence: its tables on standard output, its choice in the JSON response. With
// --prompt-logprobs the choice echoes the prompt (text and rows), as vLLM's echo does.
void report_sequence(const Session& session, const Report& report, const std::vector<int>& prompt_ids,
                     const std::string& prompt, const std::vector<int>& ids, const std::string& text, FinishReason reason,
                     const std::vector<StepLogprobs>& records, Completion& completion) {
    std::vector<LogprobsRow> rows;
    if (report.prompt_logprobs) {
        rows = prompt_rows(prompt_ids, prompt_logprobs(session.model, prompt_ids, *report.prompt_logprobs));
        print_logprobs_table(std::cout, "prompt logprobs (raw_logprobs, top " + std::to_string(*report.prompt_logprobs) + ")",
                             rows, session.tokenizer);
    }
    const std::vector<LogprobsRow> generated = generated_rows(ids, records);
    if (report.logprobs)
        print_logprobs_table(std::cout, "logprobs (" + to_string(report.mode) + ", top " + std::to_string(*report.logprobs) + ")",
                             generated, session.tokenizer);
    rows.insert(rows.end(), generated.begin(), generated.end());
    nlohmann::ordered_json choice;
    choice["index"] = completion.choices.size();
    choice["text"] = to_valid_utf8((report.prompt_logprobs ? prompt : std::string()) + text);
    choice["logprobs"] = report.logprobs || report.prompt_logprobs ? openai_logprobs(rows, session.tokenizer) : nlohmann::ordered_json();
    choice["finish_reason"] = api_finish_reason(reason);
    completion.choices.push_back(std::move(choice));
    completion.prompt_tokens = prompt_ids.size();
    completion.completion_tokens += ids.size();
}

// Beam search (chapter 05): its own loop, nothing to stream; each returned sequence with its score.
void run_beams(const Session& session, const GenerationConfig& config, const Report& report, const std::vector<int>& ids,
               const std::string& prompt, Completion& completion) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Hypothesis> hyps = beam_search_cached(session.model, session.tokenizer, ids, config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < hyps.size(); ++i) {
        std::cout << "[" << i + 1 << "] score " << hyps[i].score << ", sum of log-probs " << hyps[i].sum_logprobs
                  << ", " << hyps[i].ids.size() << " tokens, finish_reason " << to_string(hyps[i].finish_reason)
                  << "\n" << prompt << hyps[i].text << "\n";
        // chapter 11: the hypothesis's per-token numbers, rebuilt as compute_transition_scores does
        const std::vector<StepLogprobs> records =
            report.logprobs ? transition_scores(session.model, ids, hyps[i].ids, config, report.request()) : std::vector<StepLogprobs>{};
        report_sequence(session, report, ids, prompt, hyps[i].ids, hyps[i].text, hyps[i].finish_reason, records, completion);
    }
    std::cout.flush();
    std::fprintf(stderr, "[beam search, %d beams: %.2f s]\n", config.num_beams, seconds);
}

// The draft model of --assistant-model (chapter 08), with its folder for the messages.
struct Assistant {
    const Gpt2* model = nullptr;  // null: none
    std::string dir;
};

// The drafter of a speculative run, made before any output: a draft model whose context cannot
// hold the prompt and max_new_tokens is refused naming it (not "the model's context").
Drafter speculative_drafter(const Session& session, const Assistant& draft, const GenerationConfig& config,
                            const std::vector<int>& ids) {
    const size_t capacity = ids.size() + static_cast<size_t>(config.max_new_tokens);
    if (draft.model && config.prompt_lookup_num_tokens == 0 &&
        capacity > static_cast<size_t>(draft.model->config().n_positions)) {
        const int held = draft.model->config().n_positions;
        throw Error("the draft model in '" + draft.dir + "' holds " + std::to_string(held) +
                        " positions of context, fewer than the " + std::to_string(capacity) + " this run needs (the prompt's " +
                        std::to_string(ids.size()) + " tokens + max_new_tokens " + std::to_string(config.max_new_tokens) + ")",
                    "pass --assistant-model a draft model with a context of at least " + std::to_string(capacity) +
                        " positions, or shorten --prompt and --max-new-tokens to " + std::to_string(held) + " together");
    }
    return make_drafter(config, draft.model, resolve_eos_ids(config, session.model.config().eos_token_id), capacity);
}

// Speculative decoding (chapter 08): streamed, then the drafts kept and the tokens per target call.
void run_speculative(const Session& session, const Drafter& drafter, const GenerationConfig& config, const Display& display,
                     const Report& report, const std::vector<int>& ids, const std::string& prompt, Completion& completion) {
    std::cout << prompt << std::flush;
    SpeculativeStats st;
    std::vector<StepLogprobs> records;  // chapter 11: the target's numbers at each emitted position
    const LogprobsLog log{report.request(), &records};
    const auto start = std::chrono::steady_clock::now();
    const Generation g = generate_speculative(session.model, session.tokenizer, ids, config, drafter, &st,
                                              print_text_to(std::cout), report.logprobs ? &log : nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "\n";
    if (display.show_steps) print_steps(std::cout, g.steps, session.tokenizer, {});
    report_sequence(session, report, ids, prompt, g.ids, g.text, g.finish_reason, records, completion);
    std::cout.flush();
    // acceptance is chapter 08's alpha (kept over looked at); kept over drafted is named as such
    std::fprintf(stderr,
                 "[%zu tokens in %.2f s: %.1f tokens/s, finish_reason %s; speculative (%s): %d of %d drafts kept "
                 "(%.0f %% of those drafted); acceptance alpha %.2f: %d kept of the %d the target looked at (a round "
                 "stops at its first rejection); %.2f tokens per target forward over %d rounds]\n",
                 g.ids.size(), seconds, static_cast<double>(g.ids.size()) / seconds, to_string(g.finish_reason).c_str(),
                 config.prompt_lookup_num_tokens > 0 ? "prompt lookup" : "draft model", st.accepted, st.drafted,
                 100.0 * st.acceptance(), st.alpha(), st.accepted, st.accepted + st.rejected,
                 st.rounds ? static_cast<double>(st.emitted) / st.rounds : 0.0, st.rounds);
}

// The general loop on the cache: streamed, then tokens/s and the finish reason.
void run_plain(const Session& session, const GenerationConfig& config, const Display& display, const Report& report,
               const std::vector<int>& ids, const std::string& prompt, Completion& completion) {
    std::vector<Draw> coins;  // with --show-steps: each coin, its CDF slice, raw and processed p
    std::vector<StepLogprobs> records;  // with --logprobs (chapter 11): each token's numbers
    // made before any output: it refuses --show-steps with mirostat (chapter 10)
    const Sampler sampler = display.show_steps ? make_watched_sampler(config, config.seed, coins)
                            : report.logprobs  ? make_logprobs_sampler(config, config.seed, report.request(), records)
                                               : make_sampler(config, config.seed);
    std::cout << prompt << std::flush;
    const auto start = std::chrono::steady_clock::now();
    const Generation g = generate_cached(session.model, session.tokenizer, ids, config, sampler, print_text_to(std::cout));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "\n";
    if (display.show_steps) print_steps(std::cout, g.steps, session.tokenizer, coins);
    report_sequence(session, report, ids, prompt, g.ids, g.text, g.finish_reason, records, completion);
    std::cout.flush();  // the summary goes to stderr: keep it after the text
    std::fprintf(stderr, "[%zu tokens in %.2f s: %.1f tokens/s, finish_reason %s]\n", g.ids.size(), seconds,
                 static_cast<double>(g.ids.size()) / seconds, to_string(g.finish_reason).c_str());
}

// Generate one continuation, streaming it, on the loop the library picks for the config (decode_loop);
// throws Error if the request is refused.
void run(const Session& session, const Assistant& draft, GenerationConfig config, const Display& display,
         const Report& report, const std::string& prompt) {
    const std::vector<int> ids = session.tokenizer.encode(prompt);
    // the constraint (chapter 09), DRY's breakers and the ids the biases name (chapter 10)
    bind_to_tokenizer(config, session.tokenizer, resolve_eos_ids(config, session.model.config().eos_token_id));
    check_request(session.model.config(), ids, config);  // config, prompt and EOS ids, before any output
    DecodeLoop loop = DecodeLoop::Plain;
    try {
        loop = decode_loop(config, draft.model != nullptr);
    } catch (const Error& e) {  // a refused combination of flags: a usage error (exit 2)
        throw UsageError(e.problem(), e.fix());
    }
    if (loop == DecodeLoop::Beams && display.show_steps) {
        throw UsageError("--show-steps shows one sequence's steps; beam search keeps " + std::to_string(config.num_beams) +
                        " at once",
                    "drop --show-steps (chapter-05 draws beams as a tree), or --num-beams");
    }
    std::optional<Drafter> drafter;  // made before any output: it may refuse the draft model
    if (loop == DecodeLoop::Speculative) drafter = speculative_drafter(session, draft, config, ids);
    if (report.prompt_logprobs && ids.size() > static_cast<size_t>(session.model.config().n_positions))
        throw UsageError("--prompt-logprobs scores the prompt in one forward, and its " + std::to_string(ids.size()) +
                             " tokens exceed the model's context",
                         "shorten --prompt, or drop --prompt-logprobs");
    std::ofstream json;  // opened before any output: a file that cannot be written is refused first
    if (!report.json.empty()) {
        json.open(report.json);
        if (!json) throw UsageError("cannot write the --json file '" + report.json + "'", "pass --json a path in a writable folder");
    }
    if (display.show_chain) std::cout << "chain: " << LogitsChain(config).describe() << "\n";
    Completion completion;
    switch (loop) {
        case DecodeLoop::Beams: run_beams(session, config, report, ids, prompt, completion); break;
        case DecodeLoop::Speculative: run_speculative(session, *drafter, config, display, report, ids, prompt, completion); break;
        case DecodeLoop::Plain: run_plain(session, config, display, report, ids, prompt, completion); break;
    }
    if (json.is_open()) {  // OpenAI's completions response (vLLM's fields; `model` is the folder)
        const nlohmann::ordered_json response{
            {"id", "cmpl-decodebook"},
            {"object", "text_completion"},
            {"created", static_cast<long long>(std::time(nullptr))},
            {"model", report.model},
            {"choices", completion.choices},
            {"usage",
             {{"prompt_tokens", completion.prompt_tokens},
              {"completion_tokens", completion.completion_tokens},
              {"total_tokens", completion.prompt_tokens + completion.completion_tokens}}}};
        json << response.dump(2) << "\n";
        if (!json.flush()) throw Error("writing the --json file '" + report.json + "' failed", "check the disk has room");
        std::cerr << "(wrote the run as an OpenAI completions response to " << report.json << ")\n";  // stdout stays the text
    }
}

void repl(const Session& session, const Assistant& draft, GenerationConfig config, Display display, const Report& report) {
    std::cout << "decodebook-generate interactive. Type a prompt, or :set NAME VALUE, :show, :help, :quit\n";
    // the prompt, then a line: until the input ends
    const auto next_line = [](std::string& line) {
        std::cout << "> " << std::flush;
        return static_cast<bool>(std::getline(std::cin, line));
    };
    std::string line;
    while (next_line(line)) {
        if (line.empty()) continue;
        try {
            if (line == ":quit" || line == ":q") break;
            if (line == ":help") {
                std::cout << "parameters (:set NAME VALUE; a sampling one turns do_sample on):\n";
                for (const Knob& k : knobs()) std::cout << "  " << k.flag << ": " << k.help << " (" << k.rule << ")\n";
                std::cout << ":show lists the values; :chain toggles --show-chain; :steps toggles --show-steps\n";
            } else if (line == ":show") {
                std::cout << describe(config, kAllKnobs) << "\nchain: " << LogitsChain(config).describe() << "\n";
            } else if (line == ":chain") {
                display.show_chain = !display.show_chain;
            } else if (line == ":steps") {
                display.show_steps = !display.show_steps;
            } else if (line.rfind(":set ", 0) == 0) {
                std::istringstream in(line.substr(5));
                std::string name, value;
                in >> name;
                std::getline(in >> std::ws, value);  // the rest of the line: a stop string may hold spaces
                GenerationConfig next = config;
                set_knob(next, name, value);
                if (find_knob(name).group == KnobGroup::Constraint) check_constraint(next);  // refused where it is given
                validate(next);
                config = next;  // only a valid change is kept
                std::cout << describe(config, kAllKnobs) << "\n";
                if (const std::string knob = find_knob(name).name; knob == "stop" || knob == "stop_match")
                    for (const std::string& w : never_winning_stops(config.stop, config.stop_match))
                        std::cout << "warning: " << w << "\n";
            } else if (line[0] == ':') {
                std::cout << "unknown command " << line << " (try :help)\n";
            } else {
                run(session, draft, config, display, report, line);
            }
        } catch (const Error& e) {
            std::cout << "error: " << e.what() << "\n";
        }
    }
}

// --logprobs, --prompt-logprobs, --logprobs-mode and --json (chapter 11), each checked; a flag
// that would change nothing is refused.
Report read_report(const CommandLine& cl) {
    Report r;
    const auto count = [&](const std::string& flag) -> std::optional<int> {
        if (cl.extra.at(flag).empty()) return std::nullopt;
        return cl.extra_int(flag, 0, kMaxLogprobs);
    };
    r.logprobs = count("logprobs");
    r.prompt_logprobs = count("prompt-logprobs");
    if (const std::string& mode = cl.extra.at("logprobs-mode"); !mode.empty()) {
        try {
            r.mode = parse_logprobs_mode(mode);
        } catch (const Error& e) {
            throw UsageError("--logprobs-mode: " + e.problem(), e.fix());
        }
        if (!r.logprobs)
            throw UsageError("--logprobs-mode says what --logprobs reports, and --logprobs is not given",
                             "add --logprobs K (prompt logprobs are always raw_logprobs), or drop --logprobs-mode");
    }
    r.json = cl.extra.at("json");
    r.model = display_model_dir(cl.model_dir);
    if (!r.json.empty() && cl.interactive)
        throw UsageError("--json writes one run's response, and --interactive runs many", "drop --json, or --interactive");
    if (r.logprobs && cl.show_steps)
        throw UsageError("--show-steps and --logprobs both report each step, through different samplers",
                         "drop one: --logprobs 1 shows the chosen token's logprob and rank");
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"decodebook-generate", "Generate text with every decoding parameter of chapters 00-10.",
                     "The best way to"};
    info.defaults.max_new_tokens = 48;
    info.knob_groups = kAllKnobs;
    info.interactive = true;
    info.show_chain = true;
    info.extra = {
        {"logprobs", "K: print each generated token's logprob, rank and top K alternatives (0..20, vLLM's logprobs; "
                     "0: the token alone); default: none", ""},
        {"prompt-logprobs", "K: print each prompt token's raw logprob given the tokens before it, and the top K "
                            "(0..20; the first token has none); default: none", ""},
        {"logprobs-mode", "what --logprobs reports: raw_logprobs (before any processor), raw_logits, processed_logprobs "
                          "(after the whole chain: temperature and truncation, -inf for a removed token) or "
                          "processed_logits (vLLM's --logprobs-mode); default: raw_logprobs", ""},
        {"json", "FILE: write the run as an OpenAI completions response (choices, each with text, logprobs: tokens, "
                 "token_logprobs, top_logprobs, text_offset; finish_reason; usage)", ""},
    };
    CommandLine cl;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, cl)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(cl);
        const std::optional<Gpt2> draft = open_assistant(cl, session);  // --assistant-model (chapter 08)
        const Assistant assistant{draft ? &*draft : nullptr, cl.assistant_model_dir};
        const Display display{cl.show_steps, cl.show_chain};
        const Report report = read_report(cl);
        if (cl.interactive) {
            repl(session, assistant, cl.config, display, report);
        } else {
            run(session, assistant, cl.config, display, report, cl.prompt);
        }
        return 0;
    });
}
