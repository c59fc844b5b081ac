// libFuzzer target: load_safetensors on any bytes. A malformed file must end in decodebook::Error;
// a file it accepts must hold tensors whose sizes match their shapes.
#include "decodebook/base/error.hpp"
#include "decodebook/model/safetensors.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_file("model.safetensors", {reinterpret_cast<const char*>(data), size});
    try {
        const decodebook::TensorMap tensors = decodebook::load_safetensors(path);
        size_t total = 0;
        for (const auto& [name, tensor] : tensors) {
            size_t elements = 1;
            for (size_t d : tensor.shape()) elements *= d;
            if (elements != tensor.size()) fuzz::fail("a tensor's size differs from its shape");
            total += tensor.size();
        }
        // every accepted element came from the file: at least 2 bytes each (F16/BF16) after the 8-byte length
        if (size < 8 || total > (size - 8) / 2) fuzz::fail("more elements than the file can hold");
    } catch (const decodebook::Error&) {
    }
    return 0;
}
