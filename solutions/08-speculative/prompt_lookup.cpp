// Exercise 08.2 - Prompt lookup, Hugging Face's rule (worked solution; the library's twin is
// decodebook::prompt_lookup_hf).
#include <algorithm>

#include "decodebook/exercises.hpp"

namespace decodebook {

std::vector<int> your_prompt_lookup(std::span<const int> sequence, int max_ngram, int num_tokens,
                                    std::span<const int> eos_ids) {
    const long L = static_cast<long>(sequence.size());
    for (long n = std::min<long>(max_ngram, L - 1); n >= 1; --n) {  // the longest n-gram first
        const std::span<const int> suffix = sequence.last(static_cast<size_t>(n));
        for (long i = 0; i + n < L; ++i) {  // leftmost first; the suffix itself has nothing after it
            if (!std::equal(suffix.begin(), suffix.end(), sequence.begin() + i)) continue;
            std::vector<int> out;
            for (long j = i + n; j < std::min(i + n + num_tokens, L); ++j) {
                const int token = sequence[static_cast<size_t>(j)];
                if (std::find(eos_ids.begin(), eos_ids.end(), token) != eos_ids.end()) break;  // cut before EOS
                out.push_back(token);
            }
            return out;  // the first match decides, even when the cut leaves nothing
        }
    }
    return {};
}

}  // namespace decodebook
