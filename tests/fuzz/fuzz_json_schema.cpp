// libFuzzer target: the JSON-schema converter of chapter 09 (lib/src/constrain/json_schema.cpp), as
// --json-schema runs it. Input: any bytes, taken as a schema file. parse_json_schema, then
// json_schema_regex, then compile_regex either throw decodebook::Error or give a DFA that passes
// fuzz::check_dfa; then texts drawn from that DFA (random walks to an accepting state, seeded by the
// input so a run repeats) must each be one JSON value (is_json): a schema's regex
// never lets a model write what a JSON parser refuses.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/constrain/json_schema.hpp"
#include "decodebook/constrain/regex.hpp"
#include "fuzz_dfa.hpp"

namespace {

using decodebook::Dfa;

// splitmix64: a seed per input, so the same input draws the same texts.
uint64_t next_random(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Bytes from each state to the nearest accepting state (every state is live: all finite), by a
// breadth-first search backwards from the accepting states.
std::vector<int> distance_to_accept(const Dfa& dfa) {
    const size_t n = dfa.states();
    std::vector<std::vector<int32_t>> into(n);
    for (size_t s = 0; s < n; ++s)
        for (int b = 0; b < 256; ++b)
            if (const int32_t t = dfa.step(static_cast<int32_t>(s), static_cast<uint8_t>(b)); t != Dfa::kDead)
                into[t].push_back(static_cast<int32_t>(s));
    std::vector<int> d(n, -1);
    std::vector<int32_t> queue;
    for (size_t s = 0; s < n; ++s)
        if (dfa.accepting[s]) d[s] = 0, queue.push_back(static_cast<int32_t>(s));
    for (size_t head = 0; head < queue.size(); ++head)
        for (int32_t s : into[queue[head]])
            if (d[s] < 0) d[s] = d[queue[head]] + 1, queue.push_back(s);
    return d;
}

// One text the DFA accepts: random bytes for `budget` steps, then the shortest way to acceptance;
// it stops at an accepting state with no way on, and at any other one chance in four.
std::string draw_text(const Dfa& dfa, const std::vector<int>& dist, uint64_t& random, size_t budget) {
    std::string text;
    std::vector<uint8_t> choices;
    for (int32_t s = dfa.start;;) {
        choices.clear();
        for (int b = 0; b < 256; ++b) {
            const int32_t t = dfa.step(s, static_cast<uint8_t>(b));
            if (t != Dfa::kDead && (text.size() < budget || dist[t] < dist[s])) choices.push_back(static_cast<uint8_t>(b));
        }
        if (dfa.accepting[s] && (choices.empty() || text.size() >= budget || next_random(random) % 4 == 0)) return text;
        if (choices.empty()) fuzz::fail("a live DFA state has no way to an accepting state");
        const uint8_t b = choices[next_random(random) % choices.size()];
        text.push_back(static_cast<char>(b));
        s = dfa.step(s, b);
    }
}

// One JSON value by RFC 8259's grammar. nlohmann's parser also refuses a number beyond a double
// ("number overflow", out_of_range 406: 1e999 is JSON, and Python reads it as inf): that is
// the grammar's number all the same.
bool is_json(const std::string& text) {
    try {
        (void)nlohmann::json::parse(text);
        return true;
    } catch (const nlohmann::json::out_of_range& e) {
        return e.id == 406;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 4096) return 0;  // a schema, not a book
    const std::string text(reinterpret_cast<const char*>(data), size);
    Dfa dfa;
    try {
        const nlohmann::ordered_json schema = decodebook::parse_json_schema(text, "fuzz.json");
        dfa = decodebook::compile_regex(decodebook::json_schema_regex(schema), fuzz::kLimits);
    } catch (const decodebook::Error&) {
        return 0;  // refused with a message: allowed for any input
    }
    fuzz::check_dfa(dfa);
    const std::vector<int> dist = distance_to_accept(dfa);
    uint64_t random = std::hash<std::string>{}(text);
    for (int i = 0; i < 4; ++i) {
        const std::string json = draw_text(dfa, dist, random, 48);
        if (!is_json(json)) {
            std::fprintf(stderr, "fuzz: the schema's DFA accepts %s\n", nlohmann::json(json).dump().c_str());
            fuzz::fail("a text the schema's regex allows is not JSON");
        }
    }
    return 0;
}
