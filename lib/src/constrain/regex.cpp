// Chapter 09: a regular expression compiled to a DFA over bytes. The pipeline is the textbook one,
// each stage a function: parse (text -> tree of code point sets), Thompson's construction (tree ->
// NFA over bytes, each set of code points spelled as UTF-8 byte ranges), the subset construction
// (NFA -> DFA, over classes of bytes no transition tells apart), pruning (states that can never
// accept become kDead), Hopcroft's minimisation, and a breadth-first numbering from the start.
#include "decodebook/constrain/regex.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <span>
#include <unordered_map>
#include <utility>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"

namespace decodebook {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxRepeat = 1000;   // the largest m or n of {m,n}
constexpr int kMaxNesting = 200;   // nested groups: the parser and the NFA builder recurse
constexpr int kInfinite = -1;      // the n of {m,}
// The subset construction may take 100 x max_nfa_states steps (20 M by default, under 0.1 s); the
// largest patterns tried that compile need under 4 M ((a|b)*a(a|b){13}: 3.7 M, .{1000}: 0.16 M).
constexpr size_t kWorkPerNfaState = 100;

// ------------------------------------------------------------------------- sets of code points

struct Range {
    uint32_t lo, hi;
};
using CodeSet = std::vector<Range>;  // sorted, disjoint, never adjacent (after normalize)

CodeSet normalize(CodeSet set) {
    std::sort(set.begin(), set.end(), [](Range a, Range b) { return a.lo < b.lo; });
    CodeSet out;
    for (const Range& r : set) {
        if (!out.empty() && r.lo <= out.back().hi + 1)
            out.back().hi = std::max(out.back().hi, r.hi);
        else
            out.push_back(r);
    }
    return out;
}

// Every code point not in `set` (which must be normalized).
CodeSet complement(const CodeSet& set) {
    CodeSet out;
    uint32_t from = 0;
    for (const Range& r : set) {
        if (r.lo > from) out.push_back({from, r.lo - 1});
        from = r.hi + 1;
    }
    if (from <= kMaxCodePoint) out.push_back({from, kMaxCodePoint});
    return out;
}

// The shorthand classes, ASCII only as in PCRE2 without UCP.
CodeSet shorthand(char letter) {
    CodeSet set;
    switch (letter | 0x20) {
        case 'd': set = {{'0', '9'}}; break;
        case 'w': set = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; break;
        default: set = {{'\t', '\r'}, {' ', ' '}}; break;  // 's': \t \n \v \f \r and space
    }
    return letter >= 'a' ? set : complement(set);
}

// ------------------------------------------------------------------------- UTF-8 range splitting

struct ByteRange {
    uint8_t lo, hi;
    auto operator<=>(const ByteRange&) const = default;
};

// One UTF-8 sequence of byte ranges: at most 4, held in place (no allocation per sequence).
struct ByteSeq {
    std::array<ByteRange, 4> r{};
    uint8_t n = 0;
    size_t size() const { return n; }
    const ByteRange& operator[](size_t i) const { return r[i]; }
    void push_back(ByteRange b) { r[n++] = b; }
    ByteSeq from(size_t k) const {  // the suffix of ranges k..n-1
        ByteSeq out;
        for (size_t i = k; i < n; ++i) out.push_back(r[i]);
        return out;
    }
    auto operator<=>(const ByteSeq&) const = default;
};

size_t utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::array<uint8_t, 4> utf8_bytes(uint32_t cp) {
    switch (utf8_length(cp)) {
        case 1: return {static_cast<uint8_t>(cp), 0, 0, 0};
        case 2: return {static_cast<uint8_t>(0xC0 | (cp >> 6)), static_cast<uint8_t>(0x80 | (cp & 0x3F)), 0, 0};
        case 3:
            return {static_cast<uint8_t>(0xE0 | (cp >> 12)), static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)),
                    static_cast<uint8_t>(0x80 | (cp & 0x3F)), 0};
        default:
            return {static_cast<uint8_t>(0xF0 | (cp >> 18)), static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F)),
                    static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)), static_cast<uint8_t>(0x80 | (cp & 0x3F))};
    }
}

// The code points lo..hi (no surrogates, one encoded length) as sequences of byte ranges, each
// sequence a product of ranges: split until every continuation position spans its whole 80..BF
// or the two ends share their leading bytes (RE2's and regex-automata's Utf8Sequences).
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteSeq>& out) {
    const size_t n = utf8_length(lo);
    for (size_t i = 1; i < n; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;  // the low bits the last i bytes carry
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                split_same_length(lo, lo | m, out);
                split_same_length((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                split_same_length(lo, (hi & ~m) - 1, out);
                split_same_length(hi & ~m, hi, out);
                return;
            }
        }
    }
    const auto a = utf8_bytes(lo), b = utf8_bytes(hi);
    ByteSeq seq;
    for (size_t i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
    out.push_back(seq);
}

// A set of code points as UTF-8: alternatives of byte-range sequences (surrogates left out: they
// have no UTF-8 encoding).
std::vector<ByteSeq> utf8_sequences(const CodeSet& set) {
    std::vector<ByteSeq> out;
    for (const Range& r : set) {
        const uint32_t bounds[] = {0x7F, 0x7FF, 0xD7FF, 0xDFFF, 0xFFFF, kMaxCodePoint};
        uint32_t lo = r.lo;
        for (uint32_t top : bounds) {
            if (lo > r.hi) break;
            if (lo > top) continue;
            const uint32_t hi = std::min(r.hi, top);
            if (top != 0xDFFF) split_same_length(lo, hi, out);  // 0xD800..0xDFFF: surrogates
            lo = hi + 1;
        }
    }
    return out;
}

// ------------------------------------------------------------------------- the parse tree

struct Node {
    enum class Kind { Set, Concat, Alt, Repeat };
    Kind kind = Kind::Concat;  // an empty Concat matches the empty string
    CodeSet set;               // Set: one character from it
    std::vector<Node> kids;    // Concat, Alt: the parts; Repeat: the body
    int min = 0, max = 0;      // Repeat: {min,max}, max kInfinite for no bound

    static Node chars(CodeSet s) {
        Node n;
        n.kind = Kind::Set;
        n.set = std::move(s);
        return n;
    }
    static Node repeat(Node body, int min, int max) {
        Node n;
        n.kind = Kind::Repeat;
        n.kids.push_back(std::move(body));
        n.min = min;
        n.max = max;
        return n;
    }
};

// A repeat of a repeat that has a single-quantifier equivalent: (R*)*, (R+)?, (R?){2,} ... The
// nested form costs an NFA per copy and makes the subset construction track every way of
// splitting the input among the copies; llama.cpp's "hang" case (([^x]*){0,99}){0,99} is one.
Node repeat_of(Node body, int min, int max) {
    if (body.kind == Node::Kind::Repeat && max != 0) {
        const int a = body.min, b = body.max;
        Node& r = body.kids[0];
        if (a == 0 && b == kInfinite) return body;                                   // (R*){m,n} = R*
        if (a == 1 && b == kInfinite) return Node::repeat(std::move(r), min, kInfinite);  // (R+){m,n} = R{m,}
        if (a == 0 && b == 1)                                                         // (R?){m,n} = R{0,n}
            return Node::repeat(std::move(r), 0, max);
    }
    return Node::repeat(std::move(body), min, max);
}

// ------------------------------------------------------------------------- the parser

bool is_hex(char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
uint32_t hex_value(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

// The pattern as a message shows it: quoted, and cut (at a character) when long.
std::string shown(std::string_view pattern) {
    constexpr size_t kShown = 60;
    if (pattern.size() <= kShown) return "\"" + std::string(pattern) + "\"";
    size_t cut = kShown;
    while (cut > 0 && (static_cast<uint8_t>(pattern[cut]) & 0xC0) == 0x80) --cut;
    return "\"" + std::string(pattern.substr(0, cut)) + "...\"";
}

class Parser {
public:
    explicit Parser(std::string_view pattern) : p_(pattern) {}

    Node parse() {
        check_utf8();
        Node root = alternation();
        if (!at_end()) fail(i_, "this ) closes no group", "remove it, or write \\) for a literal parenthesis");
        return root;
    }

    // Refuse with the 1-based column (in characters) of byte `at`.
    [[noreturn]] void fail(size_t at, const std::string& what, const std::string& fix) const {
        size_t column = 1;
        for (size_t k = 0; k < at && k < p_.size(); ++k)
            if ((static_cast<uint8_t>(p_[k]) & 0xC0) != 0x80) ++column;
        throw Error("regex " + shown(p_) + " at column " + std::to_string(column) + ": " + what, fix);
    }

private:
    std::string_view p_;
    size_t i_ = 0;
    int depth_ = 0;

    bool at_end() const { return i_ >= p_.size(); }
    char peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : '\0'; }
    bool has(size_t ahead) const { return i_ + ahead < p_.size(); }

    void check_utf8() const {
        for (size_t k = 0; k < p_.size();) {
            const Utf8Step s = utf8_step(p_.substr(k));
            if (!s.valid) fail(k, "the pattern is not valid UTF-8", "pass the pattern as UTF-8 text");
            k += s.length;
        }
    }

    // One character of the (valid UTF-8) pattern as a code point.
    uint32_t take_char() {
        const size_t n = utf8_step(p_.substr(i_)).length;
        const auto* b = reinterpret_cast<const uint8_t*>(p_.data() + i_);
        i_ += n;
        if (n == 1) return b[0];
        uint32_t cp = b[0] & (0x7F >> n);
        for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b[k] & 0x3F);
        return cp;
    }

    Node alternation() {
        Node first = concatenation();
        if (at_end() || peek() != '|') return first;
        Node alt;
        alt.kind = Node::Kind::Alt;
        alt.kids.push_back(std::move(first));
        while (!at_end() && peek() == '|') {
            ++i_;
            alt.kids.push_back(concatenation());
        }
        return alt;
    }

    Node concatenation() {
        Node seq;  // Concat
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '^' || peek() == '$') {
                anchor();
                continue;
            }
            seq.kids.push_back(quantified(atom()));
        }
        if (seq.kids.size() == 1) return std::move(seq.kids[0]);
        return seq;
    }

    // ^ first and $ last say what whole-string matching already means; anywhere else they would
    // need a lookaround the automaton does not have.
    void anchor() {
        const char c = peek();
        if (c == '^' && i_ == 0) {
            ++i_;
            return;
        }
        if (c == '$' && i_ + 1 == p_.size()) {
            ++i_;
            return;
        }
        fail(i_, std::string("the anchor ") + c + " is only allowed at the " + (c == '^' ? "start" : "end") +
                     " of the pattern",
             std::string("the whole output always matches the whole pattern: remove it, or write \\") + c +
                 " for the character itself");
    }

    Node atom() {
        const size_t at = i_;
        const char c = peek();
        switch (c) {
            case '(': return group();
            case '[': return Node::chars(char_class());
            case '.':
                ++i_;
                return Node::chars(complement({{'\n', '\n'}}));
            case '\\': {
                Escaped e = escape(false);
                return Node::chars(e.is_set ? std::move(e.set) : CodeSet{{e.cp, e.cp}});
            }
            case '*':
            case '+':
            case '?':
                fail(at, std::string("the quantifier ") + c + " has nothing to repeat",
                     std::string("write \\") + c + " for the character itself, or put it after what it repeats");
            case '{':
                if (quantifier_braces(nullptr, nullptr))
                    fail(at, "the quantifier " + braces_text() + " has nothing to repeat",
                         "write \\{ for a literal brace, or put it after what it repeats");
                fail(at, "this { does not start a quantifier {m}, {m,} or {m,n}",
                     "write \\{ for a literal brace");
            default: {
                const uint32_t cp = take_char();
                return Node::chars({{cp, cp}});
            }
        }
    }

    // The text of the braces at i_, for messages.
    std::string braces_text() const {
        const size_t close = p_.find('}', i_);
        return std::string(p_.substr(i_, close == std::string_view::npos ? 1 : close - i_ + 1));
    }

    // Reads {m}, {m,} or {m,n} at i_ when it is one (advancing past it only when min is given);
    // returns false, without moving, for any other text after a {.
    bool quantifier_braces(int* min, int* max) {
        size_t k = i_ + 1;
        auto number = [&](int& value) {
            const size_t from = k;
            long long v = 0;
            while (k < p_.size() && is_digit(p_[k])) {
                if (v <= kMaxRepeat) v = v * 10 + (p_[k] - '0');
                ++k;
            }
            value = static_cast<int>(std::min<long long>(v, kMaxRepeat + 1));
            return k > from;
        };
        int lo = 0, hi = 0;
        if (!number(lo)) {
            if (k < p_.size() && p_[k] == ',' && min) {
                ++k;
                int n = 0;
                if (number(n) && k < p_.size() && p_[k] == '}')
                    fail(i_, "{," + std::to_string(n) + "} has no minimum", "write {0," + std::to_string(n) + "}");
            }
            return false;
        }
        if (k < p_.size() && p_[k] == '}') {
            hi = lo;
        } else if (k < p_.size() && p_[k] == ',') {
            ++k;
            if (!number(hi)) hi = kInfinite;
            if (k >= p_.size() || p_[k] != '}') return false;
        } else {
            return false;
        }
        if (!min) return true;
        const size_t at = i_;
        const std::string text(p_.substr(i_, k + 1 - i_));
        if (lo > kMaxRepeat || hi > kMaxRepeat)
            fail(at, "the repeat count in " + text + " is above " + std::to_string(kMaxRepeat),
                 "repeat at most " + std::to_string(kMaxRepeat) + " times, or use * or + for no bound");
        if (hi != kInfinite && lo > hi)
            fail(at,
                 "in " + text + " the minimum " + std::to_string(lo) + " is above the maximum " + std::to_string(hi),
                 "write {" + std::to_string(hi) + "," + std::to_string(lo) + "}");
        i_ = k + 1;
        *min = lo;
        *max = hi;
        return true;
    }

    Node quantified(Node atom) {
        if (at_end()) return atom;
        const size_t at = i_;
        int min = 0, max = 0;
        switch (peek()) {
            case '*': min = 0, max = kInfinite, ++i_; break;
            case '+': min = 1, max = kInfinite, ++i_; break;
            case '?': min = 0, max = 1, ++i_; break;
            case '{':
                if (!quantifier_braces(&min, &max))
                    fail(at, "this { does not start a quantifier {m}, {m,} or {m,n}", "write \\{ for a literal brace");
                break;
            default: return atom;
        }
        const std::string quantifier(p_.substr(at, i_ - at));
        if (!at_end()) {
            if (peek() == '?')
                fail(i_, "the lazy quantifier " + quantifier + "? is not supported",
                     "write " + quantifier + ": a whole-string match does not depend on laziness");
            if (peek() == '+')
                fail(i_, "the possessive quantifier " + quantifier + "+ is not supported",
                     "write " + quantifier + " (greedy)");
            if (peek() == '*' || (peek() == '{' && quantifier_braces(nullptr, nullptr)))
                fail(i_, "a quantifier follows the quantifier " + quantifier,
                     "put the repeated part in a group, e.g. (a" + quantifier + ")*");
        }
        return repeat_of(std::move(atom), min, max);
    }

    Node group() {
        const size_t open = i_;
        ++i_;
        if (depth_ >= kMaxNesting)
            fail(open, "groups are nested more than " + std::to_string(kMaxNesting) + " deep",
                 "flatten the pattern");
        if (peek() == '?') refuse_special_group(open);
        if (peek() == '*')
            fail(open, "(* starts a PCRE2 verb, which is not supported", "remove it, or write \\( for a parenthesis");
        ++depth_;
        Node inner = alternation();
        --depth_;
        if (at_end()) fail(open, "this ( is never closed", "add a ), or write \\( for a literal parenthesis");
        ++i_;  // ')'
        return inner;
    }

    // (?: is a plain group; every other (? is a construct a DFA cannot have, or a flag.
    void refuse_special_group(size_t open) {
        const char c = peek(1), d = peek(2);
        if (c == ':') {
            i_ += 2;
            return;
        }
        std::string what, fix = "remove it: constrained decoding needs a regular language, without lookaround";
        if (c == '=') what = "lookahead (?=";
        else if (c == '!') what = "negative lookahead (?!";
        else if (c == '<' && d == '=') what = "lookbehind (?<=";
        else if (c == '<' && d == '!') what = "negative lookbehind (?<!";
        else if (c == '<' || c == '\'' || (c == 'P' && (d == '<' || d == '=' || d == '>'))) {
            what = "the named group or reference (?" + std::string(1, c) + (c == 'P' ? std::string(1, d) : "");
            fix = "use a plain group ( ) or (?: ): groups do not capture here";
        } else if (c == '>') {
            what = "the atomic group (?>";
            fix = "use (?: ): a DFA has no backtracking to forbid";
        } else if (c == '#') {
            what = "the comment (?#";
            fix = "remove the comment";
        } else if (c == '|') {
            what = "the branch reset group (?|";
            fix = "use (?: )";
        } else if (c == 'R' || c == '&' || is_digit(c) || ((c == '+' || c == '-') && is_digit(d))) {
            what = "the recursion or subroutine call (?" + std::string(1, c);
            fix = "write the repeated part out: recursion is beyond a regular language (chapter 09's JSON "
                  "schemas bound their depth instead)";
        } else {
            what = "the inline flag group (?" + std::string(1, c);
            fix = "remove the flag and write what it meant, e.g. [Aa] for a case-insensitive a";
        }
        fail(open, what + " is not supported", fix);
    }

    CodeSet char_class() {
        const size_t open = i_;
        ++i_;
        bool negate = false;
        if (peek() == '^' && has(0)) {
            negate = true;
            ++i_;
        }
        CodeSet set;
        while (true) {
            if (at_end()) fail(open, "this [ is never closed", "add a ], or write \\[ for a literal bracket");
            if (peek() == ']') {
                ++i_;
                break;
            }
            if (peek() == '[' && (peek(1) == ':' || peek(1) == '.' || peek(1) == '='))
                fail(i_, "POSIX classes such as [:alpha:] are not supported",
                     "write the ranges, e.g. a-zA-Z for [:alpha:], or \\d \\w \\s");
            const size_t item_at = i_;
            Escaped lo = class_item();
            if (lo.is_set) {
                set.insert(set.end(), lo.set.begin(), lo.set.end());
                if (peek() == '-' && has(1) && peek(1) != ']')
                    fail(item_at, "a range cannot start at a shorthand class", "escape the - as \\-");
                continue;
            }
            if (peek() == '-' && has(1) && peek(1) != ']') {
                ++i_;
                const Escaped hi = class_item();
                if (hi.is_set) fail(item_at, "a range cannot end at a shorthand class", "escape the - as \\-");
                if (hi.cp < lo.cp)
                    fail(item_at, "the range " + std::string(p_.substr(item_at, i_ - item_at)) + " is out of order",
                         "write the smaller end first");
                set.push_back({lo.cp, hi.cp});
                if (peek() == '-' && has(1) && peek(1) != ']')
                    fail(i_, "a - right after a range is ambiguous", "escape it as \\- or put it last in the class");
                continue;
            }
            set.push_back({lo.cp, lo.cp});
        }
        set = normalize(std::move(set));
        return negate ? complement(set) : set;
    }

    struct Escaped {
        bool is_set = false;
        uint32_t cp = 0;
        CodeSet set;
    };

    Escaped class_item() {
        if (peek() == '\\') return escape(true);
        return Escaped{false, take_char(), {}};
    }

    uint32_t code_point(size_t at, uint32_t cp) const {
        if (cp > kMaxCodePoint) fail(at, "the code point is above U+10FFFF", "write a code point up to \\x{10FFFF}");
        if (cp >= 0xD800 && cp <= 0xDFFF)
            fail(at, "the code point is a surrogate (U+D800..U+DFFF), not a character", "write the character itself");
        return cp;
    }

    // Exactly `count` hex digits at i_.
    uint32_t fixed_hex(size_t at, size_t count, const char* form) {
        uint32_t v = 0;
        for (size_t k = 0; k < count; ++k) {
            if (!is_hex(peek()))
                fail(at, std::string("the escape ") + form + " needs " + std::to_string(count) + " hex digits",
                     std::string("write ") + form + " in full, e.g. " + (count == 2 ? "\\x41" : "\\u00E9"));
            v = v * 16 + hex_value(peek());
            ++i_;
        }
        return v;
    }

    Escaped escape(bool in_class) {
        const size_t at = i_;
        ++i_;
        if (at_end()) fail(at, "the pattern ends in a lone \\", "write \\\\ for a backslash");
        const char c = peek();
        if (static_cast<uint8_t>(c) >= 0x80 || !is_alnum(c)) return Escaped{false, take_char(), {}};
        ++i_;
        switch (c) {
            case 'n': return {false, '\n', {}};
            case 't': return {false, '\t', {}};
            case 'r': return {false, '\r', {}};
            case 'f': return {false, '\f', {}};
            case 'v': return {false, '\v', {}};
            case '0':
                if (peek() >= '0' && peek() <= '7')
                    fail(at, "octal escapes are not supported", "write \\xHH or \\x{H...}");
                return {false, 0, {}};
            case 'x': {
                if (peek() != '{') return {false, fixed_hex(at, 2, "\\xHH"), {}};
                ++i_;
                uint32_t v = 0;
                size_t digits = 0;
                while (is_hex(peek())) {
                    if (v <= kMaxCodePoint) v = v * 16 + hex_value(peek());
                    ++i_, ++digits;
                }
                if (digits == 0 || peek() != '}')
                    fail(at, "the escape \\x{ needs hex digits and a }", "write e.g. \\x{E9} or \\x{1F600}");
                ++i_;
                return {false, code_point(at, v), {}};
            }
            case 'u': return {false, code_point(at, fixed_hex(at, 4, "\\uHHHH")), {}};
            case 'd':
            case 'D':
            case 'w':
            case 'W':
            case 's':
            case 'S': return {true, 0, shorthand(c)};
            default: break;
        }
        const std::string esc = std::string("\\") + c;
        if (c >= '1' && c <= '9')
            fail(at, "the backreference " + esc + " is not supported",
                 in_class ? "write \\xHH for a character" : "write the repeated text out: a DFA cannot remember a group");
        if (c == 'b' && in_class) fail(at, "\\b in a class is not supported", "write \\x08 for a backspace");
        if (c == 'b' || c == 'B')
            fail(at, "the word boundary " + esc + " is not supported", "remove it: a DFA has no lookaround");
        if (c == 'A' || c == 'z' || c == 'Z' || c == 'G')
            fail(at, "the anchor " + esc + " is not supported",
                 "remove it: the whole output always matches the whole pattern");
        if (c == 'p' || c == 'P')
            fail(at, "the Unicode property " + esc + " is not supported",
                 "write the code point ranges, e.g. [\\x{370}-\\x{3FF}] for Greek");
        if (c == 'k' || c == 'g') fail(at, "the backreference " + esc + " is not supported", "write the repeated text out");
        if (c == 'Q' || c == 'E') fail(at, "quoting with \\Q...\\E is not supported", "escape each metacharacter with \\");
        fail(at, "the escape " + esc + " is not supported",
             "write the character itself, \\xHH or \\x{H...}; the escapes are \\n \\t \\r \\f \\v \\0 \\x \\u "
             "\\d \\D \\w \\W \\s \\S");
    }
};

// ------------------------------------------------------------------------- Thompson's NFA

// A state has at most one byte transition (lo..hi to `next`) and any number of empty ones,
// which the builder lists as (from, to) pairs and EmptyMoves then groups by state.
struct NfaState {
    int32_t next = -1;
    uint8_t lo = 0, hi = 0;
};

// The empty transitions, grouped by state (compressed rows): state s's go to
// to[first[s]] .. to[first[s + 1] - 1]. One array for the whole NFA, not a vector per state: a
// pattern's states are built and read once, and allocating per state was most of the time spent.
struct EmptyMoves {
    std::vector<uint32_t> first;  // (states + 1)
    std::vector<int32_t> to;      // (empty transitions)
    EmptyMoves(size_t states, const std::vector<std::pair<int32_t, int32_t>>& links) : first(states + 1, 0) {
        for (const auto& [from, _] : links) first[static_cast<size_t>(from) + 1] += 1;
        for (size_t s = 0; s < states; ++s) first[s + 1] += first[s];
        to.resize(links.size());
        std::vector<uint32_t> fill(first.begin(), first.end() - 1);
        for (const auto& [from, t] : links) to[fill[static_cast<size_t>(from)]++] = t;
    }
    std::span<const int32_t> of(int32_t s) const {
        return std::span<const int32_t>(to).subspan(first[static_cast<size_t>(s)], first[static_cast<size_t>(s) + 1] - first[static_cast<size_t>(s)]);
    }
};

struct Fragment {
    int32_t in, out;  // out has no byte transition: the next fragment is linked by an empty one
};

class NfaBuilder {
public:
    NfaBuilder(std::string_view pattern, size_t limit) : pattern_(pattern), limit_(limit) {}

    std::vector<NfaState> states;
    std::vector<std::pair<int32_t, int32_t>> links;  // the empty transitions, (from, to)

    Fragment build(const Node& n) {
        switch (n.kind) {
            case Node::Kind::Set: return chars(n.set);
            case Node::Kind::Concat: return concat(n.kids);
            case Node::Kind::Alt: return alternatives(n.kids);
            case Node::Kind::Repeat: return repeat(n.kids[0], n.min, n.max);
        }
        return concat({});
    }

    int32_t add() {
        if (states.size() >= limit_)
            throw Error("regex " + shown(pattern_) + " needs more than " + std::to_string(limit_) +
                            " NFA states (each bounded repeat copies what it repeats)",
                        "shorten the bounded repeats {m,n} (nested ones multiply), or raise RegexLimits::max_nfa_states");
        states.emplace_back();
        return static_cast<int32_t>(states.size() - 1);
    }

    void link(int32_t from, int32_t to) { links.emplace_back(from, to); }

private:
    std::string_view pattern_;
    size_t limit_;
    std::unordered_map<const CodeSet*, std::vector<ByteSeq>> sequences_;  // per Set node of the tree

    // One character of the set: its UTF-8 sequences, sharing their common tails (most end in the
    // same continuation ranges), entered through one empty transition each.
    Fragment chars(const CodeSet& set) {
        // a bounded repeat builds its body once per copy: the same set's sequences are split once
        auto known = sequences_.find(&set);
        if (known == sequences_.end()) known = sequences_.emplace(&set, utf8_sequences(set)).first;
        const std::vector<ByteSeq>& seqs = known->second;
        const int32_t in = add(), out = add();
        std::map<ByteSeq, int32_t> tails;  // a sequence's suffix -> the state that reads it
        for (const ByteSeq& seq : seqs) {
            int32_t after = out;
            for (size_t k = seq.size(); k-- > 0;) {
                ByteSeq suffix = seq.from(k);
                auto found = tails.find(suffix);
                if (found != tails.end()) {
                    after = found->second;
                    continue;
                }
                const int32_t s = add();
                states[s].lo = seq[k].lo;
                states[s].hi = seq[k].hi;
                states[s].next = after;
                tails.emplace(std::move(suffix), s);
                after = s;
            }
            link(in, after);
        }
        return {in, out};
    }

    Fragment concat(const std::vector<Node>& parts) {
        const int32_t in = add();
        Fragment whole{in, in};
        for (const Node& part : parts) {
            const Fragment f = build(part);
            link(whole.out, f.in);
            whole.out = f.out;
        }
        return whole;
    }

    Fragment alternatives(const std::vector<Node>& branches) {
        const int32_t in = add(), out = add();
        for (const Node& b : branches) {
            const Fragment f = build(b);
            link(in, f.in);
            link(f.out, out);
        }
        return {in, out};
    }

    // body{min,max}: min copies in a row, then either a loop (no bound) or max - min copies that
    // may each be skipped to the end.
    Fragment repeat(const Node& body, int min, int max) {
        const int32_t in = add();
        Fragment whole{in, in};
        for (int k = 0; k < min; ++k) {
            const Fragment f = build(body);
            link(whole.out, f.in);
            whole.out = f.out;
            if (k == min - 1 && max == kInfinite) link(f.out, f.in);  // the last copy repeats: R{m,}
        }
        if (max == kInfinite && min == 0) {
            const Fragment f = build(body);
            const int32_t hub = add();
            link(whole.out, hub);
            link(hub, f.in);
            link(f.out, hub);
            whole.out = hub;
        } else if (max != kInfinite && max > min) {
            const int32_t end = add();
            for (int k = min; k < max; ++k) {
                const Fragment f = build(body);
                link(whole.out, end);
                link(whole.out, f.in);
                whole.out = f.out;
            }
            link(whole.out, end);
            whole.out = end;
        }
        return whole;
    }
};

// ------------------------------------------------------------------------- byte classes

// Bytes that every transition treats alike form one class: the subset construction then works
// per class (a dozen for most patterns) instead of per byte.
struct ByteClasses {
    std::array<uint8_t, 256> of{};  // byte -> class
    size_t count = 0;
};

ByteClasses byte_classes(const std::vector<NfaState>& nfa) {
    std::array<bool, 257> starts{};
    starts[0] = true;
    for (const NfaState& s : nfa) {
        if (s.next < 0) continue;
        starts[s.lo] = true;
        starts[s.hi + 1] = true;
    }
    ByteClasses bc;
    int c = -1;
    for (int b = 0; b < 256; ++b) {
        if (starts[b]) ++c;
        bc.of[b] = static_cast<uint8_t>(c);
    }
    bc.count = static_cast<size_t>(c + 1);
    return bc;
}

// ------------------------------------------------------------------------- subset construction

struct SetHash {
    size_t operator()(const std::vector<int32_t>& v) const {
        uint64_t h = 1469598103934665603ull;
        for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
        return static_cast<size_t>(h ^ (h >> 29));
    }
};

// A DFA over byte classes, transitions kDead where the NFA has no state left.
struct ClassDfa {
    std::vector<int32_t> trans;  // states x classes
    std::vector<uint8_t> accepting;
    int32_t start = 0;
    size_t classes = 0;
    size_t states() const { return accepting.size(); }
};

class SubsetBuilder {
public:
    SubsetBuilder(const std::vector<NfaState>& nfa, const EmptyMoves& empty, int32_t final_state,
                  const ByteClasses& bc, std::string_view pattern, const RegexLimits& limits)
        : nfa_(nfa), empty_(empty), final_(final_state), bc_(bc), pattern_(pattern), limits_(limits),
          work_limit_(limits.max_nfa_states * kWorkPerNfaState), mark_(nfa.size(), 0) {}

    ClassDfa run(int32_t nfa_start) {
        dfa_.classes = bc_.count;
        dfa_.start = state_of(std::vector<int32_t>{nfa_start});
        std::vector<std::vector<int32_t>> buckets(bc_.count);
        for (size_t d = 0; d < sets_.size(); ++d) {
            for (auto& b : buckets) b.clear();
            for (int32_t s : *sets_[d]) {  // the states of d with a byte transition
                const NfaState& st = nfa_[s];
                if (st.next < 0) continue;
                for (size_t c = bc_.of[st.lo]; c <= bc_.of[st.hi]; ++c) buckets[c].push_back(st.next);
                spend(1 + bc_.of[st.hi] - bc_.of[st.lo]);
            }
            for (size_t c = 0; c < bc_.count; ++c) {
                auto& seeds = buckets[c];
                std::sort(seeds.begin(), seeds.end());
                seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
                // neighbouring classes often lead to the same states (a range spans many classes)
                const int32_t t = seeds.empty() ? Dfa::kDead
                                  : c > 0 && seeds == buckets[c - 1] ? dfa_.trans[d * bc_.count + c - 1]
                                                                     : state_of(seeds);
                dfa_.trans[d * bc_.count + c] = t;
            }
        }
        return std::move(dfa_);
    }

private:
    const std::vector<NfaState>& nfa_;
    const EmptyMoves& empty_;
    int32_t final_;
    const ByteClasses& bc_;
    std::string_view pattern_;
    const RegexLimits& limits_;
    size_t work_limit_, work_ = 0;
    std::vector<uint32_t> mark_;
    uint32_t generation_ = 0;
    std::vector<int32_t> stack_, kept_;  // closure's scratch, kept between calls
    // The DFA state of each distinct set of seeds (sorted), so each is closed once: many DFA
    // states step to the same NFA states on some class.
    std::unordered_map<std::vector<int32_t>, int32_t, SetHash> of_seeds_;
    std::unordered_map<std::vector<int32_t>, int32_t, SetHash> index_;
    std::vector<const std::vector<int32_t>*> sets_;  // DFA state -> its NFA states (keys of index_)
    ClassDfa dfa_;

    void spend(size_t steps) {
        work_ += steps;
        if (work_ > work_limit_)
            throw Error("regex " + shown(pattern_) + " takes more than " + std::to_string(work_limit_) +
                            " steps to turn into a DFA (its DFA states each track many NFA states)",
                        "simplify nested or long bounded repeats, or raise RegexLimits::max_nfa_states");
    }

    // The states reachable by empty transitions, keeping those that matter: the ones with a byte
    // transition, and the final state (which decides acceptance). Sorted into kept_: it is the DFA
    // state's key.
    void closure(const std::vector<int32_t>& seeds) {
        if (++generation_ == 0) {
            std::fill(mark_.begin(), mark_.end(), 0);
            generation_ = 1;
        }
        stack_.clear();
        kept_.clear();
        for (int32_t s : seeds)
            if (mark_[s] != generation_) mark_[s] = generation_, stack_.push_back(s);
        while (!stack_.empty()) {
            const int32_t s = stack_.back();
            stack_.pop_back();
            if (nfa_[s].next >= 0 || s == final_) kept_.push_back(s);
            const std::span<const int32_t> moves = empty_.of(s);
            for (int32_t t : moves)
                if (mark_[t] != generation_) mark_[t] = generation_, stack_.push_back(t);
            spend(1 + moves.size());
        }
        std::sort(kept_.begin(), kept_.end());
    }

    // The DFA state the seeds close into, made if it is new.
    int32_t state_of(const std::vector<int32_t>& seeds) {
        if (auto known = of_seeds_.find(seeds); known != of_seeds_.end()) return known->second;
        closure(seeds);
        int32_t id;
        if (auto found = index_.find(kept_); found != index_.end()) {
            id = found->second;
        } else {
            if (sets_.size() >= limits_.max_dfa_states)
                throw Error("regex " + shown(pattern_) + " needs more than " + std::to_string(limits_.max_dfa_states) +
                                " DFA states",
                            "simplify the pattern (a repeat followed by a bounded repeat of what it overlaps, such as "
                            "(a|b)*a(a|b){20}, grows exponentially), or raise RegexLimits::max_dfa_states");
            id = static_cast<int32_t>(sets_.size());
            const bool accepts = std::binary_search(kept_.begin(), kept_.end(), final_);
            auto inserted = index_.emplace(kept_, id).first;
            sets_.push_back(&inserted->first);
            dfa_.accepting.push_back(accepts ? 1 : 0);
            dfa_.trans.resize(dfa_.trans.size() + bc_.count, Dfa::kDead);
        }
        of_seeds_.emplace(seeds, id);
        return id;
    }
};

// ------------------------------------------------------------------------- pruning

// Keep only the states from which an accepting state is reachable; transitions to the others go
// to kDead. This is what makes "walk != kDead" mean "a prefix of some match".
ClassDfa prune(const ClassDfa& d) {
    const size_t n = d.states(), C = d.classes;
    // the transitions backwards, grouped by target: into[first[t] .. first[t + 1]) lead to t
    std::vector<uint32_t> first(n + 1, 0);
    for (const int32_t t : d.trans)
        if (t >= 0) ++first[static_cast<size_t>(t) + 1];
    for (size_t t = 0; t < n; ++t) first[t + 1] += first[t];
    std::vector<int32_t> into(first[n]);
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (size_t s = 0; s < n; ++s)
        for (size_t c = 0; c < C; ++c)
            if (const int32_t t = d.trans[s * C + c]; t >= 0) into[fill[t]++] = static_cast<int32_t>(s);
    std::vector<uint8_t> live(n, 0);
    std::vector<int32_t> todo;
    for (size_t s = 0; s < n; ++s)
        if (d.accepting[s]) live[s] = 1, todo.push_back(static_cast<int32_t>(s));
    while (!todo.empty()) {
        const int32_t t = todo.back();
        todo.pop_back();
        for (uint32_t k = first[t]; k < first[t + 1]; ++k)
            if (const int32_t s = into[k]; !live[s]) live[s] = 1, todo.push_back(s);
    }
    ClassDfa out;
    out.classes = C;
    if (!live[d.start]) return out;  // no state: the language is empty
    std::vector<int32_t> renum(n, Dfa::kDead);
    for (size_t s = 0; s < n; ++s)
        if (live[s]) renum[s] = static_cast<int32_t>(out.accepting.size()), out.accepting.push_back(d.accepting[s]);
    out.trans.assign(out.states() * C, Dfa::kDead);
    for (size_t s = 0; s < n; ++s) {
        if (!live[s]) continue;
        for (size_t c = 0; c < C; ++c) {
            const int32_t t = d.trans[s * C + c];
            out.trans[renum[s] * C + c] = t >= 0 ? renum[t] : Dfa::kDead;
        }
    }
    out.start = renum[d.start];
    return out;
}

// ------------------------------------------------------------------------- Hopcroft's minimisation

// Where class c leads state s, with a sink (numbered d.states()) standing for kDead: the sink and
// every transition to kDead lead to the sink.
int32_t target_or_sink(const ClassDfa& d, size_t s, size_t c) {
    const int32_t sink = static_cast<int32_t>(d.states());
    if (static_cast<int32_t>(s) == sink) return sink;
    const int32_t t = d.trans[s * d.classes + c];
    return t >= 0 ? t : sink;
}

// Predecessors by class, compressed (n states counting the sink): the states that class c leads to
// t are pred[first[c*(n+1)+t] .. first[c*(n+1)+t+1]).
struct Predecessors {
    std::vector<uint32_t> first;
    std::vector<int32_t> pred;
};

Predecessors predecessors(const ClassDfa& d) {
    const size_t C = d.classes;
    const size_t n = d.states() + 1;
    Predecessors p{std::vector<uint32_t>(C * (n + 1) + 1, 0), std::vector<int32_t>(C * n)};
    for (size_t c = 0; c < C; ++c)
        for (size_t s = 0; s < n; ++s) ++p.first[c * (n + 1) + target_or_sink(d, s, c) + 1];
    for (size_t k = 1; k < p.first.size(); ++k) p.first[k] += p.first[k - 1];
    std::vector<uint32_t> fill(p.first.begin(), p.first.end());
    for (size_t c = 0; c < C; ++c)
        for (size_t s = 0; s < n; ++s) p.pred[fill[c * (n + 1) + target_or_sink(d, s, c)]++] = static_cast<int32_t>(s);
    return p;
}

// Blocks: block b is elems[bstart[b] .. bend[b]); each state's place in elems, and its block.
struct Partition {
    std::vector<int32_t> elems, place, block, bstart, bend;
    int32_t size(int32_t b) const { return bend[b] - bstart[b]; }
};

// The partition refinement starts from: block 0 the accepting states, block 1 the rest and the
// sink, each in state order.
Partition accepting_and_rest(const ClassDfa& d) {
    const int32_t sink = static_cast<int32_t>(d.states());
    const size_t n = d.states() + 1;
    Partition p{std::vector<int32_t>(n), std::vector<int32_t>(n), std::vector<int32_t>(n), {}, {}};
    size_t k = 0;
    for (int pass = 0; pass < 2; ++pass) {
        p.bstart.push_back(static_cast<int32_t>(k));
        for (size_t s = 0; s < n; ++s) {
            const bool acc = static_cast<int32_t>(s) != sink && d.accepting[s];
            if (acc == (pass == 0)) p.elems[k] = static_cast<int32_t>(s), p.place[s] = static_cast<int32_t>(k++),
                                    p.block[s] = pass;
        }
        p.bend.push_back(static_cast<int32_t>(k));
    }
    return p;
}

// Splits blocks until no (block, class) splitter splits any: the states of each block then agree,
// class by class, on which block they lead to.
class Refiner {
public:
    Refiner(const ClassDfa& d, Partition& p)
        : C_(d.classes), n_(d.states() + 1), preds_(predecessors(d)), p_(p), marked_(2, 0), queued_(2 * C_, 0),
          is_marked_(n_, 0) {}

    void run() {
        const int32_t smaller = p_.size(0) <= p_.size(1) ? 0 : 1;
        for (size_t c = 0; c < C_; ++c)
            work_.emplace_back(smaller, static_cast<int32_t>(c)), queued_[smaller * C_ + c] = 1;
        while (!work_.empty()) {
            const auto [b, c] = work_.back();
            work_.pop_back();
            queued_[b * C_ + c] = 0;
            mark_predecessors(b, c);
            for (int32_t y : touched_) split(y);
        }
    }

private:
    size_t C_, n_;
    Predecessors preds_;
    Partition& p_;
    std::vector<int32_t> marked_;  // per block: how many of its states are marked (at its front)
    std::vector<uint8_t> queued_, is_marked_;
    std::vector<std::pair<int32_t, int32_t>> work_;  // (block, class) splitters
    std::vector<int32_t> splitter_, touched_;

    // Mark every state that class c leads into block b, gathering each block's marked states at
    // its front; touched_ lists the blocks with any.
    void mark_predecessors(int32_t b, int32_t c) {
        splitter_.assign(p_.elems.begin() + p_.bstart[b], p_.elems.begin() + p_.bend[b]);
        touched_.clear();
        for (int32_t t : splitter_) {
            const size_t row = c * (n_ + 1) + t;
            for (uint32_t k = preds_.first[row]; k < preds_.first[row + 1]; ++k) {
                const int32_t s = preds_.pred[k];
                if (is_marked_[s]) continue;
                is_marked_[s] = 1;
                const int32_t y = p_.block[s];
                if (marked_[y] == 0) touched_.push_back(y);
                const int32_t to = p_.bstart[y] + marked_[y]++;  // move s to the marked front of its block
                const int32_t other = p_.elems[to];
                std::swap(p_.elems[to], p_.elems[p_.place[s]]);
                p_.place[other] = p_.place[s];
                p_.place[s] = to;
            }
        }
    }

    // Unmark block y and, unless all of it was marked, split its marked front off as a new block.
    void split(int32_t y) {
        const int32_t m = marked_[y];
        marked_[y] = 0;
        for (int32_t k = p_.bstart[y]; k < p_.bstart[y] + m; ++k) is_marked_[p_.elems[k]] = 0;
        if (m == p_.size(y)) return;  // all of y leads into b: no split
        const int32_t z = static_cast<int32_t>(p_.bstart.size());  // the marked part becomes z
        p_.bstart.push_back(p_.bstart[y]);
        p_.bend.push_back(p_.bstart[y] + m);
        p_.bstart[y] += m;
        marked_.push_back(0);
        queued_.resize(queued_.size() + C_, 0);
        for (int32_t k = p_.bstart[z]; k < p_.bend[z]; ++k) p_.block[p_.elems[k]] = z;
        queue_halves(y, z);
    }

    // After y split into y and z, class by class: where y was queued, z is queued too; otherwise
    // only the smaller half is (that is what makes it O(n log n) per class).
    void queue_halves(int32_t y, int32_t z) {
        const bool z_smaller = p_.size(z) <= p_.size(y);
        for (size_t e = 0; e < C_; ++e) {
            const int32_t pick = queued_[y * C_ + e] || z_smaller ? z : y;
            if (!queued_[pick * C_ + e]) queued_[pick * C_ + e] = 1, work_.emplace_back(pick, static_cast<int32_t>(e));
        }
    }
};

// One state per block but the sink's, numbered in block order; a block's first state stands for it.
ClassDfa quotient(const ClassDfa& d, const Partition& p) {
    const size_t C = d.classes;
    const int32_t sink = static_cast<int32_t>(d.states());
    const size_t blocks = p.bstart.size();
    std::vector<int32_t> id(blocks, Dfa::kDead);
    ClassDfa out;
    out.classes = C;
    for (size_t k = 0; k < blocks; ++k) {
        if (static_cast<int32_t>(k) == p.block[sink]) continue;
        id[k] = static_cast<int32_t>(out.accepting.size());
        out.accepting.push_back(d.accepting[p.elems[p.bstart[k]]]);
    }
    out.trans.assign(out.states() * C, Dfa::kDead);
    for (size_t k = 0; k < blocks; ++k) {
        if (id[k] < 0) continue;
        const size_t s = p.elems[p.bstart[k]];
        for (size_t c = 0; c < C; ++c) out.trans[id[k] * C + c] = id[p.block[target_or_sink(d, s, c)]];
    }
    out.start = id[p.block[d.start]];
    return out;
}

// Partition refinement: start from {accepting, the rest plus a sink standing for kDead}, split any
// block whose states disagree on which block a class leads to, and keep only the smaller half of
// each split as a future splitter (that is what makes it O(n log n) per class).
ClassDfa minimize(const ClassDfa& d) {
    Partition p = accepting_and_rest(d);
    Refiner(d, p).run();
    return quotient(d, p);
}

// ------------------------------------------------------------------------- the byte table

// The final DFA: states renumbered breadth-first from the start, bytes in ascending order (so the
// same language always gives the same table, and the chapter's drawing reads left to right).
Dfa byte_table(const ClassDfa& d, const ByteClasses& bc) {
    const size_t C = d.classes;
    std::vector<int32_t> order{d.start}, id(d.states(), Dfa::kDead);
    id[d.start] = 0;
    for (size_t k = 0; k < order.size(); ++k)
        for (size_t c = 0; c < C; ++c) {
            const int32_t t = d.trans[order[k] * C + c];
            if (t >= 0 && id[t] < 0) id[t] = static_cast<int32_t>(order.size()), order.push_back(t);
        }
    // a class is a run of consecutive bytes (byte_classes cuts 0..255 at the ranges' ends)
    std::vector<int> class_end(C, 0);  // one past the class's last byte
    for (int b = 0; b < 256; ++b) class_end[bc.of[b]] = b + 1;
    Dfa out;
    out.start = 0;
    out.accepting.resize(order.size());
    out.next.resize(256 * order.size());
    for (size_t k = 0; k < order.size(); ++k) {
        out.accepting[k] = d.accepting[order[k]];
        int32_t* row = out.next.data() + 256 * k;
        for (size_t c = 0, b = 0; c < C; ++c) {
            const int32_t t = d.trans[order[k] * C + c];
            const int32_t to = t >= 0 ? id[t] : Dfa::kDead;
            for (; b < static_cast<size_t>(class_end[c]); ++b) row[b] = to;
        }
    }
    return out;
}

void check_utf8_text(std::string_view text, const char* what) {
    for (size_t k = 0; k < text.size();) {
        const Utf8Step s = utf8_step(text.substr(k));
        if (!s.valid)
            throw Error(std::string(what) + " is not valid UTF-8 at byte " + std::to_string(k + 1),
                        "constraints are on text: pass valid UTF-8 (a pattern's characters are code points)");
        k += s.length;
    }
}

}  // namespace

// ------------------------------------------------------------------------- public

// [ch09:walk]
int32_t Dfa::walk(int32_t state, std::string_view bytes) const {
    if (state == kDead) return kDead;
    if (state < 0 || static_cast<size_t>(state) >= states())
        throw Error("DFA state " + std::to_string(state) + " does not exist (the DFA has " + std::to_string(states()) +
                        " states)",
                    "pass a state this DFA returned, or Dfa::kDead");
    for (char c : bytes) {
        state = step(state, static_cast<uint8_t>(c));
        if (state == kDead) return kDead;
    }
    return state;
}
// [/ch09:walk]

bool Dfa::matches(std::string_view bytes) const {
    if (states() == 0) return false;
    const int32_t end = walk(start, bytes);
    return end != kDead && accepting[end];
}

RegexBuild build_regex(std::string_view pattern, const RegexLimits& limits) {
    const Node root = Parser(pattern).parse();
    NfaBuilder nfa(pattern, limits.max_nfa_states);
    const Fragment top = nfa.build(root);
    const int32_t final_state = nfa.add();
    nfa.link(top.out, final_state);
    const ByteClasses bc = byte_classes(nfa.states);
    const EmptyMoves empty(nfa.states.size(), nfa.links);
    const ClassDfa subsets = SubsetBuilder(nfa.states, empty, final_state, bc, pattern, limits).run(top.in);
    const ClassDfa live = prune(subsets);
    if (live.states() == 0)
        throw Error("regex " + shown(pattern) + " matches no string at all (its language is empty)",
                    "check its classes: [] and [^\\x00-\\x{10FFFF}] match nothing, and so does any sequence that "
                    "needs one of them");
    RegexBuild out;
    out.dfa = byte_table(minimize(live), bc);
    out.nfa_states = nfa.states.size();
    out.byte_classes = bc.count;
    out.subset_states = subsets.states();
    out.live_states = live.states();
    return out;
}

Dfa compile_regex(std::string_view pattern, const RegexLimits& limits) {
    return build_regex(pattern, limits).dfa;
}

std::string escape_regex(std::string_view literal) {
    check_utf8_text(literal, "the literal");
    static constexpr std::string_view kMeta = "\\.^$|?*+()[]{}";
    std::string out;
    for (char c : literal) {
        const auto b = static_cast<uint8_t>(c);
        if (kMeta.find(c) != std::string_view::npos) {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (b < 0x20 || b == 0x7F) {
            static constexpr char kHex[] = "0123456789ABCDEF";
            out += "\\x";
            out += kHex[b >> 4];
            out += kHex[b & 15];
        } else {
            out += c;
        }
    }
    return out;
}

std::string choice_regex(const std::vector<std::string>& choices) {
    if (choices.empty())
        throw Error("the list of choices is empty", "give at least one choice, e.g. --choice yes --choice no");
    std::string out = "(?:";
    for (size_t k = 0; k < choices.size(); ++k) {
        if (k > 0) out += '|';
        out += escape_regex(choices[k]);
    }
    return out + ")";
}

}  // namespace decodebook
