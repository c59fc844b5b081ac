// Graded tests for chapter 03's exercises (see exercises/manifest.json).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <xtensor/xview.hpp>

#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "replay.hpp"

using namespace decodebook;
using Vec = xt::xtensor<float, 1>;

namespace {

void check_ids(const std::vector<int>& found, const std::vector<int>& expected, const std::string& what) {
    FEEDBACK("input: " << what);
    FEEDBACK("expected kept ids: " << golden::join(expected));
    FEEDBACK("found kept ids:    " << golden::join(found));
    CHECK(found == expected);
}

// Call a keep-mask exercise and check its contract on the way: one flag per token. A shorter or
// padded mask is wrong whatever ids it keeps.
template <class F>
std::vector<bool> sized(F your_keep, const Vec& probs, double value, int min_keep) {
    const std::vector<bool> keep = your_keep(probs, value, min_keep);
    FEEDBACK("your mask has " << keep.size() << " flags for " << probs.size() << " tokens (one per token expected)");
    CHECK(keep.size() == probs.size());
    return keep;
}

// The reference's single-step cases where only `active` truncates (after an optional temperature).
std::vector<nlohmann::json> single_filter_cases(const std::string& active) {
    std::vector<nlohmann::json> out;
    const nlohmann::json file = golden::load("processors.json");  // must outlive the loop
    for (const auto& c : file["cases"]) {
        const GenerationConfig p = replay::config(c);
        const bool penalties = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
                               p.frequency_penalty != 0.0f || p.no_repeat_ngram_size > 0;
        const bool k = p.top_k > 0, tp = p.top_p < 1.0f, mp = p.min_p > 0.0f;
        const bool only = (active == "top_k" && k && !tp && !mp) || (active == "top_p" && !k && tp && !mp) ||
                          (active == "min_p" && !k && !tp && mp);
        if (only && !penalties && p.temperature > 0) out.push_back(c);
    }
    return out;
}

// The model's logits for a processors.json case (prompt + generated), after its temperature.
Vec case_logits(const nlohmann::json& c) {
    std::vector<int> context = c["prompt_ids"].get<std::vector<int>>();
    for (int id : c["generated"]) context.push_back(id);
    const xt::xtensor<float, 2> all = replay::model().forward(context);
    Vec z = xt::view(all, context.size() - 1, xt::all());
    const float t = c["params"]["temperature"].get<float>();
    if (t != 1.0f) apply_temperature(z, t);
    return z;
}

}  // namespace

TEST_CASE("ex03.1 apply_top_k keeps the k largest and their ties", "[ex03.1]") {
    Vec a{1.0f, 3.0f, 3.0f, 2.0f};
    your_apply_top_k(a, 2, 1);
    check_ids(golden::finite_ids(a), {1, 2}, "[1, 3, 3, 2], k = 2");
    Vec b{5.0f, 4.0f, 4.0f, 4.0f, 1.0f};
    your_apply_top_k(b, 2, 1);
    check_ids(golden::finite_ids(b), {0, 1, 2, 3}, "[5, 4, 4, 4, 1], k = 2: the three 4s tie with the 2nd value");
    Vec c{1.0f, 2.0f, 3.0f, 4.0f};
    your_apply_top_k(c, 1, 3);
    check_ids(golden::finite_ids(c), {1, 2, 3}, "[1, 2, 3, 4], k = 1, min_keep = 3");
    Vec d{1.0f, 2.0f};
    your_apply_top_k(d, 0, 1);
    check_ids(golden::finite_ids(d), {0, 1}, "[1, 2], k = 0: disables top-k");
    Vec e{2.0f, 1.0f};
    your_apply_top_k(e, 10, 1);
    check_ids(golden::finite_ids(e), {0, 1}, "[2, 1], k = 10: k larger than the vocabulary keeps everything");
}

TEST_CASE("ex03.1 apply_top_k matches the reference on the model", "[ex03.1]") {
    const auto cases = single_filter_cases("top_k");
    REQUIRE_FALSE(cases.empty());
    for (const auto& c : cases) {
        Vec z = case_logits(c);
        your_apply_top_k(z, c["params"]["top_k"].get<int>(), c["params"]["min_tokens_to_keep"].get<int>());
        check_ids(golden::finite_ids(z), c["candidates"].get<std::vector<int>>(), "case " + c["name"].dump() + " " + c["chain"].dump());
    }
}

TEST_CASE("ex03.2 top_p_keep keeps the crossing token", "[ex03.2]") {
    const Vec p{0.5f, 0.3f, 0.1f, 0.1f};
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 0.81, 1)), {0, 1, 2}, "probs [0.5, 0.3, 0.1, 0.1], p = 0.81");
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 0.79, 1)), {0, 1}, "probs [0.5, 0.3, 0.1, 0.1], p = 0.79: id 1 crosses it");
    check_ids(golden::kept_ids(sized(your_top_p_keep, Vec{0.1f, 0.3f, 0.5f, 0.1f}, 0.8, 1)), {1, 2},
              "probs [0.1, 0.3, 0.5, 0.1], p = 0.8: walk by probability, not by id");
}

TEST_CASE("ex03.2 top_p_keep drops the next token at an exact sum", "[ex03.2]") {
    const Vec p{0.5f, 0.3f, 0.1f, 0.1f};
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 0.8, 1)), {0, 1}, "probs [0.5, 0.3, 0.1, 0.1], p = 0.8: 0.1f + 0.1f = 0.2f <= float32(1 - 0.8) (HF keeps 2)");
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 0.5, 1)), {0}, "probs [0.5, 0.3, 0.1, 0.1], p = 0.5 and 0.5 = 0.5 exactly");
}

TEST_CASE("ex03.2 top_p_keep decides the boundary as Hugging Face does", "[ex03.2]") {
    // HF's own test (test_top_p_dist_warper): softmax(log([0.3, 0.1, 0.1, 0.5])) in float32 is
    // [0.29999998, 0.099999994, 0.099999994, 0.5]; TopPLogitsWarper(0.8) keeps ids 0 and 3. A
    // top-down walk sees 0.5 + 0.29999998 < 0.8 and keeps a third token.
    const Vec hf{0.29999998f, 0.099999994f, 0.099999994f, 0.5f};
    check_ids(golden::kept_ids(sized(your_top_p_keep, hf, 0.8, 1)), {0, 3},
              "HF's test case: probs [0.29999998, 0.099999994, 0.099999994, 0.5], p = 0.8 (HF keeps 2)");
    // every case of the reference's boundary file, by HF's rule
    const nlohmann::json file = golden::load("top_p_rules.json");
    for (const auto& c : file["cases"]) {
        std::vector<float> values;
        for (const auto& v : c["probs"]) values.push_back(v.get<float>());
        Vec probs = Vec::from_shape({values.size()});
        std::copy(values.begin(), values.end(), probs.begin());
        std::vector<int> want = c["kept"]["hf"].get<std::vector<int>>();
        std::sort(want.begin(), want.end());
        check_ids(golden::kept_ids(sized(your_top_p_keep, probs, c["top_p"].get<double>(), c["min_tokens_to_keep"].get<int>())),
                  want, "top_p_rules.json case " + c["name"].get<std::string>() + ", probs " + c["probs"].dump() +
                            ", p = " + c["top_p"].dump() + ", min_keep = " + c["min_tokens_to_keep"].dump());
    }
}

TEST_CASE("ex03.2 top_p_keep edge values", "[ex03.2]") {
    const Vec p{0.5f, 0.3f, 0.1f, 0.1f, 0.0f};
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 0.0, 1)), {0}, "probs [0.5, 0.3, 0.1, 0.1, 0], p = 0 keeps exactly one token");
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 1.0, 1)), {0, 1, 2, 3}, "probs [0.5, 0.3, 0.1, 0.1, 0], p = 1 keeps every token with p > 0");
    check_ids(golden::kept_ids(sized(your_top_p_keep, p, 0.5, 3)), {0, 1, 2}, "probs [0.5, 0.3, 0.1, 0.1, 0], p = 0.5 with min_keep = 3");
}

TEST_CASE("ex03.2 top_p_keep matches the reference on the model", "[ex03.2]") {
    const auto cases = single_filter_cases("top_p");
    REQUIRE_FALSE(cases.empty());
    for (const auto& c : cases) {
        const Vec probs = decodebook::softmax(case_logits(c));
        const auto keep = sized(your_top_p_keep, probs, c["params"]["top_p"].get<double>(), c["params"]["min_tokens_to_keep"].get<int>());
        check_ids(golden::kept_ids(keep), c["candidates"].get<std::vector<int>>(), "case " + c["name"].dump() + " " + c["chain"].dump());
    }
}

TEST_CASE("ex03.3 min_p_keep scales with the top probability", "[ex03.3]") {
    const Vec p{0.5f, 0.3f, 0.1f, 0.1f, 0.0f};
    check_ids(golden::kept_ids(sized(your_min_p_keep, p, 0.25, 1)), {0, 1}, "probs [0.5, 0.3, 0.1, 0.1, 0], min_p 0.25: threshold 0.125");
    check_ids(golden::kept_ids(sized(your_min_p_keep, p, 0.7, 1)), {0}, "probs [0.5, 0.3, 0.1, 0.1, 0], min_p 0.7: threshold 0.35");
    check_ids(golden::kept_ids(sized(your_min_p_keep, p, 0.2, 1)), {0, 1, 2, 3}, "probs [0.5, 0.3, 0.1, 0.1, 0], min_p 0.2: threshold 0.1, ties at it kept");
    check_ids(golden::kept_ids(sized(your_min_p_keep, p, 1.0, 2)), {0, 1}, "probs [0.5, 0.3, 0.1, 0.1, 0], min_p 1 with min_keep = 2");
}

TEST_CASE("ex03.3 min_p_keep matches the reference on the model", "[ex03.3]") {
    const auto cases = single_filter_cases("min_p");
    REQUIRE_FALSE(cases.empty());
    for (const auto& c : cases) {
        const Vec probs = decodebook::softmax(case_logits(c));
        const auto keep = sized(your_min_p_keep, probs, c["params"]["min_p"].get<double>(), c["params"]["min_tokens_to_keep"].get<int>());
        check_ids(golden::kept_ids(keep), c["candidates"].get<std::vector<int>>(), "case " + c["name"].dump() + " " + c["chain"].dump());
    }
}
