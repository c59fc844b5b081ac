// Chapter 00: showing the decode loop at work.
#include "decodebook/report.hpp"

#include <cstdio>
#include <set>

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

Loop find_loop(const std::vector<int>& tokens) {
    const size_t n = tokens.size();
    Loop best;
    for (size_t p = 1; p <= n / 3; ++p) {
        size_t run = 0;  // length of the current stretch where tokens[i] == tokens[i - p]
        for (size_t i = p; i < n; ++i) {
            run = tokens[i] == tokens[i - p] ? run + 1 : 0;
            const size_t covered = run + p;  // the stretch plus the cycle it repeats
            if (run > 0 && covered >= 3 * p && covered >= 12 && covered > best.covered) {
                best = {p, i + 1 - covered, covered};
            }
        }
    }
    return best;
}

double distinct_n(const std::vector<int>& tokens, int n) {
    if (n <= 0 || tokens.size() < static_cast<size_t>(n)) return 0.0;
    std::set<std::vector<int>> grams;
    const size_t count = tokens.size() - static_cast<size_t>(n) + 1;
    for (size_t i = 0; i < count; ++i) grams.emplace(tokens.begin() + static_cast<long>(i), tokens.begin() + static_cast<long>(i) + n);
    return static_cast<double>(grams.size()) / static_cast<double>(count);
}

}  // namespace decodebook
