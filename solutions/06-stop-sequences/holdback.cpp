// Solution 06.1 - The holdback matcher.
#include <algorithm>

#include "decodebook/base/utf8.hpp"
#include "decodebook/exercises.hpp"

namespace decodebook {

StopScan your_scan_stops(std::string_view pending, const std::vector<std::string>& stops) {
    // 1. the earliest occurrence of any stop string; a tie keeps the earlier in the list
    std::optional<StopHit> best;
    for (size_t i = 0; i < stops.size(); ++i) {
        const size_t at = pending.find(stops[i]);
        if (at != std::string_view::npos && (!best || at < best->position)) best = StopHit{at, i};
    }
    if (best) return {best->position, best->index};
    // 2. no stop: hold back the longest suffix that is a proper prefix of a stop string
    size_t held = 0;
    for (const std::string& stop : stops) {
        for (size_t n = std::min(stop.size() - 1, pending.size()); n > held; --n) {
            if (pending.substr(pending.size() - n) == std::string_view(stop).substr(0, n)) {
                held = n;
                break;
            }
        }
    }
    // 3. and a character cut off at the end: find its lead byte among the last three bytes
    for (size_t back = 1; back <= std::min<size_t>(3, pending.size()); ++back) {
        const size_t at = pending.size() - back;
        if ((static_cast<unsigned char>(pending[at]) & 0xC0) == 0x80) continue;
        if (utf8_step(pending.substr(at)).incomplete) held = std::max(held, back);
        break;
    }
    return {pending.size() - held, std::nullopt};
}

}  // namespace decodebook
