// Exercise 07.4 - The decode roofline of any GPT-2 (worked solution; the library's twin is
// decodebook::decode_roofline_ms).
#include <cmath>

#include "decodebook/exercises.hpp"

namespace decodebook {

double your_decode_roofline_ms(const ModelConfig& config, int bytes_per_weight, double bytes_per_second) {
    if (bytes_per_weight < 1) throw Error("bytes per weight must be at least 1", "pass 4 for float32, 2 for bf16");
    if (!(bytes_per_second > 0) || !std::isfinite(bytes_per_second))
        throw Error("the bandwidth must be a positive number", "pass bytes per second, e.g. 20e9");
    if (config.vocab_size < 0 || config.n_embd < 0 || config.n_layer < 0)
        throw Error("a model shape needs sizes >= 0", "check vocab_size, n_embd and n_layer");
    const double V = config.vocab_size, C = config.n_embd;
    double weights = V * C + C;  // wte (read once: it is also the lm_head) and one row of wpe
    const double block = 2 * C                // ln_1
                         + C * 3 * C + 3 * C  // c_attn
                         + C * C + C          // attn.c_proj
                         + 2 * C              // ln_2
                         + C * 4 * C + 4 * C  // mlp.c_fc
                         + 4 * C * C + C;     // mlp.c_proj
    weights += config.n_layer * block + 2 * C;  // the blocks and ln_f
    return weights * bytes_per_weight / bytes_per_second * 1000;
}

}  // namespace decodebook
