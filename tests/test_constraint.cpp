// Chapter 09: token masks per automaton state (constrain/token_index.hpp) and constrained
// decoding in every loop (decoding/constraint.hpp), against the peers' own cases and the model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/base/vocabulary.hpp"
#include "decodebook/constrain/regex.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

using Ids = std::vector<int>;

// A toy vocabulary: bytes per id, the ids listed special.
Vocabulary toy(std::vector<std::string> bytes, std::vector<int> special = {}) {
    return Vocabulary{std::move(bytes), std::move(special)};
}

std::string visible(const std::string& token) { return token == "\n" ? "\\n" : token; }

}  // namespace

TEST_CASE("Outlines index_from_regex: 0 or a number without a leading zero", "[constraint]") {
    // dottxt-ai/outlines-core src/index.rs, test index_from_regex: regex 0|[1-9][0-9]*, vocabulary
    // {"blah": 0, "1a": 1, "2": 2, "0": 3}, EOS 4. From the start only "0" and "2"; after "0" only
    // EOS; after "2" "0", "2" and EOS; "blah" and "1a" never.
    TokenIndex index(compile_regex("0|[1-9][0-9]*"), toy({"blah", "1a", "2", "0", "<eos>"}, {4}), {4});
    const int32_t start = index.dfa().start;
    CHECK(index.allowed(start) == Ids{2, 3});
    const int32_t after_0 = index.next_state(start, 3), after_2 = index.next_state(start, 2);
    CHECK(index.allowed(after_0) == Ids{4});
    CHECK(index.allowed(after_2) == Ids{2, 3, 4});
    CHECK(index.allowed(index.next_state(after_2, 2)) == Ids{2, 3, 4});
    CHECK(index.next_state(start, 0) == Dfa::kDead);
    CHECK(index.next_state(start, 1) == Dfa::kDead);
}

TEST_CASE("Outlines test_regex_final_state_walk", "[constraint]") {
    // dottxt-ai/outlines-core tests/test_guide.py, test_regex_final_state_walk: regex `\n(\.\n)?`\n
    // with {"`": 101, ".": 102, "\n": 103}, EOS 104: allowed [101] -> [103] -> [101, 102] -> [103]
    // -> [EOS].
    std::vector<std::string> bytes(105, "");
    bytes[101] = "`";
    bytes[102] = ".";
    bytes[103] = "\n";
    bytes[104] = "<eos>";
    TokenIndex index(compile_regex("`\\n(\\.\\n)?`\\n"), toy(bytes, {104}), {104});
    int32_t s = index.dfa().start;
    CHECK(index.allowed(s) == Ids{101});
    s = index.next_state(s, 101);
    CHECK(index.allowed(s) == Ids{103});
    s = index.next_state(s, 103);
    CHECK(index.allowed(s) == Ids{101, 102});
    s = index.next_state(s, 101);
    CHECK(index.allowed(s) == Ids{103});
    s = index.next_state(s, 103);
    CHECK(index.allowed(s) == Ids{104});
    CHECK(index.accepting(s));
}

TEST_CASE("Outlines test_interface and EOS only where the output is whole", "[constraint]") {
    // dottxt-ai/outlines-core tests/test_guide.py, test_interface: regex [1-9], {"1": 1, "a": 2},
    // EOS 3: allowed [1], then only EOS.
    TokenIndex index(compile_regex("[1-9]"), toy({"", "1", "a", "<eos>"}, {3}), {3});
    const int32_t start = index.dfa().start;
    CHECK(index.allowed(start) == Ids{1});
    CHECK(index.allowed(index.next_state(start, 1)) == Ids{3});
    CHECK_FALSE(index.accepting(start));  // EOS is not allowed before a digit
    CHECK(index.next_state(start, 3) == Dfa::kDead);  // a special token is never text
}

TEST_CASE("Willard and Louf's example: a token may hold several characters of the pattern", "[constraint]") {
    // Willard & Louf 2023 (arXiv 2307.09702), Example 1: regex ([0-9]*)?\.?[0-9]*, vocabulary
    // {"A", ".", "42", ".2", "1"}: the start masks only "A"; after ".2" only "42" and "1" remain.
    TokenIndex index(compile_regex("([0-9]*)?\\.?[0-9]*"), toy({"A", ".", "42", ".2", "1"}), {});
    const int32_t start = index.dfa().start;
    CHECK(index.allowed(start) == Ids{1, 2, 3, 4});
    CHECK(index.allowed(index.next_state(start, 3)) == Ids{2, 4});
}

TEST_CASE("a token whose bytes end inside a UTF-8 character is allowed and carried", "[constraint]") {
    // Byte-level BPE splits characters: "é" (C3 A9) may come as two tokens. The automaton walks
    // bytes, so the first half leads to a live state and the second completes the character.
    TokenIndex index(compile_regex("caf."), toy({"caf", "\xC3", "\xA9", "\xC3\xA9", "e", "<eos>"}, {5}), {5});
    const int32_t s = index.next_state(index.dfa().start, 0);
    CHECK(index.allowed(s) == Ids{1, 3, 4});          // half a character, a whole one, or an ASCII one
    const int32_t half = index.next_state(s, 1);
    CHECK(index.allowed(half) == Ids{2});             // only the byte that completes it
    CHECK(index.allowed(index.next_state(half, 2)) == Ids{5});
}

TEST_CASE("XGrammar test_token_operations: tokens that span JSON's elements", "[constraint]") {
    // mlc-ai/xgrammar tests/python/test_grammar_matcher_basic.py, test_token_operations, with the
    // builtin JSON grammar: the allowed tokens before each of { " abc b" : 6 ", " " " "a":true }
    // and after it. "<s>" is text there (inside a string it is allowed); "</s>" is the stop token.
    const golden::TokenOperationsCase& c = golden::xgrammar_token_operations();
    const std::vector<std::string>& vocab = c.tokens;
    TokenIndex index(compile_regex(c.regex), toy(vocab, {1}), {1});
    auto ids_of = [&](const std::vector<std::string>& tokens) {
        Ids ids;
        for (const std::string& t : tokens)
            ids.push_back(static_cast<int>(std::find(vocab.begin(), vocab.end(), t) - vocab.begin()));
        std::sort(ids.begin(), ids.end());
        return ids;
    };
    const auto& input = c.input;
    const auto& expected = c.expected;
    int32_t state = index.dfa().start;
    for (size_t step = 0; step < expected.size(); ++step) {
        INFO("before token " << step << (step < input.size() ? " (" + visible(input[step]) + ")" : " (the end)"));
        CHECK(index.allowed(state) == ids_of(expected[step]));
        if (step < input.size()) state = index.next_state(state, ids_of({input[step]})[0]);
    }
}

TEST_CASE("an EOS id that is an ordinary token only ends the output", "[constraint]") {
    // --eos-token-id may name an ordinary token ("." here). It must be allowed exactly where the
    // output is whole, once, and never walked as text: after "1" in 1\.2 the "." would continue a
    // match, but as the EOS it would end the output unfinished.
    const Vocabulary v = toy({"1", "2", ".", "<eos>"}, {3});
    TokenIndex partial(compile_regex("1\\.2"), v, {2});
    const int32_t after_1 = partial.next_state(partial.dfa().start, 0);
    CHECK(partial.allowed(after_1).empty());
    CHECK(partial.next_state(after_1, 2) == Dfa::kDead);
    TokenIndex whole(compile_regex("1\\.2|1"), v, {2});
    CHECK(whole.allowed(whole.next_state(whole.dfa().start, 0)) == Ids{2});  // once, as the EOS
}

TEST_CASE("allowed_tokens, every token walked on its own, is the index's set in every state", "[constraint]") {
    // The plain scan (exercise 09.2's twin) against the trie, on the model's vocabulary: every
    // state of a JSON-ish regex, EOS rule included.
    const Vocabulary v = golden::tokenizer().vocabulary();
    const Ids eos{golden::model().config().eos_token_id};
    const Dfa dfa = compile_regex("\\{\"(a|bc)\": (0|[1-9][0-9]{0,2}|\"[^\"]{0,4}\")\\}");
    TokenIndex index(dfa, v, eos);
    for (int32_t s = 0; s < static_cast<int32_t>(dfa.states()); ++s) {
        INFO("state " << s);
        CHECK(allowed_tokens(dfa, s, v, eos) == index.allowed(s));
    }
    CHECK(allowed_tokens(dfa, Dfa::kDead, v, eos).empty());
    CHECK_THROWS_WITH(allowed_tokens(dfa, static_cast<int32_t>(dfa.states()), v, eos), Catch::Contains("does not exist"));
    CHECK_THROWS_WITH(allowed_tokens(dfa, 0, v, Ids{v.size()}), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("the trie serves tokens that share a prefix and keep_only masks the rest", "[constraint]") {
    TokenTrie trie(toy({"a", "ab", "abc", "b", "", "<s>"}, {5}));
    CHECK(trie.nodes() == 5);  // root, a, ab, abc, b: the empty and the special token have none
    CHECK(trie.live_tokens(compile_regex("ab*"), 0) == Ids{0, 1});
    std::vector<float> z{1, 2, 3, 4, 5};
    keep_only(z, {1, 3});
    CHECK((std::isinf(z[0]) && z[1] == 2 && std::isinf(z[2]) && z[3] == 4 && std::isinf(z[4])));
}

TEST_CASE("masked_ranges are the ids keep_only masks, as runs, and mask_ranges masks them", "[constraint]") {
    using R = std::vector<IdRange>;
    constexpr uint32_t end = IdRange::kToTheEnd;
    CHECK(masked_ranges({1, 3}) == R{{0, 1}, {2, 3}, {4, end}});
    CHECK(masked_ranges({}) == R{{0, end}});
    CHECK(masked_ranges({0, 1, 2}) == R{{3, end}});
    CHECK(masked_ranges({2, 3, 7}) == R{{0, 2}, {4, 7}, {8, end}});
    // the same logits as keep_only for random allowed sets, logits shorter and longer than the ids
    Rng rng(9);
    for (int trial = 0; trial < 300; ++trial) {
        Ids allowed;
        const double density = rng.coin();
        for (int id = 0; id < 40; ++id)
            if (rng.coin() < density) allowed.push_back(id);
        for (const size_t n : {size_t{0}, size_t{25}, size_t{40}, size_t{55}}) {
            std::vector<float> by_ids(n), by_runs(n);
            for (size_t i = 0; i < n; ++i) by_ids[i] = by_runs[i] = static_cast<float>(i);
            Ids below;  // keep_only takes ids below the logits' length; mask_ranges ignores the rest
            std::copy_if(allowed.begin(), allowed.end(), std::back_inserter(below), [n](int id) { return static_cast<size_t>(id) < n; });
            keep_only(by_ids, below);
            mask_ranges(by_runs, masked_ranges(allowed));
            INFO("trial " << trial << ", " << n << " logits");
            CHECK(by_runs == by_ids);
        }
    }
    // the index keeps them beside each state's allowed set; a dead end masks everything
    TokenIndex index(compile_regex("(ab)+"), toy({"a", "b", "ab", "<eos>"}, {3}), {3});
    const int32_t s = index.state_after(Ids{2});
    CHECK(index.masked(s) == masked_ranges(index.allowed(s)));
    CHECK(index.masked(Dfa::kDead) == R{{0, end}});
}

TEST_CASE("the state is derived from the tokens so a rolled-back sequence needs nothing more", "[constraint]") {
    TokenIndex index(compile_regex("(ab)+"), toy({"a", "b", "ab", "<eos>"}, {3}), {3});
    const int32_t via_parts = index.state_after(Ids{0, 1, 0, 1});
    const int32_t via_pairs = index.state_after(Ids{2, 2});
    CHECK(via_parts == via_pairs);
    CHECK(index.accepting(via_parts));
    CHECK(index.state_after(Ids{2, 0}) == index.next_state(index.state_after(Ids{2}), 0));
    CHECK(index.state_after(Ids{1}) == Dfa::kDead);
    CHECK(index.cached_states() == 0);  // nothing computed until asked for
    (void)index.allowed(via_parts);
    CHECK(index.cached_states() == 1);
}

// ---------------------------------------------------------------- in the loops, on the model

namespace {

GenerationConfig constrained(GenerationConfig c) {
    validate(c);
    c.constraint = make_constraint(c, golden::tokenizer().vocabulary(),
                                   resolve_eos_ids(c, golden::model().config().eos_token_id));
    return c;
}

const Ids& prompt() {
    static const Ids p = golden::tokenizer().encode("The answer is");
    return p;
}

// The text without a final EOS.
std::string text_of(const Ids& ids) {
    std::string s;
    for (int id : ids)
        if (!golden::tokenizer().is_special(id)) s += golden::tokenizer().token_bytes(id);
    return s;
}

}  // namespace

TEST_CASE("greedy and sampled outputs always match the regex", "[constraint]") {
    GenerationConfig c;
    c.regex = "[0-9]{3}-[0-9]{4}";
    c.max_new_tokens = 16;
    const GenerationConfig greedy = constrained(c);
    const Dfa dfa = compile_regex(c.regex);
    const Generation g = generate_cached(golden::model(), golden::tokenizer(), prompt(), greedy, make_sampler(greedy, 0));
    INFO("greedy: " << text_of(g.ids) << " (" << to_string(g.finish_reason) << ")");
    CHECK(g.finish_reason == FinishReason::Eos);
    CHECK(dfa.matches(text_of(g.ids)));
    c.do_sample = true;
    c.temperature = 1.5f;  // hot: the mask, not the model, keeps the output valid
    const GenerationConfig sampled = constrained(c);
    int valid = 0;
    std::string first_bad;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        const Generation s = generate_cached(golden::model(), golden::tokenizer(), prompt(), sampled,
                                             make_sampler(sampled, seed));
        const bool ok = s.finish_reason == FinishReason::Eos && dfa.matches(text_of(s.ids));
        if (!ok && first_bad.empty()) first_bad = "seed " + std::to_string(seed) + ": " + text_of(s.ids);
        valid += ok;
    }
    INFO("first invalid output: " << first_bad);
    CHECK(valid == 200);
}

TEST_CASE("a choice ends with one of its strings in greedy beam and speculative decoding", "[constraint]") {
    GenerationConfig c;
    c.choice = {" yes", " no", " maybe later"};
    c.max_new_tokens = 12;
    const GenerationConfig greedy = constrained(c);
    const auto one_of = [&](const Ids& ids) {
        const std::string t = text_of(ids);
        return t == " yes" || t == " no" || t == " maybe later";
    };
    const Generation g = generate_cached(golden::model(), golden::tokenizer(), prompt(), greedy, make_sampler(greedy, 0));
    CHECK(one_of(g.ids));
    GenerationConfig beams = c;
    beams.num_beams = 3;
    beams.num_return_sequences = 3;
    const std::vector<Hypothesis> hyps =
        beam_search_cached(golden::model(), golden::tokenizer(), prompt(), constrained(beams));
    REQUIRE(hyps.size() == 3);
    for (const Hypothesis& h : hyps) {
        INFO("beam: " << text_of(h.ids));
        CHECK(one_of(h.ids));
    }
    GenerationConfig lookup = c;
    lookup.prompt_lookup_num_tokens = 3;
    const GenerationConfig spec = constrained(lookup);
    const Ids eos = resolve_eos_ids(spec, golden::model().config().eos_token_id);  // the drafter keeps a view
    const Drafter drafter = make_drafter(spec, nullptr, eos, prompt().size() + 12);
    const Generation s = generate_speculative(golden::model(), golden::tokenizer(), prompt(), spec, drafter);
    CHECK(s.ids == g.ids);  // speculative greedy is plain greedy, constraint and all
}

TEST_CASE("a constraint is refused before decoding when it cannot be met", "[constraint]") {
    GenerationConfig two;
    two.regex = "a";
    two.choice = {"b"};
    CHECK_THROWS_WITH(validate(two), Catch::Contains("exactly one of --regex, --choice, --json-schema"));
    GenerationConfig unbuilt;
    unbuilt.regex = "[0-9]+";
    CHECK_THROWS_WITH(check_request(golden::model().config(), prompt(), unbuilt),
                      Catch::Contains("was not built for this tokenizer"));
    GenerationConfig needs_z;
    needs_z.regex = "z+";
    CHECK_THROWS_WITH(make_constraint(needs_z, toy({"a", "b", "<eos>"}, {2}), {2}),
                      Catch::Contains("no token of the vocabulary starts a match"));
}

TEST_CASE("a dead end is a finish reason of its own", "[constraint]") {
    // After "a" the pattern needs "b" or "c", and no token of this vocabulary starts with either:
    // a live state of the automaton where the vocabulary allows nothing, and the output is not whole.
    GenerationConfig c;
    c.regex = "ab|ac|x";
    c.constraint = make_constraint(c, toy({"a", "ab", "x", "<eos>"}, {3}), {3});
    TokenIndex& index = *c.constraint->index;
    CHECK(index.allowed(index.state_after(Ids{0})).empty());
    const StoppingCriteria criteria = stopping_criteria(c, {3});
    const auto dead = std::find_if(criteria.begin(), criteria.end(),
                                   [](const StoppingCriterion& k) { return k.name.rfind("dead_end(", 0) == 0; });
    REQUIRE(dead != criteria.end());
    const PlainTextStream stream;
    const std::string text;
    const Ids after_a{0}, after_x{2};
    CHECK(dead->check({after_a, text, stream}) == FinishReason::DeadEnd);
    CHECK(dead->check({after_x, text, stream}) == std::nullopt);  // whole: EOS is allowed
    CHECK(to_string(FinishReason::DeadEnd) == "dead_end");
    // The mask heads the chain, before every processor the config asks for.
    c.repetition_penalty = 1.3f;
    CHECK(LogitsChain(c).describe().rfind("regex(ab|ac|x)", 0) == 0);
}

TEST_CASE("sampled outputs under a JSON schema parse and satisfy it", "[constraint]") {
    const golden::TempDir dir;
    golden::write_file(dir.file("person.json"), R"({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "pet": {"enum": ["cat", "dog", null]}},
      "required": ["name", "age"]})");
    GenerationConfig c;
    c.json_schema = dir.file("person.json");
    c.do_sample = true;
    c.max_new_tokens = 160;
    const GenerationConfig built = constrained(c);
    int valid = 0, lengths = 0;
    std::string first_bad;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        const Generation g = generate_cached(golden::model(), golden::tokenizer(), prompt(), built,
                                             make_sampler(built, seed));
        const std::string text = text_of(g.ids);
        bool ok = g.finish_reason == FinishReason::Eos;
        try {  // an independent check: nlohmann's parser, then the schema's rules by hand
            const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
            const std::string name = j.at("name").get<std::string>();
            const int age = j.at("age").get<int>();
            ok = ok && !name.empty() && age >= 0 && age <= 120 && j.begin().key() == "name";
            if (j.contains("pet")) ok = ok && (j["pet"].is_null() || j["pet"] == "cat" || j["pet"] == "dog");
            ok = ok && j.size() <= 3;
        } catch (const nlohmann::json::exception&) {
            ok = false;
        }
        if (!ok && first_bad.empty()) first_bad = "seed " + std::to_string(seed) + ": " + text + " (" + to_string(g.finish_reason) + ")";
        valid += ok;
        lengths += static_cast<int>(g.ids.size());
    }
    INFO("mean length " << lengths / 200.0 << " tokens; first invalid output: " << first_bad);
    CHECK(valid == 200);
}

TEST_CASE("greedy and beam outputs from 200 prompts all satisfy each constraint", "[constraint]") {
    // Greedy and beam search are deterministic, so their 200 samples are 200 prompts: a regex, a
    // choice and a JSON schema, each output checked by the constraint's own DFA (and, for JSON, by
    // nlohmann's parser).
    const golden::TempDir dir;
    golden::write_file(dir.file("point.json"), R"({"type": "object", "properties": {
        "x": {"type": "integer", "minimum": -9, "maximum": 9}, "label": {"enum": ["a", "b"]}},
      "required": ["x"]})");
    std::vector<GenerationConfig> cases(3);
    cases[0].regex = " [0-9]{1,2}(\\.[0-9])? (cats|dogs)";
    cases[1].choice = {" yes", " no", " maybe later"};
    cases[2].json_schema = dir.file("point.json");
    for (GenerationConfig& c : cases) {
        c.max_new_tokens = 40;
        const GenerationConfig greedy = constrained(c);
        GenerationConfig two = c;
        two.num_beams = 2;
        two.num_return_sequences = 2;
        const GenerationConfig beams = constrained(two);
        const Dfa& dfa = greedy.constraint->index->dfa();
        const bool json = !c.json_schema.empty();
        auto valid = [&](const Ids& ids) {
            const std::string text = text_of(ids);
            return dfa.matches(text) && (!json || nlohmann::json::accept(text));
        };
        int greedy_valid = 0, beam_valid = 0, beam_returned = 0;
        std::string first_bad;
        for (int k = 0; k < 200; ++k) {
            const Ids p = golden::tokenizer().encode("Item " + std::to_string(k) + " of the list: we saw");
            const Generation g = generate_cached(golden::model(), golden::tokenizer(), p, greedy, make_sampler(greedy, 0));
            const bool ok = g.finish_reason == FinishReason::Eos && valid(g.ids);
            if (!ok && first_bad.empty()) first_bad = "greedy, prompt " + std::to_string(k) + ": " + text_of(g.ids);
            greedy_valid += ok;
            for (const Hypothesis& h : beam_search_cached(golden::model(), golden::tokenizer(), p, beams)) {
                const bool whole = valid(h.ids);
                if (!whole && first_bad.empty()) first_bad = "beam, prompt " + std::to_string(k) + ": " + text_of(h.ids);
                beam_valid += whole;
                ++beam_returned;
            }
        }
        INFO(greedy.constraint->name << ": first invalid output: " << first_bad);
        CHECK(greedy_valid == 200);
        CHECK(beam_returned == 400);
        CHECK(beam_valid == 400);
    }
}
