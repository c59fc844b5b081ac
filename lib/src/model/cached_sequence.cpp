// Chapter 07: one cached sequence that knows what it holds (chapter 08 verifies and rolls back on it).
#include "decodebook/model/cached_sequence.hpp"

#include <algorithm>

#include "decodebook/base/error.hpp"

namespace decodebook {

CachedSequence::CachedSequence(const Gpt2& model, KvCache& cache, size_t row, BatchKernels kernels)
    : model_(&model), cache_(&cache), row_(row), kernels_(kernels) {
    if (row >= cache.rows()) {
        throw Error("cache row " + std::to_string(row) + " does not exist (the cache has " +
                        std::to_string(cache.rows()) + " rows)",
                    "make the KvCache with enough rows");
    }
    cache.clear(row);  // the sequence starts empty: tokens_ always holds what the row holds
}

xt::xtensor<float, 1> CachedSequence::prefill(const std::vector<int>& ids) {
    xt::xtensor<float, 1> logits = model_->prefill(ids, *cache_, row_);
    tokens_.insert(tokens_.end(), ids.begin(), ids.end());
    return logits;
}

xt::xtensor<float, 2> CachedSequence::append(std::span<const int> ids) {
    const std::vector<int> tokens(ids.begin(), ids.end());
    model_->decode(tokens, std::vector<size_t>(tokens.size(), row_), *cache_, kernels_);
    tokens_.insert(tokens_.end(), ids.begin(), ids.end());
    const size_t V = cache_->logits().shape(1);
    xt::xtensor<float, 2> out = xt::xtensor<float, 2>::from_shape({tokens.size(), V});
    std::copy_n(cache_->logits().data(), tokens.size() * V, out.data());  // rows 0..T-1 of the call
    return out;
}

void CachedSequence::truncate(size_t length) {
    cache_->truncate(row_, length);  // throws when the row is shorter
    tokens_.resize(length);
}

}  // namespace decodebook
