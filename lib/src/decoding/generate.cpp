// Chapter 02: the general decode loop.
#include "decodebook/decoding/generate.hpp"

#include <chrono>
#include <memory>

#include "decodebook/base/error.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

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
