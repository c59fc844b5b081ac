#pragma once
/// @file base/vocabulary.hpp
/// @brief The bytes of every token id and which ids are special (chapter 07, for chapter 09): a
/// plain value, so code that must not know the model (constrain/) and tests with a five-token toy
/// use it without a tokenizer.
#include <string>
#include <vector>

namespace decodebook {

/// Every token's bytes, by id, and the ids that are special: control tokens such as GPT-2's
/// `<|endoftext|>`, which are never text (a token mask must not walk their bytes: EOS is allowed
/// where the output may end, not where the 13 characters `<|endoftext|>` fit). Introduced in chapter 07.
struct Vocabulary {
    std::vector<std::string> bytes;  ///< id -> raw bytes (a special token's: its name, as decode prints it)
    std::vector<int> special;        ///< the special ids, ascending

    /// Number of ids.
    int size() const { return static_cast<int>(bytes.size()); }
    /// Whether `id` is one of the special ids.
    bool is_special(int id) const;
};

}  // namespace decodebook
