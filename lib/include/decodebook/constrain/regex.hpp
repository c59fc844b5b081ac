#pragma once
/// @file constrain/regex.hpp
/// @brief Chapter 09's foundation: a regular expression compiled to a deterministic automaton over
/// **bytes** (Thompson NFA, subset construction, dead states removed, Hopcroft minimisation), so a
/// token mask can walk a token's bytes through it.
///
/// Supported syntax (a pattern always matches the whole output, from its first byte to its last,
/// as in Outlines; positions in messages are 1-based columns counted in characters):
/// - concatenation `ab`, alternation `a|b` (an empty branch matches the empty string), groups
///   `( )` and `(?: )` (both only group: there are no captures);
/// - greedy quantifiers `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` with m <= n <= 1000; lazy (`*?`) and
///   possessive (`*+`) ones, and a quantifier on a quantifier (`a{2}{3}`), are refused;
/// - `.`: exactly one UTF-8 encoded character, any Unicode scalar value but `\n` (PCRE2's default);
/// - literal characters, non-ASCII ones as their UTF-8 bytes (the pattern must be valid UTF-8);
/// - classes `[abc]`, `[a-z]`, `[^\\]`, `[é-ü]`, with escapes and shorthands inside; a negated
///   class matches any one UTF-8 character not in it; `]` first closes the class, so `[]` matches
///   nothing and `[^]` any character (as ECMAScript, and PCRE2 with PCRE2_ALLOW_EMPTY_CLASS); a `-`
///   is literal first, last or escaped;
/// - escapes: any ASCII punctuation `\.` `\\` `\|` `\(` `\)` `\[` `\]` `\{` `\}` `\*` `\+` `\?` `\^`
///   `\$` `\/` `\-` ... (a double quote too) is itself; `\n` `\t` `\r` `\f` `\v` (U+000B, as in
///   ECMAScript and Python; PCRE2 reads `\v` as a class) `\0`; `\xHH` (exactly two hex digits), `\x{H...}` and
///   `\uHHHH` are the code point (so `\xE9` is é, two bytes, as PCRE2 in UTF mode);
/// - shorthands with their ASCII meaning (PCRE2 without UCP): `\d` `[0-9]`, `\w` `[A-Za-z0-9_]`,
///   `\s` `[\t\n\v\f\r ]`; `\D` `\W` `\S` are any other character, non-ASCII ones included;
/// - `^` as the pattern's first character and `$` as its last are allowed and mean nothing (the
///   match is always of the whole string).
///
/// Refused with an Error naming the column and what to write instead: backreferences (`\1`),
/// lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), atomic groups, named groups, inline flags (`(?i)`),
/// anchors elsewhere and `\b` `\B` `\A` `\z` `\Z` `\G`, Unicode properties `\p{..}`, POSIX classes
/// `[[:alpha:]]`, octal escapes, other letter escapes, an unmatched `(` or `)`, a `{` that is not a
/// quantifier (write `\{`), more than 200 nested groups, and a pattern that matches no string.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace decodebook {

/// Limits that keep a pattern's automata small (a pattern beyond them is refused, never a hang).
/// The subset construction also stops after 100 x max_nfa_states steps of work (a step is one
/// NFA state visited or one transition followed), so its time is bounded by the same knob.
/// Introduced in chapter 09.
struct RegexLimits {
    size_t max_nfa_states = 200000;  ///< Thompson NFA states (a bounded repeat copies its body)
    size_t max_dfa_states = 20000;   ///< states the subset construction may create (before pruning)
};

/// A deterministic automaton over bytes. Every state is live (some continuation from it reaches an
/// accepting state); a byte that cannot continue any match goes to kDead. Introduced in chapter 09.
struct Dfa {
    /// The state after a byte that no match can continue with.
    static constexpr int32_t kDead = -1;
    std::vector<int32_t> next;       ///< (states x 256), row-major: next[256 * state + byte]
    std::vector<uint8_t> accepting;  ///< per state: 1 when the bytes so far match the whole pattern
    int32_t start = 0;               ///< the state before any byte

    /// Number of states. Introduced in chapter 09.
    /// @return the number of states (every one live)
    size_t states() const { return accepting.size(); }

    /// One transition, unchecked (the token mask's inner loop). Introduced in chapter 09.
    /// @param state a state of this automaton (not kDead)
    /// @param byte the next byte
    /// @return the state after `byte`, or kDead
    int32_t step(int32_t state, uint8_t byte) const { return next[256 * static_cast<size_t>(state) + byte]; }

    /// Follow `bytes` from `state`. Introduced in chapter 09.
    /// @param state a state of this automaton, or kDead
    /// @param bytes the bytes to follow
    /// @return the state reached, or kDead when it dies on the way (or `state` is kDead)
    /// @throws Error when `state` is neither kDead nor a state of this automaton
    int32_t walk(int32_t state, std::string_view bytes) const;

    /// Whether the whole of `bytes` matches the pattern. Introduced in chapter 09.
    /// @param bytes the candidate output
    /// @return true when walking `bytes` from the start ends in an accepting state
    bool matches(std::string_view bytes) const;
};

/// Compile a regex to a Dfa matching whole strings (as Outlines does: the output must match from
/// its first byte to its last). The syntax is listed at the top of this header.
/// Introduced in chapter 09.
/// @param pattern the regular expression, valid UTF-8
/// @param limits the largest automata to build
/// @return the minimal DFA, states numbered breadth-first from the start (state 0), bytes in order
/// @throws Error naming the position (1-based column) and what is not supported, or that the
/// pattern matches no string at all (an empty language), or a limit
Dfa compile_regex(std::string_view pattern, const RegexLimits& limits = {});

/// What compiling a pattern built at each step: the chapter's table of sizes. Introduced in chapter 09.
struct RegexBuild {
    Dfa dfa;                    ///< the result, as compile_regex returns it
    size_t nfa_states = 0;      ///< states of the Thompson NFA
    size_t byte_classes = 0;    ///< bytes that no transition tells apart count as one class
    size_t subset_states = 0;   ///< DFA states the subset construction created
    size_t live_states = 0;     ///< of those, the ones from which an accepting state is reachable
};

/// compile_regex, keeping the size of each stage. Introduced in chapter 09.
/// @param pattern the regular expression, valid UTF-8
/// @param limits the largest automata to build
/// @return the DFA and the sizes of the NFA, the subset DFA and its live part
/// @throws Error as compile_regex does
RegexBuild build_regex(std::string_view pattern, const RegexLimits& limits = {});

/// `literal` with every regex metacharacter escaped, so compile_regex matches exactly it.
/// Control characters are written as escapes (`\n`, `\xHH`), so the regex prints on one line.
/// Introduced in chapter 09.
/// @param literal the exact text to match, valid UTF-8
/// @return a pattern whose language is exactly {literal}
/// @throws Error when `literal` is not valid UTF-8 (a pattern is text)
std::string escape_regex(std::string_view literal);

/// The regex of `--choice`: exactly one of the strings (escaped alternation, in a `(?: )` group
/// so it can be embedded in a larger pattern). Introduced in chapter 09.
/// @param choices the allowed outputs, each valid UTF-8
/// @return a pattern whose language is exactly the set of choices
/// @throws Error for an empty list, or a choice that is not valid UTF-8
std::string choice_regex(const std::vector<std::string>& choices);

}  // namespace decodebook
