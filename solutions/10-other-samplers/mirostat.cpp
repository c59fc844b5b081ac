// Solution 10.3 - One step of mirostat 2.0.                        Chapter 10: other samplers
// llama.cpp's llama_sampler_mirostat_v2_apply (ggml-org/llama.cpp src/llama-sampler.cpp, commit
// 00efb3e184262872916bf136b3df63c1822a19bd): cut where -log2 p > mu (at least one token),
// renormalise, draw, mu -= eta * (-log2 p(chosen) - tau).
#include <cmath>
#include <string>

#include "decodebook/exercises.hpp"

namespace decodebook {

int your_mirostat_v2_step(const xt::xtensor<float, 1>& logits, double tau, double eta, double& mu, double coin) {
    if (!(tau > 0.0)) throw Error("mirostat tau " + std::to_string(tau) + " is not > 0", "pass a target surprise tau > 0 (bits)");
    if (!(eta > 0.0)) throw Error("mirostat eta " + std::to_string(eta) + " is not > 0", "pass a learning rate eta > 0");
    if (!(coin >= 0.0 && coin < 1.0))
        throw Error("coin " + std::to_string(coin) + " is outside [0, 1)", "draw the coin with Rng::coin");
    const xt::xtensor<float, 1> p = softmax(logits);  // (V)
    const std::vector<int> order = candidate_order(p);
    xt::xtensor<float, 1> kept = xt::zeros<float>({p.size()});  // (V) the cut, unnormalised
    double total = 0.0;
    for (int id : order) {
        const double pi = p(static_cast<size_t>(id));
        if (-std::log2(pi) > mu && id != order.front()) break;  // surprise grows along the order
        kept(static_cast<size_t>(id)) = p(static_cast<size_t>(id));
        total += pi;
    }
    const int token = sample_inverse_cdf(kept, coin);  // normalises by the kept mass
    const double q = kept(static_cast<size_t>(token)) / total;
    mu -= eta * (-std::log2(q) - tau);
    return token;
}

}  // namespace decodebook
