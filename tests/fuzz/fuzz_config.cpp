// libFuzzer target: load_config on any bytes. A bad config.json must end in decodebook::Error; an
// accepted one must describe a usable shape.
#include "decodebook/base/error.hpp"
#include "decodebook/model/config.hpp"
#include "fuzz_common.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_file("config.json", {reinterpret_cast<const char*>(data), size});
    try {
        const decodebook::ModelConfig c = decodebook::load_config(path);
        if (c.vocab_size <= 0 || c.n_positions <= 0 || c.n_embd <= 0 || c.n_layer <= 0 || c.n_head <= 0)
            fuzz::fail("a size that is not positive was accepted");
        if (c.n_embd % c.n_head != 0) fuzz::fail("n_embd not divisible by n_head was accepted");
        if (!(c.layer_norm_epsilon > 0.0f) || !std::isfinite(c.layer_norm_epsilon))
            fuzz::fail("a layer_norm_epsilon that is not a positive finite float was accepted");
        if (c.eos_token_id >= c.vocab_size) fuzz::fail("an eos_token_id outside the vocabulary was accepted");
    } catch (const decodebook::Error&) {
    }
    return 0;
}
