// Chapters 00 and 02: drawing in the terminal.
#include "decodebook/terminal.hpp"

#include <algorithm>
#include <cstdio>

#include "decodebook/sampling.hpp"
#include "decodebook/tokenizer.hpp"

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

std::string bar(double value, double max, int width) {
    const int n = max > 0 ? static_cast<int>(value / max * width + 0.5) : 0;
    return std::string(static_cast<size_t>(std::clamp(n, 0, width)), '#');
}

void print_distribution(const xt::xtensor<float, 1>& probs, const Tokenizer& tok, size_t n, double scale_max) {
    for (int id : top_ids(probs, n)) {
        const double p = probs(static_cast<size_t>(id));
        std::printf("    %-14s %6.3f  %s\n", visible_token(tok.token_bytes(id)).c_str(), p, bar(p, scale_max, 40).c_str());
    }
}

}  // namespace decodebook
