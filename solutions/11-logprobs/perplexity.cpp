// Solution 11.2 - Sliding-window perplexity with a stride.    Chapter 11: logprobs
// Hugging Face's "Perplexity of fixed-length models" (huggingface/transformers
// docs/source/en/perplexity.md, commit 052b1dcd): for begin_loc in range(0, seq_len, stride),
// end_loc = min(begin_loc + max_length, seq_len), trg_len = end_loc - prev_end_loc, labels -100
// before the last trg_len, the model's loss (the mean over the shifted labels) times
// num_valid_tokens - batch_size, stop when end_loc == seq_len.
#include <algorithm>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/exercises.hpp"

namespace decodebook {

Perplexity your_sliding_window_perplexity(const Gpt2& model, const std::vector<int>& ids, int max_length, int stride) {
    if (ids.size() < 2)
        throw Error("a text of " + std::to_string(ids.size()) + " token has no perplexity",
                    "score a text of two tokens or more (the first is never predicted)");
    const int n_positions = model.config().n_positions;
    if (max_length < 2 || max_length > n_positions)
        throw Error("the window of " + std::to_string(max_length) + " tokens is outside 2.." +
                        std::to_string(n_positions),
                    "pass a window of at most the model's context");
    if (stride < 1 || stride > max_length)
        throw Error("the stride of " + std::to_string(stride) + " is outside 1.." + std::to_string(max_length),
                    "pass a stride of at most the window");
    const size_t n = ids.size();
    Perplexity p;
    size_t prev_end = 0;
    for (size_t begin = 0; begin < n; begin += static_cast<size_t>(stride)) {
        const size_t end = std::min(begin + static_cast<size_t>(max_length), n);
        const size_t trg_len = end - prev_end;  // the tokens no earlier window scored
        const std::vector<int> window(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                      ids.begin() + static_cast<std::ptrdiff_t>(end));
        const xt::xtensor<float, 2> logits = model.forward(window);  // row j - 1 predicts window[j]
        double nll = 0;
        size_t scored = 0;
        for (size_t j = std::max<size_t>(window.size() - trg_len, 1); j < window.size(); ++j) {
            const xt::xtensor<float, 1> row = xt::view(logits, j - 1, xt::all());
            nll -= log_softmax(row)(static_cast<size_t>(window[j]));
            ++scored;
        }
        if (scored > 0) {  // the window's mean loss, weighted by num_valid_tokens - batch_size
            p.nll_sum += nll / static_cast<double>(scored) * static_cast<double>(trg_len - 1);
            p.tokens += trg_len - 1;
        }
        ++p.windows;
        prev_end = end;
        if (end == n) break;
    }
    return p;
}

}  // namespace decodebook
