// libFuzzer target: the embedded model's tokenizer encodes any bytes into ids of its vocabulary,
// and decoding them gives the same bytes back (byte-level BPE loses nothing).
#include "decodebook/model/tokenizer.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const decodebook::Tokenizer tok = decodebook::Tokenizer::load(DECODEBOOK_FUZZ_MODEL);
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::vector<int> ids = tok.encode(text);
    for (int id : ids)
        if (id < 0 || id >= tok.vocab_size()) fuzz::fail("encode returned an id outside the vocabulary");
    if (tok.decode(ids) != text) fuzz::fail("decode(encode(text)) != text");
    return 0;
}
