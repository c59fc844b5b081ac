#include "replay.hpp"

#include "decodebook/rng.hpp"
#include "golden.hpp"

namespace replay {

const decodebook::Gpt2& model() {
    static const decodebook::Gpt2 m = decodebook::Gpt2::load(golden::model_dir());
    return m;
}

decodebook::SamplingParams params(const nlohmann::json& p) {
    decodebook::SamplingParams s;
    s.temperature = p["temperature"].get<float>();
    s.top_k = p["top_k"].get<int>();
    s.top_p = p["top_p"].get<float>();
    s.min_p = p["min_p"].get<float>();
    s.min_tokens_to_keep = p["min_tokens_to_keep"].get<int>();
    s.repetition_penalty = p["repetition_penalty"].get<float>();
    const std::string scope = p["penalty_scope"].get<std::string>();
    s.penalty_scope = scope == "output_only" ? decodebook::PenaltyScope::OutputOnly
                      : scope == "last_n"    ? decodebook::PenaltyScope::LastN
                                             : decodebook::PenaltyScope::PromptAndOutput;
    s.penalty_last_n = p["penalty_last_n"].get<int>();
    s.presence_penalty = p["presence_penalty"].get<float>();
    s.frequency_penalty = p["frequency_penalty"].get<float>();
    s.no_repeat_ngram_size = p["no_repeat_ngram_size"].get<int>();
    return s;
}

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
