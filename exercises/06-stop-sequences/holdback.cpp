// Exercise 06.1 - The holdback matcher.                     Chapter 06: EOS and stop sequences
//
// `pending` is the generated text not shown yet; it grows by one token at a time and may end in
// the middle of a UTF-8 character. Return what may be shown now:
//   - if some stop string occurs in `pending`, the one that starts EARLIEST wins (a tie goes to
//     the earlier in the list): stop = its index, safe = where it starts (the text before it);
//   - otherwise stop = nothing, and safe = pending.size() minus what must wait: the longest
//     suffix of `pending` that is a proper prefix of some stop string (it may still complete),
//     or a cut-off character at the end, whichever is longer.
//
//   stops {"User:"}:  "Hello Us" -> safe 6 ("Hello ", "Us" waits)    "User said" -> safe 9
//                     "User:"    -> safe 0, stop 0                    "ABCDEF" with "DE" -> safe 3
//   stops {"ab", "b"}: "xab" -> safe 1, stop 0 ("ab" starts before "b")
//   stops {"!"}: "caf\xC3" -> safe 3 (the \xC3 starts "é": never show half a character)
//
// Graded by: ./grade 06 (scripted token streams: split UTF-8, two stops sharing a prefix, a stop
// longer than any token, a stop across three tokens, "User:" against "User said").
// decodebook::utf8_step tells a cut-off character (incomplete) from a whole one.
// Do not call decodebook::scan_stops, find_stop or stop_holdback: they are the answer.
#include "decodebook/exercises.hpp"

namespace decodebook {

StopScan your_scan_stops(std::string_view pending, const std::vector<std::string>& stops) {
    // TODO: find the earliest stop; if none, hold back a possible stop prefix or a cut-off character.
    (void)pending, (void)stops;
    throw NotImplemented("06.1 (your_scan_stops)", "exercises/06-stop-sequences/holdback.cpp");
}

}  // namespace decodebook
