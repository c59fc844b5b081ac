// Chapter 05, part 1: one beam is greedy. Beam search with num_beams 1 keeps the single best
// sequence at every step, which is the argmax: the same ids as greedy decoding.
#include <cstdio>
#include <vector>

#include "chapter05.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter05 {

GenerationConfig one_beam(const GenerationConfig& config) {
    GenerationConfig one = config;
    one.num_beams = 1;
    one.num_return_sequences = 1;
    one.do_sample = false;
    return one;
}

void one_beam_is_greedy(const Session& session, const CommandLine& opt) {
    const auto& [model, tok, prompt, config] = session;
    const GenerationConfig one = one_beam(config);
    const std::vector<Hypothesis> beam1 = beam_search(model, tok, prompt, one);
    const Generation greedy_run = generate(model, tok, prompt, one, make_sampler(one, one.seed));
    std::printf("  num_beams 1: %zu tokens, greedy: %zu tokens, the same ids: %s\n", beam1[0].ids.size(),
                greedy_run.ids.size(), beam1[0].ids == greedy_run.ids ? "yes" : "NO");
    std::printf("  %s%s\n", opt.prompt.c_str(), one_line(beam1[0].text).c_str());
}

}  // namespace chapter05
