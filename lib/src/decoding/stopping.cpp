// Chapter 02: how a generation ends: text streams and stopping criteria (chapter 06 adds the
// stop-string stream).
#include "decodebook/decoding/stopping.hpp"

#include "decodebook/decoding/constraint.hpp"

#include "decodebook/decoding/stop_strings.hpp"

namespace decodebook {

std::string to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::Length: return "length";
        case FinishReason::Eos: return "eos";
        case FinishReason::StopString: return "stop_string";
        case FinishReason::Callback: return "callback";
        case FinishReason::DeadEnd: return "dead_end";
    }
    return "?";
}

StoppingCriterion max_new_tokens_criterion(int max_new_tokens) {
    return {"max_new_tokens(" + std::to_string(max_new_tokens) + ")",
            [max_new_tokens](const StopState& s) -> std::optional<FinishReason> {
                if (static_cast<int>(s.generated.size()) >= max_new_tokens) return FinishReason::Length;
                return std::nullopt;
            }};
}

StoppingCriterion eos_criterion(std::vector<int> eos_ids) {
    std::string name;
    for (int id : eos_ids) {
        if (!name.empty()) name += ", ";
        name += std::to_string(id);
    }
    return {"eos(" + name + ")", [eos_ids](const StopState& s) -> std::optional<FinishReason> {
                for (int id : eos_ids)
                    if (!s.generated.empty() && s.generated.back() == id) return FinishReason::Eos;
                return std::nullopt;
            }};
}

StoppingCriterion stop_string_criterion() {
    return {"stop_string", [](const StopState& s) -> std::optional<FinishReason> {
                if (s.stream.matched_stop()) return FinishReason::StopString;
                return std::nullopt;
            }};
}

// [ch06:make-text-stream]
std::unique_ptr<TextStream> make_text_stream(const GenerationConfig& config) {
    if (config.stop.empty()) return std::make_unique<PlainTextStream>();
    return std::make_unique<StopStringStream>(config.stop, config.include_stop_str_in_output, config.stop_match);
}
// [/ch06:make-text-stream]

StoppingCriteria stopping_criteria(const GenerationConfig& config, const std::vector<int>& eos_ids) {
    StoppingCriteria criteria;
    if (!config.stop.empty()) criteria.push_back(stop_string_criterion());
    if (!eos_ids.empty()) criteria.push_back(eos_criterion(eos_ids));
    if (config.constraint) criteria.push_back(dead_end_criterion(config.constraint));  // chapter 09
    criteria.push_back(max_new_tokens_criterion(config.max_new_tokens));
    return criteria;
}

}  // namespace decodebook
