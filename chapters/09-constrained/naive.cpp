// Chapter 09, part 5: the naive mask against the automaton's. Naive: for every token, ask a regex
// engine (PCRE2) whether the text so far plus the token can still become a match - V calls per
// step, each re-reading the whole text. The DFA: every token's bytes walked from the state the
// text reached (exercise 09.2), the same walk shared through a trie of the vocabulary, and the
// set kept once computed.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <iterator>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "chapter09.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter09 {
namespace {

// PCRE2 asked "is this a prefix of a match?": (?:pattern)\z, anchored, in UTF mode with invalid
// UTF-8 allowed in the subject (a token may end inside a character), matched with
// PCRE2_PARTIAL_HARD, which reports a match that ran out of subject as PCRE2_ERROR_PARTIAL.
class Pcre2Prefix {
public:
    explicit Pcre2Prefix(const std::string& pattern) {
        pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
        pcre2_set_newline(context, PCRE2_NEWLINE_LF);  // `.` excludes \n only, as our compiler's
        const std::string wrapped = "(?:" + pattern + ")\\z";
        int error = 0;
        PCRE2_SIZE offset = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(wrapped.data()), wrapped.size(),
                              PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ALLOW_EMPTY_CLASS | PCRE2_MATCH_INVALID_UTF, &error,
                              &offset, context);
        pcre2_compile_context_free(context);
        if (!code_) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            throw Error("PCRE2 refuses the pattern: " + std::string(reinterpret_cast<const char*>(message)),
                        "part 5 needs a pattern PCRE2 reads too");
        }
        data_ = pcre2_match_data_create(4, nullptr);
    }
    ~Pcre2Prefix() {
        pcre2_match_data_free(data_);
        pcre2_code_free(code_);
    }
    Pcre2Prefix(const Pcre2Prefix&) = delete;
    Pcre2Prefix& operator=(const Pcre2Prefix&) = delete;

    bool prefix(std::string_view s) {  // s is never empty here: PCRE2 reports no partial match of ""
        const int rc = run(s, PCRE2_PARTIAL_HARD);
        return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
    }
    bool full(std::string_view s) { return run(s, 0) >= 0; }

private:
    pcre2_code* code_ = nullptr;
    pcre2_match_data* data_ = nullptr;
    int run(std::string_view s, uint32_t options) {
        return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, options, data_, nullptr);
    }
};

// The naive mask: one PCRE2 call per token on text + token; an EOS where the text is a whole match.
std::vector<int> naive_allowed(Pcre2Prefix& re, const std::string& text, const Vocabulary& v, const std::vector<int>& eos) {
    std::vector<int> out;
    std::string candidate = text;
    for (int id = 0; id < v.size(); ++id) {
        if (std::find(eos.begin(), eos.end(), id) != eos.end()) {
            if (re.full(text)) out.push_back(id);
            continue;
        }
        const std::string& bytes = v.bytes[static_cast<size_t>(id)];
        if (bytes.empty() || v.is_special(id)) continue;
        candidate.resize(text.size());
        candidate += bytes;
        if (re.prefix(candidate)) out.push_back(id);
    }
    return out;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

void naive_against_index(const Session& s, const std::vector<int>& run) {
    const std::string regex = person_regex(false);
    const auto c = constraint_for(s, "person", regex);
    TokenIndex& index = *c->index;
    const Dfa& dfa = index.dfa();
    const Vocabulary vocabulary = s.tokenizer.vocabulary();
    const std::vector<int> eos = resolve_eos_ids(s.config, s.model.config().eos_token_id);
    Pcre2Prefix re(regex);
    std::vector<double> naive_us, scan_us, trie_us, cached_us;
    long disagree = 0, unfinished = 0, pcre2_only_unfinished = 0, index_differs = 0;
    std::string text;
    for (size_t i = 0; i < run.size(); ++i) {  // the step before each token of part 2's run
        const int32_t state = index.state_after(std::span<const int>(run.data(), i));
        auto t0 = Clock::now();
        const std::vector<int> naive = naive_allowed(re, text, vocabulary, eos);
        auto t1 = Clock::now();
        const std::vector<int> scan = allowed_tokens(dfa, state, vocabulary, eos);
        auto t2 = Clock::now();
        (void)index.trie().live_tokens(dfa, state);  // what a first visit computes (before the EOS rule)
        auto t3 = Clock::now();
        const std::vector<int>& kept = index.allowed(state);  // computed now if new, then kept
        const int lookups = 1000;  // one lookup is too short for the clock: time a thousand
        volatile size_t sink = 0;  // so the compiler keeps every lookup
        auto t4 = Clock::now();
        for (int k = 0; k < lookups; ++k) sink = sink + index.allowed(state).size();
        auto t5 = Clock::now();
        naive_us.push_back(us_between(t0, t1));
        scan_us.push_back(us_between(t1, t2));
        trie_us.push_back(us_between(t2, t3));
        cached_us.push_back(us_between(t4, t5) / lookups);
        // Where PCRE2 and the walk differ, sort the difference: a token after which the text is not
        // whole UTF-8 (it ends inside a character, or holds a byte no character starts with) is
        // one PCRE2 cannot judge - it reports any unfinished tail as a partial match.
        std::vector<int> differ;
        std::set_symmetric_difference(naive.begin(), naive.end(), scan.begin(), scan.end(), std::back_inserter(differ));
        for (int id : differ) {
            const std::string candidate = text + vocabulary.bytes[static_cast<size_t>(id)];
            const bool whole = to_valid_utf8(candidate) == candidate;
            (whole ? disagree : unfinished) += 1;
            if (!whole && std::binary_search(naive.begin(), naive.end(), id)) ++pcre2_only_unfinished;
        }
        index_differs += scan != kept;
        if (!s.tokenizer.is_special(run[i])) text += s.tokenizer.token_bytes(run[i]);
    }
    const double naive = median(naive_us), scan = median(scan_us), trie = median(trie_us), cached = median(cached_us);
    std::printf("The %zu steps of part 2's run under the person schema, each mask computed four ways (median per step; "
                "one run on this machine, so read the ratios):\n", run.size());
    std::printf("  %-52s %12s %s\n", "way", "us / step", "");
    std::printf("  %-52s %12.1f\n", ("PCRE2 partial match of text + token, " + with_commas(static_cast<uint64_t>(vocabulary.size() - 1)) +
                                     " calls").c_str(), naive);
    std::printf("  %-52s %12.1f %6.1fx faster than PCRE2\n", "DFA: every token walked from the state (09.2)", scan, naive / scan);
    std::printf("  %-52s %12.1f %6.1fx faster than the walk of every token\n", "DFA: one walk of the vocabulary's trie", trie,
                scan / trie);
    std::printf("  %-52s %12.3f %6.0fx faster than the trie\n", "DFA: the state's set, kept from its first visit", cached,
                trie / cached);
    std::printf("Over the %zu steps, the walk of every token and the index gave the same set %s; PCRE2 and the walk "
                "differ on %ld tokens whose text is whole UTF-8, and on %ld that end inside a character or are not "
                "UTF-8 (%ld of them allowed by PCRE2 alone: it takes any unfinished tail for a partial match, where "
                "the DFA allows only bytes that begin a character the pattern takes).\n",
                run.size(), index_differs ? "NOT at every step" : "at every step", disagree, unfinished,
                pcre2_only_unfinished);
    std::printf("The index computed the sets of %zu states, those the run visited; the DFA has %zu.\n",
                index.cached_states(), dfa.states());
}

}  // namespace chapter09
