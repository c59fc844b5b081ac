// Chapter 00: where the model lives, wherever a chapter binary is run from.
#include "decodebook/course/model_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "decodebook/base/error.hpp"

namespace decodebook {

namespace fs = std::filesystem;

std::string builtin_model_dir() { return DECODEBOOK_MODEL_DIR; }
std::string builtin_draft_dir() { return DECODEBOOK_DRAFT_DIR; }
std::string builtin_tasks_dir() { return DECODEBOOK_TASKS_DIR; }
std::string builtin_author_choice_task() { return builtin_tasks_dir() + "/author_choice.json"; }

namespace {

// The checks both folders get: it exists, can be read, and is a folder.
void check_folder(const std::string& dir, const std::string& what, const std::string& source, const std::string& fix) {
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);  // follows symlinks; a loop is an error, not a throw
    if (st.type() == fs::file_type::not_found) {
        throw Error(what + " folder '" + dir + "' (from " + source + ") does not exist", fix);
    }
    if (ec) {
        throw Error(what + " folder '" + dir + "' (from " + source + ") cannot be read: " + ec.message(), fix);
    }
    if (st.type() != fs::file_type::directory) {
        throw Error(what + " folder '" + dir + "' (from " + source + ") is not a folder", fix);
    }
}

}  // namespace

std::string resolve_assistant_dir(const std::string& cli_value) {
    if (cli_value.empty() || cli_value == "none") return "";
    check_folder(cli_value, "draft model", "--assistant-model",
                 "pass --assistant-model with a model folder (the embedded one is " + builtin_draft_dir() +
                     "), or none");
    return cli_value;
}

std::string display_model_dir(const std::string& dir) {
    for (const std::string& builtin : {builtin_model_dir(), builtin_draft_dir()}) {
        std::error_code ec;
        if (!fs::equivalent(dir, builtin, ec) || ec) continue;
        fs::path name = fs::path(builtin).lexically_normal();
        if (name.filename().empty()) name = name.parent_path();  // a trailing '/'
        return name.filename().string() + " (embedded)";
    }
    return dir;
}

std::string resolve_model_dir(const std::string& cli_value) {
    std::string dir = cli_value;
    std::string source = "--model";
    if (dir.empty()) {
        if (const char* env = std::getenv("DECODEBOOK_MODEL"); env && *env) {
            dir = env;
            source = "DECODEBOOK_MODEL";
        } else {
            dir = builtin_model_dir();
            source = "the build's default";
        }
    }
    const std::string fix =
        "pass --model DIR, set DECODEBOOK_MODEL, or re-run cmake from the repository so the embedded model's "
        "path is baked in";
    check_folder(dir, "model", source, fix);
    return dir;
}

}  // namespace decodebook
