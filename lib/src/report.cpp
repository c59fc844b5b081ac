// Chapter 00: showing the decode loop at work.
#include "decodebook/report.hpp"

#include <cstdio>

#include "decodebook/utf8.hpp"

namespace decodebook {

std::string visible_token(const std::string& bytes) {
    std::string out = "\"";
    for (size_t i = 0; i < bytes.size();) {
        const Utf8Step step = utf8_step(std::string_view(bytes).substr(i));
        if (!step.valid) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(bytes[i]));
            out += buf;
            i += 1;
            continue;
        }
        const char c = bytes[i];
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else out.append(bytes, i, step.length);
        i += step.length;
    }
    return out + "\"";
}

void print_steps(std::ostream& out, const std::vector<StepRecord>& steps, const Tokenizer& tokenizer) {
    char line[160];
    std::snprintf(line, sizeof line, "%5s %6s  %-18s %8s %8s %9s\n", "step", "id", "token", "logit", "prob", "ms");
    out << line;
    for (const StepRecord& s : steps) {
        const std::string text = visible_token(tokenizer.token_bytes(s.token));
        std::snprintf(line, sizeof line, "%5d %6d  %-18s %8.3f %8.4f %9.2f\n", s.step, s.token, text.c_str(), s.logit,
                      s.probability, s.milliseconds);
        out << line;
    }
}

}  // namespace decodebook
