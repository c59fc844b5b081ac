// Chapter 02: the general decode loop, its samplers and its stopping criteria.
#include "decodebook/decoding/generate.hpp"

#include <chrono>
#include <memory>

#include "decodebook/base/error.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "decodebook/decoding/stop_strings.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext&) { return argmax(logits); }

// [ch02:make-sampler]
Sampler make_sampler(const GenerationConfig& config, uint64_t seed) {
    auto chain = std::make_shared<const LogitsChain>(config);
    auto rng = std::make_shared<Rng>(seed);
    return [chain, rng](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
        const double coin = rng->coin();  // one coin per step, used or not: coin i decides token i
        return chain->pick(logits, context, coin);
    };
}
// [/ch02:make-sampler]

std::string to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::Length: return "length";
        case FinishReason::Eos: return "eos";
        case FinishReason::StopString: return "stop_string";
        case FinishReason::Callback: return "callback";
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
    criteria.push_back(max_new_tokens_criterion(config.max_new_tokens));
    return criteria;
}

StepObserver print_text_to(std::ostream& out) {
    return [&out](const StepRecord& record) {
        out << record.text << std::flush;
        return StepAction::Continue;
    };
}

std::vector<int> check_request(const ModelConfig& mc, const std::vector<int>& prompt, const GenerationConfig& config) {
    validate(config);
    check_generation_request(mc, prompt, {config.max_new_tokens, -1});
    const std::vector<int> eos_ids = resolve_eos_ids(config, mc.eos_token_id);
    for (int id : eos_ids) {
        if (id >= mc.vocab_size) {
            throw Error("eos_token_id " + std::to_string(id) + " is outside the vocabulary (0.." +
                            std::to_string(mc.vocab_size - 1) + ")",
                        "pass --eos-token-id with this model's ids, or model");
        }
    }
    return eos_ids;
}

NextLogits naive_logits(const Gpt2& model) {
    // forward the whole sequence (T, V) and keep the row that scores the next token (V)
    return [&model](const std::vector<int>& sequence) { return last_position_logits(model.forward(sequence)); };
}

Generation generate(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                    const GenerationConfig& config, const Sampler& sample, const StepObserver& on_step) {
    return generate(naive_logits(model), model.config(), tokenizer, prompt, config, sample, on_step);
}

// [ch02:generate]
Generation generate(const NextLogits& next, const ModelConfig& mc, const Tokenizer& tokenizer,
                    const std::vector<int>& prompt, const GenerationConfig& config, const Sampler& sample,
                    const StepObserver& on_step) {
    const std::vector<int> eos_ids = check_request(mc, prompt, config);
    const StoppingCriteria criteria = stopping_criteria(config, eos_ids);

    Generation out;
    std::vector<int> sequence = prompt;  // prompt + new tokens: what the model reads
    const std::unique_ptr<TextStream> stream = make_text_stream(config);  // bytes in, printable text out
    for (int step = 0;; ++step) {
        const auto start = std::chrono::steady_clock::now();
        // the model's scores for the token after `sequence` (V): chapter 00's forward, or the cache
        const xt::xtensor<float, 1> logits = next(sequence);
        const int token = sample(logits, DecodeContext{prompt, out.ids, step, eos_ids});
        if (token < 0 || token >= mc.vocab_size) {
            throw Error("the sampler returned token id " + std::to_string(token) + ", outside the vocabulary",
                        "a sampler must return an index into the logits it was given");
        }
        const auto end = std::chrono::steady_clock::now();
        sequence.push_back(token);
        out.ids.push_back(token);

        StepRecord record{step, static_cast<int>(sequence.size()) - 1, token, logits(static_cast<size_t>(token)),
                          softmax(logits)(static_cast<size_t>(token)),
                          std::chrono::duration<double, std::milli>(end - start).count(),
                          stream->push(tokenizer.token_bytes(token))};
        out.text += record.text;
        std::optional<FinishReason> reason;
        for (const StoppingCriterion& c : criteria) {
            if ((reason = c.check({out.ids, out.text, *stream}))) {
                out.stopped_by = c.name;
                break;
            }
        }
        if (reason) {  // the end: release what the stream held back (a cut-off character -> U+FFFD)
            const std::string tail = stream->flush();
            record.text += tail;
            out.text += tail;
        }
        out.steps.push_back(record);
        if (on_step && on_step(record) == StepAction::Stop && !reason) {
            reason = FinishReason::Callback;
            out.stopped_by = "callback";
            out.text += stream->flush();
        }
        if (reason) {
            out.finish_reason = *reason;
            out.matched_stop = stream->matched_stop().value_or("");
            return out;
        }
    }
}
// [/ch02:generate]

}  // namespace decodebook
