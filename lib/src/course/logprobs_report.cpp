// Chapter 11: a text's logprobs as a terminal table and as OpenAI's completions object.
#include "decodebook/course/logprobs_report.hpp"

#include <cmath>
#include <cstdio>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/terminal.hpp"

namespace decodebook {
namespace {

// How many code points a valid UTF-8 string holds (Python's len).
size_t code_points(const std::string& text) {
    size_t n = 0;
    for (unsigned char c : text) n += (c & 0xC0) != 0x80;
    return n;
}

}  // namespace

std::vector<LogprobsRow> prompt_rows(const std::vector<int>& prompt, const std::vector<std::optional<PromptLogprob>>& entries) {
    std::vector<LogprobsRow> rows;
    for (size_t i = 0; i < prompt.size(); ++i) {
        LogprobsRow row{prompt[i], std::nullopt};
        if (i < entries.size() && entries[i]) {
            const PromptLogprob& e = *entries[i];
            row.entry = StepLogprobs{e.token, e.logprob, e.rank, e.top};
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::vector<LogprobsRow> generated_rows(const std::vector<int>& ids, const std::vector<StepLogprobs>& records) {
    if (!records.empty() && records.size() != ids.size())
        throw Error(std::to_string(records.size()) + " logprobs records for " + std::to_string(ids.size()) + " tokens",
                    "record one step per generated token");
    std::vector<LogprobsRow> rows;
    for (size_t i = 0; i < ids.size(); ++i) {
        rows.push_back({ids[i], records.empty() ? std::nullopt : std::optional<StepLogprobs>(records[i])});
    }
    return rows;
}

std::string api_token(const Tokenizer& tokenizer, int id) { return to_valid_utf8(tokenizer.text_bytes(id, false)); }

void print_logprobs_table(std::ostream& out, const std::string& title, const std::vector<LogprobsRow>& rows,
                          const Tokenizer& tokenizer) {
    out << title << "\n";
    char line[96];
    std::snprintf(line, sizeof line, "%5s  %-16s %10s %6s  %s\n", "pos", "token", "value", "rank", "top entries");
    out << line;
    for (size_t i = 0; i < rows.size(); ++i) {
        const LogprobsRow& r = rows[i];
        const std::string token = visible_token(std::string(tokenizer.text_bytes(r.token, false)));
        if (!r.entry) {
            std::snprintf(line, sizeof line, "%5zu  %-16s %10s %6s\n", i, token.c_str(), "-", "-");
            out << line;
            continue;
        }
        std::snprintf(line, sizeof line, "%5zu  %-16s %10.4f %6d  ", i, token.c_str(), static_cast<double>(r.entry->value),
                      r.entry->rank);
        out << line;
        for (size_t j = 0; j < r.entry->top.size(); ++j) {
            const LogprobEntry& e = r.entry->top[j];
            std::snprintf(line, sizeof line, "%s%s %.3f", j ? ", " : "",
                          visible_token(std::string(tokenizer.text_bytes(e.token, false))).c_str(), static_cast<double>(e.value));
            out << line;
        }
        out << "\n";
    }
}

double api_logprob(float value) { return std::max(static_cast<double>(value), -9999.0); }

nlohmann::ordered_json openai_logprobs(const std::vector<LogprobsRow>& rows, const Tokenizer& tokenizer) {
    nlohmann::ordered_json tokens = nlohmann::ordered_json::array(), values = nlohmann::ordered_json::array(), tops = nlohmann::ordered_json::array(),
                   offsets = nlohmann::ordered_json::array();
    size_t offset = 0;
    for (const LogprobsRow& r : rows) {
        const std::string token = api_token(tokenizer, r.token);
        tokens.push_back(token);
        offsets.push_back(offset);
        offset += code_points(token);
        if (!r.entry) {
            values.push_back(nullptr);
            tops.push_back(nullptr);
            continue;
        }
        values.push_back(api_logprob(r.entry->value));
        nlohmann::ordered_json top = nlohmann::ordered_json::object();
        for (const LogprobEntry& e : r.entry->top) top[api_token(tokenizer, e.token)] = api_logprob(e.value);
        tops.push_back(std::move(top));
    }
    return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace decodebook
