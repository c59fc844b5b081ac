// Chapter 00: GPT-2's byte-level BPE tokenizer.
#include "decodebook/model/tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <filesystem>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/files.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/model/config.hpp"

namespace decodebook {
namespace {

// GPT-2's pre-tokenization pattern, unchanged (encoder.py in openai/gpt-2).
constexpr const char* kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kEndOfText = "<|endoftext|>";

constexpr uint64_t kMaxTokenizerFile = 64u << 20;  // GPT-2's files are 1 MB and 0.5 MB

std::string read_text(const std::string& path) {
    return read_small_file(path, "tokenizer file", kMaxTokenizerFile,
                           "the model folder needs vocab.json and merges.txt (GPT-2 format); pass --model DIR");
}

// vocab.json parsed: it must be a non-empty JSON object of token -> id.
nlohmann::json read_vocab_json(const std::string& vocab_path) {
    nlohmann::json vocab;
    try {
        vocab = nlohmann::json::parse(read_text(vocab_path));
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + vocab_path + "' is not valid JSON (" + e.what() + ")", "re-export the tokenizer");
    }
    if (!vocab.is_object() || vocab.empty()) {
        throw Error("'" + vocab_path + "' is not a JSON object of token -> id", "re-export the tokenizer");
    }
    return vocab;
}

// One token as written in vocab.json (GPT-2 byte symbols) to its raw bytes, through `symbol_byte`,
// the inverse of GPT-2's byte map (symbol string -> byte).
std::string symbols_to_bytes(const std::string& token,
                             const std::unordered_map<std::string, unsigned char>& symbol_byte,
                             const std::string& vocab_path) {
    std::string raw;
    for (size_t i = 0; i < token.size();) {
        const Utf8Step step = utf8_step(std::string_view(token).substr(i));
        const auto it = symbol_byte.find(token.substr(i, step.length));
        if (!step.valid || it == symbol_byte.end()) {
            throw Error("'" + vocab_path + "': token '" + token + "' is not made of GPT-2 byte symbols",
                        "use a GPT-2 byte-level BPE vocabulary");
        }
        raw += static_cast<char>(it->second);
        i += step.length;
    }
    return raw;
}

// vocab.json as read.
struct VocabFile {
    std::vector<std::string> bytes;              // id -> raw bytes (<|endoftext|>: its name)
    std::unordered_map<std::string, int> id_of;  // token as written -> id
    int eot_id = -1;                             // id of <|endoftext|>, or -1
};

// vocab.json: the ids are 0..N-1, each once; every token but <|endoftext|> is made of GPT-2 byte
// symbols (`symbols`: each byte's symbol string).
VocabFile read_vocab(const std::string& vocab_path, const std::vector<std::string>& symbols) {
    const nlohmann::json vocab = read_vocab_json(vocab_path);
    // Symbol string -> raw bytes, through the inverse of GPT-2's byte map.
    std::unordered_map<std::string, unsigned char> symbol_byte;
    for (int b = 0; b < 256; ++b) symbol_byte[symbols[b]] = static_cast<unsigned char>(b);
    VocabFile v;
    v.bytes.assign(vocab.size(), std::string());
    std::vector<bool> seen(vocab.size(), false);
    for (const auto& [token, id_json] : vocab.items()) {
        if (!id_json.is_number_integer() || id_json.get<long long>() < 0 ||
            id_json.get<long long>() >= static_cast<long long>(vocab.size()) || seen[id_json.get<size_t>()]) {
            throw Error("'" + vocab_path + "': token '" + token + "' has a bad or duplicate id",
                        "ids must be 0..N-1, each once");
        }
        const int id = id_json.get<int>();
        seen[static_cast<size_t>(id)] = true;
        v.id_of[token] = id;
        if (token == kEndOfText) {
            v.eot_id = id;
            v.bytes[static_cast<size_t>(id)] = token;
            continue;
        }
        v.bytes[static_cast<size_t>(id)] = symbols_to_bytes(token, symbol_byte, vocab_path);
    }
    return v;
}

// byte -> id of its single-byte token (`symbols`: each byte's symbol string). A byte-level BPE
// vocabulary holds all 256.
void find_byte_ids(const std::vector<std::string>& symbols, const std::unordered_map<std::string, int>& id_of,
                   const std::string& vocab_path, int (&byte_id)[256]) {
    for (int b = 0; b < 256; ++b) {
        const auto it = id_of.find(symbols[b]);
        if (it == id_of.end()) {
            throw Error("'" + vocab_path + "' lacks the single-byte token for byte " + std::to_string(b),
                        "a byte-level BPE vocabulary must hold all 256 bytes");
        }
        byte_id[b] = it->second;
    }
}

// merges.txt: one merge 'left right' a line, ranked in file order (a repeated pair keeps its first
// rank), an optional '#version' first line and blank lines skipped. (left, right) -> (rank, merged).
std::map<std::pair<int, int>, std::pair<int, int>> read_merges(const std::string& merges_path,
                                                               const std::unordered_map<std::string, int>& id_of) {
    std::map<std::pair<int, int>, std::pair<int, int>> ranked;
    std::istringstream merges(read_text(merges_path));
    std::string line;
    int rank = 0, line_no = 0;
    while (std::getline(merges, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
            throw Error("'" + merges_path + "' line " + std::to_string(line_no) + " is not 'left right'",
                        "each merge line holds two symbols separated by one space");
        }
        const std::string left = line.substr(0, space), right = line.substr(space + 1);
        const auto l = id_of.find(left), r = id_of.find(right), m = id_of.find(left + right);
        if (l == id_of.end() || r == id_of.end() || m == id_of.end()) {
            throw Error("'" + merges_path + "' line " + std::to_string(line_no) + " uses a token missing from vocab.json",
                        "vocab.json and merges.txt must come from the same tokenizer");
        }
        ranked.try_emplace({l->second, r->second}, rank++, m->second);
    }
    if (ranked.empty()) {
        throw Error("'" + merges_path + "' holds no merges",
                    "a GPT-2 merges.txt lists one merge per line ('left right'); re-export the tokenizer");
    }
    return ranked;
}

// The model's own size: a smaller vocabulary fails mid-generation, a larger one feeds the model
// ids it has no embedding for. (A folder without config.json is a tokenizer alone: nothing to match.)
void check_model_vocab_size(const std::string& model_dir, const std::string& vocab_path, int vocab_size) {
    const std::string config_path = model_dir + "/config.json";
    std::error_code ec;
    if (!std::filesystem::exists(config_path, ec)) return;
    const ModelConfig config = load_config(config_path);
    if (config.vocab_size != vocab_size) {
        throw Error("'" + vocab_path + "' holds " + std::to_string(vocab_size) + " tokens but config.json's "
                        "vocab_size is " + std::to_string(config.vocab_size),
                    "vocab.json, merges.txt and config.json must come from the same model");
    }
}

}  // namespace

std::vector<std::string> gpt2_byte_symbols() {
    // Printable bytes keep their own code point; the others are moved to 256, 257, ...
    std::vector<std::string> symbols(256);
    uint32_t shifted = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        append_utf8(symbols[b], printable ? b : shifted++);
    }
    return symbols;
}

struct Tokenizer::Regex {
    pcre2_code* code = nullptr;
    ~Regex() { pcre2_code_free(code); }
};

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

// Files in this order: vocab.json, merges.txt, then config.json's vocab_size (where there is one).
Tokenizer Tokenizer::load(const std::string& model_dir) {
    Tokenizer t;
    const std::string vocab_path = model_dir + "/vocab.json";
    const std::vector<std::string> symbols = gpt2_byte_symbols();
    VocabFile vocab = read_vocab(vocab_path, symbols);
    t.vocab_.bytes = std::move(vocab.bytes);
    if (vocab.eot_id >= 0) {
        t.eot_id_ = vocab.eot_id;
        t.vocab_.special = {vocab.eot_id};
    }
    find_byte_ids(symbols, vocab.id_of, vocab_path, t.byte_id_);
    t.merges_ = read_merges(model_dir + "/merges.txt", vocab.id_of);
    check_model_vocab_size(model_dir, vocab_path, t.vocab_size());
    int err = 0;
    PCRE2_SIZE offset = 0;
    t.regex_ = std::make_unique<Regex>();
    t.regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &offset, nullptr);
    if (!t.regex_->code) throw std::logic_error("GPT-2 pattern failed to compile in PCRE2");
    pcre2_jit_compile(t.regex_->code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back if unavailable
    return t;
}

const std::string& Tokenizer::token_bytes(int id) const {
    if (id < 0 || id >= vocab_size()) {
        throw Error("token id " + std::to_string(id) + " is not in the vocabulary (0.." +
                        std::to_string(vocab_size() - 1) + ")",
                    "use ids produced by this model's tokenizer");
    }
    return vocab_.bytes[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int>& ids) const { return decode(ids, false); }

std::string Tokenizer::decode(const std::vector<int>& ids, bool skip_special_tokens) const {
    std::string out;
    for (int id : ids) out += text_bytes(id, skip_special_tokens);
    return out;
}

std::string_view Tokenizer::text_bytes(int id, bool skip_special_tokens) const {
    const std::string& bytes = token_bytes(id);  // checks the id first
    return skip_special_tokens && is_special(id) ? std::string_view() : std::string_view(bytes);
}

std::vector<int> Tokenizer::bpe(std::string_view piece) const {
    const auto cached = cache_.find(std::string(piece));
    if (cached != cache_.end()) return cached->second;
    std::vector<int> word;
    for (unsigned char b : piece) word.push_back(byte_id_[b]);
    while (word.size() > 1) {
        // find the lowest-rank adjacent pair ...
        int best_rank = std::numeric_limits<int>::max();
        std::pair<int, int> best{-1, -1};
        int merged = -1;
        for (size_t i = 0; i + 1 < word.size(); ++i) {
            const auto it = merges_.find({word[i], word[i + 1]});
            if (it != merges_.end() && it->second.first < best_rank) {
                best_rank = it->second.first;
                best = it->first;
                merged = it->second.second;
            }
        }
        if (merged < 0) break;
        // ... and merge every occurrence of it, left to right
        std::vector<int> next;
        for (size_t i = 0; i < word.size(); ++i) {
            if (i + 1 < word.size() && word[i] == best.first && word[i + 1] == best.second) {
                next.push_back(merged);
                ++i;
            } else {
                next.push_back(word[i]);
            }
        }
        word = std::move(next);
    }
    cache_.emplace(std::string(piece), word);
    return word;
}

void Tokenizer::pretokenize(std::string_view text, std::vector<int>& out) const {
    // PCRE2 needs valid UTF-8: stand each invalid byte in for a private-use character
    // (U+10FF00 + byte; category Co, i.e. a symbol), and keep where every byte came from.
    std::string clean;
    std::vector<size_t> origin;  // clean byte offset -> text byte offset
    for (size_t i = 0; i < text.size();) {
        const Utf8Step step = utf8_step(text.substr(i));
        if (step.valid) {
            for (size_t k = 0; k < step.length; ++k) origin.push_back(i + k);
            clean.append(text.substr(i, step.length));
            i += step.length;
        } else {
            const size_t before = clean.size();
            append_utf8(clean, 0x10FF00u + static_cast<unsigned char>(text[i]));
            origin.insert(origin.end(), clean.size() - before, i);
            i += 1;  // every byte of an invalid subpart is its own symbol
        }
    }
    origin.push_back(text.size());
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
    PCRE2_SIZE start = 0;
    while (start < clean.size()) {
        const int rc = pcre2_match(regex_->code, reinterpret_cast<PCRE2_SPTR>(clean.data()), clean.size(), start,
                                   PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc < 0) break;  // cannot happen: every character matches one alternative
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t from = origin[ov[0]];
        const size_t to = ov[1] < origin.size() - 1 ? origin[ov[1]] : text.size();
        const std::vector<int> ids = bpe(text.substr(from, to - from));
        out.insert(out.end(), ids.begin(), ids.end());
        start = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
    }
    pcre2_match_data_free(md);
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
    std::vector<int> out;
    while (!text.empty()) {
        const size_t at = eot_id_ >= 0 ? text.find(kEndOfText) : std::string_view::npos;
        pretokenize(text.substr(0, at), out);
        if (at == std::string_view::npos) break;
        out.push_back(eot_id_);
        text.remove_prefix(at + kEndOfText.size());
    }
    return out;
}

}  // namespace decodebook
