// Chapter 02: the general decode loop.
#include "decodebook/decoding/generate.hpp"

#include <chrono>
#include <memory>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/sampling/sampling.hpp"
#include "generate_checked.hpp"

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
    check_knob_ids(config, mc.vocab_size);  // every id a bias or suppression names is in the vocabulary
    if (!constraint_kind(config).empty() && !config.constraint) {  // a constraint is never ignored
        throw Error("a " + constraint_kind(config) + " constraint is set but was not built for this tokenizer",
                    "call bind_to_tokenizer(config, tokenizer, eos_ids) (decoding/bind.hpp), or set config.constraint = "
                    "make_constraint(config, tokenizer.vocabulary(), eos_ids) (decoding/constraint.hpp), before generating");
    }
    return eos_ids;
}

NextLogits naive_logits(const Gpt2& model) {
    // forward the whole sequence (T, V) and keep the row that scores the next token (V)
    return [&model](const std::vector<int>& sequence) { return last_position_logits(model.forward(sequence)); };
}

GenerationState::GenerationState(const ModelConfig& model, const Tokenizer* tok, std::span<const int> prompt_ids,
                                 const GenerationConfig& config, const std::vector<int>& eos)
    : tokenizer(tok), vocab_size(model.vocab_size), prompt(prompt_ids), eos_ids(eos),
      criteria(stopping_criteria(config, eos)), stream(make_text_stream(config)),
      skip_special_tokens(config.skip_special_tokens) {}

DecodeContext GenerationState::context() const {
    return DecodeContext{prompt, out.ids, static_cast<int>(out.ids.size()), eos_ids};
}

// [ch02:append-token]
std::optional<FinishReason> append_token(GenerationState& s, int token, const xt::xtensor<float, 1>& logits, double ms,
                                         const StepObserver& on_step) {
    if (token < 0 || token >= s.vocab_size) {
        throw Error("the sampler returned token id " + std::to_string(token) + ", outside the vocabulary",
                    "a sampler must return an index into the logits it was given");
    }
    Generation& out = s.out;
    const int step = static_cast<int>(out.ids.size());
    out.ids.push_back(token);
    const size_t t = static_cast<size_t>(token);
    StepRecord record{step, static_cast<int>(s.prompt.size() + out.ids.size()) - 1, token, logits(t), softmax(logits)(t), ms,
                      s.tokenizer ? s.stream->push(s.tokenizer->text_bytes(token, s.skip_special_tokens)) : std::string()};
    out.text += record.text;
    std::optional<FinishReason> reason;
    for (const StoppingCriterion& c : s.criteria) {
        if ((reason = c.check({out.ids, out.text, *s.stream}))) {
            out.stopped_by = c.name;
            break;
        }
    }
    if (reason) {  // the end: release what the stream held back (a cut-off character -> U+FFFD)
        const std::string tail = s.stream->flush();
        record.text += tail;
        out.text += tail;
    }
    out.steps.push_back(record);
    if (on_step && on_step(record) == StepAction::Stop && !reason) {
        reason = FinishReason::Callback;
        out.stopped_by = "callback";
        out.text += s.stream->flush();
    }
    if (reason) {
        out.finish_reason = *reason;
        out.matched_stop = s.stream->matched_stop().value_or("");
    }
    return reason;
}
// [/ch02:append-token]

namespace detail {

// [ch02:generate]
Generation generate_checked(const NextLogits& next, const ModelConfig& mc, const Tokenizer& tokenizer,
                            const std::vector<int>& prompt, const GenerationConfig& config,
                            const std::vector<int>& eos_ids, const Sampler& sample, const StepObserver& on_step) {
    GenerationState state(mc, &tokenizer, prompt, config, eos_ids);
    std::vector<int> sequence = prompt;  // prompt + new tokens: what the model reads
    for (;;) {
        const auto start = std::chrono::steady_clock::now();
        // 1. the model's scores for the token after `sequence` (V): chapter 00's forward, or the cache
        const xt::xtensor<float, 1> logits = next(sequence);
        // 2. the sampler chooses, seeing the prompt, the tokens so far and the step
        const int token = sample(logits, state.context());
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        // 3. append it: record, stream, stopping criteria, on_step
        const std::optional<FinishReason> reason = append_token(state, token, logits, ms, on_step);
        if (reason) return std::move(state.out);
        sequence.push_back(token);
    }
}
// [/ch02:generate]

}  // namespace detail

Generation generate(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<int>& prompt,
                    const GenerationConfig& config, const Sampler& sample, const StepObserver& on_step) {
    return generate(naive_logits(model), model.config(), tokenizer, prompt, config, sample, on_step);
}

Generation generate(const NextLogits& next, const ModelConfig& mc, const Tokenizer& tokenizer,
                    const std::vector<int>& prompt, const GenerationConfig& config, const Sampler& sample,
                    const StepObserver& on_step) {
    const std::vector<int> eos_ids = check_request(mc, prompt, config);  // the entrance: checked once
    return detail::generate_checked(next, mc, tokenizer, prompt, config, eos_ids, sample, on_step);
}

}  // namespace decodebook
