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
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/decoding/stop_strings.hpp"

using namespace decodebook;

namespace {

const std::vector<KnobGroup> kAllKnobs{KnobGroup::Length, KnobGroup::Stopping, KnobGroup::Sampling, KnobGroup::Penalties,
                                       KnobGroup::Beams, KnobGroup::Speculative, KnobGroup::Constraint};

struct Display {
    bool show_steps = false;
    bool show_chain = false;
};

// Beam search (chapter 05): its own loop, nothing to stream; each returned sequence with its score.
void run_beams(const Session& session, const GenerationConfig& config, const std::vector<int>& ids,
               const std::string& prompt) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Hypothesis> hyps = beam_search_cached(session.model, session.tokenizer, ids, config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < hyps.size(); ++i) {
        std::cout << "[" << i + 1 << "] score " << hyps[i].score << ", sum of log-probs " << hyps[i].sum_logprobs
                  << ", " << hyps[i].ids.size() << " tokens, finish_reason " << to_string(hyps[i].finish_reason)
                  << "\n" << prompt << hyps[i].text << "\n";
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
                     const std::vector<int>& ids, const std::string& prompt) {
    std::cout << prompt << std::flush;
    SpeculativeStats st;
    const auto start = std::chrono::steady_clock::now();
    const Generation g = generate_speculative(session.model, session.tokenizer, ids, config, drafter, &st,
                                              print_text_to(std::cout));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "\n";
    if (display.show_steps) print_steps(std::cout, g.steps, session.tokenizer, {});
    std::cout.flush();
    std::fprintf(stderr,
                 "[%zu tokens in %.2f s: %.1f tokens/s, finish_reason %s; speculative (%s): %d of %d drafts kept "
                 "(acceptance %.0f %%), %.2f tokens per target forward over %d rounds]\n",
                 g.ids.size(), seconds, static_cast<double>(g.ids.size()) / seconds, to_string(g.finish_reason).c_str(),
                 config.prompt_lookup_num_tokens > 0 ? "prompt lookup" : "draft model", st.accepted, st.drafted,
                 100.0 * st.acceptance(), st.rounds ? static_cast<double>(st.emitted) / st.rounds : 0.0, st.rounds);
}

// The general loop on the cache: streamed, then tokens/s and the finish reason.
void run_plain(const Session& session, const GenerationConfig& config, const Display& display,
               const std::vector<int>& ids, const std::string& prompt) {
    std::vector<Draw> coins;  // with --show-steps: each coin, its CDF slice, raw and processed p
    const Sampler sampler =  // made before any output: it refuses --show-steps with mirostat (chapter 10)
        display.show_steps ? make_watched_sampler(config, config.seed, coins) : make_sampler(config, config.seed);
    std::cout << prompt << std::flush;
    const auto start = std::chrono::steady_clock::now();
    const Generation g = generate_cached(session.model, session.tokenizer, ids, config, sampler, print_text_to(std::cout));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "\n";
    if (display.show_steps) print_steps(std::cout, g.steps, session.tokenizer, coins);
    std::cout.flush();  // the summary goes to stderr: keep it after the text
    std::fprintf(stderr, "[%zu tokens in %.2f s: %.1f tokens/s, finish_reason %s]\n", g.ids.size(), seconds,
                 static_cast<double>(g.ids.size()) / seconds, to_string(g.finish_reason).c_str());
}

// Generate one continuation, streaming it, on the loop the library picks for the config (decode_loop);
// throws Error if the request is refused.
void run(const Session& session, const Assistant& draft, GenerationConfig config, const Display& display,
         const std::string& prompt) {
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
    if (display.show_chain) std::cout << "chain: " << LogitsChain(config).describe() << "\n";
    switch (loop) {
        case DecodeLoop::Beams: return run_beams(session, config, ids, prompt);
        case DecodeLoop::Speculative: return run_speculative(session, *drafter, config, display, ids, prompt);
        case DecodeLoop::Plain: return run_plain(session, config, display, ids, prompt);
    }
}

void repl(const Session& session, const Assistant& draft, GenerationConfig config, Display display) {
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
                run(session, draft, config, display, line);
            }
        } catch (const Error& e) {
            std::cout << "error: " << e.what() << "\n";
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"decodebook-generate", "Generate text with every decoding parameter of chapters 00-10.",
                     "The best way to"};
    info.defaults.max_new_tokens = 48;
    info.knob_groups = kAllKnobs;
    info.interactive = true;
    CommandLine cl;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, cl)) return *exit_code;
    return run_program([&] {
        const Session session = open_session(cl);
        const std::optional<Gpt2> draft = open_assistant(cl, session);  // --assistant-model (chapter 08)
        const Assistant assistant{draft ? &*draft : nullptr, cl.assistant_model_dir};
        const Display display{cl.show_steps, cl.show_chain};
        if (cl.interactive) {
            repl(session, assistant, cl.config, display);
        } else {
            run(session, assistant, cl.config, display, cl.prompt);
        }
        return 0;
    });
}
