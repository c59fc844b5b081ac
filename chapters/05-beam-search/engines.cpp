// Chapter 05, part 5: Hugging Face's beam score against vLLM's. vLLM divides by the prompt and
// the output (EOS not counted) and never stops early, so the two engines can return different text.
#include <cstdio>
#include <string>
#include <vector>

#include "chapter05.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter05 {

void hf_against_vllm(const Session& session) {
    const auto& [model, tok, prompt, config] = session;
    GenerationConfig hf = config;
    hf.num_beams = 2;
    hf.num_return_sequences = 1;
    hf.length_penalty = 1.0f;
    hf.early_stopping = EarlyStopping::Heuristic;
    GenerationConfig vl = hf;
    vl.beam_scoring = BeamScoring::Vllm;
    const std::string ab_prompt = "Q: What do you call";
    const std::vector<int> ab_ids = tok.encode(ab_prompt);
    const Hypothesis h = beam_search(model, tok, ab_ids, hf)[0];
    const Hypothesis v = beam_search(model, tok, ab_ids, vl)[0];
    std::printf("  %s\n    hf:   %2zu tokens, sum %7.3f, score %7.4f  %s\n    vllm: %2zu tokens, sum %7.3f, score %7.4f  %s\n",
                one_line(ab_prompt).c_str(), h.ids.size(), h.sum_logprobs, h.score, one_line(h.text).c_str(),
                v.ids.size(), v.sum_logprobs, v.score, one_line(v.text).c_str());
    std::printf("  different outputs: %s. vLLM divides by prompt + output (EOS not counted) and never stops early.\n",
                h.ids == v.ids ? "no" : "yes");
}

}  // namespace chapter05
