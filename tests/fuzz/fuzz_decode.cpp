// libFuzzer target: decoding any list of ids (4 bytes each, little-endian, any value) with the
// embedded model's tokenizer either gives the tokens' bytes or throws decodebook::Error for an id
// outside the vocabulary; token_bytes agrees with decode.
#include <cstring>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const decodebook::Tokenizer tok = decodebook::Tokenizer::load(DECODEBOOK_FUZZ_MODEL);
    std::vector<int> ids(size / 4);
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
    bool valid = true;
    for (int id : ids) valid = valid && id >= 0 && id < tok.vocab_size();
    try {
        const std::string text = tok.decode(ids);
        if (!valid) fuzz::fail("decode accepted an id outside the vocabulary");
        std::string joined;
        for (int id : ids) joined += tok.token_bytes(id);
        if (joined != text) fuzz::fail("decode differs from the tokens' bytes joined");
    } catch (const decodebook::Error&) {
        if (valid) fuzz::fail("decode refused ids of the vocabulary");
    }
    return 0;
}
