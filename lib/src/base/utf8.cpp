// Chapter 00: printing tokens safely. A GPT-2 token is a byte string, not a character string.
#include "decodebook/base/utf8.hpp"

namespace decodebook {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

Utf8Step utf8_step(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    if (n == 0) return {0, false, false};
    const unsigned char b = p[0];
    if (b < 0x80) return {1, true, false};
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
        need = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0) lo = 0xA0;  // no overlongs
        if (b == 0xED) hi = 0x9F;  // no surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0) lo = 0x90;  // no overlongs
        if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
        return {1, false, false};  // continuation byte or C0, C1, F5..FF: never a lead
    }
    for (size_t i = 1; i < need; ++i) {
        if (i >= n) return {i, false, true};
        const unsigned char c = p[i];
        const bool ok = i == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        if (!ok) return {i, false, false};
    }
    return {need, true, false};
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string to_valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t i = 0;
    while (i < bytes.size()) {
        const Utf8Step step = utf8_step(bytes.substr(i));
        if (step.valid) {
            out.append(bytes.substr(i, step.length));
        } else {
            out += kReplacement;
        }
        i += step.length;
    }
    return out;
}

std::string Utf8Stream::push(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        const Utf8Step step = utf8_step(std::string_view(pending_).substr(i));
        if (step.incomplete) break;  // wait for the next token
        if (step.valid) {
            out.append(pending_, i, step.length);
        } else {
            out += kReplacement;
        }
        i += step.length;
    }
    pending_.erase(0, i);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out = to_valid_utf8(pending_);
    pending_.clear();
    return out;
}

}  // namespace decodebook
