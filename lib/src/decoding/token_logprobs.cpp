// Chapter 11: a sampler that records each generated token's numbers.
#include "decodebook/decoding/token_logprobs.hpp"

#include <memory>
#include <string>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/chain_end.hpp"

namespace decodebook {

// [ch11:record]
StepLogprobs step_logprobs(const xt::xtensor<float, 1>& raw, const xt::xtensor<float, 1>& processed, int token,
                           const LogprobsRequest& request) {
    const xt::xtensor<float, 1> values = logprob_values(raw, processed, request.mode);
    return {token, values(static_cast<size_t>(token)), logprob_rank(values, token), top_logprobs(values, request.k, token)};
}

void check_logprobs_request(const LogprobsRequest& request) {
    if (request.k < 0 || request.k > kMaxLogprobs)
        throw Error("logprobs = " + std::to_string(request.k) + " is outside 0.." + std::to_string(kMaxLogprobs),
                    "ask for at most " + std::to_string(kMaxLogprobs) + " alternatives per token (vLLM's max_logprobs)");
}

Sampler make_logprobs_sampler(const GenerationConfig& config, uint64_t seed, const LogprobsRequest& request,
                              std::vector<StepLogprobs>& out, std::vector<Processor> first) {
    check_logprobs_request(request);
    auto chain = std::make_shared<const LogitsChain>(config, std::move(first));
    auto rng = std::make_shared<Rng>(seed);
    std::shared_ptr<ChainEnd> end = chain->end().clone();
    return [chain, rng, end, request, &out](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
        const double coin = rng->coin();  // as make_sampler: coin i decides token i
        const xt::xtensor<float, 1> z = chain->apply(logits, context);
        const int token = end->pick(z, coin);
        out.push_back(step_logprobs(logits, z, token, request));
        return token;
    };
}
// [/ch11:record]

}  // namespace decodebook
