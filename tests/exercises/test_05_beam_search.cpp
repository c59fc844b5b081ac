// Graded tests for chapter 05's exercises (see exercises/manifest.json).
// Each exercise also meets cases drawn when the tests run, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library's beam_step, beam_score
// and beam_search_done in this test program, which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>

#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/exercises.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "replay.hpp"
#include "sandbox.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;

namespace {

Vec log_row(std::vector<double> probs) {
    Vec r = xt::zeros<float>({probs.size()});
    for (size_t i = 0; i < probs.size(); ++i) r(i) = static_cast<float>(std::log(probs[i]));
    return r;
}

std::vector<std::vector<int>> ids_of(const std::vector<Beam>& beams) {
    std::vector<std::vector<int>> out;
    for (const Beam& b : beams) out.push_back(b.ids);
    return out;
}

using Ids = std::vector<std::vector<int>>;

std::string show(const Ids& ids) {
    if (ids.empty()) return "none";
    std::string s;
    for (const auto& one : ids) s += (s.empty() ? "" : ", ") + feedback::list(one);
    return s;
}

// Beams with their sums, as the messages print them: "[7] (sum -0.693)".
std::string show(const std::vector<Beam>& beams) {
    if (beams.empty()) return "none";
    std::string s;
    for (const Beam& b : beams) s += (s.empty() ? "" : ", ") + feedback::list(b.ids) + " (sum " + feedback::num(b.sum_logprobs, 4) + ")";
    return s;
}

// One call of your_beam_step on rows given as probabilities (the step sees their logs).
struct Step {
    std::vector<Beam> beams;
    std::vector<std::vector<double>> probs;  // one row per beam
    std::vector<int> eos_ids;
    int num_beams;
    bool last_step;

    std::string text() const {
        std::string rows;
        for (const auto& r : probs) {
            std::string row;
            for (double p : r) row += (row.empty() ? "" : ", ") + feedback::num(p);
            rows += (rows.empty() ? "[" : "; [") + row + "]";
        }
        return "input: beams " + (beams.size() == 1 && beams[0].ids.empty() ? std::string("one empty beam (sum 0)") : show(beams)) +
               "\n  rows of probabilities (the step gets their logs) " + rows + "\n  EOS ids " + feedback::list(eos_ids) +
               ", num_beams " + std::to_string(num_beams) + ", last_step " + (last_step ? "true" : "false");
    }
    BeamStep run() const {
        std::vector<Vec> rows;
        for (const auto& r : probs) rows.push_back(log_row(r));
        return your_beam_step(beams, rows, eos_ids, num_beams, last_step);
    }
};

BeamStep check_step(const Step& step, const Ids& running, const Ids& finished, const std::string& why) {
    const BeamStep found = step.run();
    FEEDBACK(step.text());
    FEEDBACK(why);
    FEEDBACK("expected: going on " + show(running) + "; finished " + show(finished));
    FEEDBACK("found:    going on " + show(found.running) + "; finished " + show(found.finished));
    CHECK(ids_of(found.running) == running);
    CHECK(ids_of(found.finished) == finished);
    return found;
}

void check_sum(const Beam& found, double expected, const std::string& what) {
    FEEDBACK(what + ": expected sum_logprobs " + feedback::num(expected) + "; found " +
                        feedback::num(found.sum_logprobs) + " (ids " + feedback::list(found.ids) + ")");
    CHECK(found.sum_logprobs == Approx(expected).margin(1e-6));
}

}  // namespace

TEST_CASE("ex05.1 one beam: a lower-ranked EOS (rank num_beams or more) is dropped", "[ex05.1]") {
    const BeamStep s = check_step({{Beam{}}, {{0.5, 0.3, 0.2}}, {2}, 2, false}, {{0}, {1}}, {},
                                  "ranks: token 0 (rank 0), token 1 (rank 1), EOS token 2 (rank 2). The EOS's rank "
                                  "2 is not below num_beams 2: it is dropped, neither finished nor going on");
    REQUIRE(s.running.size() == 2);
    check_sum(s.running[0], std::log(0.5), "going on [0]: 0 + ln 0.5");
    check_sum(s.running[1], std::log(0.3), "going on [1]: 0 + ln 0.3");
}

TEST_CASE("ex05.1 an EOS of rank below num_beams finishes and the next ones go on", "[ex05.1]") {
    check_step({{Beam{}}, {{0.2, 0.5, 0.3}}, {1}, 2, false}, {{2}, {0}}, {{1}},
               "ranks: EOS token 1 (rank 0, below num_beams 2: finishes), token 2 (rank 1), token 0 (rank 2); "
               "the EOS does not take a running slot, so 2 and 0 go on");
}

TEST_CASE("ex05.1 two beams: sums add up and ties go to the lower beam then token", "[ex05.1]") {
    const std::vector<Beam> beams{{{7}, std::log(0.5)}, {{8}, std::log(0.5)}};
    // the same row for both beams: candidates tie across beams; beam 0 ranks first
    check_step({beams, {{0.25, 0.25, 0.5}, {0.25, 0.25, 0.5}}, {}, 2, false}, {{7, 2}, {8, 2}}, {},
               "both beams score ln 0.5 + ln 0.5 for token 2: a tie, so beam 0's candidate ranks first");
    const BeamStep t = check_step({beams, {{0.25, 0.25, 0.5}, {0.7, 0.2, 0.1}}, {}, 3, false},
                                  {{8, 0}, {7, 2}, {7, 0}}, {},
                                  "scores: [8, 0] 0.5 x 0.7 = 0.35, [7, 2] 0.25, then [7, 0] and [7, 1] tie at 0.125 "
                                  "(token 0 first)");
    REQUIRE(t.running.size() == 3);
    check_sum(t.running[0], std::log(0.35), "going on [8, 0]: ln 0.5 + ln 0.7");
}

TEST_CASE("ex05.1 EOS cannot starve the beams: 2 x num_beams candidates are looked at", "[ex05.1]") {
    // both beams' best token is EOS (3): two finish, and two others still go on
    const std::vector<Beam> beams{{{1}, -0.1}, {{2}, -0.2}};
    check_step({beams, {{0.1, 0.1, 0.1, 0.7}, {0.2, 0.05, 0.05, 0.7}}, {3}, 2, false}, {{2, 0}, {1, 0}},
               {{1, 3}, {2, 3}},
               "the two best candidates are EOS and finish; the next ones in rank order must still fill the 2 "
               "running slots (look at the best 2 x num_beams = 4 candidates, not 2)");
}

TEST_CASE("ex05.1 with two EOS ids 3 x num_beams candidates are looked at", "[ex05.1]") {
    // one beam, num_beams 1: EOS ids 2 and 3 hold ranks 0 and 1; rank 2 (token 0) must still go on
    check_step({{Beam{}}, {{0.2, 0.1, 0.4, 0.3}}, {2, 3}, 1, false}, {{0}}, {{2}},
               "EOS 2 has rank 0 (finishes), EOS 3 rank 1 (dropped), token 0 rank 2 goes on: with 2 EOS ids "
               "look at the best max(2, 1 + 2) x num_beams = 3 candidates");
}

TEST_CASE("ex05.1 at the last step the top num_beams candidates finish" , "[ex05.1]") {
    const BeamStep s = check_step({{Beam{{4}, -1.0}}, {{0.5, 0.3, 0.2}}, {2}, 2, true}, {}, {{4, 0}, {4, 1}},
                                  "last_step: the candidates of rank below num_beams 2 finish, EOS or not, "
                                  "and none goes on");
    REQUIRE(s.finished.size() == 2);
    check_sum(s.finished[0], -1.0 + std::log(0.5), "finished [4, 0]: -1 + ln 0.5");
}

TEST_CASE("ex05.1 your step in the library's loop reproduces the reference's beams", "[ex05.1]") {
    const nlohmann::json file = golden::load("beams.json");
    int compared = 0;
    for (const auto& c : file["cases"]) {
        if (c["params"]["beam_scoring"] != "hf" || c["params"]["early_stopping"] != "never") continue;
        const GenerationConfig config = replay::config(c);
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> eos{replay::model().config().eos_token_id};
        const std::vector<Hypothesis> found =
            beam_search(model_log_probs(replay::model(), prompt, config, eos), eos, static_cast<int>(prompt.size()),
                        config, nullptr, your_beam_step);
        FEEDBACK("input: case " << c["name"].get<std::string>() << " (tests/data/beams.json), prompt ids "
                            << golden::join(prompt) << ", num_beams " << config.num_beams << ", max_new_tokens "
                            << config.max_new_tokens);
        REQUIRE(found.size() == c["hypotheses"].size());
        for (size_t i = 0; i < found.size(); ++i) {
            FEEDBACK("hypothesis " << i + 1 << ": expected " << golden::join(c["hypotheses"][i]["ids"].get<std::vector<int>>())
                               << ", found " << golden::join(found[i].ids));
            CHECK(found[i].ids == c["hypotheses"][i]["ids"].get<std::vector<int>>());
        }
        if (++compared == 4) break;
    }
    CHECK(compared == 4);
}

namespace {

// A log-probability as the drawn cases print it ("-inf" included).
std::string show_row(const Vec& row) {
    std::string s = "[";
    for (size_t i = 0; i < row.size(); ++i) s += (i ? ", " : "") + feedback::num(row(i));
    return s + "]";
}

bool same_beams(const std::vector<Beam>& expected, const std::vector<Beam>& found) {
    if (ids_of(expected) != ids_of(found)) return false;
    for (size_t i = 0; i < expected.size(); ++i)
        if (!(found[i].sum_logprobs == expected[i].sum_logprobs ||
              std::fabs(found[i].sum_logprobs - expected[i].sum_logprobs) <= 1e-6))
            return false;
    return true;
}

// What the first difference between two beam steps says about the rule that was missed.
std::string step_diagnosis(const BeamStep& expected, const BeamStep& found, int num_beams, bool last_step) {
    if (last_step && !found.running.empty())
        return "at the last step every candidate ranked below num_beams finishes, and none goes on";
    if (found.finished.size() > expected.finished.size())
        return "a candidate finishes only when its rank is below num_beams (a lower-ranked EOS is dropped)";
    if (found.running.size() < expected.running.size())
        return "look at the best max(2, 1 + number of EOS ids) x num_beams candidates: an EOS never takes a running slot, "
               "so up to num_beams = " + std::to_string(num_beams) + " others still go on";
    if (found.running.size() > expected.running.size())
        return "at most num_beams go on, from the best max(2, 1 + number of EOS ids) x num_beams candidates only";
    auto sorted = [](Ids ids) {
        std::sort(ids.begin(), ids.end());
        return ids;
    };
    if (sorted(ids_of(found.running)) == sorted(ids_of(expected.running)) &&
        sorted(ids_of(found.finished)) == sorted(ids_of(expected.finished)) &&
        (ids_of(found.running) != ids_of(expected.running) || ids_of(found.finished) != ids_of(expected.finished)))
        return "both lists come out in rank order: score descending, ties by beam then token ascending";
    return "candidate (b, t) scores beams[b].sum_logprobs + logprobs[b](t) and its ids are beams[b].ids + t; rank all of "
           "them by score descending, ties by beam then token ascending (a stable sort)";
}

}  // namespace

TEST_CASE("ex05.1 on cases drawn when the test runs", "[ex05.1]") {
    // 300 steps: 1 to 4 beams (or one empty beam, the first step), vocabularies of 2 to 8, log-probs
    // and sums in steps of 1/4 (so candidates tie across beams and tokens) with some -inf, 0 to 3
    // EOS ids (one may lie outside the row), last_step one time in 5. The expected step is the
    // library's beam_step.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    struct Case {
        std::vector<Beam> beams = {};
        std::vector<Vec> rows = {};
        std::vector<int> eos_ids = {};
        int num_beams = 1;
        bool last_step = false;
    };
    std::vector<Case> cases;
    for (int i = 0; i < 300; ++i) {
        Case c;
        const int vocab = drawn::between(rng, 2, 8);
        c.num_beams = drawn::between(rng, 1, 4);
        c.last_step = drawn::between(rng, 0, 4) == 0;
        const int n_beams = drawn::between(rng, 0, 3) == 0 ? 1 : c.num_beams;
        for (int b = 0; b < n_beams; ++b) {
            Beam beam;
            if (n_beams > 1 || drawn::between(rng, 0, 1)) {
                for (int k = drawn::between(rng, 1, 3); k > 0; --k) beam.ids.push_back(drawn::between(rng, 0, vocab - 1));
                beam.sum_logprobs = 0.0 - 0.25 * drawn::between(rng, 0, 16);  // 0 - 0 is +0: no "-0" printed
            }
            c.beams.push_back(beam);
            Vec row = xt::zeros<float>({static_cast<size_t>(vocab)});
            for (float& x : row)
                x = drawn::between(rng, 0, 7) == 0 ? -std::numeric_limits<float>::infinity()
                                                   : 0.0f - 0.25f * static_cast<float>(drawn::between(rng, 0, 12));
            c.rows.push_back(row);
        }
        for (int k = drawn::between(rng, 0, 3); k > 0; --k) {
            const int id = drawn::between(rng, 0, vocab);  // vocab itself: an id outside the row
            if (std::find(c.eos_ids.begin(), c.eos_ids.end(), id) == c.eos_ids.end()) c.eos_ids.push_back(id);
        }
        cases.push_back(c);
    }
    const std::vector<BeamStep> found = sandbox::run<std::vector<BeamStep>>("your_beam_step", [&] {
        std::vector<BeamStep> out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Case& c : cases) out.push_back(your_beam_step(c.beams, c.rows, c.eos_ids, c.num_beams, c.last_step));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const BeamStep expected = beam_step(c.beams, c.rows, c.eos_ids, c.num_beams, c.last_step);
        std::string rows;
        for (const Vec& r : c.rows) rows += (rows.empty() ? "" : "; ") + show_row(r);
        FEEDBACK("a case drawn with seed " << seed << ": beams "
                                          << (c.beams.size() == 1 && c.beams[0].ids.empty() ? std::string("one empty beam (sum 0)")
                                                                                             : show(c.beams))
                                          << "\n  log-prob rows " << rows << "\n  EOS ids " << feedback::list(c.eos_ids)
                                          << ", num_beams " << c.num_beams << ", last_step " << (c.last_step ? "true" : "false"));
        FEEDBACK("expected: going on " << show(expected.running) << "; finished " << show(expected.finished)
                                       << " (the library's beam_step)");
        FEEDBACK("found:    going on " << show(found[i].running) << "; finished " << show(found[i].finished));
        const bool same = same_beams(expected.running, found[i].running) && same_beams(expected.finished, found[i].finished);
        FEEDBACK((same ? std::string() : "hint: " + step_diagnosis(expected, found[i], c.num_beams, c.last_step)));
        REQUIRE(same);
    }
}

namespace {

const char* name(BeamScoring s) { return s == BeamScoring::Vllm ? "vLLM" : "HF"; }

const char* name(EarlyStopping e) {
    return e == EarlyStopping::Done ? "Done (true)" : e == EarlyStopping::Never ? "Never" : "Heuristic (false)";
}

void check_score(double sum, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                 BeamScoring scoring, double expected, const std::string& why) {
    const double found = your_beam_score(sum, generated_len, ends_with_eos, prompt_len, length_penalty, scoring);
    FEEDBACK("input: sum_logprobs " + feedback::num(sum) + ", generated_len " + std::to_string(generated_len) +
                        ", ends_with_eos " + (ends_with_eos ? "true" : "false") + ", prompt_len " +
                        std::to_string(prompt_len) + ", length_penalty " + feedback::num(length_penalty) + ", " +
                        name(scoring) + " scoring");
    FEEDBACK(why);
    FEEDBACK("expected: " << feedback::num(expected));
    FEEDBACK("found:    " << feedback::num(found));
    CHECK(found == Approx(expected));
}

void check_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping,
                bool expected, const std::string& why) {
    const bool found = your_beam_search_done(num_beams, finished_count, worst_finished_score, best_running_sum,
                                             generated_len, max_new_tokens, length_penalty, early_stopping);
    FEEDBACK("input: num_beams " + std::to_string(num_beams) + ", finished_count " +
                        std::to_string(finished_count) + ", worst_finished_score " + feedback::num(worst_finished_score) +
                        ", best_running_sum " + feedback::num(best_running_sum) + ", generated_len " +
                        std::to_string(generated_len) + ", max_new_tokens " + std::to_string(max_new_tokens) +
                        ", length_penalty " + feedback::num(length_penalty) + ", early_stopping " + name(early_stopping));
    FEEDBACK(why);
    FEEDBACK("expected: " << (expected ? "done (true)" : "not done (false)"));
    FEEDBACK("found:    " << (found ? "done (true)" : "not done (false)"));
    CHECK(found == expected);
}

}  // namespace

TEST_CASE("ex05.2 the score divides by the generated length with its EOS (HF)", "[ex05.2]") {
    const BeamScoring hf = BeamScoring::HuggingFace;
    check_score(-6.0, 3, true, 4, 1.0f, hf, -2.0, "HF divides by the generated length, the EOS counted: -6 / 3^1");
    check_score(-6.0, 3, false, 4, 1.0f, hf, -2.0, "no EOS: the same length 3");
    check_score(-6.0, 3, true, 4, 0.0f, hf, -6.0, "length_penalty 0: -6 / 3^0");
    check_score(-6.0, 3, true, 4, 2.0f, hf, -6.0 / 9, "length_penalty 2: -6 / 3^2");
    check_score(-6.0, 3, true, 4, -1.0f, hf, -18.0, "length_penalty -1: -6 / 3^-1");
}

TEST_CASE("ex05.2 vLLM's score counts the prompt and not a final EOS", "[ex05.2]") {
    const BeamScoring vllm = BeamScoring::Vllm;
    check_score(-6.0, 3, true, 4, 1.0f, vllm, -1.0, "vLLM's length: 4 prompt + 3 generated - 1 final EOS = 6");
    check_score(-7.0, 3, false, 4, 1.0f, vllm, -1.0, "no final EOS: length 4 + 3 = 7");
    check_score(-6.0, 3, true, 4, 2.0f, vllm, -6.0 / 36, "length 6 and length_penalty 2: -6 / 6^2");
}

TEST_CASE("ex05.2 never done while fewer than num_beams are finished", "[ex05.2]") {
    for (EarlyStopping e : {EarlyStopping::Heuristic, EarlyStopping::Done, EarlyStopping::Never})
        check_done(3, 2, -0.1, -100.0, 5, 10, 1.0f, e, false, "2 finished of num_beams 3: never done, whatever the scores");
}

TEST_CASE("ex05.2 early_stopping true stops as soon as num_beams are finished", "[ex05.2]") {
    check_done(2, 2, -100.0, -0.1, 1, 10, 1.0f, EarlyStopping::Done, true,
               "Done: num_beams finished is enough, however good the running beams are");
}

TEST_CASE("ex05.2 the heuristic scores the best running beam at the current length", "[ex05.2]") {
    const EarlyStopping h = EarlyStopping::Heuristic;
    check_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, h, true, "best running -3 / 2^1 = -1.5 cannot beat the worst finished -1");
    check_done(2, 2, -2.0, -3.0, 2, 10, 1.0f, h, false, "best running -3 / 2^1 = -1.5 beats the worst finished -2");
    check_done(2, 2, -1.5, -3.0, 2, 10, 1.0f, h, true,
               "best running -3 / 2^1 = -1.5 equals the worst finished -1.5: not strictly better");
}

TEST_CASE("ex05.2 never bounds with max_new_tokens when length_penalty is positive", "[ex05.2]") {
    const EarlyStopping never = EarlyStopping::Never;
    check_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, never, false,
               "the bound -3 / 10^1 = -0.3 (at max_new_tokens) could still beat -1: go on (the heuristic, at "
               "length 2, would stop)");
    check_done(2, 2, -0.2, -3.0, 2, 10, 1.0f, never, true, "the bound -3 / 10^1 = -0.3 cannot beat -0.2");
    check_done(2, 2, -1.0, -3.0, 2, 10, 0.0f, never, true,
               "length_penalty 0: the bound is at the current length, -3 / 2^0 = -3, which cannot beat -1");
    check_done(2, 2, -5.0, -3.0, 2, 10, -1.0f, never, true,
               "length_penalty -1: the bound is at the current length, -3 / 2^-1 = -6, which cannot beat -5");
    check_done(2, 2, -7.0, -3.0, 2, 10, -1.0f, never, false,
               "length_penalty -1: the bound -3 / 2^-1 = -6 beats -7");
}

TEST_CASE("ex05.2 on cases drawn when the test runs", "[ex05.2]") {
    // 150 scores (sums in steps of 1/4 down to -20, 1 to 12 generated tokens, prompts of 0 to 10,
    // length penalties -1 to 2 in steps of 1/2, both scorings) and 150 stopping tests (1 to 4
    // beams, 0 to num_beams finished, the three rules; the worst finished score is the bound at the
    // current length or at max_new_tokens, or 1/4 either side of it, exact ties where the bound is
    // exact). The expected answers are the library's beam_score and beam_search_done.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    const float penalties[] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f, 2.0f};
    auto penalty = [&] { return penalties[drawn::between(rng, 0, 6)]; };
    struct Score {
        double sum = 0;
        int generated_len = 1;
        bool ends_with_eos = false;
        int prompt_len = 0;
        float length_penalty = 1;
        BeamScoring scoring = BeamScoring::HuggingFace;
    };
    struct Done {
        int num_beams = 1, finished_count = 0;
        double worst_finished_score = 0, best_running_sum = 0;
        int generated_len = 1, max_new_tokens = 1;
        float length_penalty = 1;
        EarlyStopping early_stopping = EarlyStopping::Heuristic;
    };
    std::vector<Score> scores;
    std::vector<Done> dones;
    for (int i = 0; i < 150; ++i) {
        Score s;
        s.sum = 0.0 - 0.25 * drawn::between(rng, 0, 80);
        s.generated_len = drawn::between(rng, 1, 12);
        s.ends_with_eos = drawn::between(rng, 0, 1) == 1;
        s.prompt_len = drawn::between(rng, 0, 10);
        if (s.prompt_len + s.generated_len - (s.ends_with_eos ? 1 : 0) < 1) s.prompt_len = 1;  // vLLM's length is at least 1
        s.length_penalty = penalty();
        s.scoring = drawn::between(rng, 0, 1) ? BeamScoring::Vllm : BeamScoring::HuggingFace;
        scores.push_back(s);
    }
    for (int i = 0; i < 150; ++i) {
        Done d;
        d.num_beams = drawn::between(rng, 1, 4);
        d.finished_count = drawn::between(rng, 0, 3) ? d.num_beams : drawn::between(rng, 0, d.num_beams - 1);
        d.generated_len = drawn::between(rng, 1, 10);
        d.max_new_tokens = drawn::between(rng, d.generated_len, 12);
        d.length_penalty = penalty();
        d.early_stopping = static_cast<EarlyStopping>(drawn::between(rng, 0, 2));
        const int rule_len =
            d.early_stopping == EarlyStopping::Never && d.length_penalty > 0 ? d.max_new_tokens : d.generated_len;
        const int len = drawn::between(rng, 0, 3) ? rule_len : d.generated_len + d.max_new_tokens - rule_len;
        const double q = 0.0 - 0.25 * drawn::between(rng, 0, 40);
        if (d.length_penalty == 0.0f || d.length_penalty == 1.0f || d.length_penalty == 2.0f) {
            // sum = q * len^penalty exactly, so the bound at len is exactly q: ties are exact
            d.best_running_sum = q * std::pow(static_cast<double>(len), static_cast<double>(d.length_penalty));
            d.worst_finished_score = q + 0.25 * drawn::between(rng, -1, 1);
        } else {
            // no exact tie: 1/4 either side of the bound at len
            d.best_running_sum = q;
            d.worst_finished_score = q / std::pow(static_cast<double>(len), static_cast<double>(d.length_penalty)) +
                                     (drawn::between(rng, 0, 1) ? 0.25 : -0.25);
        }
        dones.push_back(d);
    }
    using Found = std::tuple<std::vector<double>, std::vector<bool>>;
    const Found found = sandbox::run<Found>("your_beam_score", [&] {
        Found out;  // every call in one sandboxed child (sandbox.hpp)
        for (const Score& s : scores)
            std::get<0>(out).push_back(
                your_beam_score(s.sum, s.generated_len, s.ends_with_eos, s.prompt_len, s.length_penalty, s.scoring));
        for (const Done& d : dones)
            std::get<1>(out).push_back(your_beam_search_done(d.num_beams, d.finished_count, d.worst_finished_score,
                                                             d.best_running_sum, d.generated_len, d.max_new_tokens,
                                                             d.length_penalty, d.early_stopping));
        return out;
    });
    const std::vector<double>& found_scores = std::get<0>(found);
    const std::vector<bool>& found_dones = std::get<1>(found);
    REQUIRE(found_scores.size() == scores.size());
    REQUIRE(found_dones.size() == dones.size());
    for (size_t i = 0; i < scores.size(); ++i) {
        const Score& s = scores[i];
        const double expected = beam_score(s.sum, s.generated_len, s.ends_with_eos, s.prompt_len, s.length_penalty, s.scoring);
        const int length =
            s.scoring == BeamScoring::HuggingFace ? s.generated_len : s.prompt_len + s.generated_len - (s.ends_with_eos ? 1 : 0);
        FEEDBACK("a score drawn with seed " << seed << ": your_beam_score(sum_logprobs " << feedback::num(s.sum)
                                           << ", generated_len " << s.generated_len << ", ends_with_eos "
                                           << (s.ends_with_eos ? "true" : "false") << ", prompt_len " << s.prompt_len
                                           << ", length_penalty " << feedback::num(s.length_penalty) << ", " << name(s.scoring)
                                           << " scoring)");
        FEEDBACK("expected: " << feedback::num(expected) << " (the library's beam_score)\nfound:    "
                              << feedback::num(found_scores[i]));
        const bool same = found_scores[i] == Approx(expected);
        FEEDBACK((same ? std::string()
                       : "hint: " + std::string(name(s.scoring)) + "'s length here is " + std::to_string(length) +
                             (s.scoring == BeamScoring::HuggingFace ? " (the generated tokens, a final EOS included)"
                                                                    : " (prompt + generated, a final EOS left out)") +
                             ": the score is sum_logprobs / length ^ length_penalty"));
        REQUIRE(same);
    }
    for (size_t i = 0; i < dones.size(); ++i) {
        const Done& d = dones[i];
        const bool expected = beam_search_done(d.num_beams, d.finished_count, d.worst_finished_score, d.best_running_sum,
                                               d.generated_len, d.max_new_tokens, d.length_penalty, d.early_stopping);
        const int rule_len =
            d.early_stopping == EarlyStopping::Never && d.length_penalty > 0 ? d.max_new_tokens : d.generated_len;
        FEEDBACK("a stopping test drawn with seed "
                 << seed << ": your_beam_search_done(num_beams " << d.num_beams << ", finished_count " << d.finished_count
                 << ", worst_finished_score " << feedback::num(d.worst_finished_score, 17) << ", best_running_sum "
                 << feedback::num(d.best_running_sum, 17) << ", generated_len " << d.generated_len << ", max_new_tokens "
                 << d.max_new_tokens << ", length_penalty " << feedback::num(d.length_penalty) << ", early_stopping "
                 << name(d.early_stopping) << ")");
        FEEDBACK("expected: " << (expected ? "done (true)" : "not done (false)") << " (the library's beam_search_done)\nfound:    "
                              << (found_dones[i] ? "done (true)" : "not done (false)"));
        const std::string hint =
            d.finished_count < d.num_beams ? "never done while fewer than num_beams are finished"
            : d.early_stopping == EarlyStopping::Done
                ? "early_stopping true (Done): done as soon as num_beams are finished"
                : "the bound is best_running_sum / " + std::to_string(rule_len) + " ^ length_penalty (" +
                      (rule_len == d.generated_len && d.early_stopping == EarlyStopping::Heuristic
                           ? std::string("the heuristic: the current length")
                           : d.length_penalty > 0 ? std::string("never, with a positive length_penalty: max_new_tokens")
                                                  : std::string("never, with length_penalty <= 0: the current length")) +
                      "); done unless it is strictly greater than the worst finished score";
        FEEDBACK((found_dones[i] == expected ? std::string() : "hint: " + hint));
        REQUIRE(found_dones[i] == expected);
    }
}
