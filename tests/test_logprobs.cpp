// Chapter 11: log-softmax, the four modes, a token's rank and a step's top-K entries, on cases
// worked by hand and on vLLM's own test facts (vllm-project/vllm at 75162ed0be35,
// tests/v1/sample/test_batched_count_greater_than.py).
#include <catch2/catch.hpp>

#include <cmath>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/sampling/logprobs.hpp"

using namespace decodebook;

namespace {

double exp_sum(const xt::xtensor<float, 1>& logprobs) {
    double s = 0;
    for (float v : logprobs) s += std::exp(static_cast<double>(v));
    return s;
}

}  // namespace

TEST_CASE("log_softmax by hand keeps -inf and sums to one", "[logprobs]") {
    // z = (ln 3, 0, -inf): p = (3/4, 1/4, 0)
    const xt::xtensor<float, 1> z{static_cast<float>(std::log(3.0)), 0.0f, -INFINITY};
    const xt::xtensor<float, 1> lp = log_softmax(z);
    CHECK(lp(0) == Approx(std::log(0.75)).margin(1e-6));
    CHECK(lp(1) == Approx(std::log(0.25)).margin(1e-6));
    CHECK(lp(2) == -INFINITY);
    // adding a constant to every logit changes nothing; large logits do not overflow
    const xt::xtensor<float, 1> shifted = log_softmax(xt::xtensor<float, 1>{1000.0f + static_cast<float>(std::log(3.0)), 1000.0f, -INFINITY});
    CHECK(shifted(0) == Approx(lp(0)).margin(1e-4));
    CHECK(shifted(1) == Approx(lp(1)).margin(1e-4));
    Rng rng(7);
    xt::xtensor<float, 1> big = xt::zeros<float>({2048});
    for (float& v : big) v = static_cast<float>(20.0 * rng.coin() - 10.0);
    CHECK(exp_sum(log_softmax(big)) == Approx(1.0).margin(1e-6));
    CHECK_THROWS_AS(log_softmax(xt::xtensor<float, 1>{-INFINITY, -INFINITY}), Error);
}

TEST_CASE("a token's rank counts the values at least its own as vLLM's batched_count_greater_than", "[logprobs]") {
    // vLLM test_batched_count_greater_than_correctness: x = [[1, 2, 3], [4, 5, 6]], values [[2], [5]] -> [2, 2]
    CHECK(logprob_rank(xt::xtensor<float, 1>{1, 2, 3}, 1) == 2);
    CHECK(logprob_rank(xt::xtensor<float, 1>{4, 5, 6}, 1) == 2);
    // the largest is rank 1; a tie counts against the token; -inf is last
    CHECK(logprob_rank(xt::xtensor<float, 1>{1, 2, 3}, 2) == 1);
    CHECK(logprob_rank(xt::xtensor<float, 1>{2, 2, 1}, 0) == 2);
    CHECK(logprob_rank(xt::xtensor<float, 1>{2, 2, 1}, 1) == 2);
    CHECK(logprob_rank(xt::xtensor<float, 1>{0, -INFINITY, -INFINITY}, 1) == 3);
    CHECK_THROWS_WITH(logprob_rank(xt::xtensor<float, 1>{1, 2}, 2), Catch::Contains("outside the vocabulary of 2"));
}

TEST_CASE("top_logprobs lists the top K and appends the sampled token only from outside them", "[logprobs]") {
    const xt::xtensor<float, 1> v{-2.0f, -0.5f, -1.0f, -0.5f, -3.0f};
    // top 2: ids 1 and 3 tie at -0.5 (the lower id first); id 2 was sampled: K + 1 entries, its rank 3
    CHECK(top_logprobs(v, 2, 2) ==
          std::vector<LogprobEntry>{{1, -0.5f, 1}, {3, -0.5f, 2}, {2, -1.0f, 3}});
    // the sampled token among the top K: K entries
    CHECK(top_logprobs(v, 2, 3) == std::vector<LogprobEntry>{{1, -0.5f, 1}, {3, -0.5f, 2}});
    // K = 0: the sampled token alone, with its rank (vLLM's logprobs=0)
    CHECK(top_logprobs(v, 0, 4) == std::vector<LogprobEntry>{{4, -3.0f, 5}});
    // a sampled token tied with the last one kept but after it in id order is appended, ranked
    // by how many values are >= its own
    CHECK(top_logprobs(v, 1, 3) == std::vector<LogprobEntry>{{1, -0.5f, 1}, {3, -0.5f, 2}});
    // K beyond the vocabulary lists it all
    CHECK(top_logprobs(xt::xtensor<float, 1>{0.0f, -1.0f}, 20, 1).size() == 2);
    CHECK_THROWS_WITH(top_logprobs(v, 21, 0), Catch::Contains("logprobs = 21 is outside 0..20"));
    CHECK_THROWS_WITH(top_logprobs(v, -1, 0), Catch::Contains("logprobs = -1 is outside 0..20"));
    CHECK_THROWS_WITH(top_logprobs(v, 2, 5), Catch::Contains("token id 5 is outside the vocabulary of 5"));
}

TEST_CASE("the four logprobs modes take vLLM's names and values", "[logprobs]") {
    const xt::xtensor<float, 1> raw{2.0f, 1.0f, 0.0f};
    const xt::xtensor<float, 1> processed{4.0f, 2.0f, -INFINITY};  // temperature 0.5, then top-k 2
    const xt::xtensor<float, 1> raw_lp = logprob_values(raw, processed, LogprobsMode::RawLogprobs);
    CHECK(raw_lp(2) == Approx(-std::log(1 + std::exp(1.0) + std::exp(2.0))).margin(1e-6));
    CHECK(logprob_values(raw, processed, LogprobsMode::RawLogits)(1) == 1.0f);
    const xt::xtensor<float, 1> processed_lp = logprob_values(raw, processed, LogprobsMode::ProcessedLogprobs);
    CHECK(processed_lp(0) == Approx(-std::log(1 + std::exp(-2.0))).margin(1e-6));
    CHECK(processed_lp(2) == -INFINITY);  // removed by the chain
    CHECK(exp_sum(processed_lp) == Approx(1.0).margin(1e-6));
    CHECK(logprob_values(raw, processed, LogprobsMode::ProcessedLogits)(0) == 4.0f);
    for (const char* name : {"raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"})
        CHECK(to_string(parse_logprobs_mode(name)) == name);
    CHECK_THROWS_WITH(parse_logprobs_mode("raw"), Catch::Contains("pass raw_logprobs (the default)"));
}
