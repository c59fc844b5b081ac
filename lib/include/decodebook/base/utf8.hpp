#pragma once
/// @file base/utf8.hpp
/// @brief UTF-8 helpers: tokens are bytes, and a token may end in the middle of a character.
#include <string>
#include <string_view>

namespace decodebook {

/// Result of looking at one UTF-8 sequence at the start of a byte range.
struct Utf8Step {
    /// bytes consumed: a whole character, or the maximal invalid subpart (at least 1)
    size_t length = 0;
    /// true: a valid character; false: invalid bytes (or, with `incomplete`, a cut-off character)
    bool valid = false;
    /// true: the bytes are a valid prefix of a character that the range cuts off
    bool incomplete = false;
};

/// Look at the sequence starting at `bytes[0]` under Unicode's rules for well-formed UTF-8
/// (no overlongs, no surrogates, nothing above U+10FFFF). Introduced in chapter 00.
Utf8Step utf8_step(std::string_view bytes);

/// Append the UTF-8 bytes of `code_point` (1 to 4 bytes; the caller keeps it at most U+10FFFF).
/// Introduced in chapter 00 (the tokenizer's byte characters), used again in chapter 09.
/// @param out the text to append to
/// @param code_point the character
void append_utf8(std::string& out, char32_t code_point);

/// Replace every maximal invalid subpart by U+FFFD, as Python's `bytes.decode("utf-8", "replace")`
/// does. Introduced in chapter 00.
std::string to_valid_utf8(std::string_view bytes);

/// Streams token bytes to a terminal without ever printing half a character: a character cut
/// at the end of a token is held back until the next token completes it. Introduced in chapter 00.
class Utf8Stream {
public:
    /// Add bytes; returns the text that is safe to print now (invalid bytes become U+FFFD).
    std::string push(std::string_view bytes);
    /// End of stream: returns whatever was held back, as U+FFFD if it never completed.
    std::string flush();

private:
    std::string pending_;
};

}  // namespace decodebook
