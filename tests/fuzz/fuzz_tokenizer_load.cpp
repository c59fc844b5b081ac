// libFuzzer target: Tokenizer::load on any vocab.json and merges.txt. The input is the two files
// separated by the first zero byte (without one, all of it is vocab.json and merges.txt is empty).
// A bad pair must end in decodebook::Error; a pair it accepts must encode and decode text.
#include "decodebook/base/error.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t cut = input.find('\0');
    fuzz::write_file("vocab.json", input.substr(0, cut));
    fuzz::write_file("merges.txt", cut == std::string_view::npos ? std::string_view() : input.substr(cut + 1));
    try {
        const decodebook::Tokenizer tok = decodebook::Tokenizer::load(fuzz::scratch().string());
        const std::string text = "Hello world, it's 2024! \xe2\x82\xac \xff";
        const std::vector<int> ids = tok.encode(text);
        for (int id : ids)
            if (id < 0 || id >= tok.vocab_size()) fuzz::fail("encode returned an id outside the vocabulary");
        tok.decode(ids);
    } catch (const decodebook::Error&) {
    }
    return 0;
}
