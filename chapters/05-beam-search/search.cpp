// Chapter 05: the memoized beam search parts 3, 4 and 6 share, and the hypotheses it returns, printed.
#include <cstdio>
#include <utility>
#include <vector>

#include "chapter05.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter05 {

MemoizedSearch::MemoizedSearch(const Gpt2& model, const Tokenizer& tok, std::vector<int> prompt, const GenerationConfig& config)
    : tok_(tok), prompt_(std::move(prompt)), eos_(check_request(model.config(), prompt_, config)),
      rows_of_(model_log_probs(model, prompt_, config, eos_)) {}

std::vector<Hypothesis> MemoizedSearch::run(const GenerationConfig& config) {
    const NextLogProbs cached = [this](const std::vector<Beam>& beams, int step) {
        std::vector<Vec> rows;
        for (const Beam& b : beams) {
            auto it = seen_.find(b.ids);
            if (it == seen_.end()) it = seen_.emplace(b.ids, rows_of_({b}, step)[0]).first;
            rows.push_back(it->second);
        }
        return rows;
    };
    std::vector<Hypothesis> hyps = beam_search(cached, eos_, static_cast<int>(prompt_.size()), config);
    fill_texts(hyps, tok_, config.skip_special_tokens);
    return hyps;
}

void print_hypotheses(const std::vector<Hypothesis>& hyps) {
    for (size_t i = 0; i < hyps.size(); ++i)
        std::printf("  #%zu score %8.4f  sum %8.3f  %2zu tokens (%s)  %s\n", i + 1, hyps[i].score, hyps[i].sum_logprobs,
                    hyps[i].ids.size(), to_string(hyps[i].finish_reason).c_str(), one_line(hyps[i].text).c_str());
}

}  // namespace chapter05
