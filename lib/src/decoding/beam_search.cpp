// Chapter 05: beam search, its own loop beside generate().
#include "decodebook/decoding/beam_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

namespace {

constexpr double kDummyBeam = -1e9;  // beams 1..n-1 start here so step 1 does not duplicate beam 0

bool is_eos(int token, const std::vector<int>& eos_ids) {
    return std::find(eos_ids.begin(), eos_ids.end(), token) != eos_ids.end();
}

struct Candidate {
    double sum;
    int beam;
    int token;
};

// Rank: sum descending, then beam, then token ascending (the flat index torch.topk would see).
bool better(const Candidate& a, const Candidate& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    if (a.beam != b.beam) return a.beam < b.beam;
    return a.token < b.token;
}

Beam extend(const Beam& beam, int token, double sum) {
    Beam next{beam.ids, sum};
    next.ids.push_back(token);
    return next;
}

}  // namespace

BeamStep beam_step(const std::vector<Beam>& beams, const std::vector<xt::xtensor<float, 1>>& logprobs,
                   const std::vector<int>& eos_ids, int num_beams, bool last_step) {
    if (beams.size() != logprobs.size() || beams.empty()) {
        throw Error("beam_step got " + std::to_string(beams.size()) + " beams and " + std::to_string(logprobs.size()) +
                        " log-prob rows",
                    "pass one row of log-probabilities per running beam");
    }
    // every (beam, token) pair, scored by the beam's running sum plus the token's log-prob
    std::vector<Candidate> all;
    for (size_t b = 0; b < beams.size(); ++b)
        for (size_t t = 0; t < logprobs[b].size(); ++t)
            all.push_back({beams[b].sum_logprobs + logprobs[b](t), static_cast<int>(b), static_cast<int>(t)});
    // keep max(2, 1 + n_eos) * num_beams: even if every beam's best tokens are EOS, num_beams go on
    const size_t keep = std::min(all.size(), static_cast<size_t>(std::max<size_t>(2, 1 + eos_ids.size()) * num_beams));
    std::partial_sort(all.begin(), all.begin() + static_cast<long>(keep), all.end(), better);

    BeamStep out;
    for (size_t rank = 0; rank < keep; ++rank) {
        const Candidate& c = all[rank];
        const Beam next = extend(beams[static_cast<size_t>(c.beam)], c.token, c.sum);
        const bool top = rank < static_cast<size_t>(num_beams);  // only these may finish
        if (last_step || is_eos(c.token, eos_ids)) {
            if (top) out.finished.push_back(next);
        } else if (out.running.size() < static_cast<size_t>(num_beams)) {
            out.running.push_back(next);
        }
    }
    return out;
}

double beam_score(double sum_logprobs, int generated_len, bool ends_with_eos, int prompt_len, float length_penalty,
                  BeamScoring scoring) {
    // HF: the generated tokens, EOS included; vLLM: prompt + generated, a final EOS not counted
    const int length = scoring == BeamScoring::HuggingFace ? generated_len
                                                           : prompt_len + generated_len - (ends_with_eos ? 1 : 0);
    return sum_logprobs / std::pow(static_cast<double>(length), static_cast<double>(length_penalty));
}

bool beam_search_done(int num_beams, int finished_count, double worst_finished_score, double best_running_sum,
                      int generated_len, int max_new_tokens, float length_penalty, EarlyStopping early_stopping) {
    if (finished_count < num_beams) return false;
    if (early_stopping == EarlyStopping::Done) return true;
    // the best score a running beam could still reach: its sum only falls, so with a positive
    // length_penalty the longest length divides it most ("never"); the heuristic uses the current one
    const int length = early_stopping == EarlyStopping::Never && length_penalty > 0 ? max_new_tokens : generated_len;
    const double best_possible = best_running_sum / std::pow(static_cast<double>(length), static_cast<double>(length_penalty));
    return !(best_possible > worst_finished_score);
}

namespace {

Hypothesis finish(const Beam& beam, double score, const std::vector<int>& eos_ids) {
    const bool eos = !beam.ids.empty() && is_eos(beam.ids.back(), eos_ids);
    return {beam.ids, "", score, beam.sum_logprobs, eos ? FinishReason::Eos : FinishReason::Length};
}

void sort_best_first(std::vector<Hypothesis>& hyps) {
    std::stable_sort(hyps.begin(), hyps.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
}

// vLLM's LLM.beam_search: each beam's 2W best tokens; EOS ones complete; the W best others go on;
// no early stop; at max_tokens the running beams join the completed; all ranked by vLLM's score.
std::vector<Hypothesis> vllm_beam_search(const NextLogProbs& next, const std::vector<int>& eos_ids, int prompt_len,
                                         const GenerationConfig& config, BeamTrace* trace) {
    const int width = config.num_beams;
    std::vector<Beam> running{Beam{}};
    std::vector<Hypothesis> completed;
    auto score = [&](const Beam& b) {
        const bool eos = !b.ids.empty() && is_eos(b.ids.back(), eos_ids);
        return beam_score(b.sum_logprobs, static_cast<int>(b.ids.size()), eos, prompt_len, config.length_penalty,
                          BeamScoring::Vllm);
    };
    for (int step = 0; step < config.max_new_tokens && !running.empty(); ++step) {
        const std::vector<xt::xtensor<float, 1>> rows = next(running, step);
        std::vector<Candidate> others;
        std::vector<Beam> done_now;
        for (size_t b = 0; b < running.size(); ++b) {
            std::vector<Candidate> mine;
            for (size_t t = 0; t < rows[b].size(); ++t)
                mine.push_back({running[b].sum_logprobs + rows[b](t), static_cast<int>(b), static_cast<int>(t)});
            const size_t keep = std::min(mine.size(), static_cast<size_t>(2 * width));
            std::partial_sort(mine.begin(), mine.begin() + static_cast<long>(keep), mine.end(), better);
            for (size_t r = 0; r < keep; ++r) {
                if (is_eos(mine[r].token, eos_ids)) {
                    done_now.push_back(extend(running[b], mine[r].token, mine[r].sum));
                    completed.push_back(finish(done_now.back(), score(done_now.back()), eos_ids));
                } else {
                    others.push_back(mine[r]);
                }
            }
        }
        std::stable_sort(others.begin(), others.end(), better);
        std::vector<Beam> going;
        for (size_t r = 0; r < others.size() && going.size() < static_cast<size_t>(width); ++r)
            going.push_back(extend(running[static_cast<size_t>(others[r].beam)], others[r].token, others[r].sum));
        running = going;
        if (trace) {
            trace->running.push_back(running);
            trace->finished.push_back(done_now);
            trace->steps = step + 1;
        }
    }
    for (const Beam& b : running) completed.push_back(finish(b, score(b), eos_ids));
    sort_best_first(completed);
    completed.resize(std::min(completed.size(), static_cast<size_t>(config.num_return_sequences)));
    return completed;
}

}  // namespace

// [ch05:beam-search]
std::vector<Hypothesis> beam_search(const NextLogProbs& next, const std::vector<int>& eos_ids, int prompt_len,
                                    const GenerationConfig& config, BeamTrace* trace, const BeamStepFunction& step_fn) {
    validate(config);
    if (config.beam_scoring == BeamScoring::Vllm) return vllm_beam_search(next, eos_ids, prompt_len, config, trace);
    const int n = config.num_beams;
    std::vector<Beam> running(static_cast<size_t>(n), Beam{{}, kDummyBeam});
    running[0].sum_logprobs = 0;
    std::vector<Hypothesis> finished;  // the best n so far
    for (int step = 0; step < config.max_new_tokens; ++step) {
        const bool last = step + 1 == config.max_new_tokens;
        const BeamStep s = step_fn(running, next(running, step), eos_ids, n, last);
        for (const Beam& b : s.finished) {
            const bool eos = is_eos(b.ids.back(), eos_ids);
            const double score = beam_score(b.sum_logprobs, static_cast<int>(b.ids.size()), eos, prompt_len,
                                            config.length_penalty, BeamScoring::HuggingFace);
            finished.push_back(finish(b, score, eos_ids));
            sort_best_first(finished);
            if (finished.size() > static_cast<size_t>(n)) finished.pop_back();  // keep the best n
        }
        if (trace) {
            trace->running.push_back(s.running);
            trace->finished.push_back(s.finished);
            trace->steps = step + 1;
        }
        if (last) break;
        running = s.running;
        const double worst = finished.empty() ? 0.0 : finished.back().score;
        if (beam_search_done(n, static_cast<int>(finished.size()), worst, running.front().sum_logprobs, step + 1,
                             config.max_new_tokens, config.length_penalty, config.early_stopping))
            break;
    }
    finished.resize(std::min(finished.size(), static_cast<size_t>(config.num_return_sequences)));
    return finished;
}
// [/ch05:beam-search]

// [ch05:model-seam]
NextLogProbs model_log_probs(const Gpt2& model, const std::vector<int>& prompt, const GenerationConfig& config,
                             const std::vector<int>& eos_ids, std::vector<Processor> first) {
    // with do_sample false: the caller's processors, then penalties and min_new_tokens
    auto chain = std::make_shared<const LogitsChain>(config, std::move(first));
    return [&model, prompt, eos_ids, chain](const std::vector<Beam>& beams, int step) {
        std::map<std::vector<int>, xt::xtensor<float, 1>> seen;  // step 1's beams are all the prompt
        std::vector<xt::xtensor<float, 1>> rows;
        for (const Beam& beam : beams) {
            auto it = seen.find(beam.ids);
            if (it == seen.end()) {
                std::vector<int> sequence = prompt;
                sequence.insert(sequence.end(), beam.ids.begin(), beam.ids.end());
                // log_softmax first, then the processors on log-probabilities (HF's beam search)
                const xt::xtensor<float, 1> logprobs = log_softmax(last_position_logits(model.forward(sequence)));
                it = seen.emplace(beam.ids, chain->apply(logprobs, DecodeContext{prompt, beam.ids, step, eos_ids})).first;
            }
            rows.push_back(it->second);
        }
        return rows;
    };
}

std::vector<Hypothesis> beam_search(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                                    const GenerationConfig& config, BeamTrace* trace) {
    const ModelConfig& mc = model.config();
    const std::vector<int> eos_ids = check_request(mc, prompt, config);
    std::vector<Hypothesis> out = beam_search(model_log_probs(model, prompt, config, eos_ids), eos_ids,
                                              static_cast<int>(prompt.size()), config, trace);
    fill_texts(out, tokenizer, config.skip_special_tokens);
    return out;
}

void fill_texts(std::vector<Hypothesis>& hypotheses, const Tokenizer& tokenizer, bool skip_special_tokens) {
    for (Hypothesis& h : hypotheses) {
        PlainTextStream stream;
        for (int id : h.ids) h.text += stream.push(tokenizer.text_bytes(id, skip_special_tokens));
        h.text += stream.flush();
    }
}
// [/ch05:model-seam]

}  // namespace decodebook
