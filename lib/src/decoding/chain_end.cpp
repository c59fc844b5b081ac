// Chapters 02 and 10: the chain's end. Argmax and the inverse-CDF draw hold nothing; mirostat
// holds mu, so each sampler clones its own.
#include "decodebook/decoding/chain_end.hpp"

#include "decodebook/sampling/other_samplers.hpp"
#include "decodebook/sampling/sampling.hpp"

namespace decodebook {
namespace {

// A stateless end's record of a pick: the token's probability in the processed softmax and its
// slice [from, to) of that CDF in candidate_order, as a fraction of the total (when sampling, the
// token is chosen iff from <= coin < to).
Draw cdf_draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, double coin, int token, bool greedy) {
    const xt::xtensor<float, 1> processed = softmax(z);
    const size_t t = static_cast<size_t>(token);
    Draw d{coin, token, processed(t), softmax(raw)(t), 0, 0, greedy};
    double total = 0, before = 0;
    const std::vector<int> order = candidate_order(processed);
    for (int id : order) total += processed(static_cast<size_t>(id));
    for (int id : order) {
        if (id == token) break;
        before += processed(static_cast<size_t>(id));
    }
    d.from = before / total;
    d.to = (before + processed(t)) / total;
    return d;
}

// Greedy: the argmax of the processed logits (ties: the lowest id); the coin is not used.
class ArgmaxEnd final : public ChainEnd {
public:
    std::string name() const override { return "argmax"; }
    bool greedy() const override { return true; }
    int pick(const xt::xtensor<float, 1>& z, double) override { return argmax(z); }
    Draw draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, double coin) override {
        return cdf_draw(z, raw, coin, argmax(z), true);
    }
    std::unique_ptr<ChainEnd> clone() const override { return std::make_unique<ArgmaxEnd>(); }
};

// Sampling: inverse CDF over the processed softmax with the step's coin.
class SampleEnd final : public ChainEnd {
public:
    std::string name() const override { return "sample"; }
    int pick(const xt::xtensor<float, 1>& z, double coin) override { return sample_inverse_cdf(softmax(z), coin); }
    Draw draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, double coin) override {
        return cdf_draw(z, raw, coin, pick(z, coin), false);
    }
    std::unique_ptr<ChainEnd> clone() const override { return std::make_unique<SampleEnd>(); }
};

// llama.cpp's mirostat (v1, m = 100 as common_sampler_init passes it) and mirostat 2.0: each
// step draws from a truncation mu decides, then moves mu toward tau. mu starts at 2 tau.
class MirostatEnd final : public ChainEnd {
public:
    MirostatEnd(int version, double tau, double eta) : version_(version), tau_(tau), eta_(eta), mu_(2.0 * tau) {}
    std::string name() const override {
        return "mirostat" + std::string(version_ == 2 ? "_v2" : "") + "(tau=" + knob_number(tau_) +
               ", eta=" + knob_number(eta_) + ")";
    }
    bool stateful() const override { return true; }
    std::string state_rule() const override { return "mirostat truncates by its mu, which each drawn token moves"; }
    int pick(const xt::xtensor<float, 1>& z, double coin) override { return step(z, mu_, coin); }
    Draw draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, double coin) override;
    void reset() override { mu_ = 2.0 * tau_; }
    std::unique_ptr<ChainEnd> clone() const override { return std::make_unique<MirostatEnd>(*this); }

private:
    int step(const xt::xtensor<float, 1>& z, double& mu, double coin) const {
        return version_ == 1 ? mirostat_v1_step(z, tau_, eta_, 100, mu, coin) : mirostat_v2_step(z, tau_, eta_, mu, coin);
    }
    int version_;
    double tau_, eta_;
    double mu_;  // the state: the surprise above which tokens are cut
};

// One mirostat step, recorded (--show-steps). The step is a pure function of the logits, mu and
// the coin: so the drawn token's slice [from, to) of the truncation's CDF is the set of coins that
// draw it with the same mu, found by bisecting on the coin, and its width is the token's
// probability in the truncation (`processed`). Then the real step moves mu.
Draw MirostatEnd::draw(const xt::xtensor<float, 1>& z, const xt::xtensor<float, 1>& raw, double coin) {
    const auto token_at = [&](double c) {
        double probe = mu_;  // mu stays as it is
        return step(z, probe, c);
    };
    const int token = token_at(coin);
    double lo = 0, hi = coin;  // the first coin that draws `token` is in (lo, hi]
    if (token_at(0) == token) hi = 0;
    for (int i = 0; i < 52 && hi > 0; ++i) {
        const double mid = (lo + hi) / 2;
        (token_at(mid) == token ? hi : lo) = mid;
    }
    const double from = hi;
    lo = coin;
    hi = 1;  // the first coin past `token`'s slice is in (lo, hi]
    for (int i = 0; i < 52; ++i) {
        const double mid = (lo + hi) / 2;
        (token_at(mid) == token ? lo : hi) = mid;
    }
    const double to = hi;
    const int drawn = step(z, mu_, coin);
    return Draw{coin, drawn, static_cast<float>(to - from), softmax(raw)(static_cast<size_t>(drawn)), from, to, false};
}

}  // namespace

std::unique_ptr<ChainEnd> make_chain_end(const GenerationConfig& config) {
    if (config.mirostat != 0) return std::make_unique<MirostatEnd>(config.mirostat, config.mirostat_tau, config.mirostat_eta);
    if (!config.do_sample) return std::make_unique<ArgmaxEnd>();
    // llama.cpp's temp_ext at temperature 0 with a range > 0 divides by a temperature in [0, range]
    const bool dynamic = config.order == ChainOrder::LlamaCpp && config.dynatemp_range > 0.0f;
    if (config.temperature == 0.0f && !dynamic) return std::make_unique<ArgmaxEnd>();
    return std::make_unique<SampleEnd>();
}

bool runs_warpers(const GenerationConfig& config) {
    return !make_chain_end(config)->greedy() || (config.do_sample && config.order == ChainOrder::LlamaCpp);
}

bool ends_in_state(const GenerationConfig& config) { return make_chain_end(config)->stateful(); }

}  // namespace decodebook
