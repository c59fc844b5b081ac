// Exercise 07.2 - How big the KV cache is (worked solution; the library's twin is
// decodebook::kv_cache_bytes).
#include <limits>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

uint64_t your_kv_cache_bytes(int64_t n_layer, int64_t positions, int64_t width, int64_t bytes_per_value,
                             int64_t rows) {
    const int64_t factors[] = {n_layer, positions, width, bytes_per_value, rows};
    for (int64_t factor : factors)  // every count first: a negative one is refused wherever it stands
        if (factor < 0)
            throw Error(std::string("a KV-cache size needs counts >= 0, got ") + std::to_string(factor), "pass sizes, not offsets");
    for (int64_t factor : factors)
        if (factor == 0) return 0;  // nothing to store: 0 fits, however large the other counts
    uint64_t bytes = 2;  // a key and a value
    for (int64_t factor : factors) {
        const uint64_t f = static_cast<uint64_t>(factor);
        // bytes * f > max  <=>  bytes > max / f (f > 0): test before multiplying, never after
        if (bytes > std::numeric_limits<uint64_t>::max() / f)
            throw Error("the KV-cache size does not fit in 64 bits", "check the layer, position and width counts");
        bytes *= f;
    }
    return bytes;
}

}  // namespace decodebook
