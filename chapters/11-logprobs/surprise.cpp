// Chapter 11, part 2: a held-out fortune token by token: probability, surprise and entropy.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter11.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/scoring.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/logprobs.hpp"
#include "decodebook/sampling/sampling.hpp"

#include <xtensor/xview.hpp>

using namespace decodebook;

namespace chapter11 {
namespace {

// One scored token of the text.
struct Scored {
    int token = 0;
    double p = 0;         // p(token | the text before it)
    double surprise = 0;  // -log2 p, bits
    double entropy = 0;   // the entropy of the model's distribution at that position, bits
};

// A terminal's background for a probability: green (likely) to red (a surprise), 256-colour codes.
const char* shade(double p) {
    if (p >= 0.5) return "\033[48;5;120m";
    if (p >= 0.1) return "\033[48;5;229m";
    if (p >= 0.01) return "\033[48;5;216m";
    return "\033[48;5;210m";
}

}  // namespace

void surprise_along_a_text(const Session& s, const std::string& fortune, CsvRows& csv) {
    const std::vector<int> ids = held_out_ids(s, {fortune});  // <|endoftext|> fortune <|endoftext|>
    // the library's prompt logprobs give each token's log p; the same forward's rows give the entropy
    const auto entries = prompt_logprobs(s.model, ids, 0);
    const xt::xtensor<float, 2> logits = s.model.forward(ids);  // (T, V): row t predicts token t + 1
    std::vector<Scored> scored;
    for (size_t i = 1; i < ids.size(); ++i) {
        const Vec row = xt::view(logits, i - 1);
        const double lp = entries[i]->logprob;
        scored.push_back({ids[i], std::exp(lp), -lp / std::log(2.0), entropy(softmax(row)) / std::log(2.0)});
    }
    if (isatty(STDOUT_FILENO)) {  // the text itself, each token on its shade
        std::printf("shaded by p: green >= 0.5, yellow >= 0.1, orange >= 0.01, red below\n\n");
        for (const Scored& t : scored)
            std::printf("%s\033[30m%s\033[0m", shade(t.p), std::string(s.tokenizer.text_bytes(t.token, true)).c_str());
        std::printf("\n\n");
    }
    std::printf("%4s  %-14s %8s %14s %13s\n", "pos", "token", "p", "surprise bits", "entropy bits");
    double bits = 0;
    for (size_t i = 0; i < scored.size(); ++i) {
        const Scored& t = scored[i];
        const std::string token = visible_token(std::string(s.tokenizer.text_bytes(t.token, false)));
        std::printf("%4zu  %-14s %8.4f %14.2f %13.2f\n", i + 1, token.c_str(), t.p, t.surprise, t.entropy);
        bits += t.surprise;
        csv.push_back({"p", static_cast<double>(i + 1), t.p, to_valid_utf8(s.tokenizer.text_bytes(t.token, false))});
        csv.push_back({"surprise", static_cast<double>(i + 1), t.surprise, token});
        csv.push_back({"entropy", static_cast<double>(i + 1), t.entropy, token});
    }
    const double mean = bits / static_cast<double>(scored.size());
    const auto most = std::max_element(scored.begin(), scored.end(),
                                       [](const Scored& a, const Scored& b) { return a.surprise < b.surprise; });
    std::printf("%zu tokens scored: mean surprise %.2f bits/token (the cross-entropy), perplexity 2^%.2f = %.1f; "
                "the biggest surprise %s at %.2f bits (p %.5f)\n",
                scored.size(), mean, mean, std::exp2(mean),
                visible_token(std::string(s.tokenizer.text_bytes(most->token, false))).c_str(), most->surprise, most->p);
}

}  // namespace chapter11
