// Chapter 06, parts 2 to 4: stop strings on small scripted streams. A stop string is text: it may
// begin inside one token and end inside a later one, several may match, and a program that
// streams must not show text that a stop string is about to claim.
#include <cstdio>
#include <string>
#include <vector>

#include "chapter06.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/stop_strings.hpp"

using namespace decodebook;

namespace chapter06 {
namespace {

// Push `tokens` through a StopStringStream and print one row per token: what it showed, what it holds.
void print_stream(const std::vector<std::string>& tokens, const std::vector<std::string>& stops, bool include,
                  StopMatch rule) {
    StopStringStream s(stops, include, rule);
    for (const std::string& t : tokens) {
        const bool before = s.matched_stop().has_value();
        const std::string shown = s.push(t);
        const std::string state = before ? "ignored, after the stop"
                                  : (s.matched_stop() ? "drops " : "holds ") + visible_token(std::string(s.held()));
        std::printf("    push %-10s shows %-12s %s\n", visible_token(t).c_str(), visible_token(shown).c_str(), state.c_str());
    }
    const std::string tail = s.flush();
    std::printf("    %-15s shows %-12s -> matched %s\n", "flush", visible_token(tail).c_str(),
                s.matched_stop() ? visible_token(*s.matched_stop()).c_str() : "nothing");
}

// The whole text a stream shows for `tokens`.
std::string shown_text(const std::vector<std::string>& tokens, const std::vector<std::string>& stops, bool include,
                       StopMatch rule) {
    StopStringStream s(stops, include, rule);
    std::string out;
    for (const std::string& t : tokens) out += s.push(t);
    return out + s.flush();
}

}  // namespace

void stop_across_tokens() {
    print_stream({"ABC", "xDE", "Fgh"}, {"DE"}, false, StopMatch::Earliest);
    print_stream({"AB", "CD", "EF"}, {"DE"}, false, StopMatch::Earliest);
}

void several_stops() {
    const std::vector<std::string> lo_hel{"lo", "hel"};
    std::printf("  stops [\"lo\", \"hel\"], tokens \"hello\" \" world\":\n");
    for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm, StopMatch::ListOrder, StopMatch::TokenOverlap}) {
        std::printf("    %-14s shows %-9s with include_stop_str_in_output: %s\n", to_string(rule).c_str(),
                    visible_token(shown_text({"hello", " world"}, lo_hel, false, rule)).c_str(),
                    visible_token(shown_text({"hello", " world"}, lo_hel, true, rule)).c_str());
    }
    const std::vector<std::string> abcd_bc{"abcd", "bc"};
    std::printf("  stops [\"abcd\", \"bc\"], tokens \"xab\" \"c\" \"d\": \"bc\" completes first, \"abcd\" starts first:\n");
    for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm, StopMatch::ListOrder}) {
        StopStringStream s(abcd_bc, false, rule);
        std::string shown;
        for (const char* t : {"xab", "c", "d"}) shown += s.push(t);
        shown += s.flush();
        std::printf("    %-14s shows %-9s matched %-7s with include_stop_str_in_output: %s\n", to_string(rule).c_str(),
                    visible_token(shown).c_str(), visible_token(s.matched_stop().value_or("")).c_str(),
                    visible_token(shown_text({"xab", "c", "d"}, abcd_bc, true, rule)).c_str());
    }
    const std::vector<std::string> abc_b{"abc", "b"};
    std::printf("  stops [\"abc\", \"b\"], one token \"abc\": \"abc\" starts first and is first in the list, \"b\" completes first:\n");
    for (StopMatch rule : {StopMatch::Earliest, StopMatch::Vllm}) {
        StopStringStream s(abc_b, false, rule);
        const std::string shown = s.push("abc") + s.flush();
        std::printf("    %-14s shows %-9s matched %s\n", to_string(rule).c_str(), visible_token(shown).c_str(),
                    visible_token(s.matched_stop().value_or("")).c_str());
    }
    const StopScan scan = scan_stops("xabc", abcd_bc);
    std::printf("  exercise 06.1's scan decides on the pending text alone: scan_stops(\"xabc\", [\"abcd\", \"bc\"]) ="
                " safe %zu, stop %s\n  (the text %s), where earliest waits for the next token.\n",
                scan.safe, scan.stop ? visible_token(abcd_bc[*scan.stop]).c_str() : "none",
                visible_token(std::string("xabc").substr(0, scan.safe)).c_str());
}

void streaming_holdback() {
    print_stream({"User", " said"}, {"User:"}, false, StopMatch::Earliest);
    print_stream({"User", ":", " hi"}, {"User:"}, false, StopMatch::Earliest);
    print_stream({"Hello Us", "e", "r"}, {"User:"}, false, StopMatch::Earliest);
    const auto fixed_holdback = [](const std::string& text) { return text.substr(0, text.size() > 4 ? text.size() - 4 : 0); };
    std::printf("  vLLM instead holds a fixed max(len(stop)) - 1 = 4 characters until the end: after \"Hello Us\"\n"
                "  it shows %s, after \"User\" then \" said\" it shows %s and keeps the rest.\n",
                visible_token(fixed_holdback("Hello Us")).c_str(), visible_token(fixed_holdback("User said")).c_str());
}

}  // namespace chapter06
