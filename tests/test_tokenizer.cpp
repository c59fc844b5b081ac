// GPT-2's byte-level BPE (chapter 00): hand-computed merges, the reference's ids, bad files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/model/config.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "golden.hpp"

using namespace decodebook;

namespace {

// A tiny tokenizer: the 256 byte tokens (id = byte value), then ab=256, abc=257, bc=258,
// with merges ranked "a b" < "ab c" < "b c".
void write_tiny_tokenizer(const golden::TempDir& dir, const std::string& merges_text = "#version: 0.2\na b\nab c\nb c\n") {
    const auto symbols = gpt2_byte_symbols();
    nlohmann::json vocab;
    for (int b = 0; b < 256; ++b) vocab[symbols[static_cast<size_t>(b)]] = b;
    vocab["ab"] = 256;
    vocab["abc"] = 257;
    vocab["bc"] = 258;
    vocab["<|endoftext|>"] = 259;
    golden::write_file(dir.file("vocab.json"), vocab.dump());
    golden::write_file(dir.file("merges.txt"), merges_text);
}

std::string load_error(const golden::TempDir& dir) {
    try {
        Tokenizer::load(dir.path.string());
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("GPT-2 byte symbols are printable and distinct", "[tokenizer]") {
    const auto s = gpt2_byte_symbols();
    CHECK(s[static_cast<size_t>('A')] == "A");
    CHECK(s[static_cast<size_t>(' ')] == "\xC4\xA0");   // U+0120 'Ġ'
    CHECK(s[static_cast<size_t>('\n')] == "\xC4\x8A");  // U+010A 'Ċ'
    CHECK(s[0] == "\xC4\x80");                          // U+0100
    CHECK(std::set<std::string>(s.begin(), s.end()).size() == 256);
}

TEST_CASE("BPE applies the lowest-rank merge first", "[tokenizer]") {
    golden::TempDir dir;
    write_tiny_tokenizer(dir);
    const Tokenizer t = Tokenizer::load(dir.path.string());
    CHECK(t.encode("abc") == std::vector<int>{257});          // a b -> ab, then ab c -> abc
    CHECK(t.encode("bc") == std::vector<int>{258});
    CHECK(t.encode("abab") == std::vector<int>{256, 256});
    CHECK(t.encode("cbc") == std::vector<int>{'c', 258});
    CHECK(t.encode("a bc") == std::vector<int>{'a', ' ', 258});  // pieces "a" and " bc"
    CHECK(t.encode("") == std::vector<int>{});
    CHECK(t.encode("x<|endoftext|>y") == std::vector<int>{'x', 259, 'y'});
    CHECK(t.eot_id() == 259);
    CHECK(t.decode({257, ' ', 259}) == "abc <|endoftext|>");
}

TEST_CASE("the vocabulary table holds every id's bytes and marks <|endoftext|> special", "[tokenizer]") {
    golden::TempDir dir;
    write_tiny_tokenizer(dir);
    const Tokenizer t = Tokenizer::load(dir.path.string());
    const Vocabulary& v = t.vocabulary();
    REQUIRE(v.size() == 260);
    CHECK(v.bytes[97] == "a");
    CHECK(v.bytes[257] == "abc");
    CHECK(v.bytes[32] == " ");
    CHECK(v.special == std::vector<int>{259});
    for (int id = 0; id < v.size(); ++id) {
        INFO("id " << id);
        CHECK(t.is_special(id) == (id == 259));
        if (!t.is_special(id)) CHECK(v.bytes[static_cast<size_t>(id)] == t.token_bytes(id));
    }
    // the embedded model: 2048 ids, one special (its EOS), no other token's bytes contain its name
    const Tokenizer& gpt2 = golden::tokenizer();
    const Vocabulary& g = gpt2.vocabulary();
    CHECK(g.size() == gpt2.vocab_size());
    CHECK(g.special == std::vector<int>{gpt2.eot_id()});
    CHECK(gpt2.is_special(gpt2.eot_id()));
    CHECK_FALSE(gpt2.is_special(0));
    // a toy vocabulary needs no tokenizer (chapter 09's tests)
    const Vocabulary toy{{"a", "b", "ab", "<eos>"}, {3}};
    CHECK(toy.is_special(3));
    CHECK_FALSE(toy.is_special(2));
}

TEST_CASE("unknown token ids are rejected with the valid range", "[tokenizer][errors]") {
    golden::TempDir dir;
    write_tiny_tokenizer(dir);
    const Tokenizer t = Tokenizer::load(dir.path.string());
    REQUIRE_THROWS_WITH(t.token_bytes(260), Catch::Contains("token id 260 is not in the vocabulary (0..259)"));
    REQUIRE_THROWS_WITH(t.decode({1, -1}), Catch::Contains("token id -1"));
}

TEST_CASE("malformed tokenizer files give clear errors", "[tokenizer][errors]") {
    golden::TempDir dir;
    CHECK_THAT(load_error(dir), Catch::Contains("cannot open tokenizer file") && Catch::Contains("vocab.json"));
    write_tiny_tokenizer(dir, "#version: 0.2\na b c\n");
    CHECK_THAT(load_error(dir), Catch::Contains("line 2 is not 'left right'"));
    write_tiny_tokenizer(dir, "#version: 0.2\nx y\n");
    CHECK_THAT(load_error(dir), Catch::Contains("missing from vocab.json"));
    write_tiny_tokenizer(dir);
    golden::write_file(dir.file("vocab.json"), "{\"a\": 0");
    CHECK_THAT(load_error(dir), Catch::Contains("not valid JSON"));
    golden::write_file(dir.file("vocab.json"), "{\"a\": 0, \"b\": 0}");
    CHECK_THAT(load_error(dir), Catch::Contains("bad or duplicate id"));
    golden::write_file(dir.file("vocab.json"), "{\"a\": 0}");
    CHECK_THAT(load_error(dir), Catch::Contains("lacks the single-byte token"));
}

TEST_CASE("token ids match the independent reference on varied text", "[tokenizer][reference]") {
    const Tokenizer t = Tokenizer::load(golden::model_dir());
    const nlohmann::json g = golden::load("tokenizer.json");
    REQUIRE(g["cases"].size() >= 20);
    for (const auto& c : g["cases"]) {
        const std::string text = golden::from_hex(c["text_hex"]);
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        INFO("case '" << c["name"].get<std::string>() << "'\n  expected: " << golden::join(expected)
                      << "\n  found:    " << golden::join(t.encode(text)));
        CHECK(t.encode(text) == expected);
        CHECK(t.decode(expected) == golden::from_hex(c["decoded_hex"]));
    }
}

TEST_CASE("an empty merges.txt and a folder or device as a tokenizer file are refused", "[tokenizer][errors]") {
    golden::TempDir dir;
    write_tiny_tokenizer(dir, "");
    CHECK_THAT(load_error(dir), Catch::Contains("merges.txt' holds no merges"));
    write_tiny_tokenizer(dir, "#version: 0.2\n\n");
    CHECK_THAT(load_error(dir), Catch::Contains("holds no merges"));
    write_tiny_tokenizer(dir);
    std::filesystem::remove(dir.file("vocab.json"));
    std::filesystem::create_symlink("/dev/urandom", dir.file("vocab.json"));  // used to read until memory ran out
    CHECK_THAT(load_error(dir), Catch::Contains("vocab.json' is not a regular file"));
    std::filesystem::remove(dir.file("vocab.json"));
    std::filesystem::create_directory(dir.file("vocab.json"));
    CHECK_THAT(load_error(dir), Catch::Contains("vocab.json' is a folder, not a file"));
}

TEST_CASE("a vocabulary whose size differs from config.json's vocab_size is refused", "[tokenizer][errors]") {
    golden::TempDir dir;
    write_tiny_tokenizer(dir);  // 260 ids
    ModelConfig c;
    c.vocab_size = 260; c.n_positions = 8; c.n_embd = 4; c.n_layer = 1; c.n_head = 2; c.eos_token_id = 259;
    save_config(dir.file("config.json"), c);
    CHECK(load_error(dir) == "(no error)");
    for (int size : {259, 300}) {
        c.vocab_size = size;
        c.eos_token_id = 258;
        save_config(dir.file("config.json"), c);
        CHECK_THAT(load_error(dir), Catch::Contains("holds 260 tokens but config.json's vocab_size is " + std::to_string(size)));
    }
}

TEST_CASE("write_gpt2_tokenizer makes a tokenizer of exactly the model's size that round-trips", "[tokenizer][random-model]") {
    golden::TempDir dir;
    REQUIRE_THROWS_WITH(write_gpt2_tokenizer(dir.path.string(), 257), Catch::Contains("at least 258 ids"));
    for (int size : {258, 2048, 50257}) {
        write_gpt2_tokenizer(dir.path.string(), size);
        const Tokenizer t = Tokenizer::load(dir.path.string());
        CHECK(t.vocab_size() == size);
        CHECK(t.eot_id() == size - 1);  // <|endoftext|> last, as in GPT-2
        CHECK(t.token_bytes(0) == "!");  // GPT-2's order: printable bytes first
        const std::string text = "The best way to eat an apple\n\tis\xe2\x80\x94 at 3 o'clock<|endoftext|>\xff!";
        const std::vector<int> ids = t.encode(text);
        CHECK(t.decode(ids) == text);
        if (size == 258) CHECK(ids.size() == text.size() - 13);  // one id per byte but " e" (of " eat") and the EOT
    }
    // With merges, a word after a space is built left to right: " t", " th", " the".
    const Tokenizer t = Tokenizer::load(dir.path.string());
    CHECK(t.encode(" the").size() == 1);
    CHECK(t.encode("the best").size() < 8);
}
