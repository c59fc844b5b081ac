#include "replay.hpp"

#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/generate.hpp"
#include "golden.hpp"

namespace replay {

const decodebook::Gpt2& model() { return golden::model(); }

decodebook::GenerationConfig config(const nlohmann::json& c) { return golden::config(c); }

std::vector<nlohmann::json> cases_with_chain(const std::string& file, const std::vector<std::string>& chains) {
    std::vector<nlohmann::json> out;
    const nlohmann::json golden = golden::load(file);  // must outlive the loop
    for (const auto& c : golden["cases"]) {
        for (const auto& chain : chains)
            if (c["chain"].get<std::string>() == chain) out.push_back(c);
    }
    return out;
}

std::vector<int> generate(const nlohmann::json& c, const Step& step) {
    decodebook::Rng rng(c["seed"].get<uint64_t>());
    const decodebook::Sampler sample = [&](const xt::xtensor<float, 1>& logits, const decodebook::DecodeContext& context) {
        const std::vector<int> prompt(context.prompt.begin(), context.prompt.end()),
            generated(context.generated.begin(), context.generated.end());
        return step(logits, prompt, generated, rng.coin());
    };
    return decodebook::generate(model(), golden::tokenizer(), c["prompt_ids"].get<std::vector<int>>(), config(c), sample).ids;
}

}  // namespace replay
