// Exercise 05.1 - One beam step.                            Chapter 05: beam search
//
// Given the running beams (each: its new ids and the sum of their log-probabilities) and one row
// of log-probabilities per beam, return the beams that go on and the hypotheses that finish,
// with Hugging Face's rules:
//   - candidate (b, t) scores beams[b].sum_logprobs + logprobs[b](t); its ids are beams[b].ids + t;
//   - only the best max(2, 1 + eos_ids.size()) * num_beams candidates are looked at, ranked by
//     score descending, ties by beam then token ascending;
//   - walking them in rank order: an EOS candidate finishes if its rank is below num_beams (a
//     lower-ranked EOS is dropped); any other candidate goes on, until num_beams go on;
//   - with last_step (max_new_tokens reached) every candidate ranked below num_beams finishes,
//     EOS or not, and none goes on.
// Both lists come out in rank order.
//
//   one beam {[], 0}, row log [0.5, 0.3, 0.2], EOS 2, num_beams 2:
//     candidates 0 (-0.69), 1 (-1.20), 2 (-1.61); EOS has rank 2 >= 2 -> dropped;
//     running [0] and [1], finished none
//
// Tested by: "ex05.1 ..." in tests/exercises/test_05_beam_search.cpp (hand-made rows, the EOS
// rules, the last step, and your step inside the library's loop reproducing the reference's beams).
// Do not call decodebook::beam_step: that is the answer.
// Graded by: ./grade 05
#include "decodebook/exercises.hpp"

namespace decodebook {

BeamStep your_beam_step(const std::vector<Beam>& beams, const std::vector<xt::xtensor<float, 1>>& logprobs,
                        const std::vector<int>& eos_ids, int num_beams, bool last_step) {
    // TODO: rank the candidates, keep the best ones, finish the EOS ones (and all at the last step).
    (void)beams, (void)logprobs, (void)eos_ids, (void)num_beams, (void)last_step;
    throw NotImplemented("05.1 (your_beam_step)", "exercises/05-beam-search/beam_step.cpp");
}

}  // namespace decodebook
