// Exercise 09.1 - One token's walk through a DFA (worked solution; the library's twin is
// decodebook::Dfa::walk).
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

int32_t your_walk_token(const Dfa& dfa, int32_t state, std::string_view token) {
    if (state == Dfa::kDead) return Dfa::kDead;  // out of the language stays out
    if (state < 0 || static_cast<size_t>(state) >= dfa.states())
        throw Error("state " + std::to_string(state) + " is not a state of this DFA (it has " +
                        std::to_string(dfa.states()) + ")",
                    "pass a state the DFA gave you, or Dfa::kDead");
    for (char c : token) {
        state = dfa.step(state, static_cast<uint8_t>(c));
        if (state == Dfa::kDead) return Dfa::kDead;  // no later byte can revive it
    }
    return state;
}

}  // namespace decodebook
