// libFuzzer target: the regex compiler of chapter 09 (lib/src/constrain/regex.cpp). Input: any
// bytes, taken as the pattern. compile_regex either throws decodebook::Error or returns a DFA
// whose table is well formed and whose every state is reachable and live (an accepting state is
// reachable from it), and which accepts only valid UTF-8: walked beside a UTF-8 decoder, no
// transition the DFA keeps is invalid UTF-8 and no accepting state is reached inside a character.
// The same bytes, when they are valid UTF-8, also go through escape_regex, whose pattern must
// match exactly them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/regex.hpp"
#include "fuzz_common.hpp"

namespace {

using decodebook::Dfa;

// A UTF-8 decoder as 8 states: 0 between characters, 1-3 continuation bytes to go (80..BF),
// 4 after E0 (A0..BF), 5 after ED (80..9F), 6 after F0 (90..BF), 7 after F4 (80..8F).
// Returns the state after `b`, or -1 when `b` cannot come next in valid UTF-8.
int utf8_next(int u, uint8_t b) {
    const bool cont = b >= 0x80 && b <= 0xBF;
    switch (u) {
        case 0:
            if (b < 0x80) return 0;
            if (b >= 0xC2 && b <= 0xDF) return 1;
            if (b == 0xE0) return 4;
            if (b == 0xED) return 5;
            if (b >= 0xE1 && b <= 0xEF) return 2;
            if (b == 0xF0) return 6;
            if (b >= 0xF1 && b <= 0xF3) return 3;
            if (b == 0xF4) return 7;
            return -1;
        case 1: return cont ? 0 : -1;
        case 2: return cont ? 1 : -1;
        case 3: return cont ? 2 : -1;
        case 4: return b >= 0xA0 && b <= 0xBF ? 1 : -1;
        case 5: return b >= 0x80 && b <= 0x9F ? 1 : -1;
        case 6: return b >= 0x90 && b <= 0xBF ? 2 : -1;
        default: return b >= 0x80 && b <= 0x8F ? 2 : -1;
    }
}

void check_dfa(const Dfa& dfa) {
    const size_t n = dfa.states();
    if (n == 0 || dfa.next.size() != 256 * n || dfa.start != 0) fuzz::fail("the DFA's table has the wrong shape");
    std::vector<std::vector<int32_t>> into(n);
    for (size_t s = 0; s < n; ++s)
        for (int b = 0; b < 256; ++b) {
            const int32_t t = dfa.next[256 * s + b];
            if (t != Dfa::kDead && (t < 0 || static_cast<size_t>(t) >= n)) fuzz::fail("a transition leaves the DFA");
            if (t >= 0) into[t].push_back(static_cast<int32_t>(s));
        }
    // reachable states, each beside the UTF-8 decoder's state (one pair per (state, decoder))
    std::vector<uint8_t> seen(8 * n, 0), reached(n, 0), live(n, 0);
    std::vector<std::pair<int32_t, int>> todo{{dfa.start, 0}};
    seen[8 * dfa.start] = 1;
    while (!todo.empty()) {
        const auto [s, u] = todo.back();
        todo.pop_back();
        reached[s] = 1;
        if (dfa.accepting[s] && u != 0) fuzz::fail("the DFA accepts a string that ends inside a character");
        for (int b = 0; b < 256; ++b) {
            const int32_t t = dfa.step(s, static_cast<uint8_t>(b));
            if (t == Dfa::kDead) continue;
            const int v = utf8_next(u, static_cast<uint8_t>(b));
            if (v < 0) fuzz::fail("the DFA accepts a string that is not valid UTF-8");
            if (!seen[8 * t + v]) seen[8 * t + v] = 1, todo.push_back({t, v});
        }
    }
    std::vector<int32_t> back;
    for (size_t s = 0; s < n; ++s)
        if (dfa.accepting[s]) live[s] = 1, back.push_back(static_cast<int32_t>(s));
    while (!back.empty()) {
        const int32_t t = back.back();
        back.pop_back();
        for (int32_t s : into[t])
            if (!live[s]) live[s] = 1, back.push_back(s);
    }
    for (size_t s = 0; s < n; ++s) {
        if (!reached[s]) fuzz::fail("a DFA state cannot be reached from the start");
        if (!live[s]) fuzz::fail("a DFA state cannot reach an accepting state (it should be kDead)");
    }
}

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
        check_dfa(decodebook::compile_regex(input));
    } catch (const decodebook::Error&) {
        // refused with a message: allowed for any input
    }
    if (valid_utf8(input)) {
        const Dfa literal = decodebook::compile_regex(decodebook::escape_regex(input));
        if (!literal.matches(input)) fuzz::fail("escape_regex's pattern does not match its literal");
        if (literal.matches(std::string(input) + "x")) fuzz::fail("escape_regex's pattern matches more than its literal");
        if (literal.states() != size + 1) fuzz::fail("a literal's minimal DFA is not a chain of its bytes");
    }
    return 0;
}
