// Chapter 05, part 4: length_penalty picks the winner among the same finished hypotheses. 0 ranks
// by the raw sum, which favours ending early; 1 (Hugging Face's default) divides by the length;
// 2 favours long, -1 short. --csv FILE writes every finished hypothesis for the site's plot.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "chapter05.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter05 {
namespace {

// Where the raw sum's winner (length_penalty 0) ranks among each search's `returned` hypotheses.
void print_raw_winner_ranks(const PenaltyRuns& by_penalty, int returned) {
    const std::vector<int>& raw_winner = by_penalty[1].second[0].ids;
    std::printf("  the raw sum's winner (%zu tokens, %s) among the %d returned:", raw_winner.size(),
                to_string(by_penalty[1].second[0].finish_reason).c_str(), returned);
    for (const auto& [penalty, hyps] : by_penalty) {
        size_t rank = 0;
        while (rank < hyps.size() && hyps[rank].ids != raw_winner) ++rank;
        char place[24] = "not returned";
        if (rank < hyps.size()) std::snprintf(place, sizeof place, "#%zu", rank + 1);
        std::printf("%s %.1f %s", penalty == by_penalty.front().first ? "" : ",", penalty, place);
    }
    std::printf("\n");
}

}  // namespace

PenaltyRuns length_penalty_winners(const GenerationConfig& config, MemoizedSearch& search) {
    GenerationConfig lp = config;
    lp.num_beams = 4;
    lp.num_return_sequences = 4;
    lp.early_stopping = EarlyStopping::Never;
    PenaltyRuns by_penalty;
    for (float penalty : {-1.0f, 0.0f, 1.0f, 2.0f}) {
        lp.length_penalty = penalty;
        const std::vector<Hypothesis> hyps = search.run(lp);
        by_penalty.emplace_back(penalty, hyps);
        std::printf("  length_penalty %4.1f: winner %2zu tokens (%s), sum %7.3f, score %8.4f  %s\n", penalty,
                    hyps[0].ids.size(), to_string(hyps[0].finish_reason).c_str(), hyps[0].sum_logprobs,
                    hyps[0].score, one_line(hyps[0].text).c_str());
    }
    print_raw_winner_ranks(by_penalty, lp.num_return_sequences);
    std::printf("  0 ranks by the raw sum, which only falls with every token, so it favours ending early.\n"
                "  1 (HF's default) divides by the length, so it is not neutral; 2 favours long, -1 short.\n");
    return by_penalty;
}

void write_length_penalty_csv(const std::string& path, const std::string& columns, const PenaltyRuns& by_penalty) {
    CsvFile csv(path, columns);
    for (const auto& [penalty, hyps] : by_penalty)
        for (size_t r = 0; r < hyps.size(); ++r)
            csv.out() << penalty << ',' << r + 1 << ',' << hyps[r].ids.size() << ',' << hyps[r].sum_logprobs << ','
                      << hyps[r].score << ',' << to_string(hyps[r].finish_reason) << '\n';
    csv.close();
}

}  // namespace chapter05
