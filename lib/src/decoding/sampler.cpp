// Chapters 02-06: the processor chain, and the samplers built on it.
#include "decodebook/decoding/sampler.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <string_view>

#include "decodebook/base/error.hpp"
#include "decodebook/base/rng.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

bool nothing_left(const xt::xtensor<float, 1>& z) {
    for (float v : z)
        if (v != -INFINITY) return false;
    return true;
}

// A processor's name as an error shows it. A name that lists its ids (suppress_tokens of a whole
// vocabulary: 9 KB, twice in one message; not a constraint's regex) becomes the processor and how many it lists:
// "suppress_tokens(2048 ids)", "logit_bias(2048 entries)".
std::string short_name(const std::string& name) {
    constexpr size_t kLongest = 80;
    const size_t open = name.find('(');
    if (name.size() <= kLongest || open == std::string::npos || name.back() != ')') return name;
    const std::string_view inside = std::string_view(name).substr(open + 1, name.size() - open - 2);
    if (inside.find_first_not_of("0123456789 ,:-+.einf") != std::string_view::npos) return name;  // not a list of ids
    const bool entries = inside.find(", ") != std::string_view::npos;  // "id:bias, id:bias" or "id id id"
    size_t count = 1;
    for (size_t at = 0; (at = inside.find(entries ? ", " : " ", at)) != std::string_view::npos; ++at) ++count;
    return name.substr(0, open) + "(" + std::to_string(count) + (entries ? " entries)" : " ids)");
}

}  // namespace

// [ch02:chain]
LogitsChain::LogitsChain(const GenerationConfig& p, std::vector<Processor> first, const StageTable& stages)
    : processors_(std::move(first)), first_(processors_.size()) {
    validate(p, stages);
    end_ = make_chain_end(p);
    if (p.constraint) {  // the constraint's mask heads the chain, before the caller's own
        processors_.insert(processors_.begin(), constraint_mask(p.constraint));
        ++first_;
    }
    if (p.dry_multiplier > 0 && p.dry_penalty_last_n != 0 && !p.dry_sequence_breakers.empty() && !p.dry_breaker_ids) {
        // DRY's breakers are text: it never runs without them bound to the tokenizer in use
        throw Error("DRY is on with dry_sequence_breakers " + find_knob("dry_sequence_breakers").get(p) + " that were not bound to a tokenizer",
                    "call bind_to_tokenizer(config, tokenizer, eos_ids) (decoding/bind.hpp) before decoding, or "
                    "set config.dry_breaker_ids");
    }
    // HF's and vLLM's greedy end takes the argmax after the processors; llama.cpp's runs them all
    for (Processor& proc : stages.processors(p, runs_warpers(p))) processors_.push_back(std::move(proc));
}
// [/ch02:chain]

xt::xtensor<float, 1> LogitsChain::apply(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const {
    xt::xtensor<float, 1> z = logits;
    if (nothing_left(z)) {
        throw Error("the model's logits are all -inf at step " + std::to_string(context.step),
                    "check the model's weights (a NaN or -inf in them spreads to every logit)");
    }
    for (size_t i = 0; i < processors_.size(); ++i) {
        processors_[i].apply(z, context);
        if (!nothing_left(z)) continue;
        // A dead end, caught before a later processor fails on it: name the processor that removed
        // the last tokens, with the fix that fits it (never "loosen top-p" for a constraint).
        const std::string name = short_name(processors_[i].name);
        const std::string problem = "no token is left after " + name + " at step " + std::to_string(context.step);
        if (i < first_) {
            throw Error(problem, "the constraint '" + name + "' allows no token here: it must allow at least one "
                                 "token (EOS where the text may end) in every state it can reach");
        }
        std::string before;
        for (size_t j = 0; j < i; ++j) before += (before.empty() ? "" : ", ") + short_name(processors_[j].name);
        throw Error(problem + (before.empty() ? "" : " (after " + before + ")"),
                    "'" + name + "' removed the last tokens" + (before.empty() ? "" : " the processors before it left") +
                        ": loosen it" + (before.empty() ? "" : " or what runs before it"));
    }
    return z;
}

namespace {
// The distribution of processed logits z: their softmax, or when greedy all the mass on the argmax.
xt::xtensor<float, 1> distribution_of(const xt::xtensor<float, 1>& z, bool greedy) {
    if (!greedy) return softmax(z);
    xt::xtensor<float, 1> one_hot = xt::zeros<float>(z.shape());
    one_hot(static_cast<size_t>(argmax(z))) = 1.0f;
    return one_hot;
}
}  // namespace

// A stateful end (mirostat) draws from a distribution its state decides, and the state moves with
// every token it draws: a const chain, which holds none, cannot say what it would draw from.
void LogitsChain::refuse_stateful(const std::string& what, const std::string& fix) const {
    if (!end_->stateful()) return;
    throw Error(what + " is not defined for a chain that ends in " + end_->name() + ": " + end_->state_rule(),
                fix + " (it keeps mu), or drop --mirostat");
}

xt::xtensor<float, 1> LogitsChain::distribution(const xt::xtensor<float, 1>& logits, const DecodeContext& context) const {
    refuse_stateful("the distribution of the next token", "decode with make_sampler");
    return distribution_of(apply(logits, context), end_->greedy());
}

int LogitsChain::choose(const xt::xtensor<float, 1>& distribution, double coin) const {
    refuse_stateful("choosing from a distribution", "decode with make_sampler");
    if (end_->greedy()) return argmax(distribution);
    return sample_inverse_cdf(distribution, coin);
}

int LogitsChain::pick(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
    return choose(distribution(logits, context), coin);
}

Draw LogitsChain::draw(const xt::xtensor<float, 1>& logits, const DecodeContext& context, double coin) const {
    refuse_stateful("where the coin fell", "record the steps with make_watched_sampler");
    return end_->draw(apply(logits, context), logits, coin);  // the chain runs once; a stateless end
}

std::string LogitsChain::describe() const {
    std::string s;
    for (const Processor& p : processors_) s += p.name + " -> ";
    return s + end_->name();
}

int greedy(const xt::xtensor<float, 1>& logits, const DecodeContext&) { return argmax(logits); }

// [ch02:make-sampler]
Sampler make_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>* seen,
                     std::vector<Processor> first) {
    auto chain = std::make_shared<const LogitsChain>(config, std::move(first));
    auto rng = std::make_shared<Rng>(seed);
    std::shared_ptr<ChainEnd> end = chain->end().clone();  // this sampler's own: mirostat's mu lives in it
    return [chain, rng, end, seen](const xt::xtensor<float, 1>& logits, const DecodeContext& context) {
        const double coin = rng->coin();  // one coin per step, used or not: coin i decides token i
        const xt::xtensor<float, 1> z = chain->apply(logits, context);
        if (!seen) return end->pick(z, coin);
        seen->push_back(end->draw(z, logits, coin));  // --show-steps: where the coin fell
        return seen->back().token;
    };
}
// [/ch02:make-sampler]

Sampler make_watched_sampler(const GenerationConfig& config, uint64_t seed, std::vector<Draw>& seen) {
    return make_sampler(config, seed, &seen);
}

}  // namespace decodebook
