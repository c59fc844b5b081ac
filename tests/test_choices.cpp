// Chapter 11: multiple choice by scoring, as EleutherAI's lm-evaluation-harness does it (lm-eval at
// 4e7e0d47f33b: lm_eval/api/model.py _encode_pair, lm_eval/api/task.py process_results,
// lm_eval/api/metrics.py mean_stderr). Its rules as facts on hand-made cases, the task file's
// refusals, and the author-choice task (models/tasks/author_choice.json) scored on the embedded
// model against the float64 reference (tests/data/choices.json, tests/reference/choices.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "decodebook/base/error.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/decoding/choices.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

ChoiceScore scored(double logprob, size_t chars, size_t bytes) {
    ChoiceScore s;
    s.score.logprob = logprob;
    s.length = {chars, bytes};
    return s;
}

std::vector<int> tail(const std::vector<int>& ids, size_t from) {
    return {ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end()};
}

}  // namespace

TEST_CASE("encode_pair moves the context's trailing whitespace to the choice as lm-eval's _encode_pair", "[choices]") {
    const Tokenizer& tok = golden::tokenizer();
    // "... -- " + "Woody Allen" is asked as "... --" + " Woody Allen": the space joins the name's token
    const EncodedPair p = encode_pair(tok, "Take my advice.\n\t\t-- ", "Woody Allen");
    CHECK(p.context == tok.encode("Take my advice.\n\t\t--"));
    CHECK(p.continuation == tok.encode(" Woody Allen"));
    // every character str.rstrip() removes moves: tabs, newlines, U+00A0; U+200B is not whitespace to Python
    const EncodedPair moved = encode_pair(tok, "a\n\t \xC2\xA0", "b");
    CHECK(moved.context == tok.encode("a"));
    CHECK(moved.continuation == tail(tok.encode("a\n\t \xC2\xA0" "b"), moved.context.size()));
    CHECK(encode_pair(tok, "a\xE2\x80\x8B", "b").context == tok.encode("a\xE2\x80\x8B"));
    // the continuation's ids are the whole text's after as many as the context's own encoding
    // has: "hello" is "he" "ll" "o" whole and the context "h" one id, so the choice "ello" is
    // scored as "ll" "o" (its "e" went into a token the context does not have)
    const std::vector<int> whole = tok.encode("hello");
    const EncodedPair cut = encode_pair(tok, "h", "ello");
    REQUIRE(cut.context.size() == 1);
    CHECK(cut.continuation == tail(whole, 1));
    CHECK(tok.decode(cut.continuation) == "llo");
    // and when BPE merges the choice into the context's last token, nothing is left of it
    CHECK(encode_pair(tok, "hou", "se").continuation.empty());
    CHECK_THROWS_WITH(encode_pair(tok, "", "x"), Catch::Contains("the context is empty"));
}

TEST_CASE("the three rules pick by sum and by sum per character and per byte with ties to the first", "[choices]") {
    // lls -6, -6, -8; characters 3, 2, 4; bytes 3, 6, 4
    const std::vector<ChoiceScore> s{scored(-6, 3, 3), scored(-6, 2, 6), scored(-8, 4, 4)};
    CHECK(pick_choice(s, ChoiceRule::Acc) == 0);       // -6 = -6: the first (np.argmax)
    CHECK(pick_choice(s, ChoiceRule::AccNorm) == 0);   // -2, -3, -2: the first
    CHECK(pick_choice(s, ChoiceRule::AccBytes) == 1);  // -2, -1, -2
    CHECK(choice_value(s[1], ChoiceRule::AccNorm) == -3.0);
    CHECK(choice_value(s[1], ChoiceRule::AccBytes) == -1.0);
    // a longer choice loses on the sum and can win per character
    const std::vector<ChoiceScore> longer{scored(-5, 2, 2), scored(-9, 12, 12)};
    CHECK(pick_choice(longer, ChoiceRule::Acc) == 0);
    CHECK(pick_choice(longer, ChoiceRule::AccNorm) == 1);
    CHECK_THROWS_WITH(pick_choice({}, ChoiceRule::Acc), Catch::Contains("no choice to pick from"));
    // acc_norm's length is Python's len, characters: "Café" is 4 characters and 5 bytes
    CHECK(choice_length("Caf\xC3\xA9").chars == 4);
    CHECK(choice_length("Caf\xC3\xA9").bytes == 5);
    CHECK_THROWS_WITH(choice_length("Caf\xC3"), Catch::Contains("not valid UTF-8"));
    CHECK(to_string(ChoiceRule::Acc) == "acc");
    CHECK(to_string(ChoiceRule::AccNorm) == "acc_norm");
    CHECK(to_string(ChoiceRule::AccBytes) == "acc_bytes");
}

TEST_CASE("accuracy carries lm-eval's mean_stderr and chance is one over the choices", "[choices]") {
    Accuracy a;
    CHECK(!a.standard_error());
    a.add(true);
    CHECK(a.value() == 1.0);
    CHECK(!a.standard_error());  // one item: lm-eval prints N/A
    for (int i = 0; i < 3; ++i) a.add(false);
    // hits 1, 0, 0, 0: mean 1/4, sample variance (3/4^2 + 3 * 1/4^2) / 3 = 1/4, stderr sqrt(1/4) / 2
    CHECK(a.value() == 0.25);
    REQUIRE(a.standard_error());
    CHECK(*a.standard_error() == Approx(0.25).epsilon(1e-15));
    const std::vector<ChoiceItem> items{{"a", {"b", "c"}, 0}, {"a", {"b", "c", "d", "e"}, 3}};
    CHECK(chance_accuracy(items) == Approx(0.375));
}

TEST_CASE("score_choices scores each choice as score_continuation on its pair and refuses what it cannot score", "[choices]") {
    const Tokenizer& tok = golden::tokenizer();
    const ChoiceItem item{"A penny saved is a penny earned.\n\t\t-- ", {"Benjamin Franklin", "Caf\xC3\xA9 owner"}, 0};
    const std::vector<ChoiceScore> s = score_choices(golden::model(), tok, item);
    REQUIRE(s.size() == 2);
    for (size_t i = 0; i < s.size(); ++i) {
        const EncodedPair p = encode_pair(tok, item.context, item.choices[i]);
        const ContinuationScore want = score_continuation(golden::model(), p.context, p.continuation);
        CHECK(s[i].score.logprob == want.logprob);
        CHECK(s[i].score.tokens == p.continuation.size());
    }
    CHECK(s[1].length.chars == 10);
    CHECK(s[1].length.bytes == 11);
    CHECK_THROWS_WITH(score_choices(golden::model(), tok, {"hou", {"se", "sing"}, 0}),
                      Catch::Contains("choice 0 (\"se\") has no token of its own"));
    std::string long_context;
    for (int i = 0; i < 300; ++i) long_context += " word";
    CHECK_THROWS_WITH(score_choices(golden::model(), tok, {long_context, {"a", "b"}, 0}),
                      Catch::Contains("exceed the model's context of 256"));
    CHECK_THROWS_WITH(score_choices(golden::model(), tok, {" \n\t", {"a", "b"}, 0}), Catch::Contains("only whitespace"));
    CHECK_THROWS_WITH(score_choices(golden::model(), tok, {"x", {"a"}, 0}), Catch::Contains("has 1 choice, not a choice"));
    CHECK_THROWS_WITH(score_choices(golden::model(), tok, {"x", {"a", ""}, 0}), Catch::Contains("choice 1 is empty"));
    CHECK_THROWS_WITH(score_choices(golden::model(), tok, {"x", {"a", "b"}, 2}), Catch::Contains("the answer 2 is outside 0..1"));
}

TEST_CASE("a bad task file is refused naming the file and the fix", "[choices]") {
    golden::TempDir dir;
    const std::string path = dir.file("task.json");
    CHECK_THROWS_WITH(read_choice_task(path), Catch::Contains(path) && Catch::Contains("tests/reference/author_task.py"));
    const auto refused = [&](const std::string& text, const std::string& problem) {
        golden::write_file(path, text);
        INFO(text);
        CHECK_THROWS_WITH(read_choice_task(path), Catch::Contains(path) && Catch::Contains(problem));
    };
    golden::write_file(path, "{\"items\": [");
    CHECK_THROWS_WITH(read_choice_task(path), Catch::Contains("is not valid JSON") && Catch::Contains("author_task.py"));
    refused("[]", "has no \"items\" array");
    refused("{\"items\": []}", "has no items");
    refused("{\"items\": [{\"context\": \"a\", \"choices\": [\"b\", \"c\"]}]}", "item 0: needs \"context\"");
    refused("{\"items\": [{\"context\": \"a\", \"choices\": [\"b\", 3], \"answer\": 0}]}", "item 0: a choice is not a string");
    refused("{\"items\": [{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": 0}, "
            "{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": 2}]}",
            "item 1: the answer 2 is outside 0..1");
    refused("{\"items\": [{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"answer\": -1}]}", "item 0: the answer -1 is outside 0..1");
    refused("{\"items\": [{\"context\": \"a\", \"choices\": [\"b\", \"\"], \"answer\": -1}]}", "item 0: choice 1 is empty");
    refused("{\"items\": [{\"context\": \" \", \"choices\": [\"b\", \"c\"], \"answer\": 0}]}", "item 0: the context is only whitespace");
    golden::write_file(path, "{\"about\": \"x\", \"items\": [{\"context\": \"a -- \", \"choices\": [\"b\", \"c\"], \"answer\": 1}]}");
    const std::vector<ChoiceItem> ok = read_choice_task(path);
    REQUIRE(ok.size() == 1);
    CHECK(ok[0].context == "a -- ");
    CHECK(ok[0].choices == std::vector<std::string>{"b", "c"});
    CHECK(ok[0].answer == 1);
}

TEST_CASE("the author-choice task holds 200 held-out fortunes with the answer 50 times at each position", "[choices]") {
    const std::vector<ChoiceItem> items = read_choice_task(builtin_author_choice_task());
    REQUIRE(items.size() == 200);
    std::vector<int> at(4, 0);
    for (const ChoiceItem& item : items) {
        REQUIRE(item.choices.size() == 4);
        CHECK(item.context.ends_with("-- "));
        ++at[static_cast<size_t>(item.answer)];
    }
    CHECK(at == std::vector<int>{50, 50, 50, 50});
    CHECK(chance_accuracy(items) == 0.25);
}

namespace {

// Score items `indices` of the task and compare them with the golden's cases: the continuation's
// ids, the sums within 1e-6 relative of the float64 reference (as test_logprobs.cpp compares
// continuation sums), the lengths, is_greedy where no logit gap under 1e-3 decides it, and each
// rule's pick wherever its margin exceeds what that tolerance could reorder (2e-6 of the item's
// largest value; on this task every margin is over 2e-3, so every pick is compared). Returns each
// rule's accuracy over those items, and adds the golden's own hits on them to `want`.
std::vector<Accuracy> compare_items(const std::vector<ChoiceItem>& items, const nlohmann::json& file,
                                    const std::vector<size_t>& indices, std::vector<Accuracy>& want) {
    std::vector<Accuracy> found(3);
    want.assign(3, Accuracy{});
    size_t picks_compared = 0;
    for (const size_t k : indices) {
        const nlohmann::json& c = file["cases"][k];
        INFO("item " << k << " (tests/data/choices.json, models/tasks/author_choice.json)");
        REQUIRE(c["item"].get<size_t>() == k);
        REQUIRE(c["answer"].get<int>() == items[k].answer);  // a golden of another task file fails here
        const std::vector<ChoiceScore> s = score_choices(golden::model(), golden::tokenizer(), items[k]);
        REQUIRE(s.size() == c["choices"].size());
        for (size_t i = 0; i < s.size(); ++i) {
            const nlohmann::json& w = c["choices"][i];
            INFO("choice " << i << " " << items[k].choices[i]);
            CHECK(encode_pair(golden::tokenizer(), items[k].context, items[k].choices[i]).continuation ==
                  w["continuation_ids"].get<std::vector<int>>());
            CHECK(s[i].score.tokens == w["tokens"].get<size_t>());
            const double ll = w["logprob"].get<double>();
            CHECK(std::abs(s[i].score.logprob - ll) < 1e-6 * std::abs(ll));
            if (w["min_gap"].get<double>() > 1e-3) CHECK(s[i].score.greedy == w["greedy"].get<bool>());
            CHECK(s[i].length.chars == w["chars"].get<size_t>());
            CHECK(s[i].length.bytes == w["bytes"].get<size_t>());
        }
        for (size_t r = 0; r < 3; ++r) {
            const ChoiceRule rule = kChoiceRules[r];
            const std::string name = to_string(rule);
            double scale = 0;
            for (const ChoiceScore& one : s) scale = std::max(scale, std::abs(choice_value(one, rule)));
            const int pick = pick_choice(s, rule);
            if (c[name + "_margin"].get<double>() > 2e-6 * scale) {
                CHECK(pick == c[name].get<int>());
                ++picks_compared;
            }
            found[r].add(pick == items[k].answer);
            want[r].add(c[name].get<int>() == items[k].answer);
        }
    }
    CHECK(picks_compared == 3 * indices.size());
    return found;
}

}  // namespace

// Chapter 00's forward takes about 10 ms per choice here (one OpenBLAS thread), so the whole task,
// 800 forwards, takes 8.5 s: the test scores a fixed eighth of it, every 8th item (100 forwards,
// 1 s), and checks the accuracies over all 200 items from the reference's picks.
// "[.choices_sweep]" below scores all 200 on demand: ./engine_tests "[.choices_sweep]".
TEST_CASE("every 8th item of the author-choice task scores and picks as the reference", "[choices][golden]") {
    const nlohmann::json file = golden::load("choices.json");
    const std::vector<ChoiceItem> items = read_choice_task(builtin_author_choice_task());
    REQUIRE(file["cases"].size() == items.size());
    std::vector<size_t> eighth;
    for (size_t k = 0; k < items.size(); k += 8) eighth.push_back(k);
    std::vector<Accuracy> want;
    const std::vector<Accuracy> found = compare_items(items, file, eighth, want);
    for (size_t r = 0; r < 3; ++r) {
        INFO(to_string(kChoiceRules[r]));
        CHECK(found[r].correct == want[r].correct);
        CHECK(found[r].items == eighth.size());
    }
    // the golden's accuracies are lm-eval's aggregates of its own picks over every item
    for (size_t r = 0; r < 3; ++r) {
        const std::string name = to_string(kChoiceRules[r]);
        Accuracy all;
        for (size_t k = 0; k < items.size(); ++k) all.add(file["cases"][k][name].get<int>() == items[k].answer);
        const nlohmann::json& agg = file["accuracy"][name];
        INFO(name << " " << all.value() << " +- " << all.standard_error().value_or(0));
        CHECK(all.correct == agg["correct"].get<size_t>());
        CHECK(all.value() == Approx(agg["value"].get<double>()).epsilon(1e-12));
        REQUIRE(all.standard_error());
        CHECK(*all.standard_error() == Approx(agg["stderr"].get<double>()).epsilon(1e-12));
    }
    CHECK(file["chance"].get<double>() == chance_accuracy(items));
}

// The whole task, all 800 forwards (8.5 s): hidden from CTest, run on demand.
TEST_CASE("all 200 items of the author-choice task give the reference's accuracies", "[.choices_sweep]") {
    const nlohmann::json file = golden::load("choices.json");
    const std::vector<ChoiceItem> items = read_choice_task(builtin_author_choice_task());
    REQUIRE(file["cases"].size() == items.size());
    std::vector<size_t> all(items.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    std::vector<Accuracy> want;
    const std::vector<Accuracy> found = compare_items(items, file, all, want);
    for (size_t r = 0; r < 3; ++r) {
        const std::string name = to_string(kChoiceRules[r]);
        const nlohmann::json& agg = file["accuracy"][name];
        const double z = 1.96 * found[r].standard_error().value_or(0);
        WARN(name << ": " << found[r].correct << " of " << found[r].items << " = " << found[r].value() << " +- " << z
                  << " (95 %), chance " << chance_accuracy(items));
        CHECK(found[r].correct == agg["correct"].get<size_t>());
        CHECK(found[r].value() == Approx(agg["value"].get<double>()).epsilon(1e-12));
        CHECK(*found[r].standard_error() == Approx(agg["stderr"].get<double>()).epsilon(1e-12));
    }
}

TEST_CASE("evaluate_choice_task counts each rule's picks and what no prompt logprobs would give", "[choices][golden]") {
    const nlohmann::json file = golden::load("choices.json");
    std::vector<ChoiceItem> items = read_choice_task(builtin_author_choice_task());
    items.resize(8);
    const TaskResult r = evaluate_choice_task(golden::model(), golden::tokenizer(), items);
    REQUIRE(r.scores.size() == 8u);
    REQUIRE(r.by_rule.size() == std::size(kChoiceRules));
    for (size_t i = 0; i < std::size(kChoiceRules); ++i) {
        const std::string name = to_string(kChoiceRules[i]);
        size_t hits = 0;
        for (size_t k = 0; k < items.size(); ++k) hits += file["cases"][k][name].get<int>() == items[k].answer;
        INFO(name);
        CHECK(r.by_rule[i].correct == hits);  // the reference's picks (every margin is above float noise)
        CHECK(r.by_rule[i].items == 8u);
    }
    // llama.cpp issue 27174: with no prompt logprobs every choice scores alike and the first wins
    size_t first = 0;
    for (const ChoiceItem& item : items) first += item.answer == 0;
    CHECK(r.without_logprobs.correct == first);
    CHECK(r.chance == 0.25);
}
