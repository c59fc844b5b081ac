// Chapter 11: the held-out fortunes the chapter scores, as the model was trained on them.
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chapter11.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/model/gpt2.hpp"

using namespace decodebook;

namespace chapter11 {

std::vector<std::string> held_out_fortunes() {
    const std::string path = builtin_tasks_dir() + "/held_out_fortunes.json";
    const std::string fix = "restore models/tasks/held_out_fortunes.json from the repository "
                            "(tests/reference/held_out_fortunes.py writes it)";
    std::ifstream in(path);
    if (!in) throw Error("cannot read the held-out fortunes '" + path + "'", fix);
    try {
        const nlohmann::json doc = nlohmann::json::parse(in);
        std::vector<std::string> out = doc.at("documents").get<std::vector<std::string>>();
        if (out.empty()) throw Error("the held-out fortunes '" + path + "' hold no fortune", fix);
        return out;
    } catch (const nlohmann::json::exception& e) {
        throw Error("the held-out fortunes '" + path + "' are not the expected JSON: " + e.what(), fix);
    }
}

std::vector<int> held_out_ids(const Session& s, const std::vector<std::string>& fortunes) {
    const int eot = s.model.config().eos_token_id;  // <|endoftext|>, between documents as in training
    std::vector<int> ids{eot};
    for (const std::string& f : fortunes) {
        const std::vector<int> doc = s.tokenizer.encode(f);
        ids.insert(ids.end(), doc.begin(), doc.end());
        ids.push_back(eot);
    }
    return ids;
}

}  // namespace chapter11
