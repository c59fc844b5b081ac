// Chapter 05, part 3: greedy, beam search and sampling on open-ended text. Beam search finds what
// the model rates higher, and that is the problem: those sequences are bland, and short.
#include <cstdio>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "chapter05.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"

using namespace decodebook;

namespace chapter05 {
namespace {

// Mean log-probability per token of `ids` after `prompt` under the raw model (one forward).
double mean_logprob(const Gpt2& model, const std::vector<int>& prompt, const std::vector<int>& ids) {
    std::vector<int> seq = prompt;
    seq.insert(seq.end(), ids.begin(), ids.end());
    const xt::xtensor<float, 2> all = model.forward(seq);
    double sum = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const Vec z = xt::view(all, prompt.size() - 1 + i, xt::all());
        sum += log_softmax(z)(static_cast<size_t>(ids[i]));
    }
    return sum / static_cast<double>(ids.size());
}

struct Measure {
    double length = 0, distinct2 = 0, logprob = 0, eos = 0;
    int runs = 0;
    void add(const Gpt2& model, const std::vector<int>& prompt, const std::vector<int>& ids, int eos_id) {
        length += static_cast<double>(ids.size());
        distinct2 += distinct_n(ids, 2);
        logprob += mean_logprob(model, prompt, ids);
        eos += !ids.empty() && ids.back() == eos_id;
        ++runs;
    }
    void print(const char* label) const {
        std::printf("  %-22s %6.1f %10.2f %12.2f %8d/%d\n", label, length / runs, distinct2 / runs, logprob / runs,
                    static_cast<int>(eos), runs);
    }
};

// The three decoders' means over the prompts, and beam search's differences from the other two.
void print_means(const Measure& m_greedy, const Measure& m_beam, const Measure& m_sample) {
    std::printf("\n  %-22s %6s %10s %12s %10s\n", "mean over the prompts", "tokens", "distinct-2", "log-p/token",
                "ended EOS");
    m_greedy.print("greedy");
    m_beam.print("beam 4 (HF defaults)");
    m_sample.print("sampling T 1 (2 seeds)");
    const auto mean = [](const Measure& m, double Measure::*field) { return m.*field / m.runs; };
    std::printf("  beam 4 against sampling: log-p/token %+.2f, distinct-2 %+.2f, tokens %+.1f;\n"
                "  against greedy: log-p/token %+.2f, distinct-2 %+.2f, tokens %+.1f.\n",
                mean(m_beam, &Measure::logprob) - mean(m_sample, &Measure::logprob),
                mean(m_beam, &Measure::distinct2) - mean(m_sample, &Measure::distinct2),
                mean(m_beam, &Measure::length) - mean(m_sample, &Measure::length),
                mean(m_beam, &Measure::logprob) - mean(m_greedy, &Measure::logprob),
                mean(m_beam, &Measure::distinct2) - mean(m_greedy, &Measure::distinct2),
                mean(m_beam, &Measure::length) - mean(m_greedy, &Measure::length));
}

}  // namespace

void open_ended(const Session& session, const CommandLine& opt, MemoizedSearch& search) {
    const auto& [model, tok, prompt, config] = session;
    const int eos_id = model.config().eos_token_id;
    const std::vector<std::string> prompts{opt.prompt, "You will", "Life is", "A computer is"};
    Measure m_greedy, m_beam, m_sample;
    GenerationConfig g = config;
    g.do_sample = false;
    g.num_beams = 1;
    g.num_return_sequences = 1;
    GenerationConfig b4 = g;
    b4.num_beams = 4;
    GenerationConfig s = g;
    s.do_sample = true;  // plain sampling at T = 1
    std::vector<std::vector<std::string>> shown;
    for (const std::string& p : prompts) {
        const std::vector<int> ids = tok.encode(p);
        const Generation gr = generate(model, tok, ids, g, make_sampler(g, 0));
        m_greedy.add(model, ids, gr.ids, eos_id);
        const std::vector<Hypothesis> bh = p == opt.prompt ? search.run(b4) : beam_search(model, tok, ids, b4);
        m_beam.add(model, ids, bh[0].ids, eos_id);
        std::string sampled;
        for (uint64_t seed : {1, 2}) {
            const Generation sr = generate(model, tok, ids, s, make_sampler(s, seed));
            m_sample.add(model, ids, sr.ids, eos_id);
            if (seed == 1) sampled = sr.text;
        }
        shown.push_back({p, gr.text, bh[0].text, sampled});
    }
    for (const auto& row : shown) {
        std::printf("  %s\n    greedy:   %s\n    beam 4:   %s\n    sampled:  %s\n", row[0].c_str(),
                    one_line(row[1]).c_str(), one_line(row[2]).c_str(), one_line(row[3]).c_str());
    }
    print_means(m_greedy, m_beam, m_sample);
}

}  // namespace chapter05
