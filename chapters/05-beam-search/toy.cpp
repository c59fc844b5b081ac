// Chapter 05, part 2: a two-step toy traced by hand, where greedy is not the best path: greedy
// takes A (0.6) and then reaches 0.24 at most; keeping B alive finds B A at 0.36.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter05.hpp"

using namespace decodebook;

namespace chapter05 {
namespace {

Vec row(std::vector<double> probs) {
    Vec r = xt::zeros<float>({probs.size()});
    for (size_t i = 0; i < probs.size(); ++i) r(i) = static_cast<float>(std::log(probs[i]));
    return r;
}

const char* kToyNames[] = {"A", "B", "C"};

}  // namespace

std::vector<Vec> toy_rows(const std::vector<Beam>& beams) {
    std::vector<Vec> rows;
    for (const Beam& b : beams) {
        if (b.ids.empty()) rows.push_back(row({0.6, 0.4, 1e-9}));
        else if (b.ids[0] == 0) rows.push_back(row({0.4, 0.3, 0.3}));
        else rows.push_back(row({0.9, 0.05, 0.05}));
    }
    return rows;
}

std::string toy_text(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += kToyNames[id];
    return s;
}

void toy_by_hand() {
    std::printf("  step 1: A 0.60, B 0.40\n"
                "  after A: A 0.40, B 0.30, C 0.30      after B: A 0.90, B 0.05, C 0.05\n");
    std::printf("  every two-step path:");
    for (int first : {0, 1}) {
        const Vec step2 = toy_rows({Beam{{first}, 0.0}})[0];
        const double p1 = first == 0 ? 0.6 : 0.4;
        for (int second : {0, 1, 2})
            std::printf(" %s %.2f", toy_text({first, second}).c_str(), p1 * std::exp(step2(static_cast<size_t>(second))));
    }
    std::printf("\n");
    GenerationConfig toy;
    toy.max_new_tokens = 2;
    toy.length_penalty = 0;  // the raw sum: the comparison the tree makes
    toy.early_stopping = EarlyStopping::Never;
    for (int beams : {1, 2}) {
        toy.num_beams = beams;
        toy.num_return_sequences = 1;
        BeamTrace trace;
        const std::vector<Hypothesis> best =
            beam_search([](const std::vector<Beam>& b, int) { return toy_rows(b); }, {}, 0, toy, &trace);
        std::printf("  num_beams %d:\n", beams);
        for (const Beam& b : trace.running[0])
            if (b.sum_logprobs > -1e8)
                std::printf("    step 1 keeps %-3s log-prob %6.3f\n", toy_text(b.ids).c_str(), b.sum_logprobs);
        for (const Beam& b : trace.finished[1])
            std::printf("    step 2 ends  %-3s log-prob %6.3f (p %.2f)%s\n", toy_text(b.ids).c_str(), b.sum_logprobs,
                        std::exp(b.sum_logprobs), b.ids == best[0].ids ? "  <- best" : "");
    }
    std::printf("  Greedy takes A (0.6) and then can only reach 0.6 x 0.4 = 0.24; keeping B alive finds\n"
                "  B A at 0.4 x 0.9 = 0.36.\n");
}

}  // namespace chapter05
