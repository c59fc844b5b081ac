// Graded tests for chapter 05's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <cmath>

#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/exercises.hpp"
#include "golden.hpp"
#include "replay.hpp"

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

}  // namespace

TEST_CASE("ex05.1 one beam: the EOS ranked below num_beams is dropped", "[ex05.1]") {
    const BeamStep s = your_beam_step({Beam{}}, {log_row({0.5, 0.3, 0.2})}, {2}, 2, false);
    CHECK(ids_of(s.running) == Ids{{0}, {1}});
    CHECK(s.finished.empty());
    REQUIRE(s.running.size() == 2);
    CHECK(s.running[0].sum_logprobs == Approx(std::log(0.5)).margin(1e-6));
    CHECK(s.running[1].sum_logprobs == Approx(std::log(0.3)).margin(1e-6));
}

TEST_CASE("ex05.1 an EOS of rank below num_beams finishes and the next ones go on", "[ex05.1]") {
    const BeamStep s = your_beam_step({Beam{}}, {log_row({0.2, 0.5, 0.3})}, {1}, 2, false);
    CHECK(ids_of(s.finished) == Ids{{1}});
    CHECK(ids_of(s.running) == Ids{{2}, {0}});
}

TEST_CASE("ex05.1 two beams: sums add up and ties go to the lower beam then token", "[ex05.1]") {
    const std::vector<Beam> beams{{{7}, std::log(0.5)}, {{8}, std::log(0.5)}};
    // the same row for both beams: candidates tie across beams; beam 0 ranks first
    const Vec r = log_row({0.25, 0.25, 0.5});
    const BeamStep s = your_beam_step(beams, {r, r}, {}, 2, false);
    CHECK(ids_of(s.running) == Ids{{7, 2}, {8, 2}});
    const BeamStep t = your_beam_step(beams, {r, log_row({0.7, 0.2, 0.1})}, {}, 3, false);
    CHECK(ids_of(t.running) == Ids{{8, 0}, {7, 2}, {7, 0}});
    REQUIRE(t.running.size() == 3);
    CHECK(t.running[0].sum_logprobs == Approx(std::log(0.35)).margin(1e-6));
}

TEST_CASE("ex05.1 EOS cannot starve the beams: 2 x num_beams candidates are looked at", "[ex05.1]") {
    // both beams' best token is EOS (3): two finish, and two others still go on
    const std::vector<Beam> beams{{{1}, -0.1}, {{2}, -0.2}};
    const BeamStep s = your_beam_step(beams, {log_row({0.1, 0.1, 0.1, 0.7}), log_row({0.2, 0.05, 0.05, 0.7})}, {3}, 2, false);
    CHECK(ids_of(s.finished) == Ids{{1, 3}, {2, 3}});
    CHECK(ids_of(s.running) == Ids{{2, 0}, {1, 0}});
}

TEST_CASE("ex05.1 with two EOS ids 3 x num_beams candidates are looked at", "[ex05.1]") {
    // one beam, num_beams 1: EOS ids 2 and 3 hold ranks 0 and 1; rank 2 (token 0) must still go on
    const BeamStep s = your_beam_step({Beam{}}, {log_row({0.2, 0.1, 0.4, 0.3})}, {2, 3}, 1, false);
    CHECK(ids_of(s.finished) == Ids{{2}});
    CHECK(ids_of(s.running) == Ids{{0}});
}

TEST_CASE("ex05.1 at the last step the top num_beams candidates finish" , "[ex05.1]") {
    const BeamStep s = your_beam_step({Beam{{4}, -1.0}}, {log_row({0.5, 0.3, 0.2})}, {2}, 2, true);
    CHECK(ids_of(s.finished) == Ids{{4, 0}, {4, 1}});
    CHECK(s.running.empty());
    REQUIRE(s.finished.size() == 2);
    CHECK(s.finished[0].sum_logprobs == Approx(-1.0 + std::log(0.5)).margin(1e-6));
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
        INFO("case " << c["name"].get<std::string>() << " (tests/data/beams.json)");
        REQUIRE(found.size() == c["hypotheses"].size());
        for (size_t i = 0; i < found.size(); ++i) {
            INFO("hypothesis " << i + 1 << ": expected " << golden::join(c["hypotheses"][i]["ids"].get<std::vector<int>>())
                               << ", found " << golden::join(found[i].ids));
            CHECK(found[i].ids == c["hypotheses"][i]["ids"].get<std::vector<int>>());
        }
        if (++compared == 4) break;
    }
    CHECK(compared == 4);
}

TEST_CASE("ex05.2 the score divides by the generated length with its EOS (HF)", "[ex05.2]") {
    CHECK(your_beam_score(-6.0, 3, true, 4, 1.0f, BeamScoring::HuggingFace) == Approx(-2.0));
    CHECK(your_beam_score(-6.0, 3, false, 4, 1.0f, BeamScoring::HuggingFace) == Approx(-2.0));
    CHECK(your_beam_score(-6.0, 3, true, 4, 0.0f, BeamScoring::HuggingFace) == Approx(-6.0));
    CHECK(your_beam_score(-6.0, 3, true, 4, 2.0f, BeamScoring::HuggingFace) == Approx(-6.0 / 9));
    CHECK(your_beam_score(-6.0, 3, true, 4, -1.0f, BeamScoring::HuggingFace) == Approx(-18.0));
}

TEST_CASE("ex05.2 vLLM's score counts the prompt and not a final EOS", "[ex05.2]") {
    CHECK(your_beam_score(-6.0, 3, true, 4, 1.0f, BeamScoring::Vllm) == Approx(-1.0));
    CHECK(your_beam_score(-7.0, 3, false, 4, 1.0f, BeamScoring::Vllm) == Approx(-1.0));
    CHECK(your_beam_score(-6.0, 3, true, 4, 2.0f, BeamScoring::Vllm) == Approx(-6.0 / 36));
}

TEST_CASE("ex05.2 never done while fewer than num_beams are finished", "[ex05.2]") {
    for (EarlyStopping e : {EarlyStopping::Heuristic, EarlyStopping::Done, EarlyStopping::Never})
        CHECK_FALSE(your_beam_search_done(3, 2, -0.1, -100.0, 5, 10, 1.0f, e));
}

TEST_CASE("ex05.2 early_stopping true stops as soon as num_beams are finished", "[ex05.2]") {
    CHECK(your_beam_search_done(2, 2, -100.0, -0.1, 1, 10, 1.0f, EarlyStopping::Done));
}

TEST_CASE("ex05.2 the heuristic scores the best running beam at the current length", "[ex05.2]") {
    // best running -3 after 2 tokens: -1.5 at length_penalty 1
    CHECK(your_beam_search_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic));
    CHECK_FALSE(your_beam_search_done(2, 2, -2.0, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic));
    CHECK(your_beam_search_done(2, 2, -1.5, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic));  // not strictly better
}

TEST_CASE("ex05.2 never bounds with max_new_tokens when length_penalty is positive", "[ex05.2]") {
    // -3 / 10 = -0.3 could still beat -1: go on (the heuristic, at length 2, would stop)
    CHECK_FALSE(your_beam_search_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, EarlyStopping::Never));
    CHECK(your_beam_search_done(2, 2, -0.2, -3.0, 2, 10, 1.0f, EarlyStopping::Never));
    // length_penalty <= 0: the current length is the bound
    CHECK(your_beam_search_done(2, 2, -1.0, -3.0, 2, 10, 0.0f, EarlyStopping::Never));
    CHECK(your_beam_search_done(2, 2, -5.0, -3.0, 2, 10, -1.0f, EarlyStopping::Never));
    CHECK_FALSE(your_beam_search_done(2, 2, -7.0, -3.0, 2, 10, -1.0f, EarlyStopping::Never));
}
