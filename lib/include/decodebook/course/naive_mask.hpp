#pragma once
/// @file course/naive_mask.hpp
/// @brief The token mask written without an automaton (chapter 09): a regex engine, PCRE2, asked
/// for every token whether the text so far plus the token can still become a match. The baseline
/// that chapter 09 and decodebook-bench time the DFA's mask against; never used to decode.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/base/vocabulary.hpp"

namespace decodebook {

/// A pattern compiled by PCRE2 to answer "is this a prefix of a whole match?" and "is this a whole
/// match?": `(?:pattern)\z`, anchored, in UTF mode with invalid UTF-8 allowed in the subject (a
/// token may end inside a character), newline LF, `$` only at the end, `[]` allowed, JIT-compiled
/// when PCRE2 has a JIT (its fastest form, so the baseline is a fair one). Introduced in chapter 09.
class Pcre2Prefix {
public:
    /// Compile `pattern`. A pattern PCRE2 refuses leaves the matcher unusable (see usable, error).
    /// @param pattern a regex in the syntax constrain/regex.hpp reads
    explicit Pcre2Prefix(const std::string& pattern);
    ~Pcre2Prefix();
    Pcre2Prefix(const Pcre2Prefix&) = delete;
    Pcre2Prefix& operator=(const Pcre2Prefix&) = delete;
    /// Whether PCRE2 compiled the pattern.
    bool usable() const;
    /// PCRE2's message when it refused the pattern ("" when it compiled).
    const std::string& error() const { return error_; }
    /// Whether `subject` is a whole match or a proper prefix of one (PCRE2_PARTIAL_HARD). PCRE2 never
    /// reports a partial match of the empty subject: ask only with one or more bytes.
    /// @param subject the text so far and a candidate token
    bool prefix(std::string_view subject);
    /// Whether `subject` is a whole match.
    /// @param subject the text so far
    bool full(std::string_view subject);

private:
    struct Code;
    std::unique_ptr<Code> code_;
    std::string error_;
};

/// The naive mask: every text token (not special, not empty, not an EOS id) for which
/// `re.prefix(text + token)` holds, and the EOS ids when `re.full(text)`; ascending. V regex
/// matches per step, each reading the whole text again. PCRE2 cannot judge a subject that ends
/// inside a UTF-8 character, so where text + token does, its answer may differ from the DFA's
/// (chapter 09, part 5, counts how often). Introduced in chapter 09.
/// @param re the constraint's pattern, compiled (usable)
/// @param vocabulary every id's bytes and the special ids
/// @param text the bytes generated so far
/// @param eos_ids the ids that end generation
std::vector<int> pcre2_allowed_tokens(Pcre2Prefix& re, const Vocabulary& vocabulary, const std::string& text,
                                      std::span<const int> eos_ids);

}  // namespace decodebook
