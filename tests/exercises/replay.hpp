// Shared by the graded tests of chapters 02-04: replay a reference case from tests/data with
// some steps of the pipeline done by the student's functions.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"

namespace replay {

/// The embedded model, loaded once.
const decodebook::Gpt2& model();

/// The GenerationConfig of a golden case (params, order, seed, max_new_tokens).
decodebook::GenerationConfig config(const nlohmann::json& golden_case);

/// The cases of tests/data/<file> whose "chain" string equals one of `chains`.
std::vector<nlohmann::json> cases_with_chain(const std::string& file, const std::vector<std::string>& chains);

/// Decide one token from the raw logits, the prompt, the tokens so far and the step's coin.
using Step = std::function<int(const xt::xtensor<float, 1>& logits, const std::vector<int>& prompt,
                               const std::vector<int>& generated, double coin)>;

/// Generate like the reference: the library's general loop, one coin of Rng(seed) per step, EOS kept.
std::vector<int> generate(const nlohmann::json& c, const Step& step);

}  // namespace replay
