// Chapter 09: the tokens a byte automaton allows, by one walk of a trie of the vocabulary per
// state (constrain/token_index.hpp).
#include "decodebook/constrain/token_index.hpp"

#include "decodebook/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

namespace decodebook {

TokenTrie::TokenTrie(const Vocabulary& vocabulary) {
    // Build with maps (simple), then lay the nodes out flat in breadth-first order (fast to walk).
    std::vector<std::map<uint8_t, uint32_t>> children(1);
    std::vector<std::vector<int>> ends(1);
    for (int id = 0; id < vocabulary.size(); ++id) {
        const std::string& bytes = vocabulary.bytes[static_cast<size_t>(id)];
        if (bytes.empty() || vocabulary.is_special(id)) continue;
        uint32_t node = 0;
        for (unsigned char b : bytes) {
            auto [it, added] = children[node].try_emplace(b, static_cast<uint32_t>(children.size()));
            if (added) {
                children.emplace_back();
                ends.emplace_back();
            }
            node = it->second;
        }
        ends[node].push_back(id);
    }
    std::vector<uint32_t> order{0}, flat(children.size());
    for (size_t i = 0; i < order.size(); ++i)
        for (const auto& [byte, child] : children[order[i]]) order.push_back(child);
    for (size_t i = 0; i < order.size(); ++i) flat[order[i]] = static_cast<uint32_t>(i);
    first_edge_.push_back(0);
    first_token_.push_back(0);
    for (uint32_t old : order) {
        for (const auto& [byte, child] : children[old]) {
            edge_byte_.push_back(byte);
            edge_child_.push_back(flat[child]);
        }
        tokens_.insert(tokens_.end(), ends[old].begin(), ends[old].end());
        first_edge_.push_back(static_cast<uint32_t>(edge_byte_.size()));
        first_token_.push_back(static_cast<uint32_t>(tokens_.size()));
    }
}

// [ch09:trie-walk]
std::vector<int> TokenTrie::live_tokens(const Dfa& dfa, int32_t state) const {
    std::vector<int> out;
    if (state == Dfa::kDead) return out;
    std::vector<std::pair<uint32_t, int32_t>> stack{{0, state}};  // (node, the state its bytes lead to)
    while (!stack.empty()) {
        const auto [node, at] = stack.back();
        stack.pop_back();
        for (uint32_t e = first_edge_[node]; e < first_edge_[node + 1]; ++e) {
            const int32_t next = dfa.step(at, edge_byte_[e]);
            if (next == Dfa::kDead) continue;  // no token below this edge can continue a match
            const uint32_t child = edge_child_[e];
            out.insert(out.end(), tokens_.begin() + first_token_[child], tokens_.begin() + first_token_[child + 1]);
            stack.emplace_back(child, next);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}
// [/ch09:trie-walk]

// [ch09:allowed-tokens]
std::vector<int> allowed_tokens(const Dfa& dfa, int32_t state, const Vocabulary& vocabulary,
                                std::span<const int> eos_ids) {
    for (int id : eos_ids)
        if (id < 0 || id >= vocabulary.size())
            throw Error("EOS id " + std::to_string(id) + " is outside the vocabulary (" +
                            std::to_string(vocabulary.size()) + " ids)",
                        "pass EOS ids of this vocabulary");
    std::vector<int> out;
    if (state == Dfa::kDead) return out;
    dfa.walk(state, {});  // throws when `state` is not one of dfa's states
    const bool accepting = dfa.accepting[static_cast<size_t>(state)];
    for (int id = 0; id < vocabulary.size(); ++id) {
        const bool eos = std::find(eos_ids.begin(), eos_ids.end(), id) != eos_ids.end();
        if (eos) {
            if (accepting) out.push_back(id);  // the output may end here
            continue;                          // an EOS id is never text, even an ordinary token
        }
        const std::string& bytes = vocabulary.bytes[static_cast<size_t>(id)];
        if (bytes.empty() || vocabulary.is_special(id)) continue;  // nothing to walk, or not text
        if (dfa.walk(state, bytes) != Dfa::kDead) out.push_back(id);
    }
    return out;
}
// [/ch09:allowed-tokens]

TokenIndex::TokenIndex(Dfa dfa, const Vocabulary& vocabulary, std::vector<int> eos_ids)
    : dfa_(std::move(dfa)), bytes_(vocabulary.bytes), special_(vocabulary.bytes.size(), 0),
      eos_ids_(std::move(eos_ids)), trie_(vocabulary), cache_(dfa_.states()),
      dead_{{}, {IdRange{0, IdRange::kToTheEnd}}} {
    for (int id : vocabulary.special)
        if (id >= 0 && static_cast<size_t>(id) < special_.size()) special_[static_cast<size_t>(id)] = 1;
    for (int id : eos_ids_)
        if (id >= 0 && static_cast<size_t>(id) < special_.size()) special_[static_cast<size_t>(id)] = 2;
    std::sort(eos_ids_.begin(), eos_ids_.end());
    eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
}

int32_t TokenIndex::next_state(int32_t state, int token) const {
    if (state == Dfa::kDead || token < 0 || token >= vocabulary_size() || special_[static_cast<size_t>(token)])
        return Dfa::kDead;
    return dfa_.walk(state, bytes_[static_cast<size_t>(token)]);
}

int32_t TokenIndex::state_after(std::span<const int> tokens) const {
    int32_t state = dfa_.start;
    for (int token : tokens) state = next_state(state, token);
    return state;
}

const TokenIndex::Entry& TokenIndex::entry(int32_t state) {
    if (state == Dfa::kDead) return dead_;
    auto& slot = cache_[static_cast<size_t>(state)];
    if (!slot) {
        std::vector<int> ids = trie_.live_tokens(dfa_, state);
        // An EOS id that is an ordinary token is in the trie; it only ever ends the output.
        std::erase_if(ids, [&](int id) { return special_[static_cast<size_t>(id)] == 2; });
        if (accepting(state)) {
            std::vector<int> merged;
            std::merge(ids.begin(), ids.end(), eos_ids_.begin(), eos_ids_.end(), std::back_inserter(merged));
            ids = std::move(merged);
        }
        std::vector<IdRange> masked = masked_ranges(ids);
        slot = std::make_unique<Entry>(Entry{std::move(ids), std::move(masked)});
    }
    return *slot;
}

const std::vector<int>& TokenIndex::allowed(int32_t state) { return entry(state).allowed; }

const std::vector<IdRange>& TokenIndex::masked(int32_t state) { return entry(state).masked; }

size_t TokenIndex::cached_states() const {
    return static_cast<size_t>(std::count_if(cache_.begin(), cache_.end(), [](const auto& s) { return s != nullptr; }));
}

void keep_only(std::span<float> logits, const std::vector<int>& allowed) {
    size_t from = 0;  // every id before the next allowed one becomes -inf
    for (int id : allowed) {
        const size_t to = std::min(static_cast<size_t>(id), logits.size());
        std::fill(logits.begin() + static_cast<std::ptrdiff_t>(from), logits.begin() + static_cast<std::ptrdiff_t>(to),
                  -INFINITY);
        from = std::min(std::max(from, to + 1), logits.size());  // ids at or past the end mask nothing more
    }
    if (from < logits.size()) std::fill(logits.begin() + static_cast<std::ptrdiff_t>(from), logits.end(), -INFINITY);
}

std::vector<IdRange> masked_ranges(const std::vector<int>& allowed) {
    std::vector<IdRange> runs;
    uint32_t from = 0;  // the first id not yet known to be allowed
    for (int id : allowed) {
        const uint32_t at = static_cast<uint32_t>(id);
        if (at > from) runs.push_back({from, at});
        from = std::max(from, at + 1);
    }
    runs.push_back({from, IdRange::kToTheEnd});
    return runs;
}

void mask_ranges(std::span<float> logits, const std::vector<IdRange>& masked) {
    for (const IdRange& run : masked) {
        if (run.begin >= logits.size()) break;  // ascending: every later run is past the end too
        const size_t end = std::min<size_t>(run.end, logits.size());
        std::fill(logits.begin() + run.begin, logits.begin() + static_cast<std::ptrdiff_t>(end), -INFINITY);
    }
}

}  // namespace decodebook
