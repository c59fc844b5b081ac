// decodebook-generate: every decoding parameter of chapters 00-04 on the command line.
//
//   decodebook-generate --prompt "The best way to" --temperature 0.8 --top-p 0.9 --seed 7 --show-chain
//   decodebook-generate --interactive          (a REPL that keeps its settings between prompts)
//
// Parameter names follow Hugging Face's generate (with dashes). Bad parameters print a clear
// error and exit with code 2. Text streams as it is generated; tokens/s goes to stderr.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "decodebook/chain.hpp"
#include "decodebook/decode.hpp"
#include "decodebook/error.hpp"
#include "decodebook/model.hpp"
#include "decodebook/paths.hpp"
#include "decodebook/report.hpp"
#include "decodebook/rng.hpp"
#include "decodebook/sampling.hpp"
#include "decodebook/tokenizer.hpp"
#include "decodebook/utf8.hpp"

using namespace decodebook;

namespace {

struct Settings {
    SamplingParams params;
    ChainOrder order = ChainOrder::HuggingFace;
    uint64_t seed = 42;
    int max_new_tokens = 48;
    bool show_steps = false;
    bool show_chain = false;
};

PenaltyScope parse_scope(const std::string& s) {
    if (s == "prompt+output") return PenaltyScope::PromptAndOutput;
    if (s == "output") return PenaltyScope::OutputOnly;
    if (s == "last-n") return PenaltyScope::LastN;
    throw Error("unknown penalty scope '" + s + "'", "use one of: prompt+output, output, last-n");
}

const char* scope_name(PenaltyScope s) {
    return s == PenaltyScope::PromptAndOutput ? "prompt+output" : s == PenaltyScope::OutputOnly ? "output" : "last-n";
}

const char* order_name(ChainOrder o) {
    return o == ChainOrder::HuggingFace ? "hf" : o == ChainOrder::LlamaCpp ? "llama.cpp" : "vllm";
}

// One decoding parameter by its command-line name (also used by the REPL's ":set NAME VALUE").
void set_parameter(Settings& s, const std::string& name, const std::string& value) {
    const auto number = [&](auto parse) {
        try {
            size_t used = 0;
            const auto v = parse(value, &used);
            if (used != value.size()) throw std::invalid_argument("trailing text");
            return v;
        } catch (const std::exception&) {
            throw Error("--" + name + " needs a number, got '" + value + "'", "e.g. --" + name + " 0.7");
        }
    };
    const auto f = [&] { return number([](const std::string& v, size_t* u) { return std::stof(v, u); }); };
    const auto i = [&] { return number([](const std::string& v, size_t* u) { return std::stoi(v, u); }); };
    SamplingParams& p = s.params;
    if (name == "temperature") p.temperature = f();
    else if (name == "top-k") p.top_k = i();
    else if (name == "top-p") p.top_p = f();
    else if (name == "min-p") p.min_p = f();
    else if (name == "min-tokens-to-keep") p.min_tokens_to_keep = i();
    else if (name == "repetition-penalty") p.repetition_penalty = f();
    else if (name == "penalty-scope") p.penalty_scope = parse_scope(value);
    else if (name == "penalty-last-n") p.penalty_last_n = i();
    else if (name == "presence-penalty") p.presence_penalty = f();
    else if (name == "frequency-penalty") p.frequency_penalty = f();
    else if (name == "no-repeat-ngram-size") p.no_repeat_ngram_size = i();
    else if (name == "order") s.order = parse_chain_order(value);
    else if (name == "seed") s.seed = static_cast<uint64_t>(number([](const std::string& v, size_t* u) { return std::stoull(v, u); }));
    else if (name == "max-new-tokens") s.max_new_tokens = i();
    else throw Error("unknown parameter '" + name + "'", "see --help for the list");
    validate(p);
}

const char* const kParameters[] = {"temperature", "top-k", "top-p", "min-p", "min-tokens-to-keep",
                                   "repetition-penalty", "penalty-scope", "penalty-last-n", "presence-penalty",
                                   "frequency-penalty", "no-repeat-ngram-size", "order", "seed", "max-new-tokens"};

std::string describe(const Settings& s) {
    const SamplingParams& p = s.params;
    std::ostringstream o;
    o << "temperature " << p.temperature << ", top-k " << p.top_k << ", top-p " << p.top_p << ", min-p " << p.min_p
      << ", min-tokens-to-keep " << p.min_tokens_to_keep << ", repetition-penalty " << p.repetition_penalty
      << " (scope " << scope_name(p.penalty_scope) << ", last-n " << p.penalty_last_n << "), presence-penalty "
      << p.presence_penalty << ", frequency-penalty " << p.frequency_penalty << ", no-repeat-ngram-size "
      << p.no_repeat_ngram_size << ", order " << order_name(s.order) << ", seed " << s.seed << ", max-new-tokens "
      << s.max_new_tokens;
    return o.str();
}

// Generate one continuation, streaming it; throws Error if the request is refused.
void run(const Gpt2& model, const Tokenizer& tok, const Settings& s, const std::string& prompt) {
    const LogitsChain chain(s.params, s.order);
    if (s.show_chain) std::cout << "chain: " << chain.describe() << "\n";
    const std::vector<int> ids = tok.encode(prompt);
    check_generation_request(model.config(), ids, {s.max_new_tokens, model.config().eos_token_id});
    std::vector<StepRecord> steps;
    Utf8Stream stream;
    std::cout << prompt << std::flush;
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int> out =
        generate_sampled(model, ids, {s.max_new_tokens, model.config().eos_token_id}, chain, s.seed, [&](const StepRecord& r) {
            steps.push_back(r);
            std::cout << stream.push(tok.token_bytes(r.token)) << std::flush;
        });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << stream.flush() << "\n";
    if (s.show_steps) print_steps(std::cout, steps, tok);
    std::cout.flush();  // the summary goes to stderr: keep it after the text
    std::fprintf(stderr, "[%zu tokens in %.2f s: %.1f tokens/s%s]\n", out.size(), seconds,
                 static_cast<double>(out.size()) / seconds,
                 !out.empty() && out.back() == model.config().eos_token_id ? ", ended with <|endoftext|>" : "");
}

void repl(const Gpt2& model, const Tokenizer& tok, Settings s) {
    std::cout << "decodebook-generate interactive. Type a prompt, or :set NAME VALUE, :show, :help, :quit\n";
    std::string line;
    while (std::cout << "> " << std::flush, std::getline(std::cin, line)) {
        if (line.empty()) continue;
        try {
            if (line == ":quit" || line == ":q") break;
            if (line == ":help") {
                std::cout << "parameters:";
                for (const char* p : kParameters) std::cout << " " << p;
                std::cout << "\n:set NAME VALUE changes one; :show lists them; :chain toggles --show-chain;"
                             " :steps toggles --show-steps\n";
            } else if (line == ":show") {
                std::cout << describe(s) << "\nchain: " << LogitsChain(s.params, s.order).describe() << "\n";
            } else if (line == ":chain") {
                s.show_chain = !s.show_chain;
            } else if (line == ":steps") {
                s.show_steps = !s.show_steps;
            } else if (line.rfind(":set ", 0) == 0) {
                std::istringstream in(line.substr(5));
                std::string name, value;
                in >> name >> value;
                Settings next = s;
                set_parameter(next, name, value);
                s = next;  // only a valid change is kept
                std::cout << describe(s) << "\n";
            } else if (line[0] == ':') {
                std::cout << "unknown command " << line << " (try :help)\n";
            } else {
                run(model, tok, s, line);
            }
        } catch (const Error& e) {
            std::cout << "error: " << e.what() << "\n";
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    cxxopts::Options options("decodebook-generate", "Generate text with every decoding parameter of chapters 00-04.");
    options.add_options()
        ("p,prompt", "text to continue", cxxopts::value<std::string>()->default_value("The best way to"))
        ("n,max-new-tokens", "tokens to generate at most", cxxopts::value<std::string>()->default_value("48"))
        ("m,model", "model folder (default: $DECODEBOOK_MODEL, else the embedded model)",
         cxxopts::value<std::string>()->default_value(""))
        ("t,temperature", "z / T; 0 = greedy", cxxopts::value<std::string>()->default_value("1"))
        ("k,top-k", "keep the k most likely (ties kept); 0 = off", cxxopts::value<std::string>()->default_value("0"))
        ("top-p", "nucleus mass in [0, 1]; 1 = off", cxxopts::value<std::string>()->default_value("1"))
        ("min-p", "keep p >= min_p * p_max; 0 = off", cxxopts::value<std::string>()->default_value("0"))
        ("min-tokens-to-keep", "truncation never keeps fewer", cxxopts::value<std::string>()->default_value("1"))
        ("repetition-penalty", "CTRL penalty theta; 1 = off", cxxopts::value<std::string>()->default_value("1"))
        ("penalty-scope", "prompt+output | output | last-n", cxxopts::value<std::string>()->default_value("prompt+output"))
        ("penalty-last-n", "window of --penalty-scope last-n", cxxopts::value<std::string>()->default_value("64"))
        ("presence-penalty", "OpenAI presence penalty in [-2, 2]", cxxopts::value<std::string>()->default_value("0"))
        ("frequency-penalty", "OpenAI frequency penalty in [-2, 2]", cxxopts::value<std::string>()->default_value("0"))
        ("no-repeat-ngram-size", "ban repeated n-grams; 0 = off", cxxopts::value<std::string>()->default_value("0"))
        ("order", "processor order: hf | llama.cpp | vllm", cxxopts::value<std::string>()->default_value("hf"))
        ("s,seed", "seed of the coin stream (any 64-bit value)", cxxopts::value<std::string>()->default_value("42"))
        ("show-steps", "a table of every step")
        ("show-chain", "print the processor chain before generating")
        ("i,interactive", "read prompts from standard input; keep settings between them")
        ("h,help", "show this help");
    Settings s;
    std::string model_dir, prompt;
    try {
        const auto r = options.parse(argc, argv);
        if (r.count("help")) {
            std::cout << options.help() << std::endl;
            return 0;
        }
        if (!r.unmatched().empty()) {
            throw Error("unexpected argument '" + r.unmatched().front() + "'", "quote a prompt with spaces: --prompt \"...\"");
        }
        for (const char* name : kParameters) set_parameter(s, name, r[name].as<std::string>());
        s.show_steps = r.count("show-steps") > 0;
        s.show_chain = r.count("show-chain") > 0;
        prompt = r["prompt"].as<std::string>();
        model_dir = resolve_model_dir(r["model"].as<std::string>());
        if (r.count("interactive")) {
            const Gpt2 model = Gpt2::load(model_dir);
            const Tokenizer tok = Tokenizer::load(model_dir);
            repl(model, tok, s);
            return 0;
        }
    } catch (const cxxopts::exceptions::exception& e) {
        std::cerr << "decodebook-generate: " << e.what() << "\n  see: decodebook-generate --help" << std::endl;
        return 2;
    } catch (const Error& e) {
        std::cerr << "decodebook-generate: error: " << e.what() << std::endl;
        return 2;
    }
    try {
        const Gpt2 model = Gpt2::load(model_dir);
        const Tokenizer tok = Tokenizer::load(model_dir);
        run(model, tok, s, prompt);
        return 0;
    } catch (const Error& e) {
        std::cout.flush();
        std::cerr << "\ndecodebook-generate: error: " << e.what() << std::endl;
        return 1;
    }
}
