// Chapter 07: the KV cache, its size, and reordering it for beam search.
#include "decodebook/model/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "decodebook/base/error.hpp"
#include "decodebook/model/kernels.hpp"

namespace decodebook {

// [ch07:kv-cache-bytes]
uint64_t kv_cache_bytes(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value, int64_t rows) {
    const int64_t factors[] = {2, n_layer, positions, width, bytes_per_value, rows};  // 2: K and V
    for (int64_t f : factors)  // every count first: a negative one is refused wherever it stands
        if (f < 0) throw Error("a KV-cache size needs counts >= 0 (got " + std::to_string(f) + ")", "pass sizes, not offsets");
    for (int64_t f : factors)
        if (f == 0) return 0;  // nothing to store, however large the other counts
    uint64_t bytes = 1;
    for (int64_t f : factors) {
        if (bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(f))
            throw Error("the KV-cache size overflows 64 bits", "check the layer, position and width counts");
        bytes *= static_cast<uint64_t>(f);
    }
    return bytes;
}
// [/ch07:kv-cache-bytes]

// [ch07:reorder-rows]
void reorder_rows(xt::xtensor<float, 3>& rows, const std::vector<int>& source) {
    const size_t n = rows.shape(0), row_size = rows.shape(1) * rows.shape(2);
    if (source.size() != n) {
        throw Error("reorder_rows got " + std::to_string(source.size()) + " sources for " + std::to_string(n) + " rows",
                    "pass one source row per row");
    }
    for (int s : source) {
        if (s < 0 || static_cast<size_t>(s) >= n)
            throw Error("reorder_rows: source row " + std::to_string(s) + " is outside 0.." + std::to_string(n - 1),
                        "pass indices of existing rows");
    }
    // Copying in place would overwrite a row another row still has to read (source {1, 0}),
    // so read every source row before writing any: through a copy of the old rows.
    const xt::xtensor<float, 3> old = rows;
    for (size_t r = 0; r < n; ++r)
        std::memcpy(rows.data() + r * row_size, old.data() + static_cast<size_t>(source[r]) * row_size,
                    row_size * sizeof(float));
}
// [/ch07:reorder-rows]

// [ch07:cached-attention-step]
xt::xtensor<float, 1> cached_attention_step(xt::xtensor<float, 2>& keys, xt::xtensor<float, 2>& values,
                                            size_t position, const xt::xtensor<float, 1>& qkv, int n_head) {
    const size_t C = keys.shape(1);
    if (values.shape() != keys.shape() || qkv.size() != 3 * C || position >= keys.shape(0) || n_head < 1 ||
        C % static_cast<size_t>(n_head) != 0)
        throw Error("cached_attention_step: keys and values must be (capacity, C), qkv (3C), position < capacity",
                    "pass one layer's cache of one sequence and the new token's fused projection");
    // the new position's key and value join the cache ...
    std::copy_n(qkv.data() + C, C, keys.data() + position * C);
    std::copy_n(qkv.data() + 2 * C, C, values.data() + position * C);
    // ... and its query attends over positions 0..position, head by head
    xt::xtensor<float, 1> out = xt::zeros<float>({C});
    std::vector<float> scores(position + 1);
    attend(qkv.data(), keys.data(), values.data(), position + 1, C, C, n_head, scores.data(), out.data());
    return out;
}
// [/ch07:cached-attention-step]

DecodeScratch::DecodeScratch(const ModelConfig& config, size_t B, size_t positions)
    : keys(B, nullptr), values(B, nullptr), tables(B, nullptr), row_blocks(B, 0), positions(B, 0), lengths(B, 0) {
    const size_t C = static_cast<size_t>(config.n_embd), V = static_cast<size_t>(config.vocab_size);
    x = xt::zeros<float>({B, C});
    xn = xt::zeros<float>({B, C});
    qkv = xt::zeros<float>({B, 3 * C});
    att = xt::zeros<float>({B, C});
    proj = xt::zeros<float>({B, C});
    hidden = xt::zeros<float>({B, 4 * C});
    scores = xt::zeros<float>({B * static_cast<size_t>(config.n_head), positions});
    logits = xt::zeros<float>({B, V});
}

namespace {
// The tokens one decode call takes: max_tokens_per_step, or one per row when it is 0.
size_t checked_step(const ModelConfig& config, size_t rows, size_t capacity, size_t max_tokens_per_step) {
    if (rows < 1) throw Error("a KV cache needs at least one row", "pass rows >= 1");
    if (capacity < 1 || capacity > static_cast<size_t>(config.n_positions)) {
        throw Error("a KV cache of " + std::to_string(capacity) + " positions does not fit the model's context of " +
                        std::to_string(config.n_positions),
                    "ask for 1.." + std::to_string(config.n_positions) + " positions");
    }
    const size_t B = max_tokens_per_step == 0 ? rows : max_tokens_per_step;
    if (B > capacity * rows) {
        throw Error("a decode call of " + std::to_string(B) + " tokens cannot fit a cache of " + std::to_string(rows) +
                        " rows of " + std::to_string(capacity) + " positions",
                    "pass max_tokens_per_step <= rows x capacity (0 means one per row)");
    }
    return B;
}
}  // namespace

KvCache::KvCache(const ModelConfig& config, size_t rows, size_t capacity, size_t max_tokens_per_step)
    : capacity_(capacity),
      lengths_(rows, 0),
      scratch_(config, checked_step(config, rows, capacity, max_tokens_per_step), capacity) {
    const size_t C = static_cast<size_t>(config.n_embd);
    for (int l = 0; l < config.n_layer; ++l) {
        keys_.push_back(xt::xtensor<float, 3>::from_shape({rows, capacity, C}));
        values_.push_back(xt::xtensor<float, 3>::from_shape({rows, capacity, C}));
    }
}

void KvCache::truncate(size_t row, size_t length) {
    if (row >= rows()) {
        throw Error("cache row " + std::to_string(row) + " does not exist (the cache has " + std::to_string(rows()) +
                        " rows)",
                    "truncate a row the cache has");
    }
    if (length > lengths_[row]) {
        throw Error("cannot truncate cache row " + std::to_string(row) + " to " + std::to_string(length) +
                        " positions: it holds " + std::to_string(lengths_[row]),
                    "truncate to at most the row's length (truncate only forgets positions)");
    }
    lengths_[row] = length;  // the values beyond are dead: the next decode overwrites them
}

uint64_t KvCache::bytes() const {
    if (keys_.empty()) return 0;
    return kv_cache_bytes(static_cast<int64_t>(keys_.size()), static_cast<int64_t>(capacity_),
                          static_cast<int64_t>(keys_[0].shape(2)), sizeof(float), static_cast<int64_t>(rows()));
}

void KvCache::reorder(const std::vector<int>& source) {
    const size_t n = rows();
    if (source.size() != n) {
        throw Error("KvCache::reorder got " + std::to_string(source.size()) + " sources for " + std::to_string(n) +
                        " rows",
                    "pass one source row per row");
    }
    for (int s : source) {
        if (s < 0 || static_cast<size_t>(s) >= n)
            throw Error("KvCache::reorder: source row " + std::to_string(s) + " is outside 0.." + std::to_string(n - 1),
                        "pass indices of existing rows");
    }
    // reorder_rows, but only the rows that change, and only their filled positions: save the
    // source rows first (a row may be both read and overwritten), then write.
    std::vector<size_t> moved, sources;  // rows that change; the distinct rows they read
    size_t used = 0;
    for (size_t r = 0; r < n; ++r) {
        const size_t s = static_cast<size_t>(source[r]);
        if (s == r) continue;
        moved.push_back(r);
        if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
        used = std::max(used, lengths_[s]);
    }
    if (moved.empty()) return;
    const size_t C = keys_[0].shape(2), span = used * C, row_size = capacity_ * C;
    std::vector<float> saved(sources.size() * span);
    for (auto* layers : {&keys_, &values_}) {
        for (xt::xtensor<float, 3>& t : *layers) {
            for (size_t i = 0; i < sources.size(); ++i)
                std::copy_n(t.data() + sources[i] * row_size, span, saved.data() + i * span);
            for (size_t r : moved) {
                const size_t i = static_cast<size_t>(
                    std::find(sources.begin(), sources.end(), static_cast<size_t>(source[r])) - sources.begin());
                std::copy_n(saved.data() + i * span, span, t.data() + r * row_size);
            }
        }
    }
    const std::vector<size_t> old = lengths_;
    for (size_t r = 0; r < n; ++r) lengths_[r] = old[static_cast<size_t>(source[r])];
}

}  // namespace decodebook
