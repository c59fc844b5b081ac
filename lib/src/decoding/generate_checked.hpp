#pragma once
// Chapter 02, private to lib/src/decoding/: the general loop on a request its caller has already
// checked (check_request gave `eos_ids`). generate() checks and calls it; generate_cached sizes its
// cache from the checked request and calls it, so a request is checked once.
#include <vector>

#include "decodebook/decoding/generate.hpp"

namespace decodebook::detail {

Generation generate_checked(const NextLogits& next, const ModelConfig& model, const Tokenizer& tokenizer,
                            const std::vector<int>& prompt, const GenerationConfig& config,
                            const std::vector<int>& eos_ids, const Sampler& sample, const StepObserver& on_step);

}  // namespace decodebook::detail
