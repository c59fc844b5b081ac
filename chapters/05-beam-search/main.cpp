// Chapter 05 - Beam search, and why chat models dropped it.
//
// Greedy decoding commits to the best token at every step; beam search keeps the num_beams best
// partial sequences by their summed log-probability and finishes with the best complete one. It
// finds sequences the model rates higher than greedy's, and that is the problem for open-ended
// text: the sequences a model rates highest are bland, and short when scored by the raw sum. This program checks that
// num_beams = 1 is greedy, traces a two-step toy by hand, measures greedy, beam search and
// sampling on the embedded model, shows length_penalty choosing the winner, and the two
// engines' scores (Hugging Face and vLLM) disagreeing.
//
// Library code this chapter introduces: beam_step, beam_score, beam_search_done, beam_search,
// log_softmax (decoding/beam_search.hpp); one_line (course/terminal.hpp).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/metrics.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/beam_search.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

using namespace decodebook;

namespace {

using Vec = xt::xtensor<float, 1>;

Vec row(std::vector<double> probs) {
    Vec r = xt::zeros<float>({probs.size()});
    for (size_t i = 0; i < probs.size(); ++i) r(i) = static_cast<float>(std::log(probs[i]));
    return r;
}

// The toy of part 2: tokens A, B, C and no EOS; two steps.
const char* kToyNames[] = {"A", "B", "C"};
std::vector<Vec> toy_rows(const std::vector<Beam>& beams) {
    std::vector<Vec> rows;
    for (const Beam& b : beams) {
        if (b.ids.empty()) rows.push_back(row({0.6, 0.4, 1e-9}));
        else if (b.ids[0] == 0) rows.push_back(row({0.4, 0.3, 0.3}));
        else rows.push_back(row({0.9, 0.05, 0.05}));
    }
    return rows;
}

std::string toy_text(const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += kToyNames[id];
    return s;
}

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

// Beam search on the model with every log-probability row memoized (not chapter 07's KV cache):
// part 4 runs the same search four times (length_penalty changes which finished hypothesis wins,
// not which beams run), part 6 once more.
class MemoizedSearch {
public:
    MemoizedSearch(const Gpt2& model, const Tokenizer& tok, std::vector<int> prompt, const GenerationConfig& config)
        : tok_(tok), prompt_(std::move(prompt)), eos_(check_request(model.config(), prompt_, config)),
          rows_of_(model_log_probs(model, prompt_, config, eos_)) {}
    std::vector<Hypothesis> run(const GenerationConfig& config) {
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

private:
    const Tokenizer& tok_;
    std::vector<int> prompt_;
    std::vector<int> eos_;
    NextLogProbs rows_of_;
    std::map<std::vector<int>, Vec> seen_;
};

void print_hypotheses(const std::vector<Hypothesis>& hyps) {
    for (size_t i = 0; i < hyps.size(); ++i)
        std::printf("  #%zu score %8.4f  sum %8.3f  %2zu tokens (%s)  %s\n", i + 1, hyps[i].score, hyps[i].sum_logprobs,
                    hyps[i].ids.size(), to_string(hyps[i].finish_reason).c_str(), one_line(hyps[i].text).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-05", "Beam search, and why chat models dropped it.",
                                        "The best way to");
    info.knob_groups.push_back(KnobGroup::Beams);
    info.defaults.do_sample = false;  // beam search is deterministic: this chapter decodes without coins
    info.defaults.num_beams = 4;
    info.defaults.num_return_sequences = 2;  // at most --num-beams (parse_command_line lowers it)
    info.show_steps = false;                 // several beams at once: part 2 draws them as a tree instead
    info.defaults.max_new_tokens = 20;
    info.csv_columns = "length_penalty,rank,length,sum_logprobs,score,finish_reason";
    const CommandLine opt = parse_command_line(argc, argv, info);
    if (!opt.config.stop.empty()) {  // parts 3 to 6 run 2 and 4 beams whatever --num-beams says
        std::cerr << "error: "
                  << Error("chapter-05 runs beam search in every part, and stop strings with beam search are not offered",
                           "drop --stop (chapter-06 and decodebook-generate --num-beams 1 take it)")
                         .what()
                  << std::endl;
        return 2;
    }
    return run_program([&] {
        const Session session = open_session(opt);
        const auto& [model, tok, prompt, config] = session;
        const int eos_id = model.config().eos_token_id;
        MemoizedSearch search(model, tok, prompt, config);  // the prompt's rows, shared by parts 3, 4 and 6

        std::printf("== 1. One beam is greedy ==\n");
        GenerationConfig one = config;
        one.num_beams = 1;
        one.num_return_sequences = 1;
        one.do_sample = false;
        const std::vector<Hypothesis> beam1 = beam_search(model, tok, prompt, one);
        const Generation greedy_run = generate(model, tok, prompt, one, make_sampler(one, one.seed));
        std::printf("  num_beams 1: %zu tokens, greedy: %zu tokens, the same ids: %s\n", beam1[0].ids.size(),
                    greedy_run.ids.size(), beam1[0].ids == greedy_run.ids ? "yes" : "NO");
        std::printf("  %s%s\n", opt.prompt.c_str(), one_line(beam1[0].text).c_str());

        std::printf("\n== 2. A toy traced by hand: greedy is not the best path ==\n");
        std::printf("  step 1: A 0.60, B 0.40\n"
                    "  after A: A 0.40, B 0.30, C 0.30      after B: A 0.90, B 0.05, C 0.05\n");
        std::printf("  every two-step path:");
        for (int first : {0, 1}) {
            const Vec step2 = toy_rows({Beam{{first}, 0.0}})[0];
            const double p1 = first == 0 ? 0.6 : 0.4;
            for (int second : {0, 1, 2})
                std::printf(" %s %.2f", toy_text({first, second}).c_str(), p1 * std::exp(step2(static_cast<size_t>(second))));
        }
        std::printf("\n");
        GenerationConfig toy;
        toy.max_new_tokens = 2;
        toy.length_penalty = 0;  // the raw sum: the comparison the tree makes
        toy.early_stopping = EarlyStopping::Never;
        for (int beams : {1, 2}) {
            toy.num_beams = beams;
            toy.num_return_sequences = 1;
            BeamTrace trace;
            const std::vector<Hypothesis> best =
                beam_search([](const std::vector<Beam>& b, int) { return toy_rows(b); }, {}, 0, toy, &trace);
            std::printf("  num_beams %d:\n", beams);
            for (const Beam& b : trace.running[0])
                if (b.sum_logprobs > -1e8)
                    std::printf("    step 1 keeps %-3s log-prob %6.3f\n", toy_text(b.ids).c_str(), b.sum_logprobs);
            for (const Beam& b : trace.finished[1])
                std::printf("    step 2 ends  %-3s log-prob %6.3f (p %.2f)%s\n", toy_text(b.ids).c_str(), b.sum_logprobs,
                            std::exp(b.sum_logprobs), b.ids == best[0].ids ? "  <- best" : "");
        }
        std::printf("  Greedy takes A (0.6) and then can only reach 0.6 x 0.4 = 0.24; keeping B alive finds\n"
                    "  B A at 0.4 x 0.9 = 0.36.\n");

        std::printf("\n== 3. Greedy, beam search and sampling on open-ended text (%d new tokens) ==\n",
                    config.max_new_tokens);
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

        std::printf("\n== 4. length_penalty picks the winner (num_beams 4, early_stopping never) ==\n");
        GenerationConfig lp = config;
        lp.num_beams = 4;
        lp.num_return_sequences = 4;
        lp.early_stopping = EarlyStopping::Never;
        std::vector<std::pair<float, std::vector<Hypothesis>>> by_penalty;
        for (float penalty : {-1.0f, 0.0f, 1.0f, 2.0f}) {
            lp.length_penalty = penalty;
            const std::vector<Hypothesis> hyps = search.run(lp);
            by_penalty.emplace_back(penalty, hyps);
            std::printf("  length_penalty %4.1f: winner %2zu tokens (%s), sum %7.3f, score %8.4f  %s\n", penalty,
                        hyps[0].ids.size(), to_string(hyps[0].finish_reason).c_str(), hyps[0].sum_logprobs,
                        hyps[0].score, one_line(hyps[0].text).c_str());
        }
        // where the raw sum's winner (length_penalty 0) ranks among each search's returned hypotheses
        const std::vector<int>& raw_winner = by_penalty[1].second[0].ids;
        std::printf("  the raw sum's winner (%zu tokens, %s) among the %d returned:", raw_winner.size(),
                    to_string(by_penalty[1].second[0].finish_reason).c_str(), lp.num_return_sequences);
        for (const auto& [penalty, hyps] : by_penalty) {
            size_t rank = 0;
            while (rank < hyps.size() && hyps[rank].ids != raw_winner) ++rank;
            std::printf("%s %.1f %s", penalty == by_penalty.front().first ? "" : ",", penalty,
                        rank < hyps.size() ? ("#" + std::to_string(rank + 1)).c_str() : "not returned");
        }
        std::printf("\n");
        std::printf("  0 ranks by the raw sum, which only falls with every token, so it favours ending early.\n"
                    "  1 (HF's default) divides by the length, so it is not neutral; 2 favours long, -1 short.\n");

        std::printf("\n== 5. Hugging Face's score against vLLM's (num_beams 2, length_penalty 1) ==\n");
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

        std::printf("\n== 6. Your settings: %s ==\n", describe(config, {KnobGroup::Beams}).c_str());
        std::printf("  %s\n", opt.prompt.c_str());
        const std::vector<Hypothesis> yours = search.run(config.num_beams > 1 ? config : one);
        print_hypotheses(yours);

        if (!opt.csv.empty()) {
            CsvFile csv(opt.csv, info.csv_columns);
            for (const auto& [penalty, hyps] : by_penalty)
                for (size_t r = 0; r < hyps.size(); ++r)
                    csv.out() << penalty << ',' << r + 1 << ',' << hyps[r].ids.size() << ',' << hyps[r].sum_logprobs << ','
                              << hyps[r].score << ',' << to_string(hyps[r].finish_reason) << '\n';
            csv.close();
            std::printf("\n(wrote the finished hypotheses of part 4 to %s)\n", opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 05 grades them):\n");
        const std::vector<Beam> start{Beam{}};
        const std::vector<Vec> rows = toy_rows(start);
        BeamStep step_yours;
        const ExerciseAttempt a = try_exercise([&] { step_yours = your_beam_step(start, rows, {2}, 2, false); });
        const BeamStep step_lib = beam_step(start, rows, {2}, 2, false);
        auto ids_of = [](const std::vector<Beam>& bs) {
            std::string t;
            for (const Beam& b : bs) {
                if (!t.empty()) t += ' ';
                t += toy_text(b.ids);
            }
            return t.empty() ? std::string("none") : t;
        };
        bool same = step_yours.running.size() == step_lib.running.size() && step_yours.finished.size() == step_lib.finished.size();
        for (size_t i = 0; same && i < step_lib.running.size(); ++i) same = step_yours.running[i].ids == step_lib.running[i].ids;
        print_exercise_status(course_exercise("your_beam_step"), a, same, "running " + ids_of(step_yours.running),
                              "running " + ids_of(step_lib.running));
        double score_yours = 0;
        bool done_yours = false;
        const ExerciseAttempt b = try_exercise([&] {
            score_yours = your_beam_score(-6.0, 3, true, 4, 1.0f, BeamScoring::HuggingFace);
            done_yours = your_beam_search_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic);
        });
        const double score_lib = beam_score(-6.0, 3, true, 4, 1.0f, BeamScoring::HuggingFace);
        const bool done_lib = beam_search_done(2, 2, -1.0, -3.0, 2, 10, 1.0f, EarlyStopping::Heuristic);
        print_exercise_status(course_exercise("your_beam_score"), b, score_yours == score_lib && done_yours == done_lib,
                              "score " + std::to_string(score_yours) + (done_yours ? ", done" : ", not done"),
                              "score " + std::to_string(score_lib) + (done_lib ? ", done" : ", not done"));
        return 0;
    });
}
