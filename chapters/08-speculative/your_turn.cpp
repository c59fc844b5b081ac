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

}  // namespace

void report_exercises() {
    // 08.1: part 5's case (Hugging Face's test_speculative_sampling_target_distribution: drafts
    // [1, 4, 5], target rows only id 1, only id 4, then 2.0 at ids 1 and 8, 1.0 at id 3, -0.01 at
    // id 7), 10,000 rounds of Rng(2026) coins walked one position at a time through your verdict
    // (coins_per_round(3) = 4 a round: one per draft, the last for the residual), against
    // verify_drafts; then the stub's toy cases (p [0.5, 0.25, 0.25], q [0.25, 0.25, 0.5]: draft 2
    // with the coins 0.4 and 0.5, and a deterministic draft 0 with the coin 0.75)
    const std::vector<int> drafts{1, 4, 5};
    std::vector<Vec> q;
    for (int id : drafts) q.push_back(softmax(row({{id, 10.0f}}, -10.0f)));
    const std::vector<Vec> p{softmax(row({{1, 10.0f}}, -INFINITY)), softmax(row({{4, 10.0f}}, -INFINITY)),
                             softmax(row({{1, 2.0f}, {8, 2.0f}, {3, 1.0f}, {7, -0.01f}}, -INFINITY)),
                             softmax(row({{0, 0.0f}}, -INFINITY))};
    const int rounds = 10000;
    std::vector<std::vector<double>> coins;
    Rng rng(2026);
    for (int r = 0; r < rounds; ++r) {
        coins.emplace_back();
        for (int c = 0; c < coins_per_round(3); ++c) coins.back().push_back(rng.coin());
    }
    std::map<std::string, int> round_lib, round_yours;  // what a round emitted (kept drafts, next) -> rounds
    const auto key = [](const std::vector<int>& emitted) { return ids_text(emitted); };
    for (const std::vector<double>& c : coins) {
        const Verdict v = verify_drafts(p, drafts, q, c);
        std::vector<int> emitted(drafts.begin(), drafts.begin() + v.accepted);
        emitted.push_back(v.next);
        ++round_lib[key(emitted)];
    }
    const Vec tp{0.5f, 0.25f, 0.25f}, tq{0.25f, 0.25f, 0.5f};
    struct Toy {
        const Vec* q;
        int x;
        double accept_coin, residual_coin;
    };
    const Toy toys[] = {{&tq, 2, 0.4, 0.5}, {&tq, 2, 0.5, 0.5}, {nullptr, 0, 0.75, 0.6}};
    std::vector<int> toys_lib;
    for (const Toy& t : toys) {
        const bool kept = accept_draft(tp, t.q, t.x, t.accept_coin);
        toys_lib.push_back(kept ? t.x : sample_inverse_cdf(residual(tp, t.q, t.x), t.residual_coin));
    }

    std::vector<int> toys_yours;
    const ExerciseAttempt a = try_exercise([&] {
        for (const std::vector<double>& c : coins) {
            std::vector<int> emitted;
            for (size_t i = 0; i <= drafts.size(); ++i) {  // keep drafts while your verdict keeps them
                if (i == drafts.size()) {                    // every draft kept: the bonus token (not yours)
                    emitted.push_back(sample_inverse_cdf(p[i], c.back()));
                    break;
                }
                const int token = your_verify_position(p[i], &q[i], drafts[i], c[i], c.back());
                emitted.push_back(token);
                if (token != drafts[i]) break;
            }
            ++round_yours[key(emitted)];
        }
        for (const Toy& t : toys)
            toys_yours.push_back(your_verify_position(tp, t.q, t.x, t.accept_coin, t.residual_coin));
    });
    const auto rounds_text = [](const std::map<std::string, int>& counts) {
        std::string s;
        for (const auto& [emitted, n] : counts) {
            if (!s.empty()) s += ", ";
            s += emitted + " x" + std::to_string(n);
        }
        return s;
    };
    const bool same = round_yours == round_lib && toys_yours == toys_lib;
    print_exercise_status(course_exercise("your_verify_position"), a, same,
                          rounds_text(round_yours) + "; toy cases " + ids_text(toys_yours),
                          rounds_text(round_lib) + "; toy cases " + ids_text(toys_lib));

    // 08.2: the last tokens [2, 3] recur twice before the end: the leftmost match proposes; and
    // Hugging Face's stop-at-EOS case, where the match's continuation begins with the EOS 0
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

}  // namespace chapter08
