// GPT-2's forward pass (chapter 00): logits against the independent reference, input checks,
// and the loader on a model of GPT-2 small's exact shape.
#include <catch2/catch.hpp>

#include <cmath>

#include "decodebook/base/error.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/model/gpt2.hpp"
#include "golden.hpp"

using namespace decodebook;

TEST_CASE("logits match the independent reference within tolerance", "[model][reference]") {
    const Gpt2 model = Gpt2::load(golden::model_dir());
    const nlohmann::json g = golden::load("logits.json");
    REQUIRE(g["cases"].size() >= 3);
    for (const auto& c : g["cases"]) {
        const std::vector<int> ids = c["prompt_ids"].get<std::vector<int>>();
        const double tol = c["tolerance"].get<double>();
        const xt::xtensor<float, 2> logits = model.forward(ids);
        REQUIRE(logits.shape(0) == ids.size());
        REQUIRE(logits.shape(1) == static_cast<size_t>(model.config().vocab_size));
        const auto& positions = c["positions"];
        for (size_t k = 0; k < positions.size(); ++k) {
            const size_t pos = positions[k].get<size_t>();
            const std::vector<double> expected = c["logits"][k].get<std::vector<double>>();
            REQUIRE(expected.size() == logits.shape(1));
            double worst = 0;
            size_t worst_id = 0;
            for (size_t v = 0; v < expected.size(); ++v) {
                const double diff = std::abs(static_cast<double>(logits(pos, v)) - expected[v]);
                if (diff > worst) { worst = diff; worst_id = v; }
            }
            INFO("case '" << c["name"].get<std::string>() << "' position " << pos << ": largest difference " << worst
                          << " at id " << worst_id << " (expected " << expected[worst_id] << ", found "
                          << logits(pos, worst_id) << ")");
            CHECK(worst <= tol);
        }
    }
}

TEST_CASE("forward rejects empty too-long and out-of-vocabulary inputs", "[model][errors]") {
    const Gpt2 model = Gpt2::load(golden::model_dir());
    const int V = model.config().vocab_size, P = model.config().n_positions;
    REQUIRE_THROWS_WITH(model.forward({}), Catch::Contains("no tokens"));
    REQUIRE_THROWS_WITH(model.forward(std::vector<int>(static_cast<size_t>(P) + 1, 0)),
                        Catch::Contains("context holds " + std::to_string(P)));
    REQUIRE_THROWS_WITH(model.forward({1, V}), Catch::Contains("token id " + std::to_string(V) + " at position 1"));
    REQUIRE_THROWS_WITH(model.forward({-3}), Catch::Contains("outside the vocabulary"));
    CHECK(model.forward(std::vector<int>(static_cast<size_t>(P), 0)).shape(0) == static_cast<size_t>(P));
}

TEST_CASE("missing and mis-shaped tensors are named", "[model][errors]") {
    ModelConfig c;
    c.vocab_size = 10; c.n_positions = 8; c.n_embd = 4; c.n_layer = 1; c.n_head = 2; c.eos_token_id = 9;
    TensorMap t = random_gpt2_tensors(c, 1);
    CHECK_NOTHROW(Gpt2::from_tensors(c, t));
    TensorMap missing = t;
    missing.erase("h.0.mlp.c_fc.bias");
    REQUIRE_THROWS_WITH(Gpt2::from_tensors(c, missing), Catch::Contains("no tensor 'h.0.mlp.c_fc.bias'"));
    TensorMap wrong = t;
    wrong["h.0.attn.c_attn.weight"] = xt::zeros<float>({12, 4});  // transposed: nn.Linear orientation
    REQUIRE_THROWS_WITH(Gpt2::from_tensors(c, wrong),
                        Catch::Contains("'h.0.attn.c_attn.weight' has shape (12, 4)") && Catch::Contains("(4, 12)"));
}

TEST_CASE("a tiny model's forward pass equals a hand computation", "[model]") {
    // One layer whose blocks add nothing (all projection weights 0): logits = LN_f(wte[id] + wpe[t]) . wte
    ModelConfig c;
    c.vocab_size = 3; c.n_positions = 2; c.n_embd = 2; c.n_layer = 1; c.n_head = 1; c.eos_token_id = 2;
    TensorMap t = random_gpt2_tensors(c, 7);
    for (auto& [name, value] : t)
        if (name.find("c_attn.weight") != std::string::npos || name.find("c_proj.weight") != std::string::npos ||
            name.find("c_fc.weight") != std::string::npos)
            value.fill(0.0f);
    t["wte.weight"] = xt::xarray<float>{{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};
    t["wpe.weight"] = xt::xarray<float>{{0.0f, 0.0f}, {2.0f, 0.0f}};
    const Gpt2 m = Gpt2::from_tensors(c, t);
    const xt::xtensor<float, 2> z = m.forward({0, 1});
    // position 0: x = (1, 0) -> LayerNorm -> (1, -1) (times 1/sqrt(1+eps)); logits = (1, -1, 0)
    // position 1: x = (0, 1) + (2, 0) = (2, 1) -> LayerNorm -> (1, -1); logits = (1, -1, 0)
    const float s = 0.5f / std::sqrt(0.25f + 1e-5f);  // (x - mean) / sqrt(var + eps), var = 0.25
    for (size_t p = 0; p < 2; ++p) {
        CHECK(z(p, 0) == Approx(s).epsilon(1e-6));
        CHECK(z(p, 1) == Approx(-s).epsilon(1e-6));
        CHECK(z(p, 2) == Approx(0.0f).margin(1e-6));
    }
}

TEST_CASE("the loader handles a GPT-2 small shaped model with HF's extra tensors", "[model][gpt2-small]") {
    golden::TempDir dir;
    const ModelConfig c = gpt2_small_config();
    const TensorMap t = random_gpt2_tensors(c, 2024);
    // HF's own files may prefix names with "transformer." and hold tensors decodebook ignores
    TensorMap renamed;
    for (const auto& [name, value] : t) renamed.emplace("transformer." + name, value);
    renamed.emplace("transformer.h.0.attn.bias", xt::zeros<float>({1, 1, 4, 4}));
    save_safetensors(dir.file("model.safetensors"), renamed, DType::F16);
    save_config(dir.file("config.json"), c);

    const Gpt2 m = Gpt2::load(dir.path.string());
    CHECK(m.config().n_layer == 12);
    CHECK(m.config().vocab_size == 50257);
    const std::vector<int> ids{464, 1266, 835, 284, 50256};
    const xt::xtensor<float, 2> z = m.forward(ids);
    REQUIRE(z.shape(0) == 5);
    REQUIRE(z.shape(1) == 50257);
    bool finite = true;
    for (float v : z) finite = finite && std::isfinite(v);
    CHECK(finite);
    // Same weights in float32, built in memory: the file's only change is fp16 rounding.
    const Gpt2 exact = Gpt2::from_tensors(c, t);
    const xt::xtensor<float, 2> z32 = exact.forward(ids);
    double worst = 0;
    for (size_t i = 0; i < z.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(z.data()[i] - z32.data()[i])));
    INFO("largest fp16-vs-fp32 logit difference " << worst);
    CHECK(worst < 0.05);
    CHECK(worst > 0.0);  // the file really was read (fp16 rounding shows)
}
