// Chapter 09: the naive token mask, PCRE2 asked about every token (course/naive_mask.hpp).
#include "decodebook/course/naive_mask.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

namespace decodebook {

struct Pcre2Prefix::Code {
    pcre2_code* code = nullptr;
    pcre2_match_data* data = nullptr;
    ~Code() {
        pcre2_match_data_free(data);
        pcre2_code_free(code);
    }
    int match(std::string_view s, uint32_t options) const {
        return pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, options, data, nullptr);
    }
};

Pcre2Prefix::Pcre2Prefix(const std::string& pattern) : code_(std::make_unique<Code>()) {
    // \z, not PCRE2_ENDANCHORED: PCRE2 refuses that option with partial matching.
    const std::string anchored = "(?:" + pattern + ")\\z";
    pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
    pcre2_set_newline(context, PCRE2_NEWLINE_LF);  // `.` excludes \n only, as our compiler's
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(anchored.data()), anchored.size(),
                                PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ANCHORED | PCRE2_ALLOW_EMPTY_CLASS |
                                    PCRE2_DOLLAR_ENDONLY,
                                &error, &offset, context);
    pcre2_compile_context_free(context);
    if (!code_->code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        error_ = reinterpret_cast<const char*>(message);
        return;
    }
    pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD);  // if PCRE2 has a JIT
    code_->data = pcre2_match_data_create(8, nullptr);
}

Pcre2Prefix::~Pcre2Prefix() = default;

bool Pcre2Prefix::usable() const { return code_->code != nullptr; }

bool Pcre2Prefix::prefix(std::string_view subject) {
    const int rc = code_->match(subject, PCRE2_PARTIAL_HARD);
    return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
}

bool Pcre2Prefix::full(std::string_view subject) { return code_->match(subject, 0) >= 0; }

std::vector<int> pcre2_allowed_tokens(Pcre2Prefix& re, const Vocabulary& vocabulary, const std::string& text,
                                      std::span<const int> eos_ids) {
    std::vector<int> ids;
    std::string subject = text;
    for (int id = 0; id < vocabulary.size(); ++id) {
        if (std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end()) {
            if (re.full(text)) ids.push_back(id);  // the output may end here
            continue;
        }
        const std::string& bytes = vocabulary.bytes[static_cast<size_t>(id)];
        if (bytes.empty() || vocabulary.is_special(id)) continue;
        subject.resize(text.size());
        subject += bytes;
        if (re.prefix(subject)) ids.push_back(id);
    }
    return ids;
}

}  // namespace decodebook
