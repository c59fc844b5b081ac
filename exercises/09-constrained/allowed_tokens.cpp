// Exercise 09.2 - The mask of a state, with the EOS rule.         Chapter 09: constrained decoding
//
// Which token ids may the model write when the output so far has brought the DFA to `state`?
// Walk every id of the vocabulary (0 .. vocabulary.size() - 1) on its own - no trie, that is the
// library's speed-up - and return the allowed ids, ascending, each once:
//   - an EOS id (one of eos_ids) is allowed exactly when `state` is accepting (the bytes so far are
//     a whole match), and is never walked as text, even when it is an ordinary token;
//   - a special token (vocabulary.is_special(id)) is never text: its bytes are only its name;
//   - an empty token is never allowed (it would move nothing and loop forever);
//   - any other token is allowed when its bytes walk from `state` to a live state (not kDead).
// Throw decodebook::Error (problem, fix) when an EOS id is outside 0 .. vocabulary.size() - 1 (check
// them first, whatever the state), or when `state` is neither Dfa::kDead nor a state of the DFA.
// For `state` == Dfa::kDead nothing is allowed.
//
//   The DFA of " (0|[1-9][0-9]*)" (09.1's: 0 --' '--> 1, 1 --'0'--> 2, 1 --'1'..'9'--> 3,
//   3 --'0'..'9'--> 3; states 2 and 3 accept), vocabulary
//     id:    0     1      2     3      4      5
//     bytes: " "   " 1"   "0"   "12"   "1a"   "<eos>" (special), eos_ids {5}
//   state 0: " " -> 1, " 1" -> 3; "0", "12", "1a" die                         -> [0, 1]
//   state 1: "0" -> 2, "12" -> 3; "1a" dies at 'a'; not accepting, so no EOS  -> [2, 3]
//   state 3: "0" and "12" stay in 3; accepting, so the EOS too                -> [2, 3, 5]
//   state 2: no digit after "0"; accepting                                    -> [5]
//   eos_ids {2} instead (the ordinary token "0" as EOS), state 3                -> [2, 3]
//     ("0" is in once, as the EOS: state 3 accepts); in state 1                  -> [3]
//
// Tested by: "ex09.2 ..." in tests/exercises/test_09_constrained.cpp (the cases above, Outlines'
// index_from_regex, XGrammar's test_token_operations sets step by step on its 15-token JSON
// vocabulary, every state of a JSON schema on the model's 2,048 tokens, bad input).
// Do not call decodebook::allowed_tokens, TokenIndex or TokenTrie: they are the answer. Walk a
// token with your own your_walk_token (exercise 09.1, so do it first; the library's Dfa::walk is
// 09.1's answer, which no code of this chapter may call); Dfa::step, Dfa::states and Vocabulary's
// methods you may use.
// Graded by: ./grade 09
#include <algorithm>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_allowed_tokens(const Dfa& dfa, int32_t state, const Vocabulary& vocabulary,
                                     std::span<const int> eos_ids) {
    // TODO: check the EOS ids and the state; then for every id: an EOS id only if the state
    // accepts, skip special and empty tokens, keep the others whose walk does not die.
    (void)dfa, (void)state, (void)vocabulary, (void)eos_ids;
    throw NotImplemented("09.2 (your_allowed_tokens)", "exercises/09-constrained/allowed_tokens.cpp");
}

}  // namespace decodebook
