#include "replay.hpp"

#include "decodebook/rng.hpp"
#include "golden.hpp"

namespace replay {

const decodebook::Gpt2& model() { return golden::model(); }

decodebook::SamplingParams params(const nlohmann::json& p) { return golden::sampling_params(p); }

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
    const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
    const int eos = model().config().eos_token_id;
    decodebook::Rng rng(c["seed"].get<uint64_t>());
    std::vector<int> generated;
    const decodebook::Picker pick = [&](const xt::xtensor<float, 1>& logits) {
        const int token = step(logits, prompt, generated, rng.coin());
        generated.push_back(token);
        return token;
    };
    return decodebook::generate_naive(model(), prompt, {c["max_new_tokens"].get<int>(), eos}, pick);
}

}  // namespace replay
