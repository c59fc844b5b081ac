// Chapter 06: stop strings on the text, and the stream that holds back what may still become one.
#include "decodebook/decoding/stop_strings.hpp"

#include <algorithm>

#include "decodebook/base/error.hpp"

namespace decodebook {

// [ch06:find-stop]
std::optional<StopHit> find_stop(std::string_view text, size_t from, const std::vector<std::string>& stops,
                                 StopMatch rule) {
    std::optional<StopHit> best;
    size_t best_end = 0;  // where `best` ends
    for (size_t i = 0; i < stops.size(); ++i) {
        const std::string& stop = stops[i];
        // a new occurrence ends after `from`, so it starts at from - len + 1 or later
        const size_t start = from + 1 > stop.size() ? from + 1 - stop.size() : 0;
        const size_t at = text.find(stop, start);
        if (at == std::string_view::npos) continue;
        if (rule == StopMatch::ListOrder) return StopHit{at, i};  // vLLM before PR #49391: the list decides
        const size_t end = at + stop.size();
        // llama.cpp: the first to start wins; vLLM: the first to complete; a tie keeps the earlier in the list
        if (!best || (rule == StopMatch::Vllm ? end < best_end : at < best->position)) {
            best = StopHit{at, i};
            best_end = end;
        }
    }
    return best;
}
// [/ch06:find-stop]

std::vector<std::string> never_winning_stops(const std::vector<std::string>& stops, StopMatch rule) {
    std::vector<std::string> warnings;
    const auto quoted = [&](size_t i) {
        std::string q(1, '"');
        q += to_valid_utf8(stops[i]);
        q += "\" (stop ";
        q += std::to_string(i + 1);
        return q + ")";
    };
    for (size_t b = 0; b < stops.size(); ++b) {
        const std::string_view outer = stops[b];
        for (size_t a = 0; a < stops.size(); ++a) {
            const std::string_view inner = stops[a];
            if (a == b || inner.empty() || inner.size() > outer.size()) continue;
            const size_t at = outer.find(inner);
            if (at == std::string_view::npos) continue;
            std::string why;
            if (rule == StopMatch::Vllm && at + inner.size() < outer.size()) {
                why = "is inside it and completes first";
            } else if (rule == StopMatch::Vllm && a < b) {
                why = "ends it and is listed first";
            } else if (rule == StopMatch::ListOrder && a < b) {
                why = "is inside it and is listed first";
            } else if ((rule == StopMatch::Earliest || rule == StopMatch::TokenOverlap) && at == 0 && a < b) {
                why = "begins it and is listed first";
            }
            if (why.empty()) continue;
            warnings.push_back("the stop " + quoted(b) + " can never end the text under stop_match " + to_string(rule) +
                               ": " + quoted(a) + " " + why + "; drop one of them");
            break;
        }
    }
    return warnings;
}

// [ch06:holdback]
size_t stop_holdback(std::string_view text, const std::vector<std::string>& stops) {
    size_t longest = 0;
    for (const std::string& stop : stops) {
        // proper prefixes only: a whole stop string is a match, not something to wait for
        for (size_t n = std::min(stop.size() - 1, text.size()); n > longest; --n) {
            if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) {
                longest = n;
                break;
            }
        }
    }
    return longest;
}
// [/ch06:holdback]

namespace {

// Bytes at the end of `text` that start a character the text cuts off (0 to 3).
size_t cut_off_tail(std::string_view text) {
    for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
        const size_t at = text.size() - back;
        if ((static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) continue;  // a continuation byte
        return utf8_step(text.substr(at)).incomplete ? back : 0;
    }
    return 0;
}

}  // namespace

StopScan scan_stops(std::string_view pending, const std::vector<std::string>& stops) {
    if (const std::optional<StopHit> hit = find_stop(pending, 0, stops, StopMatch::Earliest))
        return {hit->position, hit->index};
    const size_t held = std::max(stop_holdback(pending, stops), cut_off_tail(pending));
    return {pending.size() - held, std::nullopt};
}

StopStringStream::StopStringStream(std::vector<std::string> stops, bool include_stop_str_in_output, StopMatch rule)
    : stops_(std::move(stops)), include_(include_stop_str_in_output), rule_(rule) {
    if (stops_.empty()) throw Error("a StopStringStream needs at least one stop string", "use PlainTextStream without stops");
    for (const std::string& s : stops_) {
        if (s.empty()) throw Error("a stop string is empty", "give each --stop some text, e.g. --stop 'User:'");
        if (to_valid_utf8(s) != s) {
            throw Error("the stop string '" + to_valid_utf8(s) + "' is not valid UTF-8, so it can never match the text",
                        "pass stop strings as UTF-8 text");
        }
    }
}

// [ch06:stream]
std::string StopStringStream::push(std::string_view bytes) {
    if (matched_) return "";  // nothing after a stop, ever
    return advance(utf8_.push(bytes), false);
}

std::string StopStringStream::flush() {
    if (matched_) return "";
    return advance(utf8_.flush(), true);
}

std::string StopStringStream::advance(const std::string& complete_text, bool final) {
    const size_t from = text_.size();  // the text before `from` was searched already
    text_ += complete_text;
    const std::string_view text(text_);
    if (const std::optional<StopHit> hit = find_stop(text, from, stops_, rule_)) {
        const bool earlier = !found_ || hit->position < found_->position ||
                             (hit->position == found_->position && hit->index < found_->index);
        if (earlier) found_ = hit;
    }
    size_t end = text.size();  // show up to here
    if (found_) {
        if (rule_ == StopMatch::Earliest && !final && earlier_stop_pending(text, *found_)) {
            // a stop that starts earlier may still complete: wait, showing nothing past this one
            end = include_ ? found_->position + stops_[found_->index].size() : found_->position;
        } else {
            matched_ = stops_[found_->index];
            if (rule_ != StopMatch::TokenOverlap)  // HF keeps the whole token; the others cut the text
                end = include_ ? found_->position + matched_->size() : found_->position;
        }
    }
    // text that may still become a stop waits; after a final match no stop can complete any more,
    // so everything before the cut is shown (holding back for a pending longer stop lost it)
    if (!final && !matched_ && !include_ && rule_ != StopMatch::TokenOverlap)
        end = std::min(end, text.size() - stop_holdback(text.substr(released_), stops_));
    end = std::max(end, released_);  // nothing shown is ever taken back
    std::string out = text_.substr(released_, end - released_);
    released_ = end;
    return out;
}

bool StopStringStream::earlier_stop_pending(std::string_view text, const StopHit& hit) const {
    for (size_t i = 0; i < stops_.size(); ++i) {
        const std::string_view stop = stops_[i];
        // stop i, begun at q and not complete yet: the text from q on is a proper prefix of it
        for (size_t q = text.size() >= stop.size() ? text.size() - stop.size() + 1 : 0; q <= hit.position; ++q) {
            if (q == hit.position && i >= hit.index) break;  // same start: the earlier in the list wins
            if (stop.substr(0, text.size() - q) == text.substr(q)) return true;
        }
    }
    return false;
}
// [/ch06:stream]

}  // namespace decodebook
