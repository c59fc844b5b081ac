// libFuzzer target: the regex compiler of chapter 09 (lib/src/constrain/regex.cpp). Input: any
// bytes, taken as the pattern. compile_regex either throws decodebook::Error or returns a DFA
// whose table is well formed and whose every state is reachable and live (an accepting state is
// reachable from it), and which accepts only valid UTF-8: walked beside a UTF-8 decoder, no
// transition the DFA keeps is invalid UTF-8 and no accepting state is reached inside a character.
// The same bytes, when they are valid UTF-8 and at most 12 of them, also go through escape_regex,
// whose pattern must match exactly them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/regex.hpp"
#include "fuzz_dfa.hpp"

namespace {

using decodebook::Dfa;

bool valid_utf8(std::string_view s) {
    for (size_t k = 0; k < s.size();) {
        const decodebook::Utf8Step step = decodebook::utf8_step(s.substr(k));
        if (!step.valid) return false;
        k += step.length;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 4096) return 0;  // a pattern, not a book
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    try {
        fuzz::check_dfa(decodebook::compile_regex(input, fuzz::kRegexLimits));
    } catch (const decodebook::Error&) {
        // refused with a message: allowed for any input
    }
    // escape_regex writes each byte's escape alone, so what can go wrong is a byte's escape, or two
    // or three escapes read together by the parser: 12 bytes reach every such case. Every input of
    // up to 48 bytes took a third of the target's time (a second DFA, a chain of size + 1 states).
    if (size <= 12 && valid_utf8(input)) {
        const Dfa literal = decodebook::compile_regex(decodebook::escape_regex(input), fuzz::kRegexLimits);
        if (!literal.matches(input)) fuzz::fail("escape_regex's pattern does not match its literal");
        if (literal.matches(std::string(input) + "x")) fuzz::fail("escape_regex's pattern matches more than its literal");
        if (literal.states() != size + 1) fuzz::fail("a literal's minimal DFA is not a chain of its bytes");
    }
    return 0;
}
