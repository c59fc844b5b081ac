// Exercise 09.1 - One token's walk through a DFA.                 Chapter 09: constrained decoding
//
// A constraint is a DFA over bytes (decodebook::Dfa): dfa.next[256 * state + byte] is the state
// after one more byte, or Dfa::kDead when no match can continue with it; every state that is not
// kDead is live (some continuation still reaches a match). A token is several bytes, so deciding
// whether the model may write it in `state` is a walk: follow its bytes one transition at a time.
// Return the state after the last byte, or Dfa::kDead as soon as one byte has no transition (stop
// there: the rest cannot revive it). The token is allowed in `state` iff the result is not kDead.
//   - A `state` of kDead stays kDead (an output that already left the language stays out).
//   - An empty token leaves `state` where it is.
//   - A token may end inside a UTF-8 character (byte-level BPE splits them): nothing special,
//     you walk bytes, not characters.
//   - Throw decodebook::Error (problem, fix) when `state` is neither kDead nor one of the DFA's
//     states (0 .. dfa.states() - 1): reading next[] with it would read past the table.
//
//   The DFA of " (0|[1-9][0-9]*)" (a space, then a number without a leading zero) has 4 states:
//     0 --' '--> 1     1 --'0'--> 2 (accepting)     1 --'1'..'9'--> 3 (accepting)     3 --'0'..'9'--> 3
//   state 0, token " 12": ' ' -> 1, '1' -> 3, '2' -> 3                           -> 3 (allowed)
//   state 0, token " 0":                                                          -> 2
//   state 2, token "5": after "0" no digit may follow                            -> kDead
//   state 0, token "12": the space must come first                               -> kDead
//   state 3, token "": nothing to walk                                           -> 3
//   state kDead, token " 1":                                                      -> kDead
//   state 7 (the DFA has 4):                                                      throw
//
// Tested by: "ex09.1 ..." in tests/exercises/test_09_constrained.cpp (the cases above, Outlines'
// final-state walk, tokens that end inside a UTF-8 character, every token of the model's
// vocabulary from every state of a JSON schema's DFA, bad states).
// Do not call Dfa::walk, Dfa::matches or TokenIndex's methods: they are the answer. Dfa::step
// (one transition) and Dfa::states you may use.
// Graded by: ./grade 09
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

int32_t your_walk_token(const Dfa& dfa, int32_t state, std::string_view token) {
    // TODO: check the state; then for each byte, state = dfa.step(state, byte), and return kDead
    // at the first byte that leads nowhere.
    (void)dfa, (void)state, (void)token;
    throw NotImplemented("09.1 (your_walk_token)", "exercises/09-constrained/walk_token.cpp");
}

}  // namespace decodebook
