// Chapter 08: the chapter's examples through your exercises (exercises/08-speculative/).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chapter08.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter08 {
namespace {

using Vec = xt::xtensor<float, 1>;

std::string ids_text(const std::vector<int>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(ids[i]);
    }
    return s + "]";
}

// A vocabulary-10 row of logits: `value` at the given ids, `rest` elsewhere (Hugging Face's test rows).
Vec row(const std::map<int, float>& at, float rest) {
    Vec z = xt::zeros<float>({10});
    z.fill(rest);
    for (const auto& [id, value] : at) z(static_cast<size_t>(id)) = value;
    return z;
}

// Part 5's case (Hugging Face's test_speculative_sampling_target_distribution: drafts [1, 4, 5],
// target rows only id 1, only id 4, then 2.0 at ids 1 and 8, 1.0 at id 3, -0.01 at id 7), and
// 10,000 rounds of Rng(2026) coins (coins_per_round(3) = 4 a round: one per draft, the last for
// the residual).
struct RoundCase {
    std::vector<int> drafts;
    std::vector<Vec> q, p;
    std::vector<std::vector<double>> coins;
};

RoundCase target_distribution_rounds() {
    RoundCase rc;
    rc.drafts = {1, 4, 5};
    for (int id : rc.drafts) rc.q.push_back(softmax(row({{id, 10.0f}}, -10.0f)));
    rc.p = {softmax(row({{1, 10.0f}}, -INFINITY)), softmax(row({{4, 10.0f}}, -INFINITY)),
            softmax(row({{1, 2.0f}, {8, 2.0f}, {3, 1.0f}, {7, -0.01f}}, -INFINITY)),
            softmax(row({{0, 0.0f}}, -INFINITY))};
    const int rounds = 10000;
    Rng rng(2026);
    for (int r = 0; r < rounds; ++r) {
        rc.coins.emplace_back();
        for (int c = 0; c < coins_per_round(3); ++c) rc.coins.back().push_back(rng.coin());
    }
    return rc;
}

using RoundCounts = std::map<std::string, int>;  // what a round emitted (kept drafts, next) -> rounds

RoundCounts library_rounds(const RoundCase& rc) {
    RoundCounts counts;
    for (const std::vector<double>& c : rc.coins) {
        const Verdict v = verify_drafts(rc.p, rc.drafts, rc.q, c);
        std::vector<int> emitted(rc.drafts.begin(), rc.drafts.begin() + v.accepted);
        emitted.push_back(v.next);
        ++counts[ids_text(emitted)];
    }
    return counts;
}

// The same rounds walked one position at a time through your verdict.
RoundCounts your_rounds(const RoundCase& rc) {
    RoundCounts counts;
    for (const std::vector<double>& c : rc.coins) {
        std::vector<int> emitted;
        for (size_t i = 0; i <= rc.drafts.size(); ++i) {  // keep drafts while your verdict keeps them
            if (i == rc.drafts.size()) {                    // every draft kept: the bonus token (not yours)
                emitted.push_back(sample_inverse_cdf(rc.p[i], c.back()));
                break;
            }
            const int token = your_verify_position(rc.p[i], &rc.q[i], rc.drafts[i], c[i], c.back());
            emitted.push_back(token);
            if (token != rc.drafts[i]) break;
        }
        ++counts[ids_text(emitted)];
    }
    return counts;
}

std::string rounds_text(const RoundCounts& counts) {
    std::string s;
    for (const auto& [emitted, n] : counts) {
        if (!s.empty()) s += ", ";
        s += emitted + " x" + std::to_string(n);
    }
    return s;
}

// The stub's toy cases (p [0.5, 0.25, 0.25], q [0.25, 0.25, 0.5]: draft 2 with the coins 0.4 and
// 0.5, and a deterministic draft 0 with the coin 0.75).
struct Toy {
    const Vec* q;
    int x;
    double accept_coin, residual_coin;
};
struct ToyCases {
    Vec p{0.5f, 0.25f, 0.25f}, q{0.25f, 0.25f, 0.5f};
    std::vector<Toy> toys() const { return {{&q, 2, 0.4, 0.5}, {&q, 2, 0.5, 0.5}, {nullptr, 0, 0.75, 0.6}}; }
};

std::vector<int> library_toys(const ToyCases& tc) {
    std::vector<int> tokens;
    for (const Toy& t : tc.toys()) {
        const bool kept = accept_draft(tc.p, t.q, t.x, t.accept_coin);
        tokens.push_back(kept ? t.x : sample_inverse_cdf(residual(tc.p, t.q, t.x), t.residual_coin));
    }
    return tokens;
}

std::vector<int> your_toys(const ToyCases& tc) {
    std::vector<int> tokens;
    for (const Toy& t : tc.toys())
        tokens.push_back(your_verify_position(tc.p, t.q, t.x, t.accept_coin, t.residual_coin));
    return tokens;
}

// 08.1: part 5's case through your verdict against verify_drafts, then the stub's toy cases.
void report_verify_position() {
    const RoundCase rc = target_distribution_rounds();
    const RoundCounts round_lib = library_rounds(rc);
    const ToyCases tc;
    const std::vector<int> toys_lib = library_toys(tc);
    RoundCounts round_yours;
    std::vector<int> toys_yours;
    const ExerciseAttempt a = try_exercise([&] {
        round_yours = your_rounds(rc);
        toys_yours = your_toys(tc);
    });
    const bool same = round_yours == round_lib && toys_yours == toys_lib;
    print_exercise_status(course_exercise("your_verify_position"), a, same,
                          rounds_text(round_yours) + "; toy cases " + ids_text(toys_yours),
                          rounds_text(round_lib) + "; toy cases " + ids_text(toys_lib));
}

// 08.2: the last tokens [2, 3] recur twice before the end: the leftmost match proposes; and
// Hugging Face's stop-at-EOS case, where the match's continuation begins with the EOS 0
void report_prompt_lookup() {
    const std::vector<int> repeats{1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3}, eos_case{17, 5, 33, 51, 0, 12, 44, 8, 29, 51};
    const std::vector<int> eos{0};
    std::vector<int> look_yours, eos_yours;
    const ExerciseAttempt b = try_exercise([&] {
        look_yours = your_prompt_lookup(repeats, 2, 2, eos);
        eos_yours = your_prompt_lookup(eos_case, 1, 4, eos);
    });
    const std::vector<int> look_lib = prompt_lookup_hf(repeats, 2, 2, eos);
    const std::vector<int> eos_lib = prompt_lookup_hf(eos_case, 1, 4, eos);
    print_exercise_status(course_exercise("your_prompt_lookup"), b, look_yours == look_lib && eos_yours == eos_lib,
                          ids_text(look_yours) + " and " + ids_text(eos_yours),
                          ids_text(look_lib) + " and " + ids_text(eos_lib));
}

}  // namespace

void report_exercises() {
    report_verify_position();
    report_prompt_lookup();
}

}  // namespace chapter08
