// libFuzzer target: the stop-string matcher (lib/src/decoding/stop_strings.cpp) against a naive search.
// Input: byte 0 picks the rule and include_stop_str_in_output; then 1 to 4 stop strings and the
// tokens, every field ended by byte 0x00 (stops) or 0x01 (tokens): "\x02" "ab\0" "cd\0" "x\1y\1".
// Checked: find_stop and scan_stops agree with a plain search; stop_holdback is the longest suffix
// that is a proper prefix of a stop; on ASCII text the stream shows exactly the text before the
// earliest stop (through it with include), whatever the token split, and holds back the rest.
#include <algorithm>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "fuzz_common.hpp"

namespace {

using decodebook::StopMatch;

// The earliest occurrence of any stop (ties: earlier in the list) that ends after byte `from`.
std::optional<decodebook::StopHit> naive_earliest(std::string_view text, size_t from,
                                                  const std::vector<std::string>& stops) {
    std::optional<decodebook::StopHit> best;
    for (size_t at = 0; at < text.size(); ++at)
        for (size_t i = 0; i < stops.size(); ++i)
            if (text.substr(at).starts_with(stops[i]) && at + stops[i].size() > from && (!best || at < best->position))
                best = decodebook::StopHit{at, i};
    return best;
}

size_t naive_holdback(std::string_view text, const std::vector<std::string>& stops) {
    size_t longest = 0;
    for (const std::string& stop : stops)
        for (size_t n = 1; n < stop.size() && n <= text.size(); ++n)
            if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) longest = std::max(longest, n);
    return longest;
}

bool ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    constexpr StopMatch kRules[] = {StopMatch::Earliest, StopMatch::ListOrder, StopMatch::TokenOverlap, StopMatch::Vllm};
    const StopMatch rule = kRules[data[0] % 4];
    const bool include = (data[0] >> 2) & 1;
    std::vector<std::string> stops, tokens;
    std::string field;
    for (char c : input) {
        if (c == '\0' && stops.size() < 4) {
            stops.push_back(field);
            field.clear();
        } else if (c == '\1') {
            tokens.push_back(field);
            field.clear();
        } else {
            field += c;
        }
    }
    tokens.push_back(field);
    if (stops.empty()) return 0;
    std::string text;
    for (const std::string& t : tokens) text += t;

    const bool usable = std::none_of(stops.begin(), stops.end(), [](const std::string& s) { return s.empty(); });
    if (usable) {
        for (size_t from = 0; from <= text.size(); from += 1 + text.size() / 8) {
            const auto got = decodebook::find_stop(text, from, stops, StopMatch::Earliest);
            const auto want = naive_earliest(text, from, stops);
            if (got.has_value() != want.has_value() ||
                (got && (got->position != want->position || got->index != want->index)))
                fuzz::fail("find_stop (earliest) differs from a plain search");
            const auto listed = decodebook::find_stop(text, from, stops, StopMatch::ListOrder);
            if (listed.has_value() != want.has_value()) fuzz::fail("find_stop (list_order) finds a stop iff one occurs");
            if (listed && text.compare(listed->position, stops[listed->index].size(), stops[listed->index]) != 0)
                fuzz::fail("find_stop (list_order) points at text that is not its stop");
            const auto completed = decodebook::find_stop(text, from, stops, StopMatch::Vllm);
            if (completed.has_value() != want.has_value()) fuzz::fail("find_stop (vllm) finds a stop iff one occurs");
            if (completed && text.compare(completed->position, stops[completed->index].size(), stops[completed->index]) != 0)
                fuzz::fail("find_stop (vllm) points at text that is not its stop");
        }
        if (decodebook::stop_holdback(text, stops) != naive_holdback(text, stops))
            fuzz::fail("stop_holdback differs from the longest suffix that is a proper prefix of a stop");
        const decodebook::StopScan scan = decodebook::scan_stops(text, stops);
        if (scan.safe > text.size()) fuzz::fail("scan_stops: safe beyond the text");
        const auto first = naive_earliest(text, 0, stops);
        if (scan.stop.has_value() != first.has_value()) fuzz::fail("scan_stops: a stop found iff one occurs");
        if (first && (scan.safe != first->position || *scan.stop != first->index))
            fuzz::fail("scan_stops: not the earliest stop");
        if (!first && ascii(text) && scan.safe != text.size() - naive_holdback(text, stops))
            fuzz::fail("scan_stops: holds back more or less than the longest prefix of a stop");
    }

    try {
        decodebook::StopStringStream stream(stops, include, rule);
        std::string shown;
        for (const std::string& t : tokens) {
            shown += stream.push(t);
            if (stream.matched_stop()) break;
        }
        shown += stream.flush();
        if (!usable) fuzz::fail("a stream was made with an empty stop string");
        if (rule == StopMatch::Earliest && ascii(text) && std::all_of(stops.begin(), stops.end(), ascii)) {
            const auto first = naive_earliest(text, 0, stops);
            const std::string want = !first ? text : text.substr(0, first->position + (include ? stops[first->index].size() : 0));
            if (shown != want) fuzz::fail("the stream did not show exactly the text before the earliest stop");
            if (first.has_value() != stream.matched_stop().has_value()) fuzz::fail("the stream's matched stop");
        }
        if (ascii(text) && text.substr(0, shown.size()) != shown) fuzz::fail("the stream showed text it was not given");
    } catch (const decodebook::Error&) {
        if (usable && std::all_of(stops.begin(), stops.end(), ascii)) fuzz::fail("a stream refused usable stops");
    }
    return 0;
}
