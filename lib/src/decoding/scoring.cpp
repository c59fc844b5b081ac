// Chapter 11: prompt logprobs, a continuation's score and sliding-window perplexity, each from
// the model's raw logits (one forward per window, no chain).
#include "decodebook/decoding/scoring.hpp"

#include <cmath>
#include <string>

#include <xtensor/xview.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

// Row `row` of a (T, V) logits matrix.
xt::xtensor<float, 1> row_of(const xt::xtensor<float, 2>& logits, size_t row) { return xt::view(logits, row); }

void check_fits(const Gpt2& model, size_t tokens, const std::string& what, const std::string& fix) {
    const int n = model.config().n_positions;
    if (tokens > static_cast<size_t>(n))
        throw Error(what + " holds " + std::to_string(tokens) + " tokens, more than the model's context of " +
                        std::to_string(n),
                    fix);
}

}  // namespace

std::vector<std::optional<PromptLogprob>> prompt_logprobs(const Gpt2& model, const std::vector<int>& ids, int k) {
    if (ids.empty()) throw Error("the prompt is empty: it has no token to score", "pass a prompt of one token or more");
    check_fits(model, ids.size(), "the prompt", "score a prompt that fits the context, or score it by windows (perplexity)");
    if (k < 0 || k > kMaxLogprobs)
        throw Error("prompt_logprobs = " + std::to_string(k) + " is outside 0.." + std::to_string(kMaxLogprobs),
                    "ask for at most " + std::to_string(kMaxLogprobs) + " alternatives per prompt token");
    const xt::xtensor<float, 2> logits = model.forward(ids);  // (T, V): row t predicts token t + 1
    std::vector<std::optional<PromptLogprob>> out(ids.size());
    for (size_t i = 1; i < ids.size(); ++i) {
        const xt::xtensor<float, 1> lp = log_softmax(row_of(logits, i - 1));
        const int t = ids[i];
        out[i] = PromptLogprob{t, lp(static_cast<size_t>(t)), logprob_rank(lp, t), top_logprobs(lp, k, t)};
    }
    return out;
}

ContinuationScore score_continuation(const Gpt2& model, const std::vector<int>& context,
                                     const std::vector<int>& continuation) {
    if (context.empty() || continuation.empty())
        throw Error(std::string("the ") + (context.empty() ? "context" : "continuation") + " to score is empty",
                    "pass a context and a continuation of one token or more each");
    std::vector<int> all = context;
    all.insert(all.end(), continuation.begin(), continuation.end() - 1);  // the last token is only predicted
    check_fits(model, all.size() + 1, "the context and continuation", "shorten the context");
    const xt::xtensor<float, 2> logits = model.forward(all);
    ContinuationScore score;
    for (size_t j = 0; j < continuation.size(); ++j) {
        const xt::xtensor<float, 1> z = row_of(logits, context.size() - 1 + j);
        const int t = continuation[j];
        score.logprob += log_softmax(z)(static_cast<size_t>(t));
        score.greedy = score.greedy && argmax(z) == t;
        ++score.tokens;
    }
    return score;
}

double Perplexity::value() const { return std::exp(nll_sum / static_cast<double>(tokens)); }

// [ch11:perplexity]
Perplexity sliding_window_perplexity(const Gpt2& model, const std::vector<int>& ids, int max_length, int stride) {
    if (ids.size() < 2) throw Error("a text of " + std::to_string(ids.size()) + " token has no perplexity",
                                    "score a text of two tokens or more (the first is never predicted)");
    const int n = model.config().n_positions;
    if (max_length < 2 || max_length > n)
        throw Error("the window of " + std::to_string(max_length) + " tokens is outside 2.." + std::to_string(n),
                    "pass a window of at most the model's context (" + std::to_string(n) + ")");
    if (stride < 1 || stride > max_length)
        throw Error("the stride of " + std::to_string(stride) + " is outside 1.." + std::to_string(max_length),
                    "pass a stride of at most the window (stride = window: windows that do not overlap)");
    const size_t seq_len = ids.size(), window = static_cast<size_t>(max_length);
    Perplexity p;
    size_t prev_end = 0;
    for (size_t begin = 0; begin < seq_len; begin += static_cast<size_t>(stride)) {
        const size_t end = std::min(begin + window, seq_len);
        const size_t trg_len = end - prev_end;  // the tokens no earlier window scored
        const std::vector<int> input(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                     ids.begin() + static_cast<std::ptrdiff_t>(end));
        const xt::xtensor<float, 2> logits = model.forward(input);
        double nll = 0;
        size_t scored = 0;
        for (size_t j = std::max<size_t>(input.size() - trg_len, 1); j < input.size(); ++j) {
            nll -= log_softmax(row_of(logits, j - 1))(static_cast<size_t>(input[j]));
            ++scored;
        }
        if (scored > 0) {  // the guide's mean loss, weighted by num_valid_tokens - batch_size
            p.nll_sum += nll / static_cast<double>(scored) * static_cast<double>(trg_len - 1);
            p.tokens += trg_len - 1;
        }
        ++p.windows;
        prev_end = end;
        if (end == seq_len) break;
    }
    return p;
}
// [/ch11:perplexity]

std::vector<StepLogprobs> transition_scores(const Gpt2& model, const std::vector<int>& prompt, const std::vector<int>& ids,
                                            const GenerationConfig& config, const LogprobsRequest& request) {
    check_logprobs_request(request);
    if (prompt.empty() || ids.empty())
        throw Error(std::string("the ") + (prompt.empty() ? "prompt" : "hypothesis") + " to rebuild scores for is empty",
                    "pass the search's prompt and one of its hypotheses");
    std::vector<int> all = prompt;
    all.insert(all.end(), ids.begin(), ids.end() - 1);  // the last id is only predicted
    check_fits(model, all.size() + 1, "the prompt and hypothesis", "pass the prompt and hypothesis the search ran on");
    const std::vector<int> eos_ids = resolve_eos_ids(config, model.config().eos_token_id);
    const LogitsChain chain(config);  // beam search runs greedy: the processors only
    const xt::xtensor<float, 2> logits = model.forward(all);  // (T, V): row t predicts token t + 1
    std::vector<StepLogprobs> out;
    for (size_t t = 0; t < ids.size(); ++t) {
        const xt::xtensor<float, 1> raw = row_of(logits, prompt.size() - 1 + t);
        const std::span<const int> before = std::span<const int>(ids).first(t);
        // chapter 05's row: log_softmax first, then the processors on log-probabilities
        const xt::xtensor<float, 1> row =
            chain.apply(log_softmax(raw), DecodeContext{prompt, before, static_cast<int>(t), eos_ids});
        out.push_back(step_logprobs(raw, row, ids[t], request));
    }
    return out;
}

}  // namespace decodebook
