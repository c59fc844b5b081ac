// Chapters 00, 02, 05 and 07: drawing in the terminal, the coin behind each sampled token, and
// text, numbers and byte counts made printable.
#include "decodebook/course/terminal.hpp"

#include <algorithm>
#include <cstdio>

#include <memory>

#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"

#include "decodebook/base/utf8.hpp"

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

void print_steps(std::ostream& out, const std::vector<StepRecord>& steps, const Tokenizer& tokenizer,
                 const std::vector<Draw>& coins) {
    const bool watched = !coins.empty();
    char line[200];
    std::snprintf(line, sizeof line, "%5s %6s  %-18s %8s %8s", "step", "id", "token", "logit", "p(raw)");
    out << line;
    if (watched) {
        std::snprintf(line, sizeof line, " %8s %7s  %-17s", "p(chain)", "coin", "CDF slice");
        out << line;
    }
    out << "        ms\n";
    for (size_t i = 0; i < steps.size(); ++i) {
        const StepRecord& s = steps[i];
        const std::string text = visible_token(tokenizer.token_bytes(s.token));
        std::snprintf(line, sizeof line, "%5d %6d  %-18s %8.3f %8.4f", s.step, s.token, text.c_str(), s.logit, s.probability);
        out << line;
        if (watched) {
            if (i >= coins.size()) std::snprintf(line, sizeof line, " %8s %7s  %-17s", "", "", "");
            else if (coins[i].greedy) std::snprintf(line, sizeof line, " %8.4f %7s  %-17s", coins[i].processed, "-", "argmax");
            else {
                char slice[48];
                std::snprintf(slice, sizeof slice, "[%.4f, %.4f)", coins[i].from, coins[i].to);
                std::snprintf(line, sizeof line, " %8.4f %7.4f  %-17s", coins[i].processed, coins[i].coin, slice);
            }
            out << line;
        }
        std::snprintf(line, sizeof line, " %9.2f\n", s.milliseconds);
        out << line;
    }
    if (watched) out << "  p(raw): softmax of the raw logits (T = 1). p(chain): after the chain, the distribution the coin\n"
                        "  was drawn from; the token is the one whose CDF slice holds the coin.\n";
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

std::string one_line(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else out += c;
    }
    return out;
}

std::string with_commas(uint64_t n) {
    const std::string digits = std::to_string(n);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string human_bytes(double bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return buf;
}

}  // namespace decodebook
