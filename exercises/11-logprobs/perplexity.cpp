// Exercise 11.2 - Sliding-window perplexity with a stride.    Chapter 11: logprobs
//
// A text longer than the model's context cannot be scored in one forward. Hugging Face's guide
// "Perplexity of fixed-length models" (transformers docs/source/en/perplexity.md at 052b1dcd)
// slides a window over it. Return the sums it computes, for the text `ids` (n tokens):
//   - Windows start at begin = 0, stride, 2 * stride, ...; each holds the tokens
//     ids[begin, end) with end = min(begin + max_length, n), and is one forward of the model.
//   - trg_len = end - (the previous window's end; 0 before the first window): the tokens no
//     earlier window scored. The window's targets are its last trg_len tokens, except its first
//     token, which has nothing before it in the window and is never a target.
//   - A target at position j of the window (j >= 1) costs -log p(token j | the window's tokens
//     0..j-1): minus the log-softmax of the logits' row j - 1, at that token.
//   - The window's mean NLL over its targets is weighted by trg_len - 1 (the guide's
//     num_valid_tokens - batch_size): nll_sum += mean * (trg_len - 1), tokens += trg_len - 1.
//     A window with no target adds nothing (no 0 / 0). Every window counts in `windows`.
//   - Stop after the window whose end is n (a later begin would only repeat tokens).
//   - Perplexity::value() is then exp(nll_sum / tokens).
//   - Throw decodebook::Error (problem, fix) for a text under 2 tokens, max_length outside
//     2..n_positions (model.config()), or stride outside 1..max_length.
//
//   10 tokens t0..t9, max_length 4, stride 2:
//     window  begin  end  trg_len  its tokens   targets   weight
//       1       0     4      4     t0 .. t3     t1 t2 t3    3
//       2       2     6      2     t2 .. t5     t4 t5       1   (2 targets, weight 1: HF's rule)
//       3       4     8      2     t4 .. t7     t6 t7       1
//       4       6    10      2     t6 .. t9     t8 t9       1   end = 10 = n: stop
//     windows 4, tokens 3 + 1 + 1 + 1 = 6,
//     nll_sum = 3 * mean(nll t1, t2, t3) + mean(nll t4, t5) + mean(nll t6, t7) + mean(nll t8, t9),
//     t4 scored in window 2 given t2 t3 only (not t0 t1).
//   9 tokens, max_length 4, stride 4 (windows that do not overlap): [0, 4) scores t1 t2 t3
//     (weight 3); [4, 8) has trg_len 4 and scores t5 t6 t7 (t4 is its first token; weight 3);
//     [8, 9) holds t8 alone: trg_len 1, no target, weight 0. windows 3, tokens 6.
//   stride 1: after the first window each adds one token (trg_len 1, weight 0): only the first
//     window counts, however many windows run.
//   3 tokens, max_length 8: one window [0, 3), targets t1 t2, weight 2.
//
// Tested by: "ex11.2 ..." in tests/exercises/test_11_logprobs.cpp (the float64 reference's
// perplexity of 50 held-out fortunes at stride 256 and 128, the windows above and others by hand,
// stride = max_length, stride 1, a text shorter than the window, bad texts, windows and strides).
// Do not call decodebook::sliding_window_perplexity: it is the answer. You may use the model's
// members (model.forward, model.config()) and decodebook::log_softmax.
// Graded by: ./grade 11
#include <algorithm>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/exercises.hpp"

namespace decodebook {

Perplexity your_sliding_window_perplexity(const Gpt2& model, const std::vector<int>& ids, int max_length, int stride) {
    // TODO: check the text, the window and the stride; slide the window as the contract above
    // says, adding each window's mean NLL times trg_len - 1, and stop at the window that reaches
    // the end.
    (void)model, (void)ids, (void)max_length, (void)stride;
    throw NotImplemented("11.2 (your_sliding_window_perplexity)", "exercises/11-logprobs/perplexity.cpp");
}

}  // namespace decodebook
