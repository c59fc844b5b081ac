// Graded tests for chapter 03's exercises (see exercises/manifest.json).
// Each exercise also meets cases drawn when the test runs, from a seed taken from the system (so
// no stub can know them in advance): their answers come from the library in this test program,
// which never runs the student's code (sandbox.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/base/rng.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "drawn.hpp"
#include "feedback.hpp"
#include "golden.hpp"
#include "replay.hpp"
#include "sandbox.hpp"

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

namespace {

// Why top-k keeps what it keeps: the number kept and the value every survivor reaches.
std::string top_k_diagnosis(const Vec& z, int k, int min_keep) {
    if (k <= 0) return "k = " + std::to_string(k) + " changes nothing";
    const size_t keep = std::min(static_cast<size_t>(std::max(k, min_keep)), z.size());
    std::vector<float> values(z.begin(), z.end());
    std::sort(values.begin(), values.end(), std::greater<>());
    return "keep = min(max(k, min_keep), V) = min(max(" + std::to_string(k) + ", " + std::to_string(min_keep) + "), " +
           std::to_string(z.size()) + ") = " + std::to_string(keep) + "; the " + std::to_string(keep) +
           "th largest logit is " + feedback::num(values[keep - 1]) +
           ": every logit >= it stays (ties with it too), every smaller one becomes -inf";
}

// The ids and their flags as a message shows them.
std::string show_kept(const std::vector<bool>& keep) {
    return "ids [" + golden::join(golden::kept_ids(keep)) + "] (a mask of " + std::to_string(keep.size()) + " flags)";
}

}  // namespace

TEST_CASE("ex03.1 on cases drawn when the test runs", "[ex03.1]") {
    // 300 vectors of 1 to 10 logits, small integers in [-3, 3] (so the k-th value is often tied)
    // with about one in eight -inf (never all), k from 0 (off) to V + 2 (more than V), min_keep 1
    // to 3: the expected survivors (the finite logits) are the library's apply_top_k's.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, int, int>> cases;
    for (int i = 0; i < 300; ++i) {
        Vec z = Vec::from_shape({static_cast<size_t>(drawn::between(rng, 1, 10))});
        for (float& x : z) x = drawn::between(rng, 0, 7) == 0 ? -INFINITY : static_cast<float>(drawn::between(rng, -3, 3));
        const size_t some = static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(z.size()) - 1));
        z(some) = static_cast<float>(drawn::between(rng, -3, 3));  // never all -inf
        cases.emplace_back(z, drawn::between(rng, 0, static_cast<int>(z.size()) + 2), drawn::between(rng, 1, 3));
    }
    const std::vector<Vec> found = sandbox::run<std::vector<Vec>>("your_apply_top_k", [&] {
        std::vector<Vec> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) {
            Vec z = std::get<0>(c);
            your_apply_top_k(z, std::get<1>(c), std::get<2>(c));
            out.push_back(z);
        }
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& z = std::get<0>(cases[i]);
        const int k = std::get<1>(cases[i]), min_keep = std::get<2>(cases[i]);
        Vec after = z;
        apply_top_k(after, k, min_keep);
        const std::vector<int> expected = golden::finite_ids(after), kept = golden::finite_ids(found[i]);
        FEEDBACK("a case drawn with seed " << seed << ": logits " << feedback::list(z, 10) << ", k = " << k
                                          << ", min_keep = " << min_keep);
        FEEDBACK("expected kept ids: " << golden::join(expected) << " (the library's apply_top_k)\nfound kept ids:    "
                                       << golden::join(kept) << " (logits " << feedback::list(found[i], 10) << ")");
        FEEDBACK((kept == expected ? std::string() : "hint: " + top_k_diagnosis(z, k, min_keep)));
        REQUIRE(kept == expected);
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

namespace {

// Probabilities as the drawn cases use them: 1 to 10 tokens, normalised by one of three recipes
// (integer weights over their sum, tenths that add up to 1, the float32 softmax of small
// integers), zeros and ties included, at least one positive.
Vec draw_probs(Rng& rng) {
    Vec p = Vec::from_shape({static_cast<size_t>(drawn::between(rng, 1, 10))});
    const int kind = drawn::between(rng, 0, 2);
    if (kind == 0) {
        int total = 0;
        for (float& x : p) total += static_cast<int>(x = static_cast<float>(drawn::between(rng, 0, 4)));
        if (total == 0) total = static_cast<int>(p(0) = 1);
        for (float& x : p) x /= static_cast<float>(total);
    } else if (kind == 1) {
        std::vector<int> tenths(p.size(), 0);
        for (int unit = 0; unit < 10; ++unit) ++tenths[static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(p.size()) - 1))];
        for (size_t i = 0; i < p.size(); ++i) p(i) = static_cast<float>(tenths[i]) / 10;
    } else {
        for (float& x : p) x = drawn::between(rng, 0, 5) == 0 ? -INFINITY : static_cast<float>(drawn::between(rng, -3, 3));
        p(0) = 0;
        p = decodebook::softmax(p);
    }
    return p;
}

// The mass before each candidate, in candidate order (a p or min_p there sits on a boundary).
double mass_before(const Vec& p, int rank) {
    const std::vector<int> order = candidate_order(p);
    double before = 0;
    for (int r = 0; r < rank && r < static_cast<int>(order.size()); ++r)
        before += p(static_cast<size_t>(order[static_cast<size_t>(r)]));
    return before;
}

// HF's arithmetic for this case: the candidates, their masses from the least likely up, the limit.
std::string top_p_diagnosis(const Vec& probs, double p, int min_keep) {
    const std::vector<int> order = candidate_order(probs);
    std::vector<std::string> masses(order.size());
    double sum = 0;
    for (size_t r = order.size(); r-- > 0;) {
        sum += probs(static_cast<size_t>(order[r]));
        masses[r] = feedback::num(static_cast<float>(sum), 9);
    }
    std::string m;
    for (const std::string& x : masses) m += (m.empty() ? "" : ", ") + x;
    return "the candidates (probability desc, id asc) are [" + golden::join(order) +
           "]; the mass of each with every less likely one, summed from the least likely up and stored in float32, is [" + m +
           "]; a candidate goes when that mass <= float32(1 - p) = " + feedback::num(static_cast<float>(1.0 - p), 9) +
           ", except the first max(1, min_keep) = " + std::to_string(std::max(1, min_keep)) +
           ", which always stay; probability 0 never stays";
}

}  // namespace

TEST_CASE("ex03.2 on cases drawn when the test runs", "[ex03.2]") {
    // 300 distributions of 1 to 10 tokens (weights over their sum, tenths adding up to 1, or the
    // float32 softmax of small integers with -inf among them: ties, zeros), p a tenth, exactly the
    // mass before a candidate (a boundary), any value in [0, 1), 0 or 1, min_keep 0 to 3: the
    // expected mask is the library's top_p_keep (Hugging Face's rule).
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, double, int>> cases;
    for (int i = 0; i < 300; ++i) {
        const Vec probs = draw_probs(rng);
        double p = drawn::uniform(rng, 0, 1);
        switch (drawn::between(rng, 0, 4)) {
        case 0: p = drawn::between(rng, 0, 10) / 10.0; break;
        case 1:
        case 2: p = mass_before(probs, drawn::between(rng, 1, static_cast<int>(probs.size()))); break;
        case 3: p = drawn::between(rng, 0, 1); break;
        default: break;
        }
        cases.emplace_back(probs, std::min(1.0, p), drawn::between(rng, 0, 3));
    }
    const std::vector<std::vector<bool>> found = sandbox::run<std::vector<std::vector<bool>>>("your_top_p_keep", [&] {
        std::vector<std::vector<bool>> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) out.push_back(your_top_p_keep(std::get<0>(c), std::get<1>(c), std::get<2>(c)));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& probs = std::get<0>(cases[i]);
        const double p = std::get<1>(cases[i]);
        const int min_keep = std::get<2>(cases[i]);
        const std::vector<bool> expected = top_p_keep(probs, p, min_keep);
        FEEDBACK("a case drawn with seed " << seed << ": probs " << feedback::list(probs, 10, 9) << ", p = " << feedback::num(p, 17)
                                          << ", min_keep = " << min_keep);
        FEEDBACK("expected kept: " << show_kept(expected) << " (the library's top_p_keep)\nfound kept:    " << show_kept(found[i]));
        FEEDBACK((found[i] == expected ? std::string() : "hint: " + top_p_diagnosis(probs, p, min_keep)));
        REQUIRE(found[i] == expected);
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

namespace {

// Min-p's arithmetic for this case: the top probability, the threshold, the forced ones.
std::string min_p_diagnosis(const Vec& probs, double min_p, int min_keep) {
    const std::vector<int> order = candidate_order(probs);
    if (order.empty()) return "no token has probability > 0: none is kept";
    const float top = probs(static_cast<size_t>(order.front()));
    return "the largest probability is " + feedback::num(top, 9) + " (id " + std::to_string(order.front()) +
           "), so the threshold is min_p x p_max = " + feedback::num(min_p * top, 17) +
           ": a token with p >= it stays (ties at it too), and so do the first " + std::to_string(std::max(0, min_keep)) +
           " of candidate_order [" + golden::join(order) + "]; probability 0 never stays";
}

}  // namespace

TEST_CASE("ex03.3 on cases drawn when the test runs", "[ex03.3]") {
    // 300 vectors of 1 to 10 probabilities (multiples of 1/8 up to 1/2, not normalised, or the
    // drawn distributions of ex03.2: ties and zeros), min_p a multiple of 1/8 (often exactly on a
    // probability's threshold), any value in [0, 1), 0 or 1, min_keep 0 to 3: the expected mask
    // is the library's min_p_keep.
    const uint64_t seed = drawn::seed();
    Rng rng(seed);
    std::vector<std::tuple<Vec, double, int>> cases;
    for (int i = 0; i < 300; ++i) {
        Vec probs = draw_probs(rng);
        if (drawn::between(rng, 0, 1)) {
            for (float& x : probs) x = static_cast<float>(drawn::between(rng, 0, 4)) / 8;
            probs(static_cast<size_t>(drawn::between(rng, 0, static_cast<int>(probs.size()) - 1))) = 0.5f;
        }
        double min_p = drawn::uniform(rng, 0, 1);
        switch (drawn::between(rng, 0, 3)) {
        case 0:
        case 1: min_p = drawn::between(rng, 0, 8) / 8.0; break;
        case 2: min_p = drawn::between(rng, 0, 1); break;
        default: break;
        }
        cases.emplace_back(probs, min_p, drawn::between(rng, 0, 3));
    }
    const std::vector<std::vector<bool>> found = sandbox::run<std::vector<std::vector<bool>>>("your_min_p_keep", [&] {
        std::vector<std::vector<bool>> out;  // every call in one sandboxed child (sandbox.hpp), not one child each
        for (const auto& c : cases) out.push_back(your_min_p_keep(std::get<0>(c), std::get<1>(c), std::get<2>(c)));
        return out;
    });
    REQUIRE(found.size() == cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const Vec& probs = std::get<0>(cases[i]);
        const double min_p = std::get<1>(cases[i]);
        const int min_keep = std::get<2>(cases[i]);
        const std::vector<bool> expected = min_p_keep(probs, min_p, min_keep);
        FEEDBACK("a case drawn with seed " << seed << ": probs " << feedback::list(probs, 10, 9) << ", min_p = "
                                          << feedback::num(min_p, 17) << ", min_keep = " << min_keep);
        FEEDBACK("expected kept: " << show_kept(expected) << " (the library's min_p_keep)\nfound kept:    " << show_kept(found[i]));
        FEEDBACK((found[i] == expected ? std::string() : "hint: " + min_p_diagnosis(probs, min_p, min_keep)));
        REQUIRE(found[i] == expected);
    }
}
