// Chapter 09, part 5: the naive mask against the automaton's. Naive: for every token, ask a regex
// engine (PCRE2, course/naive_mask.hpp) whether the text so far plus the token can still become a
// match - V calls per step, each re-reading the whole text. The DFA: every token's bytes walked
// from the state the text reached (exercise 09.2), the same walk shared through a trie of the
// vocabulary, and the set kept once computed.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "chapter09.hpp"
#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/course/naive_mask.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter09 {
namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

void naive_against_index(const Session& s, const std::vector<int>& run) {
    if (run.empty()) return;  // a run has at least one token (max_new_tokens >= 1); nothing to time otherwise
    const std::string regex = person_regex(false);
    const auto c = constraint_for(s, "person", regex);
    TokenIndex& index = *c->index;
    const Dfa& dfa = index.dfa();
    const Vocabulary vocabulary = s.tokenizer.vocabulary();
    const std::vector<int> eos = resolve_eos_ids(s.config, s.model.config().eos_token_id);
    Pcre2Prefix re(regex);
    if (!re.usable()) throw Error("PCRE2 refuses the person schema's regex: " + re.error(), "part 5 needs a pattern PCRE2 reads too");
    std::vector<double> naive_us, scan_us, trie_us, cached_us;
    long disagree = 0, pcre2_only = 0, dfa_only = 0, index_differs = 0;  // tokens (sets: steps), summed over the run
    long unfinished_steps = 0, most_at_a_step = 0;  // the steps where PCRE2 misjudged an unfinished character
    std::string text;
    for (size_t i = 0; i < run.size(); ++i) {  // the step before each token of part 2's run
        const int32_t state = index.state_after(std::span<const int>(run.data(), i));
        auto t0 = Clock::now();
        const std::vector<int> naive = pcre2_allowed_tokens(re, vocabulary, text, eos);
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
        // whole UTF-8 (it ends inside a character) is one PCRE2 cannot judge.
        std::vector<int> differ;
        std::set_symmetric_difference(naive.begin(), naive.end(), scan.begin(), scan.end(), std::back_inserter(differ));
        const long unfinished_before = pcre2_only + dfa_only;
        for (int id : differ) {
            const std::string candidate = text + vocabulary.bytes[static_cast<size_t>(id)];
            const bool whole = to_valid_utf8(candidate) == candidate;
            if (whole)
                ++disagree;
            else
                ++(std::binary_search(naive.begin(), naive.end(), id) ? pcre2_only : dfa_only);
        }
        const long unfinished = pcre2_only + dfa_only - unfinished_before;
        unfinished_steps += unfinished > 0;
        most_at_a_step = std::max(most_at_a_step, unfinished);
        index_differs += scan != kept;
        if (!s.tokenizer.is_special(run[i])) text += s.tokenizer.token_bytes(run[i]);
    }
    const double naive = median(naive_us), scan = median(scan_us), trie = median(trie_us), cached = median(cached_us);
    const auto slowest = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    std::printf("The %zu steps of part 2's run under the person schema, each mask computed four ways (one run on this "
                "machine, so read the ratios):\n", run.size());
    std::printf("  %-52s %12s %12s  %s\n", "way", "median us", "slowest us", "median against the row above");
    std::printf("  %-52s %12.1f %12.1f\n",
                ("PCRE2 partial match of text + token, " + with_commas(static_cast<uint64_t>(vocabulary.size() - 1)) +
                 " calls").c_str(), naive, slowest(naive_us));
    std::printf("  %-52s %12.1f %12.1f  %.0fx faster\n", "DFA: every token walked from the state (09.2)", scan,
                slowest(scan_us), naive / scan);
    std::printf("  %-52s %12.1f %12.1f  %.0fx faster\n", "DFA: one walk of the vocabulary's trie", trie, slowest(trie_us),
                scan / trie);
    std::printf("  %-52s %12.3f %12.3f  %.0fx faster\n", "DFA: the state's set, kept from its first visit", cached,
                slowest(cached_us), trie / cached);
    std::printf("Over the %zu steps, the walk of every token and the index gave the same set %s. PCRE2 and the walk, "
                "counted over all %zu steps together (a token counts once at each step it is judged), differ on %ld "
                "tokens after which the text is whole UTF-8. On the tokens after which it is not (it ends inside a "
                "character), PCRE2 allows %ld the DFA refuses and refuses %ld the DFA allows, at %ld of the %zu steps "
                "(at most %ld at one step): it cannot judge an unfinished character, where the DFA takes exactly the "
                "bytes that can begin or go on with one the pattern allows.\n",
                run.size(), index_differs ? "NOT at every step" : "at every step", run.size(), disagree, pcre2_only,
                dfa_only, unfinished_steps, run.size(), most_at_a_step);
    std::printf("The index computed the sets of %zu states, those the run visited; the DFA has %zu.\n",
                index.cached_states(), dfa.states());
}

}  // namespace chapter09
