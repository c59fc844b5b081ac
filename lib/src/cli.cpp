// Chapter 00: the options every chapter shares. cxxopts is slow to compile, so it lives only here.
#include "decodebook/cli.hpp"

#include <cstdlib>
#include <iostream>

#include <cxxopts.hpp>

#include "decodebook/error.hpp"
#include "decodebook/paths.hpp"

namespace decodebook {

ChapterOptions parse_chapter_options(int argc, char** argv, const ChapterInfo& info) {
    cxxopts::Options options(info.program, info.title);
    options.add_options()
        ("p,prompt", "text to continue", cxxopts::value<std::string>()->default_value(info.default_prompt))
        ("n,max-new-tokens", "how many tokens to generate at most",
         cxxopts::value<int>()->default_value(std::to_string(info.default_max_new_tokens)))
        ("m,model", "model folder (config.json, model.safetensors, vocab.json, merges.txt); "
                    "default: $DECODEBOOK_MODEL, else " + builtin_model_dir(),
         cxxopts::value<std::string>()->default_value(""))
        ("s,show-steps", "print a table of every step: step, id, token, logit, probability, ms");
    if (!info.csv_columns.empty()) {  // only chapters that write a CSV offer --csv
        options.add_options()("csv", "write the chapter's data as CSV to FILE (columns: " + info.csv_columns + ")",
                              cxxopts::value<std::string>()->default_value(""), "FILE");
    }
    if (info.sampling) {  // chapters 02-04
        options.add_options("sampling")
            ("t,temperature", "z / T; 0 = greedy", cxxopts::value<float>()->default_value("1"))
            ("k,top-k", "keep the k most likely (ties kept); 0 = off", cxxopts::value<int>()->default_value("0"))
            ("top-p", "nucleus mass in [0, 1]; 1 = off", cxxopts::value<float>()->default_value("1"))
            ("min-p", "keep p >= min_p * p_max; 0 = off", cxxopts::value<float>()->default_value("0"))
            ("repetition-penalty", "CTRL penalty; 1 = off", cxxopts::value<float>()->default_value("1"))
            ("seed", "seed of the coin stream", cxxopts::value<uint64_t>()->default_value("42"))
            ("show-chain", "print the processor chain");
    }
    options.add_options()("h,help", "show this help");
    try {
        const auto result = options.parse(argc, argv);
        if (result.count("help")) {
            std::cout << options.help() << std::endl;
            std::exit(0);
        }
        if (!result.unmatched().empty()) {
            throw cxxopts::exceptions::exception("unexpected argument '" + result.unmatched().front() +
                                                 "' (quote a prompt with spaces: --prompt \"...\")");
        }
        ChapterOptions o;
        o.prompt = result["prompt"].as<std::string>();
        o.max_new_tokens = result["max-new-tokens"].as<int>();
        o.model_dir = resolve_model_dir(result["model"].as<std::string>());
        o.show_steps = result.count("show-steps") > 0;
        if (!info.csv_columns.empty()) o.csv = result["csv"].as<std::string>();
        if (info.sampling) {
            o.params.temperature = result["temperature"].as<float>();
            o.params.top_k = result["top-k"].as<int>();
            o.params.top_p = result["top-p"].as<float>();
            o.params.min_p = result["min-p"].as<float>();
            o.params.repetition_penalty = result["repetition-penalty"].as<float>();
            o.seed = result["seed"].as<uint64_t>();
            o.show_chain = result.count("show-chain") > 0;
            validate(o.params);  // a bad value exits 2 with the valid range
        }
        return o;
    } catch (const cxxopts::exceptions::exception& e) {
        std::cerr << info.program << ": " << e.what() << "\n  see: " << info.program << " --help" << std::endl;
        std::exit(2);
    } catch (const Error& e) {
        std::cerr << info.program << ": error: " << e.what() << std::endl;
        std::exit(2);
    }
}

ChapterSession open_session(const ChapterOptions& options) {
    ChapterSession s{Gpt2::load(options.model_dir), Tokenizer::load(options.model_dir), {}};
    s.prompt = s.tokenizer.encode(options.prompt);
    check_generation_request(s.model.config(), s.prompt, {options.max_new_tokens, s.model.config().eos_token_id});
    return s;
}

int run_chapter(const std::function<int()>& body) {
    try {
        return body();
    } catch (const Error& e) {
        std::cout.flush();
        std::cerr << "\nerror: " << e.what() << std::endl;
        return 1;
    }
}

}  // namespace decodebook
