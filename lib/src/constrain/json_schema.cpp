// A JSON-schema subset compiled to one regex (chapter 09). The rules follow two engines, cited where
// each is used: Outlines (outlines-core src/json_schema/parsing.rs and types.rs) and llama.cpp
// (common/json-schema-to-grammar.cpp). The subset and the regex syntax are in the header.
#include "decodebook/constrain/json_schema.hpp"

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace decodebook {
namespace {

// Regex text: literals, alternation, repetition in the syntax the byte DFA reads.

std::string hex(uint32_t value, int min_digits) {
    static const char* digits = "0123456789ABCDEF";
    std::string out;
    do {
        out.insert(out.begin(), digits[value % 16]);
        value /= 16;
    } while (value != 0 || static_cast<int>(out.size()) < min_digits);
    return out;
}

// The regex that matches exactly these bytes. Control bytes are written \xHH so the regex stays
// printable; bytes of multi-byte UTF-8 characters stay as they are.
std::string literal(std::string_view bytes) {
    static constexpr std::string_view meta = "\\.|()[]{}*+?^$";
    std::string out;
    for (char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) {
            out += "\\x" + hex(byte, 2);
        } else if (meta.find(c) != std::string_view::npos) {
            out += '\\';
            out += c;
        } else {
            out += c;
        }
    }
    return out;
}

size_t utf8_length(unsigned char lead) {
    if (lead >= 0xF0) return 4;
    if (lead >= 0xE0) return 3;
    if (lead >= 0xC0) return 2;
    return 1;
}

// One past the atom that starts at i: an escape, a class, a group or one UTF-8 character. Used
// only on regexes this file wrote, so every bracket is balanced.
size_t atom_end(std::string_view r, size_t i) {
    if (r[i] == '\\') {
        if (i + 1 < r.size() && r[i + 1] == 'x') {
            if (i + 2 < r.size() && r[i + 2] == '{') return r.find('}', i) + 1;
            return i + 4;
        }
        return i + 2;
    }
    if (r[i] == '[') {
        size_t j = i + 1;
        while (j < r.size() && r[j] != ']') j = r[j] == '\\' ? atom_end(r, j) : j + 1;
        return j + 1;
    }
    if (r[i] == '(') {
        int depth = 0;
        size_t j = i;
        do {
            if (r[j] == '\\' || r[j] == '[') {
                j = atom_end(r, j);
                continue;
            }
            depth += r[j] == '(' ? 1 : r[j] == ')' ? -1 : 0;
            ++j;
        } while (depth > 0 && j < r.size());
        return j;
    }
    return i + utf8_length(static_cast<unsigned char>(r[i]));
}

bool is_atom(std::string_view r) { return !r.empty() && atom_end(r, 0) == r.size(); }

std::string group(const std::string& r) { return is_atom(r) ? r : "(?:" + r + ")"; }

// The alternation of these regexes, without repeats, grouped when there are several.
std::string any_of(const std::vector<std::string>& alternatives) {
    std::vector<std::string> distinct;
    std::unordered_set<std::string_view> seen;  // linear in the alternatives: an enum may list 100,000
    for (const auto& a : alternatives)
        if (seen.insert(a).second) distinct.push_back(a);
    if (distinct.size() == 1) return distinct.front();
    std::string out = "(?:";
    for (size_t i = 0; i < distinct.size(); ++i) out += (i ? "|" : "") + distinct[i];
    return out + ")";
}

constexpr long kUnbounded = -1;
constexpr long kMaxRepeat = 1000;  // the DFA compiler's largest {m,n}

// r repeated lo to hi times (hi = kUnbounded: no limit), in the shortest spelling.
std::string repeat(const std::string& r, long lo, long hi) {
    if (hi == 0 || r.empty()) return "";
    if (lo > kMaxRepeat || hi > kMaxRepeat)
        throw Error("a repetition of " + std::to_string(std::max(lo, hi)) + " is more than the regex allows",
                    "keep counts at " + std::to_string(kMaxRepeat) + " or below");
    const std::string a = group(r);
    if (lo == 1 && hi == 1) return r;
    if (lo == 0 && hi == 1) return a + "?";
    if (lo == 0 && hi == kUnbounded) return a + "*";
    if (lo == 1 && hi == kUnbounded) return a + "+";
    if (lo == hi) return a + "{" + std::to_string(lo) + "}";
    if (hi == kUnbounded) return a + "{" + std::to_string(lo) + ",}";
    return a + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

// Integers between two bounds, as digit ranges (llama.cpp's build_min_max_int: the same language,
// written as one recursion on equal-length decimal strings).

// A side without a bound allows at most 16 digits (llama.cpp's `integral-part`, [1-9][0-9]{0,15}).
constexpr int64_t kLargestInteger = 9'999'999'999'999'999;

std::string digit_class(char from, char to) {
    return from == to ? std::string(1, from) : std::string("[") + from + "-" + to + "]";
}

// Every decimal string of lo's length between lo and hi (lo <= hi, same length, no sign).
std::string same_length_range(std::string_view lo, std::string_view hi) {
    size_t common = 0;
    while (common < lo.size() && lo[common] == hi[common]) ++common;
    const std::string prefix(lo.substr(0, common));
    if (common == lo.size()) return prefix;
    const char a = lo[common], b = hi[common];
    const std::string_view lo_rest = lo.substr(common + 1), hi_rest = hi.substr(common + 1);
    const std::string zeros(lo_rest.size(), '0'), nines(lo_rest.size(), '9');
    const long rest = static_cast<long>(lo_rest.size());
    // a.lo_rest up to a.99..9, then whole decades, then b.00..0 up to b.hi_rest
    std::vector<std::string> alternatives;
    char first = a, last = b;
    if (lo_rest != zeros) {
        alternatives.push_back(std::string(1, a) + same_length_range(lo_rest, nines));
        ++first;
    }
    if (hi_rest != nines) --last;
    if (first <= last) alternatives.push_back(digit_class(first, last) + repeat("[0-9]", rest, rest));
    if (hi_rest != nines) alternatives.push_back(std::string(1, b) + same_length_range(zeros, hi_rest));
    return prefix + any_of(alternatives);
}

// Every canonical decimal integer from lo to hi (0 <= lo <= hi): one alternative per length, the
// lengths whose every integer is in range merged into one ([1-9][0-9]{1,15}, llama.cpp's form).
std::vector<std::string> nonnegative_range(int64_t lo, int64_t hi) {
    std::vector<std::string> alternatives;
    long whole_from = 0, whole_to = 0;  // a run of whole lengths (2 digits or more), 0 when none
    auto close_run = [&] {
        if (whole_from != 0) alternatives.push_back("[1-9]" + repeat("[0-9]", whole_from - 1, whole_to - 1));
        whole_from = 0;
    };
    int64_t smallest = 0, largest = 9;  // the integers written with `digits` digits
    for (long digits = 1; smallest <= hi; ++digits) {
        if (largest >= lo) {
            if (digits == 1 && lo <= 1 && hi >= 9) {  // 1 to 9 opens the run: [1-9][0-9]{0,15}
                if (lo == 0) alternatives.push_back("0");
                whole_from = whole_to = 1;
            } else if (digits > 1 && lo <= smallest && largest <= hi) {
                if (whole_from == 0) whole_from = digits;
                whole_to = digits;
            } else {
                close_run();
                alternatives.push_back(
                    same_length_range(std::to_string(std::max(lo, smallest)), std::to_string(std::min(hi, largest))));
            }
        }
        smallest = largest + 1;
        largest = largest * 10 + 9;
    }
    close_run();
    return alternatives;
}

// Every canonical JSON integer from lo to hi (no -0, no leading zeros).
std::string integer_range(int64_t lo, int64_t hi) {
    std::vector<std::string> alternatives;
    if (lo < 0) alternatives.push_back("-" + any_of(nonnegative_range(hi < 0 ? -hi : 1, -lo)));
    if (hi >= 0)
        for (auto& a : nonnegative_range(std::max<int64_t>(lo, 0), hi)) alternatives.push_back(std::move(a));
    return any_of(alternatives);
}

// Numbers (llama.cpp's `number` rule: at most 16 digits per part), split by sign so that bounds at
// 0 are exact: the sign of a JSON number and whether it is zero do not depend on its exponent.

const std::string kFraction = "(?:\\.[0-9]{1,16})?";
const std::string kExponent = "(?:[eE][+\\-]?[0-9]{1,16})?";

// 1 to 16 fraction digits, not all zero: k zeros, a non-zero digit, then at most 15 - k digits.
std::string nonzero_fraction() {
    std::vector<std::string> alternatives;
    for (long zeros = 0; zeros < 16; ++zeros)
        alternatives.push_back(repeat("0", zeros, zeros) + "[1-9]" + repeat("[0-9]", 0, 15 - zeros));
    return any_of(alternatives);
}

std::string positive_number() {
    return "(?:[1-9][0-9]{0,15}" + kFraction + "|0\\." + nonzero_fraction() + ")" + kExponent;
}

std::string zero_number() { return "-?0(?:\\.0{1,16})?" + kExponent; }

std::string any_number() { return "-?(?:0|[1-9][0-9]{0,15})" + kFraction + kExponent; }

// JSON strings (RFC 8259 section 7; Outlines' STRING_INNER in types.rs, with \uXXXX, which Outlines
// lacks, and without its exclusion of U+007F to U+009F, which JSON allows raw).

// One character of a JSON string: raw, a short escape, or \uXXXX where a high surrogate must be
// followed by a low one (nlohmann::json refuses a lone surrogate), so a pair is one character.
const std::string kJsonChar =
    "(?:[^\"\\\\\\x00-\\x1F]|\\\\(?:[\"\\\\/bfnrt]|u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}"
    "|[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})))";

// RFC 3339 full-date, with February 29 only in leap years (the proleptic Gregorian rule).
const std::string kDate =
    "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
    "-02-29)";

// llama.cpp's `uuid` rule (either case of hex digit).
const std::string kUuid =
    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

// A string pattern, read in the DFA's syntax and rewritten so that what it matches is written as
// nlohmann::json::dump writes it: raw, except `"`, `\` and U+0000 to U+001F, which take escapes.

using Ranges = std::vector<std::pair<char32_t, char32_t>>;  // sorted, disjoint, inclusive
constexpr char32_t kLastCodePoint = 0x10FFFF;

Ranges normalised(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (const auto& [a, b] : r) {
        if (!out.empty() && a <= out.back().second + 1)
            out.back().second = std::max(out.back().second, b);
        else
            out.emplace_back(a, b);
    }
    return out;
}

Ranges complement(const Ranges& r) {
    Ranges out;
    char32_t next = 0;
    for (const auto& [a, b] : r) {
        if (a > next) out.emplace_back(next, a - 1);
        next = b + 1;
    }
    if (next <= kLastCodePoint) out.emplace_back(next, kLastCodePoint);
    return out;
}

// The classes of a schema's pattern. JSON Schema's patterns are ECMA-262 regexes: `.` matches
// any character but a line terminator (\n, \r, U+2028, U+2029: ECMA-262 LineTerminator), so
// "a\rb" never matches ^a.b$; \d \w \s are ASCII (\s as PCRE2's: space, \t \n \v \f \r), and
// \D \W \S their complements.
const Ranges kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};
const Ranges kDigits = {{'0', '9'}};
const Ranges kWordCharacters = normalised({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}});
const Ranges kSpaces = normalised({{' ', ' '}, {'\t', '\r'}});

Ranges intersect(const Ranges& x, const Ranges& y) {
    Ranges out;
    for (const auto& [a, b] : x)
        for (const auto& [c, d] : y)
            if (std::max(a, c) <= std::min(b, d)) out.emplace_back(std::max(a, c), std::min(b, d));
    return normalised(out);
}

std::string utf8(char32_t cp) {
    std::string out;
    append_utf8(out, cp);
    return out;
}

// The characters JSON may not write raw inside a string.
const Ranges kMustEscape = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};

// One member of a class: letters and digits as they are, anything else as \xHH or \x{HHHH}.
std::string class_member(char32_t cp) {
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return std::string(1, char(cp));
    return cp < 0x80 ? "\\x" + hex(cp, 2) : "\\x{" + hex(cp, 4) + "}";
}

std::string class_text(const Ranges& r, bool negated) {
    std::string out = negated ? "[^" : "[";
    for (const auto& [a, b] : r) {
        out += class_member(a);
        if (b > a) out += (b > a + 1 ? "-" : "") + class_member(b);
    }
    return out + "]";
}

// The regex of characters written raw: one literal, a class, or its negation when that is shorter.
std::string raw_characters(const Ranges& raw) {
    if (raw.empty()) return "";
    if (raw.size() == 1 && raw[0].first == raw[0].second) return literal(utf8(raw[0].first));
    const Ranges others = complement(raw);
    return others.size() <= raw.size() ? class_text(others, true) : class_text(raw, false);
}

// A sorted list of distinct hex digits as a regex: one digit, or a class with runs as ranges.
std::string digit_set(const std::string& digits) {
    if (digits.size() == 1) return digits;
    static constexpr std::string_view order = "0123456789abcdef";
    std::string out = "[";
    for (size_t i = 0; i < digits.size();) {
        size_t j = i;
        // a run stops between 9 and a: [0-f] would take in the punctuation and capitals between
        while (j + 1 < digits.size() && digits[j] != '9' && order.find(digits[j + 1]) == order.find(digits[j]) + 1) ++j;
        out += digits[i];
        if (j > i) out += (j > i + 1 ? "-" : "") + std::string(1, digits[j]);
        i = j + 1;
    }
    return out + "]";
}

// The escapes nlohmann::json::dump writes for these characters: \" \\ \b \f \n \r \t, or \u00xx.
std::vector<std::string> escaped_characters(const Ranges& special) {
    std::vector<std::string> short_forms;  // the letter after the backslash, as a regex
    std::string low_digits[2];  // \u000x and \u001x, by their last hex digit
    for (const auto& [a, b] : special) {
        for (char32_t cp = a; cp <= b; ++cp) {
            static constexpr std::string_view shorts = "\"\\\b\f\n\r\t", letters = "\"\\bfnrt";
            const size_t s = shorts.find(char(cp));
            if (s != std::string_view::npos)
                short_forms.push_back(cp == '\\' ? "\\\\" : std::string(1, letters[s]));
            else
                low_digits[cp >> 4] += "0123456789abcdef"[cp & 0xF];
        }
    }
    std::vector<std::string> out;
    if (short_forms.size() == 1) out.push_back("\\\\" + short_forms.front());
    if (short_forms.size() > 1) {
        std::string members;
        for (const auto& f : short_forms) members += f;
        out.push_back("\\\\[" + members + "]");
    }
    std::vector<std::string> long_forms;
    for (int high = 0; high < 2; ++high) {
        const std::string& d = low_digits[high];
        if (!d.empty()) long_forms.push_back(std::to_string(high) + digit_set(d));
    }
    if (!long_forms.empty()) out.push_back("\\\\u00" + any_of(long_forms));
    return out;
}

// The regex of the JSON text of one character from this set.
std::string json_characters(const Ranges& set) {
    const Ranges special = intersect(set, kMustEscape);
    std::vector<std::string> alternatives;
    if (auto raw = raw_characters(intersect(set, complement(kMustEscape))); !raw.empty()) alternatives.push_back(raw);
    for (auto& e : escaped_characters(special)) alternatives.push_back(std::move(e));
    return any_of(alternatives);
}

// A reader of one `pattern` in the DFA's syntax, writing its JSON-text twin as it goes.
class PatternReader {
public:
    PatternReader(std::string_view pattern, std::string where) : where_(std::move(where)) { decode(pattern); }

    std::string read() {
        if (text_.size() < 2 || text_.front() != '^' || !unescaped_dollar_at_end())
            fail("it does not start with ^ and end with $",
                 "anchor it, e.g. ^[a-z]+$ (JSON Schema's patterns search anywhere; this converter, like "
                 "llama.cpp, reads only anchored ones)");
        text_.pop_back();
        pos_ = 1;
        std::string out = alternation();
        if (pos_ != text_.size()) fail("an unmatched )", "balance the parentheses");
        return out;
    }

private:
    // Groups a schema pattern may nest (the regex compiler takes 200 in all, and the schema's own
    // structure adds groups around the pattern's).
    static constexpr int kMaxPatternNesting = 100;
    std::u32string text_;
    size_t pos_ = 0;
    int depth_ = 0;  // groups open at pos_
    std::string where_;

    [[noreturn]] void fail(const std::string& problem, const std::string& fix) const {
        throw Error("pattern at " + where_ + ": " + problem + " (at character " + std::to_string(pos_) + ")", fix);
    }

    void decode(std::string_view s) {
        for (size_t i = 0; i < s.size();) {
            const auto lead = static_cast<unsigned char>(s[i]);
            const size_t n = utf8_length(lead);
            if (i + n > s.size() || (lead >= 0x80 && lead < 0xC0)) fail("it is not valid UTF-8", "write the pattern in UTF-8");
            char32_t cp = n == 1 ? lead : lead & (0xFF >> (n + 1));
            for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
            text_.push_back(cp);
            i += n;
        }
    }

    bool unescaped_dollar_at_end() const {
        if (text_.back() != '$') return false;
        size_t backslashes = 0;
        for (size_t i = text_.size() - 1; i > 0 && text_[i - 1] == '\\'; --i) ++backslashes;
        return backslashes % 2 == 0;
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char32_t peek() const { return at_end() ? 0 : text_[pos_]; }

    std::string alternation() {
        std::vector<std::string> branches{sequence()};
        while (peek() == '|') {
            ++pos_;
            branches.push_back(sequence());
        }
        if (branches.size() == 1) return branches.front();
        std::string out;
        for (size_t i = 0; i < branches.size(); ++i) out += (i ? "|" : "") + branches[i];
        return out;
    }

    std::string sequence() {
        std::string out;
        while (!at_end() && peek() != '|' && peek() != ')') out += quantified(atom());
        return out;
    }

    std::string quantified(const std::string& a) {
        const char32_t c = peek();
        std::string out;
        if (c == '*' || c == '+' || c == '?') {
            ++pos_;
            out = group(a) + char(c);
        } else if (c == '{') {
            out = group(a) + counted();
        } else {
            return a;
        }
        if (const char32_t next = peek(); next == '*' || next == '+' || next == '?' || next == '{')
            fail("a quantifier after a quantifier (lazy or possessive)", "use one greedy quantifier: the set of matches is what counts");
        return out;
    }

    long number() {
        long n = -1;
        while (!at_end() && peek() >= '0' && peek() <= '9') {
            n = std::max(n, 0L) * 10 + long(peek() - '0');
            if (n > kMaxRepeat) fail("a count above " + std::to_string(kMaxRepeat), "use counts of at most 1000");
            ++pos_;
        }
        return n;
    }

    std::string counted() {
        ++pos_;  // {
        const long lo = number();
        long hi = lo;
        if (peek() == ',') {
            ++pos_;
            hi = number();
        }
        if (lo < 0 || peek() != '}') fail("a { that is not a count {m}, {m,} or {m,n}", "escape a literal brace as \\{");
        ++pos_;
        if (hi != -1 && hi < lo) fail("a count {m,n} with n below m", "write the smaller count first");
        return "{" + std::to_string(lo) + (hi == lo ? "" : "," + (hi == -1 ? "" : std::to_string(hi))) + "}";
    }

    std::string atom() {
        const char32_t c = text_[pos_];
        if (c == '(') return parenthesised();
        if (c == '[') return json_characters(character_class());
        if (c == '.') {
            ++pos_;
            return json_characters(complement(kLineTerminators));
        }
        if (c == '\\') return json_characters(escape(false));
        if (c == '*' || c == '+' || c == '?' || c == '{') fail("a quantifier with nothing before it", "escape it, e.g. \\*");
        if (c == '^' || c == '$') fail("an anchor inside the pattern", "keep ^ first and $ last only, or escape it");
        ++pos_;
        return json_characters({{c, c}});
    }

    std::string parenthesised() {
        // each group is a level of this reader's recursion: bound it before the stack is
        if (++depth_ > kMaxPatternNesting)
            fail("groups nested more than " + std::to_string(kMaxPatternNesting) + " deep",
                 "flatten the pattern's groups (a group that holds one group adds nothing)");
        ++pos_;
        if (peek() == '?') {
            if (pos_ + 1 < text_.size() && text_[pos_ + 1] == ':')
                pos_ += 2;
            else
                fail("a group (?...) other than (?:", "write lookarounds and flags out of the pattern");
        }
        std::string inner = alternation();
        if (peek() != ')') fail("an unclosed (", "close every group");
        ++pos_;
        --depth_;
        return "(?:" + inner + ")";
    }

    // One escape at pos_ (the backslash): the characters it stands for.
    Ranges escape(bool in_class) {
        ++pos_;
        if (at_end()) fail("a backslash at the end", "escape it as \\\\");
        const char32_t c = text_[pos_++];
        switch (c) {
            case 'd': return kDigits;
            case 'w': return kWordCharacters;
            case 's': return kSpaces;
            case 'D': return complement(kDigits);  // each upper-case class is exactly what its lower-case one is not
            case 'W': return complement(kWordCharacters);
            case 'S': return complement(kSpaces);
            case 'n': return {{'\n', '\n'}};
            case 't': return {{'\t', '\t'}};
            case 'r': return {{'\r', '\r'}};
            case 'x': {
                const char32_t v = hex_escape();
                return {{v, v}};
            }
            default: break;
        }
        static constexpr std::u32string_view escapable = U"\\.|()[]{}*+?^$/-\"";
        if (escapable.find(c) == std::u32string_view::npos)
            fail(std::string("the escape \\") + (c < 0x80 ? std::string(1, char(c)) : utf8(c)) + " (not in the DFA's syntax)",
                 in_class ? "write the character itself" : "use \\d \\w \\s \\D \\W \\S \\n \\t \\r \\xHH or escape punctuation");
        return {{c, c}};
    }

    char32_t hex_digits(size_t count_max, bool braced) {
        char32_t v = 0;
        size_t n = 0;
        while (n < count_max && !at_end() && peek() < 0x80 && std::isxdigit(int(peek()))) {
            const char32_t d = peek();
            v = v * 16 + (d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
            ++pos_;
            ++n;
        }
        if (n == 0 || (!braced && n != 2)) fail("a \\x escape without its hex digits", "write \\xHH or \\x{HHHH}");
        return v;
    }

    char32_t hex_escape() {
        char32_t v;
        if (peek() == '{') {
            ++pos_;
            v = hex_digits(6, true);
            if (peek() != '}') fail("an unclosed \\x{", "write \\x{HHHH}");
            ++pos_;
        } else {
            v = hex_digits(2, false);
        }
        if (v > kLastCodePoint || (v >= 0xD800 && v <= 0xDFFF)) fail("a \\x escape that is not a character", "use a code point up to 10FFFF, not a surrogate");
        return v;
    }

    // A class at pos_ ([ ... ]): the characters it matches.
    Ranges character_class() {
        ++pos_;
        const bool negated = peek() == '^';
        if (negated) ++pos_;
        Ranges members;
        bool first = true;
        while (!at_end() && (peek() != ']' || first)) {
            first = false;
            Ranges from = class_atom();
            if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                Ranges to = class_atom();
                if (from.size() != 1 || to.size() != 1 || from[0].first != from[0].second || to[0].first != to[0].second)
                    fail("a range whose end is a class such as \\d", "write the range between two characters");
                if (to[0].first < from[0].first) fail("a range that runs backwards", "write the lower end first");
                members.emplace_back(from[0].first, to[0].first);
            } else {
                members.insert(members.end(), from.begin(), from.end());
            }
        }
        if (at_end()) fail("an unclosed [", "close the class with ]");
        ++pos_;
        members = normalised(members);
        return negated ? complement(members) : members;
    }

    Ranges class_atom() {
        if (peek() == '\\') return escape(true);
        if (peek() == '[') fail("a [ inside a class", "escape it as \\[");
        const char32_t c = text_[pos_++];
        return {{c, c}};
    }
};

// Keywords: which the subset reads, which it ignores, and what to do about the others.

bool is_annotation(std::string_view key) {
    static constexpr std::string_view ignored[] = {"title",      "description", "$schema",  "$id",
                                                   "$comment",   "default",     "examples", "deprecated",
                                                   "readOnly",   "writeOnly",   "discriminator",
                                                   "$defs",      "definitions"};
    return std::find(std::begin(ignored), std::end(ignored), key) != std::end(ignored);
}

const std::vector<std::string_view>& type_keywords(std::string_view type) {
    static const std::vector<std::string_view> string = {"minLength", "maxLength", "pattern", "format"},
                                               bounds = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
                                               array = {"items", "minItems", "maxItems"},
                                               object = {"properties", "required", "additionalProperties"}, none = {};
    if (type == "string") return string;
    if (type == "integer" || type == "number") return bounds;
    if (type == "array") return array;
    if (type == "object") return object;
    return none;
}

constexpr std::string_view kTypes[] = {"string", "integer", "number", "boolean", "null", "array", "object"};

bool is_type_keyword(std::string_view key) {
    for (auto type : kTypes)
        for (auto k : type_keywords(type))
            if (k == key) return true;
    return false;
}

// The keywords that choose how a schema is read: by type, as values, as alternatives, by reference.
bool is_form_keyword(std::string_view key) {
    return key == "type" || key == "enum" || key == "const" || key == "anyOf" || key == "oneOf" || key == "$ref";
}

std::string fix_for(std::string_view key) {
    if (key == "uniqueItems") return "a regex cannot remember earlier items: remove uniqueItems and check uniqueness after decoding";
    if (key == "patternProperties" || key == "propertyNames" || key == "unevaluatedProperties" ||
        key == "additionalProperties")
        return "name every property under properties: only the listed properties are written (additionalProperties false)";
    if (key == "minProperties" || key == "maxProperties" || key == "dependentRequired" || key == "dependentSchemas" ||
        key == "dependencies")
        return "say which properties must be present with required";
    if (key == "allOf") return "merge the schemas into one";
    if (key == "if" || key == "then" || key == "else" || key == "not")
        return "write the cases as anyOf branches, each a complete schema";
    if (key == "prefixItems" || key == "contains" || key == "minContains" || key == "maxContains" ||
        key == "additionalItems" || key == "unevaluatedItems")
        return "describe every item with one items schema";
    if (key == "multipleOf") return "list the allowed values with enum, or remove multipleOf";
    if (key == "nullable") return "write the type as a list: \"type\": [\"string\", \"null\"]";
    return "remove it: the supported keywords are listed in decodebook/constrain/json_schema.hpp";
}

std::string pointer_token(std::string_view key) {
    std::string out;
    for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
}

// A JSON-pointer token with its escapes undone in one pass (RFC 6901: ~1 is /, ~0 is ~, so ~01 is ~1).
std::string pointer_unescape(std::string_view token) {
    std::string out;
    for (size_t i = 0; i < token.size(); ++i) {
        const bool escape = token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1');
        out += escape ? (token[++i] == '0' ? '~' : '/') : token[i];
    }
    return out;
}

std::string pointer_child(const std::string& at, std::string_view key) { return at + "/" + pointer_token(key); }

std::string schema_name(const std::string& at) { return at.empty() ? "the root schema" : "the schema at " + at; }

// Does the document location x lie inside (or at) the location t?
bool inside(const std::string& x, const std::string& t) {
    return x == t || (x.size() > t.size() && x.compare(0, t.size(), t) == 0 && x[t.size()] == '/');
}

// How deeply `value` nests objects and arrays (a scalar: 0), without recursing: an explicit stack,
// so a value nested past any limit is measured, not followed down the call stack. Stops counting
// at `limit` + 1.
template <class Json>
int nesting(const Json& value, int limit) {
    std::vector<std::pair<const Json*, int>> todo{{&value, 0}};
    int deepest = 0;
    while (!todo.empty()) {
        const auto [v, depth] = todo.back();
        todo.pop_back();
        if (!v->is_structured()) continue;
        deepest = std::max(deepest, depth + 1);
        if (deepest > limit) return deepest;
        for (const Json& child : *v) todo.push_back({&child, depth + 1});
    }
    return deepest;
}

// What the converter may write. An array writes its items' regex twice (the first item, then
// `(, item)*`), n optional properties write about n^2 / 2 members, and a $ref copies its
// definition each place it is used, so a schema of a few hundred bytes can ask for gigabytes (20
// nested arrays, 518 bytes: 2.7 GB before the DFA compiler refused them). Each part's regex is
// measured as it is built, before it is copied again. A regex of 1 MiB is far past what the DFA
// compiler takes (RegexLimits: 200,000 NFA states; the converter's regexes take 0.6 to 1.6 states
// a byte). All that every visit returns is bounded too, a backstop for copies the alternation
// drops (anyOf keeps one of equal branches).
constexpr size_t kMaxRegexBytes = size_t{1} << 20;
constexpr size_t kMaxWrittenBytes = size_t{64} << 20;

[[noreturn]] void too_deep(const std::string& what) {
    throw Error(what + " nests objects and arrays more than " + std::to_string(kMaxSchemaNesting) + " levels deep",
                "flatten the schema: at most " + std::to_string(kMaxSchemaNesting) + " levels of nesting are supported");
}

// The converter: one visit per schema, its JSON pointer carried for the errors.

template <class Json>
class Converter {
public:
    Converter(const Json& root, const JsonWhitespace& whitespace) : root_(root) {
        const int k = whitespace.max_spaces;
        if (k < 0 || k > kMaxRepeat)
            throw Error("JsonWhitespace::max_spaces is " + std::to_string(k),
                        "give 0 (compact JSON) up to " + std::to_string(kMaxRepeat));
        // The four whitespace characters of JSON (RFC 8259), at most k in a row: never `*`.
        ws_ = k == 0 ? "" : repeat("[ \\t\\n\\r]", 0, k);
    }

    // The whole document is measured first: no schema or value below is deeper than it.
    std::string convert() {
        if (nesting(root_, kMaxSchemaNesting) > kMaxSchemaNesting) too_deep("the JSON schema");
        return visit(root_, "");
    }

private:
    const Json& root_;
    std::string ws_;
    std::vector<std::string> active_refs_;  // where each $ref being expanded stands
    size_t written_ = 0;                     // bytes of regex every visit so far returned
    std::map<std::string, std::string> expanded_;  // each $ref target's regex, written once

    // `bytes` of regex for the schema at `at`, about to be written: refused past the bounds above,
    // naming the part that grew and why it can (`why`).
    void check_size(size_t bytes, const std::string& at,
                    const char* why = "each array writes its items' regex twice, so nested arrays double it") const {
        if (bytes > kMaxRegexBytes)
            throw Error("the regex of " + schema_name(at) + " grows past " + std::to_string(kMaxRegexBytes) +
                            " bytes, more than the DFA compiler could take (" + why + ")",
                        "make the schema smaller: fewer nested arrays, properties or enum values");
        if (written_ + bytes > kMaxWrittenBytes)
            throw Error("converting the JSON schema writes more than " + std::to_string(kMaxWrittenBytes) +
                            " bytes of regex, reached at " + schema_name(at) +
                            " (each $ref writes its definition again where it is used)",
                        "make the schema smaller: fewer $ref uses of large definitions, fewer nested arrays");
    }

    std::string visit(const Json& schema, const std::string& at) {
        std::string out = visit_schema(schema, at);
        check_size(out.size(), at);
        written_ += out.size();
        return out;
    }

    [[noreturn]] static void refuse(std::string_view key, const std::string& at) {
        throw Error("JSON-schema keyword \"" + std::string(key) + "\" at " + pointer_child(at, key) +
                        " is outside the subset json_schema_regex converts",
                    fix_for(key));
    }

    [[noreturn]] static void malformed(std::string_view key, const std::string& at, const std::string& what,
                                       const std::string& fix) {
        throw Error("malformed schema: \"" + std::string(key) + "\" at " + pointer_child(at, key) + " " + what, fix);
    }

    std::string visit_schema(const Json& schema, const std::string& at) {
        if (schema.is_boolean())
            throw Error(schema_name(at) + " is the boolean schema " + schema.dump() + ", outside the subset",
                        "write an object schema with a type");
        if (!schema.is_object())
            throw Error("malformed schema: " + schema_name(at) + " is " + std::string(schema.type_name()) + ", not an object",
                        "write each schema as a JSON object, e.g. {\"type\": \"string\"}");
        // A keyword the subset never reads is named first, whatever else the schema holds.
        for (const auto& [key, value] : schema.items())
            if (!is_annotation(key) && !is_type_keyword(key) && !is_form_keyword(key)) refuse(key, at);
        if (schema.contains("$ref")) {
            check_only(schema, at, {"$ref"}, "$ref");
            return visit_ref(schema, at);
        }
        for (std::string_view key : {"anyOf", "oneOf"}) {
            if (schema.contains(std::string(key))) {
                check_only(schema, at, {key}, key);
                return visit_union(schema, at, key);
            }
        }
        if (schema.contains("enum") || schema.contains("const")) {
            check_only(schema, at, {"enum", "const", "type"}, "enum or const");
            return visit_values(schema, at);
        }
        const std::vector<std::string> types = read_types(schema, at);
        check_type_keywords(schema, at, types);
        std::vector<std::string> alternatives;
        for (const auto& type : types) alternatives.push_back(visit_type(type, schema, at));
        return any_of(alternatives);
    }

    // Keywords beside $ref, anyOf, oneOf, enum or const: annotations and `allowed` only.
    void check_only(const Json& schema, const std::string& at, std::initializer_list<std::string_view> allowed,
                    std::string_view form) const {
        for (const auto& [key, value] : schema.items()) {
            if (is_annotation(key) || std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
            if (is_type_keyword(key) || is_form_keyword(key))
                throw Error("JSON-schema keyword \"" + key + "\" at " + pointer_child(at, key) + " stands beside " +
                                std::string(form) + ", which the subset reads alone",
                            "move it into each alternative (or each value), or split the schema");
            refuse(key, at);
        }
    }

    void check_type_keywords(const Json& schema, const std::string& at, const std::vector<std::string>& types) const {
        for (const auto& [key, value] : schema.items()) {
            if (is_annotation(key) || key == "type") continue;
            bool applies = false;
            for (const auto& type : types)
                for (auto k : type_keywords(type)) applies = applies || k == key;
            if (applies) continue;
            if (is_type_keyword(key)) {
                std::string listed;
                for (const auto& type : types) listed += (listed.empty() ? "" : ", ") + type;
                throw Error("JSON-schema keyword \"" + key + "\" at " + pointer_child(at, key) +
                                " does not apply to type " + listed,
                            "remove it, or give the schema the type it belongs to");
            }
            refuse(key, at);
        }
    }

    // The schema's types: its `type`, or inferred from its keywords as llama.cpp does.
    std::vector<std::string> read_types(const Json& schema, const std::string& at) const {
        if (!schema.contains("type")) {
            if (schema.contains("properties")) return {"object"};
            if (schema.contains("items")) return {"array"};
            if (schema.contains("pattern")) return {"string"};
            throw Error(schema_name(at) + " has no type: a schema that allows any JSON value is outside the subset",
                        "give it a type (\"type\": \"object\" with properties, \"string\", ...)");
        }
        const Json& type = schema["type"];
        std::vector<std::string> types;
        if (type.is_string()) types.push_back(type.template get<std::string>());
        if (type.is_array())
            for (const auto& t : type)
                if (t.is_string()) types.push_back(t.template get<std::string>());
        if (types.empty() || (type.is_array() && types.size() != type.size()))
            malformed("type", at, "is " + type.dump() + ", not a type name or a list of them",
                      "write \"type\": \"string\" or \"type\": [\"string\", \"null\"]");
        for (const auto& t : types)
            if (std::find(std::begin(kTypes), std::end(kTypes), t) == std::end(kTypes))
                malformed("type", at, "names \"" + t + "\", which is not a JSON-schema type",
                          "use string, integer, number, boolean, null, array or object");
        return types;
    }

    std::string visit_type(const std::string& type, const Json& schema, const std::string& at) {
        if (type == "string") return visit_string(schema, at);
        if (type == "integer") return visit_integer(schema, at);
        if (type == "number") return visit_number(schema, at);
        if (type == "boolean") return "(?:true|false)";
        if (type == "null") return "null";
        if (type == "array") return visit_array(schema, at);
        return visit_object(schema, at);
    }

    // A local $ref, expanded in place; refused when it would expand itself again.
    std::string visit_ref(const Json& schema, const std::string& at) {
        const Json& ref = schema["$ref"];
        if (!ref.is_string()) malformed("$ref", at, "is not a string", "write \"$ref\": \"#/$defs/Name\"");
        const std::string text = ref.template get<std::string>();
        if (text.empty() || text[0] != '#' || (text.size() > 1 && text[1] != '/'))
            throw Error("$ref \"" + text + "\" at " + pointer_child(at, "$ref") +
                            " is not a local JSON pointer (remote schemas and anchors are outside the subset)",
                        "put the schema under $defs and write \"$ref\": \"#/$defs/Name\"");
        const std::string target = text.substr(1);
        bool recursive = inside(at, target);
        for (const auto& r : active_refs_) recursive = recursive || inside(r, target);
        if (recursive)
            throw Error("$ref \"" + text + "\" at " + pointer_child(at, "$ref") +
                            " is recursive: a regex cannot nest without bound",
                        "unroll the recursion to the depth you need, one definition per level");
        const Json* node = &root_;
        for (size_t i = 2; i <= text.size() && text.size() > 1;) {
            const size_t end = std::min(text.find('/', i), text.size());
            const std::string token = pointer_unescape(std::string_view(text).substr(i, end - i));
            const Json* next = nullptr;
            if (node->is_object() && node->contains(token)) next = &(*node)[token];
            if (node->is_array() && !token.empty() && token.find_first_not_of("0123456789") == std::string::npos &&
                std::stoul(token) < node->size())
                next = &(*node)[std::stoul(token)];
            if (next == nullptr)
                throw Error("$ref \"" + text + "\" at " + pointer_child(at, "$ref") + " points to nothing",
                            "point it at a definition that exists, e.g. #/$defs/Name");
            node = next;
            i = end + 1;
        }
        // written once: 40 definitions each naming the one before twice (anyOf) took 2^40 visits
        if (const auto done = expanded_.find(target); done != expanded_.end()) return done->second;
        active_refs_.push_back(at);
        std::string out = visit(*node, target);
        active_refs_.pop_back();
        expanded_.emplace(target, out);
        return out;
    }

    // anyOf and oneOf: the alternation of the branches (Outlines' parse_any_of / parse_one_of).
    std::string visit_union(const Json& schema, const std::string& at, std::string_view key) {
        const Json& branches = schema[std::string(key)];
        if (!branches.is_array() || branches.empty())
            malformed(key, at, "is not a non-empty list of schemas", "write a list of schemas");
        std::vector<std::string> alternatives;
        const std::string here = pointer_child(at, key);
        size_t bytes = 0;
        for (size_t i = 0; i < branches.size(); ++i) {
            alternatives.push_back(visit(branches[i], here + "/" + std::to_string(i)));
            check_size(bytes += alternatives.back().size() + 1, at);
        }
        return any_of(alternatives);
    }

    static bool has_type(const Json& value, const std::string& type) {
        if (type == "string") return value.is_string();
        if (type == "number") return value.is_number();
        if (type == "integer")
            return value.is_number_integer() ||
                   (value.is_number_float() && std::isfinite(value.template get<double>()) &&
                    std::floor(value.template get<double>()) == value.template get<double>());
        if (type == "boolean") return value.is_boolean();
        if (type == "null") return value.is_null();
        if (type == "array") return value.is_array();
        return value.is_object();
    }

    // enum and const: each allowed value written compactly (llama.cpp: format_literal(dump())).
    std::string visit_values(const Json& schema, const std::string& at) const {
        std::vector<Json> values;
        if (schema.contains("enum")) {
            const Json& e = schema["enum"];
            if (!e.is_array() || e.empty()) malformed("enum", at, "is not a non-empty list", "list the allowed values");
            values.assign(e.begin(), e.end());
        }
        if (schema.contains("const")) {
            const Json& c = schema["const"];
            if (schema.contains("enum") && std::find(values.begin(), values.end(), c) == values.end())
                throw Error("at " + (at.empty() ? std::string("the root") : at) + " const " + c.dump() +
                                " is not among the enum values: no value is allowed",
                            "make const one of the enum values, or remove one of them");
            values = {c};
        }
        if (schema.contains("type")) {
            const std::vector<std::string> types = read_types(schema, at);
            std::erase_if(values, [&](const Json& v) {
                return std::none_of(types.begin(), types.end(), [&](const auto& t) { return has_type(v, t); });
            });
            if (values.empty())
                throw Error("no enum or const value at " + (at.empty() ? std::string("the root") : at) +
                                " has the schema's type " + schema["type"].dump() + ": no value is allowed",
                            "list values of that type, or remove the type");
        }
        std::vector<std::string> alternatives;
        for (const auto& v : values) {
            try {
                alternatives.push_back(literal(v.dump()));
            } catch (const nlohmann::json::exception&) {
                throw Error("a value at " + (at.empty() ? std::string("the root") : at) + " holds invalid UTF-8",
                            "write every string of the schema in UTF-8");
            }
        }
        return any_of(alternatives);
    }

    // A non-negative count (minLength, minItems, ...), absent as nullopt.
    static std::optional<long> read_count(const Json& schema, const std::string& at, std::string_view key) {
        if (!schema.contains(std::string(key))) return std::nullopt;
        const Json& v = schema[std::string(key)];
        const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.template get<int64_t>() >= 0) ||
                           (v.is_number_float() && v.template get<double>() >= 0 &&
                            std::floor(v.template get<double>()) == v.template get<double>());
        if (!whole) malformed(key, at, "is " + v.dump() + ", not a count", "write a whole number of 0 or more");
        const double d = v.template get<double>();
        return d > 1e9 ? long(1e9) : long(d);
    }

    // minimum, maximum, exclusiveMinimum or exclusiveMaximum, absent as nullopt.
    static std::optional<long double> read_bound(const Json& schema, const std::string& at, std::string_view key) {
        if (!schema.contains(std::string(key))) return std::nullopt;
        const Json& v = schema[std::string(key)];
        if (v.is_boolean() && key.substr(0, 9) == "exclusive")
            malformed(key, at, "is a boolean (draft 4), not a number",
                      "write the bound itself: \"" + std::string(key) + "\": 0 (draft 6 and later)");
        if (!v.is_number()) malformed(key, at, "is " + v.dump() + ", not a number", "write a number, e.g. 0");
        if (v.is_number_unsigned()) return static_cast<long double>(v.template get<uint64_t>());
        if (v.is_number_integer()) return static_cast<long double>(v.template get<int64_t>());
        return static_cast<long double>(v.template get<double>());
    }

    std::string visit_integer(const Json& schema, const std::string& at) const {
        constexpr long double largest = kLargestInteger;
        long double lo = -largest, hi = largest;
        if (auto m = read_bound(schema, at, "minimum")) lo = std::max(lo, std::ceil(*m));
        if (auto m = read_bound(schema, at, "exclusiveMinimum")) lo = std::max(lo, std::floor(*m) + 1);
        if (auto m = read_bound(schema, at, "maximum")) hi = std::min(hi, std::floor(*m));
        if (auto m = read_bound(schema, at, "exclusiveMaximum")) hi = std::min(hi, std::ceil(*m) - 1);
        if (lo > hi)
            throw Error("no integer of at most 16 digits satisfies the bounds of " + schema_name(at),
                        "widen minimum/maximum (exclusive bounds leave out the bound itself)");
        return integer_range(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    }

    // A number's bounds may only be 0: then they say which signs are allowed.
    std::string visit_number(const Json& schema, const std::string& at) const {
        bool negative = true, zero = true, positive = true;
        for (std::string_view key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
            const auto bound = read_bound(schema, at, key);
            if (!bound) continue;
            if (*bound != 0)
                throw Error("JSON-schema keyword \"" + std::string(key) + "\" at " + pointer_child(at, key) +
                                " bounds a number at " + schema[std::string(key)].dump() +
                                ": the subset bounds numbers only at 0",
                            "use \"type\": \"integer\" for other bounds, or a bound of 0");
            const bool exclusive = key.substr(0, 9) == "exclusive";
            if (key.find("inimum") != std::string_view::npos) negative = false;
            if (key.find("aximum") != std::string_view::npos) positive = false;
            if (exclusive) zero = false;
        }
        if (negative && zero && positive) return any_number();
        std::vector<std::string> alternatives;
        if (negative) alternatives.push_back("-" + positive_number());
        if (zero) alternatives.push_back(zero_number());
        if (positive) alternatives.push_back(positive_number());
        if (alternatives.empty())
            throw Error("no number satisfies the bounds of " + schema_name(at), "loosen an exclusive bound");
        return any_of(alternatives);
    }

    // A string: any, with length bounds, a pattern, or a format (one of the three).
    std::string visit_string(const Json& schema, const std::string& at) const {
        const bool lengths = schema.contains("minLength") || schema.contains("maxLength");
        const bool pattern = schema.contains("pattern"), format = schema.contains("format");
        if (int(lengths) + int(pattern) + int(format) > 1)
            throw Error(schema_name(at) + " combines " +
                            std::string(pattern && format ? "pattern and format" : pattern ? "pattern and a length" : "format and a length") +
                            ", which one regex of this subset cannot intersect",
                        "keep one of them (write the length into the pattern, e.g. ^[a-z]{1,8}$)");
        if (pattern) return visit_pattern(schema, at);
        if (format) return visit_format(schema, at);
        const long lo = read_count(schema, at, "minLength").value_or(0);
        const auto hi = read_count(schema, at, "maxLength");
        for (auto [key, n] : {std::pair<std::string_view, long>{"minLength", lo}, {"maxLength", hi.value_or(0)}})
            if (n > kMaxRepeat)
                throw Error("JSON-schema keyword \"" + std::string(key) + "\" at " + pointer_child(at, key) + " is " +
                                std::to_string(n) + ", above the " + std::to_string(kMaxRepeat) + " the regex can count",
                            "use a length of at most " + std::to_string(kMaxRepeat));
        if (hi && *hi < lo) throw Error("minLength is above maxLength in " + schema_name(at), "make minLength <= maxLength");
        return "\"" + repeat(kJsonChar, lo, hi.value_or(kUnbounded)) + "\"";
    }

    std::string visit_pattern(const Json& schema, const std::string& at) const {
        const Json& p = schema["pattern"];
        if (!p.is_string()) malformed("pattern", at, "is not a string", "write the pattern as a string, e.g. \"^[a-z]+$\"");
        PatternReader reader(p.template get<std::string>(), pointer_child(at, "pattern"));
        return "\"" + group(reader.read()) + "\"";
    }

    std::string visit_format(const Json& schema, const std::string& at) const {
        const Json& f = schema["format"];
        if (!f.is_string()) malformed("format", at, "is not a string", "write e.g. \"format\": \"date\"");
        const std::string name = f.template get<std::string>();
        if (name == "date") return "\"" + kDate + "\"";
        if (name == "uuid") return "\"" + kUuid + "\"";
        throw Error("JSON-schema keyword \"format\" at " + pointer_child(at, "format") + " asks for \"" + name +
                        "\", outside the subset",
                    "the supported formats are date and uuid; write a pattern for others");
    }

    // [ items separated by commas ], minItems to maxItems of them (Outlines' parse_array_type,
    // with one whitespace slot between tokens).
    std::string visit_array(const Json& schema, const std::string& at) {
        if (!schema.contains("items"))
            throw Error(schema_name(at) + " is an array without items, outside the subset",
                        "describe the items: \"items\": {\"type\": ...}");
        const Json& items = schema["items"];
        if (items.is_array()) refuse("items", at);  // the tuple form
        const long lo = read_count(schema, at, "minItems").value_or(0);
        const auto hi = read_count(schema, at, "maxItems");
        for (auto [key, n] : {std::pair<std::string_view, long>{"minItems", lo}, {"maxItems", hi.value_or(0)}})
            if (n > kMaxRepeat + 1)
                throw Error("JSON-schema keyword \"" + std::string(key) + "\" at " + pointer_child(at, key) + " is " +
                                std::to_string(n) + ", above the " + std::to_string(kMaxRepeat + 1) +
                                " items the regex can count",
                            "use at most " + std::to_string(kMaxRepeat + 1) + " items");
        if (hi && *hi < lo) throw Error("minItems is above maxItems in " + schema_name(at), "make minItems <= maxItems");
        const std::string item = visit(items, pointer_child(at, "items"));
        if (hi && *hi == 0) return "\\[" + ws_ + "\\]";
        check_size(2 * (item.size() + 2 * ws_.size()) + 16, at);  // the first item, then (, item)*
        const std::string more = repeat(ws_ + "," + ws_ + item, std::max(lo, 1L) - 1, hi ? *hi - 1 : kUnbounded);
        const std::string body = item + more + ws_;
        return "\\[" + ws_ + (lo == 0 ? group(body) + "?" : body) + "\\]";
    }

    // { properties in schema order }: required ones always, optional ones each maybe, and a comma
    // between any two present (Outlines' parse_properties, both of its cases).
    std::string visit_object(const Json& schema, const std::string& at) {
        if (schema.contains("additionalProperties") && schema["additionalProperties"] != Json(false))
            refuse("additionalProperties", at);
        if (!schema.contains("properties"))
            throw Error(schema_name(at) + " is an object without properties (a free-form object), outside the subset",
                        "list its properties under properties: only they are written");
        const Json& properties = schema["properties"];
        if (!properties.is_object()) malformed("properties", at, "is not an object", "map each name to its schema");
        const std::vector<bool> required = read_required(schema, at, properties);

        std::vector<std::string> members;  // ws "name" ws : ws value
        const std::string here = pointer_child(at, "properties");
        size_t bytes = 0;
        for (const auto& [name, value] : properties.items()) {
            members.push_back(ws_ + literal(Json(name).dump()) + ws_ + ":" + ws_ + visit(value, pointer_child(here, name)));
            check_size(bytes += members.back().size() + 2 * ws_.size() + 8, at);
        }
        const std::string close = ws_ + "\\}";
        if (members.empty()) return "\\{" + close;

        const auto last_required = std::find(required.rbegin(), required.rend(), true);
        if (last_required == required.rend()) return "\\{" + group(all_optional(members, at)) + "?" + close;
        const size_t last = required.size() - 1 - size_t(last_required - required.rbegin());
        std::string out = "\\{";
        for (size_t i = 0; i < members.size(); ++i) {
            // before the last required member a comma follows; after it a comma comes first
            const std::string m = i < last ? members[i] + ws_ + "," : i > last ? ws_ + "," + members[i] : members[i];
            out += required[i] ? m : group(m) + "?";
        }
        return out + close;
    }

    // Members that are all optional: one alternative per last member present (Outlines).
    // Alternative i copies every member before it: n members write about n^2 / 2 of them.
    std::string all_optional(const std::vector<std::string>& members, const std::string& at) const {
        std::vector<std::string> alternatives;
        size_t bytes = 0, before = 0;  // before: the members before i, each grouped and optional
        for (size_t i = 0; i < members.size(); ++i) {
            check_size(bytes += before + members[i].size() + 1, at,
                       "with no property required, each one is written again after every one before it");
            std::string a;
            for (size_t j = 0; j < i; ++j) a += group(members[j] + ws_ + ",") + "?";
            alternatives.push_back(a + members[i]);
            before += members[i].size() + ws_.size() + 6;
        }
        return any_of(alternatives);
    }

    static std::vector<bool> read_required(const Json& schema, const std::string& at, const Json& properties) {
        std::vector<bool> required(properties.size(), false);
        if (!schema.contains("required")) return required;
        const Json& names = schema["required"];
        if (!names.is_array()) malformed("required", at, "is not a list of names", "write \"required\": [\"name\", ...]");
        for (const auto& n : names) {
            if (!n.is_string()) malformed("required", at, "holds " + n.dump() + ", not a name", "list property names");
            size_t i = 0;
            bool found = false;
            for (const auto& [name, value] : properties.items()) {
                if (name == n.template get<std::string>()) {
                    required[i] = found = true;
                }
                ++i;
            }
            if (!found)
                throw Error("\"required\" at " + pointer_child(at, "required") + " names \"" + n.template get<std::string>() +
                                "\", which is not among the properties: no object is allowed (only listed properties are written)",
                            "add it to properties, or remove it from required");
        }
        return required;
    }
};

}  // namespace

nlohmann::ordered_json parse_json_schema(const std::string& text, const std::string& name) {
    const auto bounded = [&](int depth, nlohmann::ordered_json::parse_event_t, nlohmann::ordered_json&) {
        if (depth > kMaxSchemaNesting) too_deep("the JSON schema " + name);
        return true;
    };
    try {
        return nlohmann::ordered_json::parse(text, bounded);
    } catch (const nlohmann::json::exception& e) {
        throw Error(name + " is not JSON: " + e.what(), "pass a JSON schema file to --json-schema");
    }
}

std::string json_schema_regex(const nlohmann::json& schema, const JsonWhitespace& whitespace) {
    return Converter<nlohmann::json>(schema, whitespace).convert();
}

std::string json_schema_regex(const nlohmann::ordered_json& schema, const JsonWhitespace& whitespace) {
    return Converter<nlohmann::ordered_json>(schema, whitespace).convert();
}

}  // namespace decodebook
