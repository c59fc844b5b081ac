// Chapter 03, parts 3 and 5: top-p's arithmetic. The classic exercise, where a flat tail must be
// walked until the mass reaches p; then an exact sum at p, where the direction of the sum and
// float rounding decide, one token apart, between Hugging Face, vLLM and llama.cpp.
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "chapter03.hpp"

using namespace decodebook;

namespace chapter03 {

void classic_exercise() {
    Vec classic = xt::zeros<float>({32000});
    const float top5[] = {10.0f, 9.9f, 9.8f, 5.0f, 4.0f};
    for (size_t i = 0; i < 5; ++i) classic(i) = top5[i];
    const Vec cp = softmax(classic);
    std::printf("  p = %.4f %.4f %.4f %.4f %.4f, and %.2e for each of the 31995 zeros (together %.3f)\n", cp(0),
                cp(1), cp(2), cp(3), cp(4), cp(5), 31995 * cp(5));
    Vec nucleus = classic;
    apply_top_p(nucleus, 0.9f);
    std::printf("  top_p 0.9 keeps %d tokens: the three big ones hold only %.3f of the mass, so the flat tail\n"
                "  must be walked until 0.9 is reached. top_k 3 would keep 3; min_p 0.1 keeps %d.\n",
                count_candidates(nucleus), cp(0) + cp(1) + cp(2), count_candidates(filtered(classic, only_min_p(0.1f))));
}

void mass_at_the_boundary() {
    const Vec hf_case = hf_top_p_case();
    std::printf("  Hugging Face's own test: logits log([0.3, 0.1, 0.1, 0.5]) in float32, top_p 0.8.\n"
                "  The float32 softmax: %.10f %.10f %.10f %.10f (0.3 comes out one float step low).\n",
                hf_case(0), hf_case(1), hf_case(2), hf_case(3));
    const std::vector<int> order = candidate_order(hf_case);
    double up = 0;  // HF: from the least likely token up, each sum stored in float32
    std::printf("  hf         sums up from the least likely:");
    for (size_t r = order.size(); r-- > 2;) {
        up += hf_case(static_cast<size_t>(order[r]));
        std::printf(" %.10f", static_cast<float>(up));
    }
    std::printf(" <= float32(1 - 0.8) = %.10f:\n             both 0.1s go, %d tokens kept\n",
                static_cast<float>(1.0 - 0.8), kept_by(hf_case, 0.8, TopPRule::HuggingFace));
    float down = 0;  // llama.cpp: from the most likely down, a float sum
    std::printf("  llama.cpp  sums down in float:");
    for (size_t r = 0; r < 2; ++r) {
        down += hf_case(static_cast<size_t>(order[r]));
        std::printf(" %.10f", down);
    }
    std::printf(" < %.10f (0.8f):\n             not there yet, so a 0.1 comes in: %d tokens kept\n", 0.8f,
                kept_by(hf_case, 0.8, TopPRule::LlamaCpp));
    const Vec plain{0.5f, 0.3f, 0.1f, 0.1f};
    std::printf("  %-34s %6s %4s %5s %10s\n", "probabilities (float32)", "top_p", "hf", "vllm", "llama.cpp");
    const std::pair<const char*, const Vec*> rows[] = {{"softmax(log [0.3, 0.1, 0.1, 0.5])", &hf_case},
                                                       {"[0.5, 0.3, 0.1, 0.1]", &plain}};
    for (const auto& [label, probs] : rows) {
        for (double p : {0.8, 0.81}) {
            std::printf("  %-34s %6g %4d %5d %10d\n", label, p, kept_by(*probs, p, TopPRule::HuggingFace),
                        kept_by(*probs, p, TopPRule::Vllm), kept_by(*probs, p, TopPRule::LlamaCpp));
        }
    }
    std::printf("  Same rule on paper, one token apart at an exact sum: float rounding and the direction of the\n"
                "  sum decide. vLLM computes 1 - p in float32 (1 - 0.8f = %.10f), HF from a double.\n",
                1.0f - 0.8f);
}

}  // namespace chapter03
