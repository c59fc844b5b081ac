#pragma once
/// @file model/tokenizer.hpp
/// @brief GPT-2's byte-level BPE tokenizer over Hugging Face's `vocab.json` + `merges.txt` (chapter 00).
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "decodebook/base/vocabulary.hpp"

namespace decodebook {

/// Text to token ids and back, exactly as GPT-2 does it.
///
/// Encoding: split out the special token `<|endoftext|>`; cut the rest into pieces with GPT-2's
/// pre-tokenization regex (Unicode letter and number classes, through PCRE2); map each piece's
/// bytes to GPT-2's printable byte symbols; apply the BPE merges, lowest rank first.
/// Invalid UTF-8 is accepted: each invalid byte counts as one symbol character (neither letter,
/// number nor space) for the regex, as Python does with `errors="surrogateescape"`.
/// Introduced in chapter 00.
class Tokenizer {
public:
    /// Load `vocab.json` and `merges.txt` from a model folder. Introduced in chapter 00.
    /// @throws Error when a file is missing or malformed.
    static Tokenizer load(const std::string& model_dir);
    ~Tokenizer();
    /// Move construction.
    Tokenizer(Tokenizer&&) noexcept;
    /// Move assignment.
    Tokenizer& operator=(Tokenizer&&) noexcept;

    /// Text (any bytes) to token ids. Introduced in chapter 00.
    std::vector<int> encode(std::string_view text) const;
    /// The raw bytes of one token (may be part of a UTF-8 character). Introduced in chapter 00.
    /// @throws Error when the id is not in the vocabulary.
    const std::string& token_bytes(int id) const;
    /// Token ids to raw bytes (not necessarily valid UTF-8). Introduced in chapter 00.
    std::string decode(const std::vector<int>& ids) const;
    /// Token ids to raw bytes, special tokens (`<|endoftext|>`) left out when `skip_special_tokens`:
    /// Hugging Face's `decode(ids, skip_special_tokens=True)`. Introduced in chapter 01.
    std::string decode(const std::vector<int>& ids, bool skip_special_tokens) const;
    /// The bytes one token adds to the text: its bytes, or none for a special token when
    /// `skip_special_tokens` (the ids keep it either way). Introduced in chapter 01.
    /// @throws Error when the id is not in the vocabulary.
    std::string_view text_bytes(int id, bool skip_special_tokens) const;
    /// Number of ids. Introduced in chapter 00.
    int vocab_size() const { return vocab_.size(); }
    /// Id of `<|endoftext|>`, or -1 if the vocabulary has none. Introduced in chapter 00.
    /// (The tokenizer's own end-of-text token; the id a generation stops at is the model
    /// config's `eos_token_id`, which a model may set to another id.)
    int eot_id() const { return eot_id_; }
    /// Every id's bytes and the special ids (`<|endoftext|>`): what chapter 09's token masks
    /// walk. Introduced in chapter 07.
    const Vocabulary& vocabulary() const { return vocab_; }
    /// Whether `id` is a special token (never text). Introduced in chapter 07.
    bool is_special(int id) const { return vocab_.is_special(id); }

private:
    Tokenizer();
    std::vector<int> bpe(std::string_view piece) const;
    void pretokenize(std::string_view text, std::vector<int>& out) const;

    Vocabulary vocab_;                           // id -> raw bytes, and the special ids
    int byte_id_[256] = {};                      // byte -> id of its single-byte token
    std::map<std::pair<int, int>, std::pair<int, int>> merges_;  // (left, right) -> (rank, merged)
    int eot_id_ = -1;
    struct Regex;
    std::unique_ptr<Regex> regex_;
    mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

/// GPT-2's map from bytes to printable symbols (the characters in `vocab.json`), as UTF-8.
/// Introduced in chapter 00.
std::vector<std::string> gpt2_byte_symbols();

}  // namespace decodebook
