#pragma once
/// @file constrain/token_index.hpp
/// @brief Which tokens a byte automaton allows in each of its states (chapter 09): the
/// vocabulary's bytes as a trie, walked once per visited state and kept (Outlines' index, built
/// lazily). Pure: bytes and token tables, no model, no loop.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decodebook/base/vocabulary.hpp"
#include "decodebook/constrain/regex.hpp"

namespace decodebook {

/// The vocabulary's text tokens as a trie of their bytes: tokens that share a prefix share the
/// nodes of that prefix, so one walk of an automaton serves them all. Special tokens and empty
/// tokens are left out (a special token's bytes are its name, never text). Introduced in chapter 09.
class TokenTrie {
public:
    /// @param vocabulary every id's bytes and the special ids
    explicit TokenTrie(const Vocabulary& vocabulary);
    /// Number of nodes, the root included.
    size_t nodes() const { return first_edge_.size() - 1; }
    /// The ids whose bytes walk `dfa` from `state` without dying (to a live state), ascending.
    /// @param dfa the automaton
    /// @param state where the walk starts (not Dfa::kDead)
    std::vector<int> live_tokens(const Dfa& dfa, int32_t state) const;

private:
    // Node n's children are edges first_edge_[n] .. first_edge_[n + 1] - 1 (ascending bytes);
    // its tokens are tokens_[first_token_[n] .. first_token_[n + 1] - 1]. Node 0 is the root.
    std::vector<uint32_t> first_edge_;
    std::vector<uint8_t> edge_byte_;
    std::vector<uint32_t> edge_child_;
    std::vector<uint32_t> first_token_;
    std::vector<int> tokens_;
};

/// A run of consecutive token ids, [begin, end). Introduced in chapter 09.
struct IdRange {
    uint32_t begin = 0;  ///< the first id of the run
    uint32_t end = 0;    ///< one past the last (kToTheEnd: up to the logits' end, whatever their length)
    /// The end of a run that covers every id after its begin.
    static constexpr uint32_t kToTheEnd = UINT32_MAX;
    /// Two runs are equal when they cover the same ids.
    bool operator==(const IdRange&) const = default;
};

/// The ids `state` allows, found the plain way: every text token's bytes walked from `state` on
/// their own (no trie), kept when they reach a live state; each EOS id only when `state` accepts,
/// never walked as text (it ends the output, so it is allowed exactly where the output may end);
/// a special token never. What TokenIndex computes with one walk of a trie, here V walks, one
/// per token: exercise 09.2's twin, and the chapter's middle point between a regex engine called
/// per token and the trie. Introduced in chapter 09.
/// @param dfa the automaton (every state live)
/// @param state a state of `dfa`, or Dfa::kDead (then nothing is allowed)
/// @param vocabulary every id's bytes and the special ids
/// @param eos_ids the ids that end generation (repeats allowed)
/// @return the allowed ids, ascending, each once
/// @throws Error when `state` is not a state of `dfa`, or an EOS id is outside the vocabulary
std::vector<int> allowed_tokens(const Dfa& dfa, int32_t state, const Vocabulary& vocabulary,
                                std::span<const int> eos_ids);

/// The tokens a constraint allows, per state of its automaton: a token is allowed when its bytes
/// walk the automaton to a live state (a prefix of a match); an EOS id only in an accepting
/// state, and never as text (an EOS id that is an ordinary token, as `--eos-token-id` may make
/// one, still only ends the output); a special token never. A state's set is computed the first
/// time it is asked for and kept. The state of a sequence is derived from its tokens (state_after), so beams and a
/// rolled-back speculative round need nothing more. Introduced in chapter 09.
class TokenIndex {
public:
    /// @param dfa the constraint's automaton (every state live)
    /// @param vocabulary every id's bytes and the special ids
    /// @param eos_ids the ids that end generation: allowed exactly in accepting states
    TokenIndex(Dfa dfa, const Vocabulary& vocabulary, std::vector<int> eos_ids);

    /// The automaton.
    const Dfa& dfa() const { return dfa_; }
    /// Number of token ids (the vocabulary's size).
    int vocabulary_size() const { return static_cast<int>(bytes_.size()); }
    /// The state after one more token: its bytes walked from `state` (Dfa::kDead when the token
    /// leaves the language, is special, an EOS id or out of range).
    /// @param state the state before (Dfa::kDead stays kDead)
    /// @param token the id
    int32_t next_state(int32_t state, int token) const;
    /// The state after `tokens` from the start (Dfa::kDead when they leave the language).
    /// @param tokens the generated ids, oldest first (no EOS among them)
    int32_t state_after(std::span<const int> tokens) const;
    /// The ids allowed in `state`, ascending (empty for Dfa::kDead).
    /// @param state a state of the automaton
    const std::vector<int>& allowed(int32_t state);
    /// The ids `allowed(state)` leaves out, as runs (masked_ranges): what the chain's mask sets
    /// to -inf, computed with the allowed set and kept beside it.
    /// @param state a state of the automaton (Dfa::kDead: every id)
    const std::vector<IdRange>& masked(int32_t state);
    /// Whether the state accepts: the bytes so far are a whole match.
    /// @param state a state of the automaton (Dfa::kDead: false)
    bool accepting(int32_t state) const { return state != Dfa::kDead && dfa_.accepting[static_cast<size_t>(state)]; }
    /// How many states have their allowed set computed.
    size_t cached_states() const;
    /// The trie the sets are computed with.
    const TokenTrie& trie() const { return trie_; }

private:
    Dfa dfa_;
    std::vector<std::string> bytes_;
    std::vector<uint8_t> special_;  // per id: 1 for a special token, 2 for an EOS id (never text)
    std::vector<int> eos_ids_;
    TokenTrie trie_;
    struct Entry {
        std::vector<int> allowed;
        std::vector<IdRange> masked;
    };
    const Entry& entry(int32_t state);
    std::vector<std::unique_ptr<Entry>> cache_;  // per state, null until first asked for
    Entry dead_;                                 // Dfa::kDead: nothing allowed, everything masked
};

/// Set every logit to -inf except those of `allowed` (ascending ids), in place.
/// Introduced in chapter 09.
/// @param logits (V) the step's logits
/// @param allowed ascending ids below V
void keep_only(std::span<float> logits, const std::vector<int>& allowed);

/// The ids `allowed` leaves out, as maximal runs, ascending; the last run covers every id after
/// the last allowed one (it ends at IdRange::kToTheEnd). Masking by runs costs one fill per run:
/// a state that allows nearly every token (inside a JSON string: all but those holding `"`, `\`
/// or a control character) has a few short runs where keep_only walks some 50,000 allowed ids
/// (decodebook-bench, GPT-2's vocabulary, flat JSON schema: warm p99 68 µs by ids, 5 by runs), and a state that allows a
/// handful has a handful of long runs. Introduced in chapter 09.
/// @param allowed ascending ids
std::vector<IdRange> masked_ranges(const std::vector<int>& allowed);

/// Set the logits of every id in `masked` to -inf, in place: keep_only(logits, allowed) when
/// `masked` is masked_ranges(allowed). Ids past the logits' end are ignored. Introduced in chapter 09.
/// @param logits (V) the step's logits
/// @param masked ascending, disjoint runs
void mask_ranges(std::span<float> logits, const std::vector<IdRange>& masked);

}  // namespace decodebook
