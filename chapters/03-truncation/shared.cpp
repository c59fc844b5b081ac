// Chapter 03: what its parts share: the survivors of a step, the configs of one knob, top-p's
// kept count under each engine's rule, and Hugging Face's boundary case.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter03.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter03 {

void print_survivors(const char* label, const Vec& z, const Tokenizer& tok) {
    const Vec p = softmax(z);
    const int n = count_candidates(z);
    std::printf("  %-12s %5d %s:", label, n, n == 1 ? "candidate " : "candidates");
    for (int id : top_ids(p, 6)) std::printf(" %s %.2f", visible_token(tok.token_bytes(id)).c_str(), p(static_cast<size_t>(id)));
    std::printf(n > 6 ? " ...\n" : "\n");
}

Vec filtered(const Vec& logits, const GenerationConfig& config) {
    const std::vector<int> none;
    return LogitsChain(config).apply(logits, {none, none});
}

// A sampling config with one knob set, e.g. only("top_k", "10").
GenerationConfig only(const std::string& knob, const std::string& value) {
    GenerationConfig c;
    set_knob(c, knob, value);  // a truncation knob turns do_sample on
    return c;
}
GenerationConfig only_k(int k) { return only("top_k", std::to_string(k)); }
GenerationConfig only_p(float v) { return only("top_p", std::to_string(v)); }
GenerationConfig only_min_p(float v) { return only("min_p", std::to_string(v)); }

int kept_by(const Vec& probs, double p, TopPRule rule) {
    const std::vector<bool> keep = top_p_keep(probs, p, 1, rule);
    return static_cast<int>(std::count(keep.begin(), keep.end(), true));
}

Vec hf_top_p_case() { return softmax(Vec{std::log(0.3f), std::log(0.1f), std::log(0.1f), std::log(0.5f)}); }

}  // namespace chapter03
