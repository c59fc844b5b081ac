// Shared by the libFuzzer targets that compile regexes (fuzz_regex, fuzz_json_schema): the limits
// they compile with, and the checks every DFA must pass.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "decodebook/constrain/regex.hpp"
#include "fuzz_common.hpp"

namespace fuzz {

using decodebook::Dfa;

/// The automata a fuzz input may build: a fiftieth of the library's defaults. Run time per input grows
/// with these limits, not with the input's length: at the defaults one input in a hundred came near
/// them and took seconds (`(.([^x]*){0,99}){0,99}`: 3 s under ASan) while the median took 2 ms, so
/// those few inputs took most of the run. The refusals at a limit are still reached, sooner.
inline constexpr decodebook::RegexLimits kLimits{4000, 400};

/// fuzz_regex's own, a two-hundredth of the defaults: a pattern is all its input, and in a long run
/// the corpus fills with short patterns that reach the limits (nested repeats), so the limits set
/// the time per input. On the corpus of a 10-minute run, compile_regex took 363 us per input at
/// kLimits and 81 us at these; every stage and every refusal at a limit is still reached.
inline constexpr decodebook::RegexLimits kRegexLimits{1000, 100};

// A UTF-8 decoder as 8 states: 0 between characters, 1-3 continuation bytes to go (80..BF),
// 4 after E0 (A0..BF), 5 after ED (80..9F), 6 after F0 (90..BF), 7 after F4 (80..8F).
// Returns the state after `b`, or -1 when `b` cannot come next in valid UTF-8.
inline int utf8_next(int u, uint8_t b) {
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

/// The table is well formed, every state is reachable and live, and, walked beside a UTF-8 decoder,
/// no transition leaves valid UTF-8 and no accepting state is reached inside a character.
inline void check_dfa(const Dfa& dfa) {
    const size_t n = dfa.states();
    if (n == 0 || dfa.next.size() != 256 * n || dfa.start != 0) fail("the DFA's table has the wrong shape");
    // the edges t <- s, each (s, t) once, grouped by t: into[first[t] .. first[t + 1])
    std::vector<uint32_t> first(n + 1, 0);
    std::vector<std::pair<int32_t, int32_t>> edges;  // (t, s)
    std::vector<int32_t> last_from(n, -1);
    for (size_t s = 0; s < n; ++s)
        for (int b = 0; b < 256; ++b) {
            const int32_t t = dfa.next[256 * s + b];
            if (t != Dfa::kDead && (t < 0 || static_cast<size_t>(t) >= n)) fail("a transition leaves the DFA");
            if (t >= 0 && last_from[t] != static_cast<int32_t>(s)) {
                last_from[t] = static_cast<int32_t>(s);
                edges.emplace_back(t, static_cast<int32_t>(s));
                ++first[t + 1];
            }
        }
    for (size_t t = 0; t < n; ++t) first[t + 1] += first[t];
    std::vector<int32_t> into(edges.size());
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (const auto& [t, s] : edges) into[fill[t]++] = s;
    // reachable states, each beside the UTF-8 decoder's state (one pair per (state, decoder))
    std::vector<uint8_t> seen(8 * n, 0), reached(n, 0), live(n, 0);
    std::vector<std::pair<int32_t, int>> todo{{dfa.start, 0}};
    seen[8 * dfa.start] = 1;
    while (!todo.empty()) {
        const auto [s, u] = todo.back();
        todo.pop_back();
        reached[s] = 1;
        if (dfa.accepting[s] && u != 0) fail("the DFA accepts a string that ends inside a character");
        for (int b = 0; b < 256; ++b) {
            const int32_t t = dfa.step(s, static_cast<uint8_t>(b));
            if (t == Dfa::kDead) continue;
            const int v = utf8_next(u, static_cast<uint8_t>(b));
            if (v < 0) fail("the DFA accepts a string that is not valid UTF-8");
            if (!seen[8 * t + v]) seen[8 * t + v] = 1, todo.push_back({t, v});
        }
    }
    std::vector<int32_t> back;
    for (size_t s = 0; s < n; ++s)
        if (dfa.accepting[s]) live[s] = 1, back.push_back(static_cast<int32_t>(s));
    while (!back.empty()) {
        const int32_t t = back.back();
        back.pop_back();
        for (uint32_t k = first[t]; k < first[t + 1]; ++k)
            if (const int32_t s = into[k]; !live[s]) live[s] = 1, back.push_back(s);
    }
    for (size_t s = 0; s < n; ++s) {
        if (!reached[s]) fail("a DFA state cannot be reached from the start");
        if (!live[s]) fail("a DFA state cannot reach an accepting state (it should be kDead)");
    }
}

}  // namespace fuzz
