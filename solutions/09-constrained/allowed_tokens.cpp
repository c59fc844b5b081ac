// Exercise 09.2 - The mask of a state, with the EOS rule (worked solution; the library's twin is
// decodebook::allowed_tokens).
#include <algorithm>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_allowed_tokens(const Dfa& dfa, int32_t state, const Vocabulary& vocabulary,
                                     std::span<const int> eos_ids) {
    for (int id : eos_ids)
        if (id < 0 || id >= vocabulary.size())
            throw Error("EOS id " + std::to_string(id) + " is not in the vocabulary (" +
                            std::to_string(vocabulary.size()) + " ids)",
                        "pass EOS ids of this vocabulary");
    std::vector<int> out;
    if (state == Dfa::kDead) return out;
    if (state < 0 || static_cast<size_t>(state) >= dfa.states())
        throw Error("state " + std::to_string(state) + " is not a state of this DFA (it has " +
                        std::to_string(dfa.states()) + ")",
                    "pass a state the DFA gave you, or Dfa::kDead");
    const bool accepting = dfa.accepting[static_cast<size_t>(state)] != 0;
    for (int id = 0; id < vocabulary.size(); ++id) {
        if (std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end()) {
            if (accepting) out.push_back(id);  // the output may end here; an EOS is never text
            continue;
        }
        const std::string& bytes = vocabulary.bytes[static_cast<size_t>(id)];
        if (bytes.empty() || vocabulary.is_special(id)) continue;
        if (your_walk_token(dfa, state, bytes) != Dfa::kDead) out.push_back(id);  // 09.1
    }
    return out;
}

}  // namespace decodebook
