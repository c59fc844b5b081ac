// Exercise 05.1 - One beam step (worked solution; the library's twin is decodebook::beam_step).
#include <algorithm>

#include "decodebook/exercises.hpp"

namespace decodebook {

BeamStep your_beam_step(const std::vector<Beam>& beams, const std::vector<xt::xtensor<float, 1>>& logprobs,
                        const std::vector<int>& eos_ids, int num_beams, bool last_step) {
    struct Candidate {
        double score;
        int beam, token;
    };
    std::vector<Candidate> all;
    for (size_t b = 0; b < beams.size(); ++b)
        for (size_t t = 0; t < logprobs[b].size(); ++t)
            all.push_back({beams[b].sum_logprobs + logprobs[b](t), static_cast<int>(b), static_cast<int>(t)});
    std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    const size_t keep = std::min(all.size(), std::max<size_t>(2, 1 + eos_ids.size()) * static_cast<size_t>(num_beams));
    BeamStep out;
    for (size_t rank = 0; rank < keep; ++rank) {
        const Candidate& c = all[rank];
        Beam next = beams[static_cast<size_t>(c.beam)];
        next.ids.push_back(c.token);
        next.sum_logprobs = c.score;
        const bool eos = std::find(eos_ids.begin(), eos_ids.end(), c.token) != eos_ids.end();
        if (last_step || eos) {
            if (rank < static_cast<size_t>(num_beams)) out.finished.push_back(next);
        } else if (out.running.size() < static_cast<size_t>(num_beams)) {
            out.running.push_back(next);
        }
    }
    return out;
}

}  // namespace decodebook
