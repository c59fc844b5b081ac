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
        ("s,show-steps", "print a table of every step: step, id, token, logit, probability, ms")
        ("h,help", "show this help");
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
        return o;
    } catch (const cxxopts::exceptions::exception& e) {
        std::cerr << info.program << ": " << e.what() << "\n  see: " << info.program << " --help" << std::endl;
        std::exit(2);
    } catch (const Error& e) {
        std::cerr << info.program << ": error: " << e.what() << std::endl;
        std::exit(2);
    }
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
