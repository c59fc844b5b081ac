// Chapter 04, parts 2 and 3: the penalty on the last step of part 1's looping run. The sign trap:
// a naive z / theta on a negative logit makes the repeat MORE likely (it moves up the ranking);
// and how strong: a growing theta sinks a seen token the model likes, words a sentence needs included.
#include <cstdio>
#include <set>
#include <vector>

#include "chapter04.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter04 {
namespace {

// The rank of `id` in `z` (1 = the largest logit; ties go to the lower id, as candidate_order).
int rank_of(const Vec& z, int id) {
    int r = 1;
    const float v = z(static_cast<size_t>(id));
    for (size_t j = 0; j < z.size(); ++j) {
        if (z(j) > v || (z(j) == v && static_cast<int>(j) < id)) ++r;
    }
    return r;
}

}  // namespace

void sign_trap(const Vec& z, const std::vector<int>& context, const Tokenizer& tok) {
    const float theta = 1.5f;
    Vec naive = z, right = z;
    for (int id : std::set<int>(context.begin(), context.end())) naive(static_cast<size_t>(id)) /= theta;  // the bug
    apply_repetition_penalty(right, context, theta);  // the sign-aware rule
    int trap = -1, best_gain = 0;
    for (int id : std::set<int>(context.begin(), context.end())) {
        if (z(static_cast<size_t>(id)) >= 0) continue;
        const int gain = rank_of(z, id) - rank_of(naive, id);
        if (gain > best_gain) trap = id, best_gain = gain;
    }
    if (trap < 0) {
        std::printf("  (no token seen has a negative logit that the naive rule lifts; try another --prompt)\n");
    } else {
        const size_t t = static_cast<size_t>(trap);
        std::printf("  every token seen is penalised with theta = %.1f. Token %s was seen; its logit is %.3f (negative).\n",
                    theta, visible_token(tok.token_bytes(trap)).c_str(), z(t));
        std::printf("  %-28s %8s %10s %6s\n", "", "logit", "p", "rank");
        std::printf("  %-28s %8.3f %10.6f %6d\n", "no penalty", z(t), softmax(z)(t), rank_of(z, trap));
        std::printf("  %-28s %8.3f %10.6f %6d   <- up %d places: the penalty rewards the repeat\n", "naive z / 1.5", naive(t),
                    softmax(naive)(t), rank_of(naive, trap), rank_of(z, trap) - rank_of(naive, trap));
        std::printf("  %-28s %8.3f %10.6f %6d   <- down, as intended\n", "sign-aware z * 1.5 (z < 0)", right(t),
                    softmax(right)(t), rank_of(right, trap));
    }
}

void penalty_strength(const Vec& z, const std::vector<int>& context, const Tokenizer& tok) {
    int liked = -1;
    for (int id : std::set<int>(context.begin(), context.end())) {
        if (liked < 0 || z(static_cast<size_t>(id)) > z(static_cast<size_t>(liked))) liked = id;
    }
    std::printf("  token %s (seen; logit %.3f with no penalty)\n", visible_token(tok.token_bytes(liked)).c_str(),
                z(static_cast<size_t>(liked)));
    std::printf("  %8s %10s %6s\n", "theta", "p", "rank");
    for (float th : {1.0f, 1.05f, 1.1f, 1.3f, 2.0f, 5.0f}) {
        Vec pen = z;
        apply_repetition_penalty(pen, context, th);
        std::printf("  %8.2f %10.6f %6d\n", th, softmax(pen)(static_cast<size_t>(liked)), rank_of(pen, liked));
    }
    std::printf("  Typical values are 1.05 to 1.3. Far above that every token already used sinks like this one,\n"
                "  the words a sentence needs again included, and the text has to avoid them.\n");
}

}  // namespace chapter04
