// Chapter 07: the KV cache. Hand-computed cases for the formula, the reorder and one attention
// step; the cached model against the independent float64 reference (tests/data/logits.json) and
// against chapter 00's forward, token for token on every golden prompt; batches and beams.
#include <sys/mman.h>  // mincore: is an address still mapped

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>
#include <tuple>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/model/safetensors.hpp"
#include "decodebook/model/weights.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::KernelTarget;
using golden::Threads;
using golden::tokenizer;

namespace {

float max_abs_diff(const float* a, const float* b, size_t n) {
    float worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

// AddressSanitizer builds keep every weight in operator new's memory, so ASan checks it. The
// sanitizer job compiles the test files themselves without ASan and defines
// DECODEBOOK_LIBRARY_SANITIZED for them (CMakeLists.txt).
#if defined(__SANITIZE_ADDRESS__) || defined(DECODEBOOK_LIBRARY_SANITIZED)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

TEST_CASE("kv_cache_bytes is 2 x layers x positions x width x bytes x rows", "[kv]") {
    // GPT-2 124M: 12 layers, 1024 positions, 768 wide, float32
    CHECK(kv_cache_bytes(12, 1024, 768, 4) == 75497472u);
    // a 7B model (32 layers, 4096 wide) at 8192 tokens in bf16: 4 GiB
    CHECK(kv_cache_bytes(32, 8192, 4096, 2) == 4294967296u);
    CHECK(kv_cache_bytes(2, 3, 5, 7, 11) == 2u * 2 * 3 * 5 * 7 * 11);
    CHECK(kv_cache_bytes(0, 3, 5, 7) == 0u);
    CHECK(kv_cache_bytes(1LL << 40, 1LL << 40, 0, 8) == 0u);  // zero, though the other counts overflow
    CHECK_THROWS_AS(kv_cache_bytes(-1, 3, 5, 7), Error);
    CHECK_THROWS_AS(kv_cache_bytes(12, 0, -768, 4), Error);  // a negative count is refused after a 0 too
    CHECK_THROWS_AS(kv_cache_bytes(1LL << 40, 1LL << 20, 1 << 10, 8), Error);  // 2^74: overflows
}

TEST_CASE("reorder_rows reads every source before writing", "[kv]") {
    // row r holds the value 10 r + position everywhere
    const auto make = [] {
        xt::xtensor<float, 3> t = xt::zeros<float>({3, 2, 2});
        for (size_t r = 0; r < 3; ++r)
            for (size_t p = 0; p < 2; ++p)
                for (size_t c = 0; c < 2; ++c) t(r, p, c) = static_cast<float>(10 * r + p);
        return t;
    };
    const auto row_of = [](const xt::xtensor<float, 3>& t, size_t r) { return static_cast<int>(t(r, 0, 0)) / 10; };
    for (const std::vector<int>& source : {std::vector<int>{1, 0, 2}, {0, 0, 1}, {2, 2, 2}, {2, 0, 1}, {0, 1, 2}}) {
        xt::xtensor<float, 3> t = make();
        reorder_rows(t, source);
        for (size_t r = 0; r < 3; ++r) {
            INFO("source " << golden::join(source) << ", row " << r);
            CHECK(row_of(t, r) == source[r]);
            CHECK(t(r, 1, 1) == static_cast<float>(10 * source[r] + 1));
        }
    }
    xt::xtensor<float, 3> t = make();
    CHECK_THROWS_AS(reorder_rows(t, {0, 1}), Error);
    CHECK_THROWS_AS(reorder_rows(t, {0, 1, 3}), Error);
}

TEST_CASE("one cached attention step by hand", "[kv]") {
    // C = 2, one head: position 0 holds k0 = (1, 0), v0 = (1, 2); the new token brings
    // q = (1, 0), k1 = (0, 0), v1 = (3, 4). scores: q.k0 / sqrt(2) = 0.70711, q.k1 = 0;
    // softmax: p0 = e^0.70711 / (e^0.70711 + 1) = 0.66974, p1 = 0.33026;
    // out = 0.66974 (1, 2) + 0.33026 (3, 4) = (1.66052, 2.66052).
    xt::xtensor<float, 2> keys = xt::zeros<float>({3, 2}), values = xt::zeros<float>({3, 2});
    keys(0, 0) = 1;
    values(0, 0) = 1;
    values(0, 1) = 2;
    const xt::xtensor<float, 1> qkv = {1, 0, 0, 0, 3, 4};
    const xt::xtensor<float, 1> out = cached_attention_step(keys, values, 1, qkv, 1);
    CHECK(out(0) == Approx(1.66052).margin(1e-4));
    CHECK(out(1) == Approx(2.66052).margin(1e-4));
    CHECK(keys(1, 0) == 0);
    CHECK(values(1, 0) == 3);
    CHECK(values(1, 1) == 4);
    // two heads of width 1 see only their own column: head 0 as above but D = 1 (scale 1);
    // head 1's query is 0, so its weights are uniform: (2 + 4) / 2 = 3
    xt::xtensor<float, 2> k2 = xt::zeros<float>({2, 2}), v2 = xt::zeros<float>({2, 2});
    k2(0, 0) = 1;
    v2(0, 0) = 1;
    v2(0, 1) = 2;
    const xt::xtensor<float, 1> two = cached_attention_step(k2, v2, 1, qkv, 2);
    const double p0 = std::exp(1.0) / (std::exp(1.0) + 1.0);
    CHECK(two(0) == Approx(p0 * 1 + (1 - p0) * 3).margin(1e-5));
    CHECK(two(1) == Approx(3.0).margin(1e-5));
    CHECK_THROWS_AS(cached_attention_step(keys, values, 3, qkv, 1), Error);
}

TEST_CASE("the matvec kernel equals a double-precision loop on odd shapes", "[kv][kernels]") {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> u(-1, 1);
    // W held (out, in): in % 16 != 0 (a tail in every dot product), out odd (an odd row range);
    // three rows of x, and one row of rows too long for x and two of them to share L1 (read four
    // rows at a time, kernels/dots.hpp; 59 % 4 = 3 rows left over). A float sum of n products of
    // values in [-1, 1] is within about n x 2^-24 of the exact one.
    for (const auto& [in, out, B] : {std::tuple<size_t, size_t, size_t>{37, 53, 3}, {2801, 59, 1}}) {
        std::vector<float> x(B * in), W(out * in), bias(out);
        for (std::vector<float>* v : {&x, &W, &bias})
            for (float& e : *v) e = u(gen);
        std::vector<float> y(B * out), y0(B * out);
        matvec(x.data(), B, W.data(), bias.data(), out, in, y.data());
        matvec(x.data(), B, W.data(), nullptr, out, in, y0.data());  // the lm_head's form: no bias
        const double margin = std::max(1e-5, in * 0x1p-24);
        for (size_t b = 0; b < B; ++b)
            for (size_t j = 0; j < out; ++j) {
                double want = 0;
                for (size_t i = 0; i < in; ++i) want += static_cast<double>(x[b * in + i]) * W[j * in + i];
                INFO("in " << in << " row " << j);
                CHECK(y0[b * out + j] == Approx(want).margin(margin));
                CHECK(y[b * out + j] == Approx(want + bias[j]).margin(margin));
            }
    }
}

TEST_CASE("the matvec gives a row the same bits alone and in batches of 1 to 9 rows on 1 to 3 threads", "[kv][kernels]") {
    // a batch takes its rows of x a few at a time (4 on AVX-512 and AVX2, 2 on SSE2) and the last
    // ones in smaller blocks: every size up to 9 meets every remainder on every target. One row
    // alone reads two weight rows at a time, or four when x and two rows do not fit in L1
    // together (in = 2801 in float32; kernels/dots.hpp), with 1 to 3 rows left over on 1 to 3 threads
    std::mt19937 gen(11);
    std::uniform_real_distribution<float> u(-1, 1);
    for (const auto& [out, in] : {std::pair<size_t, size_t>{53, 37}, {64, 768}, {7, 16}, {59, 2801}}) {
        const size_t most = 9;
        std::vector<float> x(most * in), W(out * in), bias(out);
        for (std::vector<float>* v : {&x, &W, &bias})
            for (float& e : *v) e = u(gen);
        for (const std::string& target : kernel_targets_supported()) {
            KernelTarget use(target);
            std::vector<float> alone(most * out);
            for (size_t b = 0; b < most; ++b) matvec(x.data() + b * in, 1, W.data(), bias.data(), out, in, alone.data() + b * out);
            for (size_t B = 1; B <= most; ++B)
                for (const int threads : {1, 2, 3}) {
                    Threads t(threads);
                    std::vector<float> y(B * out);
                    matvec(x.data(), B, W.data(), bias.data(), out, in, y.data());
                    INFO("target " << target << " out " << out << " in " << in << " B " << B << " threads " << threads);
                    CHECK(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)) == 0);
                }
        }
    }
}

TEST_CASE("the attention kernel equals a double-precision loop for every head size and length", "[kv][kernels]") {
    // head sizes: 64 (scores four positions at a time, the weighted sum in registers), 72 (both
    // with a tail), 12 (neither: not a multiple of 8); lengths around the groups of four
    std::mt19937 gen(11);
    std::uniform_real_distribution<float> u(-2, 2);
    for (const size_t D : {64, 72, 12}) {
        const size_t H = 3, C = H * D, stride = C + 5;  // rows further apart than C, as in a cache row
        for (const size_t length : {1, 3, 4, 5, 8, 9, 37}) {
            std::vector<float> q(C), keys(length * stride), values(length * stride), scores(length), out(C);
            for (std::vector<float>* v : {&q, &keys, &values})
                for (float& e : *v) e = u(gen);
            attend(q.data(), keys.data(), values.data(), length, stride, C, static_cast<int>(H), scores.data(),
                   out.data());
            for (size_t h = 0; h < H; ++h) {
                std::vector<double> p(length);
                double max = -INFINITY, sum = 0;
                for (size_t s = 0; s < length; ++s) {
                    for (size_t d = 0; d < D; ++d) p[s] += static_cast<double>(q[h * D + d]) * keys[s * stride + h * D + d];
                    p[s] /= std::sqrt(static_cast<double>(D));
                    max = std::max(max, p[s]);
                }
                for (double& v : p) sum += v = std::exp(v - max);
                for (size_t d = 0; d < D; ++d) {
                    double want = 0;
                    for (size_t s = 0; s < length; ++s) want += p[s] / sum * values[s * stride + h * D + d];
                    INFO("D = " << D << ", length = " << length << ", head " << h << ", output " << d);
                    CHECK(out[h * D + d] == Approx(want).margin(1e-5));
                }
            }
        }
    }
}

TEST_CASE("decode's attention read position by position gives the bits of attend head by head", "[kv][kernels]") {
    // attend_rows reads each row's cache position by position (every head at once), attend head by
    // head: each (head, position) is summed the same way, so the outputs must be the same bits, for
    // every head size (64, 72 with tails, 12 not a multiple of 8), rows of different lengths
    // (around the groups of four positions), 1 to 3 threads (heads split among them), every target
    std::mt19937 gen(13);
    std::uniform_real_distribution<float> u(-2, 2);
    for (const size_t D : {64, 72, 12}) {
        const size_t H = 5, C = H * D, B = 4, most = 37;
        const size_t lengths[B] = {1, 4, 9, most};
        std::vector<float> q(B * 3 * C), cache(B * 2 * most * C);
        for (std::vector<float>* v : {&q, &cache})
            for (float& e : *v) e = u(gen);
        std::vector<const float*> keys(B), values(B);
        for (size_t b = 0; b < B; ++b) {
            keys[b] = cache.data() + b * 2 * most * C;
            values[b] = keys[b] + most * C;
        }
        for (const std::string& target : kernel_targets_supported()) {
            KernelTarget use(target);
            std::vector<float> want(B * C), scores(most);
            for (size_t b = 0; b < B; ++b)
                attend(q.data() + b * 3 * C, keys[b], values[b], lengths[b], C, C, static_cast<int>(H), scores.data(),
                       want.data() + b * C);
            for (const int threads : {1, 2, 3}) {
                Threads t(threads);
                std::vector<float> out(B * C), row_scores(B * H * most);
                attend_rows(q.data(), 3 * C, B, keys.data(), values.data(), lengths, C, static_cast<int>(H),
                            row_scores.data(), most, out.data());
                INFO("target " << target << " D " << D << " threads " << threads);
                CHECK(std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) == 0);
            }
        }
    }
}

TEST_CASE("cached prefill and decode equal the independent float64 reference logits", "[kv]") {
    const nlohmann::json file = golden::load("logits.json");
    REQUIRE(file["cases"].size() >= 2);
    const size_t V = static_cast<size_t>(model().config().vocab_size);
    for (const auto& c : file["cases"]) {
        const std::vector<int> ids = c["prompt_ids"].get<std::vector<int>>();
        const double tolerance = c["tolerance"].get<double>();
        INFO("case " << c["name"].get<std::string>() << " (tests/data/logits.json; regenerate: "
                     << file["regenerate"].get<std::string>() << ")");
        // position p's logits: prefill the first half in one pass, decode the rest one by one
        KvCache cache(model().config(), 1, ids.size());
        const size_t half = std::max<size_t>(1, ids.size() / 2);
        std::vector<xt::xtensor<float, 1>> at(ids.size());
        at[half - 1] = model().prefill(std::vector<int>(ids.begin(), ids.begin() + static_cast<long>(half)), cache);
        for (size_t p = half; p < ids.size(); ++p) {
            model().decode({ids[p]}, {0}, cache);
            at[p] = xt::xtensor<float, 1>(xt::view(cache.logits(), 0, xt::all()));
        }
        const auto& positions = c["positions"];
        int compared = 0;
        for (size_t k = 0; k < positions.size(); ++k) {
            const size_t p = positions[k].get<size_t>();
            if (at[p].size() != V) continue;  // inside the prefilled half: only its last position is returned
            const std::vector<float> want = c["logits"][k].get<std::vector<float>>();
            INFO("position " << p);
            CHECK(max_abs_diff(at[p].data(), want.data(), V) <= tolerance);
            ++compared;
        }
        CHECK(compared >= 1);
    }
}

TEST_CASE("cached greedy equals the naive loop token for token on every golden prompt", "[kv]") {
    const nlohmann::json g = golden::load("greedy.json");
    REQUIRE(g["cases"].size() >= 10);
    for (const auto& c : g["cases"]) {
        const std::vector<int> prompt = c["prompt_ids"].get<std::vector<int>>();
        const std::vector<int> expected = c["ids"].get<std::vector<int>>();
        INFO("case '" << c["name"].get<std::string>() << "' (tests/data/greedy.json)");
        GenerationConfig config;
        config.max_new_tokens = c["max_new_tokens"].get<int>();
        // every step: the cached logits against chapter 00's forward of the whole sequence
        float worst = 0;
        const Sampler compare = [&](const xt::xtensor<float, 1>& logits, const DecodeContext& ctx) {
            std::vector<int> sequence(ctx.prompt.begin(), ctx.prompt.end());
            sequence.insert(sequence.end(), ctx.generated.begin(), ctx.generated.end());
            const xt::xtensor<float, 1> naive = last_position_logits(model().forward(sequence));
            worst = std::max(worst, max_abs_diff(logits.data(), naive.data(), naive.size()));
            return greedy(logits, ctx);
        };
        const Generation cached = generate_cached(model(), tokenizer(), prompt, config, compare);
        INFO("expected: " << golden::join(expected) << "\nfound:    " << golden::join(cached.ids));
        CHECK(cached.ids == expected);
        CHECK(worst <= 1e-4f);
    }
}

TEST_CASE("a batch of prompts gives each prompt the tokens it gets alone", "[kv][batch]") {
    const nlohmann::json g = golden::load("greedy.json");
    std::vector<std::vector<int>> prompts, expected;
    for (const auto& c : g["cases"]) {  // every golden prompt: enough rows for Fast to start on GEMM
        prompts.push_back(c["prompt_ids"].get<std::vector<int>>());
        expected.push_back(c["ids"].get<std::vector<int>>());
    }
    GenerationConfig config;
    config.max_new_tokens = 0;
    for (const auto& c : g["cases"]) config.max_new_tokens = std::max(config.max_new_tokens, c["max_new_tokens"].get<int>());
    const std::vector<Sampler> samplers(prompts.size(), greedy);
    for (BatchKernels kernels : {BatchKernels::Fast, BatchKernels::Invariant}) {
        BatchStats stats;
        const std::vector<Generation> out = generate_batch(model(), &tokenizer(), prompts, config, samplers, kernels, &stats);
        REQUIRE(out.size() == prompts.size());
        long tokens_after_prefill = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
            // the golden ran to its own max_new_tokens: compare that prefix (EOS ends both)
            const std::vector<int> prefix(out[i].ids.begin(),
                                          out[i].ids.begin() + static_cast<long>(std::min(out[i].ids.size(), expected[i].size())));
            INFO("prompt " << i << (kernels == BatchKernels::Fast ? " (fast kernels)" : " (invariant kernels)"));
            CHECK(prefix == expected[i]);
            tokens_after_prefill += static_cast<long>(out[i].ids.size()) - 1;
        }
        // finished rows leave the batch: only the rows still going are computed
        CHECK(stats.decoded_tokens == tokens_after_prefill);
        CHECK(std::is_sorted(stats.active_per_step.rbegin(), stats.active_per_step.rend()));
        // both of Fast's kernels ran: GEMM while kGemmFromRows rows or more were going, then the matvec
        REQUIRE(!stats.active_per_step.empty());
        CHECK(stats.active_per_step.front() >= static_cast<int>(kGemmFromRows));
        CHECK(stats.active_per_step.back() < static_cast<int>(kGemmFromRows));
    }
}

TEST_CASE("invariant kernels give a row the same bits alone and in a batch", "[kv][batch]") {
    const ModelConfig& mc = model().config();
    const std::vector<std::vector<int>> prompts = {tokenizer().encode("The cat"), tokenizer().encode("A fortune:"),
                                                   tokenizer().encode("Q: why")};
    KvCache together(mc, 3, 16), alone(mc, 1, 16);
    for (size_t i = 0; i < 3; ++i) model().prefill(prompts[i], together, i);
    model().prefill(prompts[1], alone, 0);
    const std::vector<int> next = {11, 22, 33};
    for (int step = 0; step < 3; ++step) {
        model().decode(next, {0, 1, 2}, together, BatchKernels::Invariant);
        model().decode({next[1]}, {0}, alone, BatchKernels::Invariant);
        const size_t V = static_cast<size_t>(mc.vocab_size);
        INFO("step " << step);
        CHECK(max_abs_diff(together.logits().data() + V, alone.logits().data(), V) == 0.0f);
    }
}

TEST_CASE("one decode call over a row repeated k+1 times equals k+1 calls bit for bit and truncate rolls back", "[kv][verify]") {
    // Chapter 08's verification: the target decodes [last token, drafts...] of one sequence in one
    // call. Each token must get exactly the logits one call per token gives (the matvec's sums do
    // not depend on the batch, attention reads each token's own prefix), and a row truncated to an
    // earlier length must decode again as if the rest had never been there.
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size);
    const std::vector<int> prompt = tokenizer().encode("The best way to");
    const std::vector<int> next = {262, 995, 11, 290, 257, 1110, 13};  // any ids: the model scores what it is fed
    const size_t k1 = next.size();
    for (const int threads : {1, 2}) {
        Threads scope(threads);
        // one call per token
        KvCache one(mc, 1, 32);
        model().prefill(prompt, one, 0);
        std::vector<std::vector<float>> expected;
        for (int id : next) {
            model().decode({id}, {0}, one, BatchKernels::Invariant);
            expected.emplace_back(one.logits().data(), one.logits().data() + V);
        }
        for (const BatchKernels kernels : {BatchKernels::Invariant, BatchKernels::Fast}) {
            INFO((kernels == BatchKernels::Fast ? "Fast" : "Invariant") << " kernels, " << threads << " thread(s)");
            KvCache all(mc, 1, 32, k1);
            model().prefill(prompt, all, 0);
            model().decode(next, std::vector<size_t>(k1, 0), all, kernels);
            CHECK(all.length(0) == prompt.size() + k1);
            for (size_t i = 0; i < k1; ++i) {
                INFO("token " << i << " of the call");
                CHECK(max_abs_diff(all.logits().data() + i * V, expected[i].data(), V) == 0.0f);
            }
            // reject the last four: roll back, then decode them again (fewer, then the same)
            all.truncate(0, prompt.size() + 3);
            CHECK(all.length(0) == prompt.size() + 3);
            model().decode({next[3], next[4]}, {0, 0}, all, kernels);
            for (size_t i = 0; i < 2; ++i)
                CHECK(max_abs_diff(all.logits().data() + i * V, expected[3 + i].data(), V) == 0.0f);
            all.truncate(0, prompt.size() + 3);
            model().decode({next[3], next[4], next[5], next[6]}, {0, 0, 0, 0}, all, kernels);
            for (size_t i = 0; i < 4; ++i)
                CHECK(max_abs_diff(all.logits().data() + i * V, expected[3 + i].data(), V) == 0.0f);
        }
        // two sequences interleaved in one call: each row's tokens at its own successive positions
        KvCache two(mc, 2, 32, 5);
        model().prefill(prompt, two, 0);
        model().prefill(tokenizer().encode("A fortune:"), two, 1);
        model().decode({next[0], 11, next[1], 22, next[2]}, {0, 1, 0, 1, 0}, two, BatchKernels::Invariant);
        CHECK(two.length(0) == prompt.size() + 3);
        for (size_t i = 0; i < 3; ++i)
            CHECK(max_abs_diff(two.logits().data() + 2 * i * V, expected[i].data(), V) == 0.0f);
    }
}

TEST_CASE("a CachedSequence appends k tokens as one call per token and rolls back to any length", "[kv][verify]") {
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size);
    const std::vector<int> prompt = tokenizer().encode("Q: why");
    const std::vector<int> next = {30, 318, 262, 1766};
    // the general loop's seam, one token per call
    KvCache plain(mc, 1, 16);
    const NextLogits step = cached_logits(model(), plain);
    std::vector<int> sequence = prompt;
    std::vector<xt::xtensor<float, 1>> expected{step(sequence)};
    for (int id : next) {
        sequence.push_back(id);
        expected.push_back(step(sequence));
    }
    KvCache cache(mc, 2, 16, 4);
    model().prefill({1, 2, 3}, cache, 1);  // another sequence in the other row is left alone
    CachedSequence seq(model(), cache, 0);
    CHECK(seq.length() == 0);
    const xt::xtensor<float, 1> first = seq.prefill(prompt);
    CHECK(max_abs_diff(first.data(), expected[0].data(), V) == 0.0f);
    const xt::xtensor<float, 2> rows = seq.append(next);
    REQUIRE(rows.shape(0) == next.size());
    for (size_t i = 0; i < next.size(); ++i) CHECK(max_abs_diff(rows.data() + i * V, expected[i + 1].data(), V) == 0.0f);
    CHECK(seq.tokens() == sequence);
    CHECK(seq.length() == sequence.size());
    seq.truncate(prompt.size() + 1);
    CHECK(seq.tokens() == std::vector<int>(sequence.begin(), sequence.begin() + static_cast<long>(prompt.size()) + 1));
    const xt::xtensor<float, 2> again = seq.append(std::vector<int>{next[1]});
    CHECK(max_abs_diff(again.data(), expected[2].data(), V) == 0.0f);
    CHECK(cache.length(1) == 3);
    CHECK_THROWS_WITH(seq.truncate(seq.length() + 1), Catch::Contains("truncate to at most"));
    CHECK_THROWS_WITH(CachedSequence(model(), cache, 2), Catch::Contains("does not exist"));
    seq.clear();
    CHECK(seq.tokens().empty());
    CHECK_THROWS_WITH(seq.append(next), Catch::Contains("prefill it first"));
}

TEST_CASE("prefill on two threads equals prefill on one", "[kv][batch]") {
    // two threads: each runs the BLAS on its own block of GEMM columns, and attention's heads
    // are shared, each thread with its own scores; the keys, values and logits must not change
    const ModelConfig& mc = model().config();
    const std::vector<int> prompt = tokenizer().encode("The cat sat on the mat, and then a dog came by.");
    KvCache one(mc, 1, 32), two(mc, 1, 32);
    const xt::xtensor<float, 1> alone = model().prefill(prompt, one, 0);
    xt::xtensor<float, 1> shared;
    {
        Threads t(2);
        shared = model().prefill(prompt, two, 0);
    }
    const size_t V = static_cast<size_t>(mc.vocab_size), C = static_cast<size_t>(mc.n_embd);
    CHECK(max_abs_diff(alone.data(), shared.data(), V) <= 1e-5f);
    for (size_t l = 0; l < static_cast<size_t>(mc.n_layer); ++l) {
        INFO("layer " << l);
        CHECK(max_abs_diff(one.keys(l).data(), two.keys(l).data(), prompt.size() * C) <= 1e-5f);
        CHECK(max_abs_diff(one.values(l).data(), two.values(l).data(), prompt.size() * C) <= 1e-5f);
    }
}

TEST_CASE("decode gives the same bits on one thread and on two", "[kv][batch]") {
    // the matvec's halves, the lm_head's rows and attention's (row, head) pairs split among the
    // threads, but no sum changes order
    const ModelConfig& mc = model().config();
    const std::vector<std::vector<int>> prompts = {tokenizer().encode("The cat"), tokenizer().encode("A fortune:")};
    KvCache one(mc, 2, 16), two(mc, 2, 16);
    for (size_t i = 0; i < 2; ++i) {
        model().prefill(prompts[i], one, i);
        model().prefill(prompts[i], two, i);
    }
    const size_t V = static_cast<size_t>(mc.vocab_size);
    for (int step = 0; step < 3; ++step) {
        model().decode({5, 9}, {0, 1}, one, BatchKernels::Invariant);
        {
            Threads t(2);
            model().decode({5, 9}, {0, 1}, two, BatchKernels::Invariant);
        }
        INFO("step " << step);
        CHECK(max_abs_diff(one.logits().data(), two.logits().data(), 2 * V) == 0.0f);
    }
}

TEST_CASE("beam search on the cache returns the reference's beams", "[kv][beam]") {
    const nlohmann::json file = golden::load("beams.json");
    REQUIRE(file["cases"].size() >= 8);
    for (const auto& c : file["cases"]) {
        const GenerationConfig config = golden::config(c);
        const std::vector<Hypothesis> found =
            beam_search_cached(model(), tokenizer(), c["prompt_ids"].get<std::vector<int>>(), config);
        INFO("case " << c["name"].get<std::string>() << " (tests/data/beams.json)");
        REQUIRE(found.size() == c["hypotheses"].size());
        for (size_t i = 0; i < found.size(); ++i) {
            const auto& want = c["hypotheses"][i];
            INFO("hypothesis " << i + 1 << ": expected " << golden::join(want["ids"].get<std::vector<int>>()) << ", found "
                               << golden::join(found[i].ids));
            CHECK(found[i].ids == want["ids"].get<std::vector<int>>());
            CHECK(found[i].sum_logprobs == Approx(want["sum_logprobs"].get<double>()).margin(1e-3));
        }
    }
}

TEST_CASE("the cache refuses what does not fit with a fix", "[kv][errors]") {
    const ModelConfig& mc = model().config();
    CHECK_THROWS_WITH(KvCache(mc, 1, static_cast<size_t>(mc.n_positions) + 1), Catch::Contains("context"));
    CHECK_THROWS_AS(KvCache(mc, 0, 8), Error);
    KvCache cache(mc, 2, 4);
    CHECK_THROWS_WITH(model().decode({1}, {0}, cache), Catch::Contains("prefill it first"));
    model().prefill({1, 2, 3}, cache, 0);
    CHECK_THROWS_WITH(model().prefill({1, 2}, cache, 0), Catch::Contains("do not fit"));
    model().decode({4}, {0}, cache);
    CHECK_THROWS_WITH(model().decode({5}, {0}, cache), Catch::Contains("full"));
    model().prefill({1}, cache, 1);
    // two tokens per call (one per row); row 1 takes three more only with a larger scratch
    CHECK_THROWS_WITH(model().decode({5, 6, 7}, {1, 1, 1}, cache), Catch::Contains("max_tokens_per_step"));
    KvCache wide(mc, 1, 4, 4);
    model().prefill({1}, wide, 0);
    CHECK_THROWS_WITH(model().decode({5, 6, 7, 8}, {0, 0, 0, 0}, wide), Catch::Contains("full"));  // positions 1..4
    CHECK(wide.length(0) == 1);  // refused before anything was written
    CHECK_THROWS_WITH(wide.truncate(0, 2), Catch::Contains("holds 1"));
    CHECK_THROWS_WITH(wide.truncate(1, 0), Catch::Contains("does not exist"));
    CHECK_THROWS_WITH(KvCache(mc, 2, 4, 9), Catch::Contains("max_tokens_per_step"));
    CHECK_THROWS_WITH(model().decode({5}, {2}, cache), Catch::Contains("does not exist"));
    CHECK_THROWS_WITH(model().decode({mc.vocab_size}, {1}, cache), Catch::Contains("outside the vocabulary"));
    CHECK(cache.bytes() == kv_cache_bytes(mc.n_layer, 4, mc.n_embd, 4, 2));
}

TEST_CASE("the cached loops refuse a bad request at their entrance with check_request's message", "[kv][errors]") {
    const ModelConfig& mc = model().config();
    GenerationConfig config;
    config.max_new_tokens = 4;
    const std::vector<int> empty, too_long(static_cast<size_t>(mc.n_positions), 1);
    const Sampler pick = greedy;
    CHECK_THROWS_WITH(generate_cached(model(), tokenizer(), empty, config, pick), Catch::Contains("the prompt is empty"));
    CHECK_THROWS_WITH(generate_cached(model(), tokenizer(), too_long, config, pick), Catch::Contains("max_new_tokens (4)"));
    CHECK_THROWS_WITH(generate_batch(model(), &tokenizer(), {{1, 2}, empty}, config, {pick, pick}),
                      Catch::Contains("the prompt is empty"));
    config.top_p = 2.0f;
    CHECK_THROWS_WITH(generate_cached(model(), tokenizer(), {1, 2}, config, pick), Catch::Contains("top_p = 2"));
    config.top_p = 1.0f;
    config.eos_token_id = std::vector<int>{mc.vocab_size};
    CHECK_THROWS_WITH(beam_search_cached(model(), tokenizer(), {1, 2}, config), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("the vectorised GELU equals the tanh formula in double", "[kv][kernels]") {
    std::vector<float> x;
    for (int i = -4000; i <= 4000; ++i) x.push_back(static_cast<float>(i) / 100.0f);  // -40 .. 40
    x.insert(x.end(), {1e-30f, -1e-30f, 1e4f, -1e4f, 3e12f, -3e12f});
    std::vector<float> y = x;
    gelu_in_place(y.data(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double v = x[i], u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
        const double want = 0.5 * v * (1.0 + std::tanh(u));
        INFO("gelu(" << v << ")");
        CHECK(y[i] == Approx(want).epsilon(2e-6).margin(1e-12));
    }
}

TEST_CASE("weights of 2 MiB or more start on a 2 MiB boundary and hold what is written", "[kv][memory]") {
    // 3 MiB + 5 floats: one whole huge page, then a tail in ordinary pages; and a small tensor
    for (const size_t n : {(size_t{3} << 18) + 5, size_t{1000}}) {
        std::vector<float, WeightAllocator<float>> w(n);
        for (size_t i = 0; i < n; ++i) w[i] = static_cast<float>(i % 977);
        if (n * sizeof(float) >= (size_t{2} << 20) && !kSanitized) {
            CHECK(reinterpret_cast<uintptr_t>(w.data()) % (size_t{2} << 20) == 0);
        }
        size_t wrong = 0;
        for (size_t i = 0; i < n; ++i) wrong += w[i] != static_cast<float>(i % 977);
        CHECK(wrong == 0);
    }
    // the loader's tensors move into a TensorMap (and from there into the model) without a copy
    WeightArray a = WeightArray::from_shape({size_t{1} << 20});
    const float* data = a.data();
    TensorMap m;
    m.emplace("t", std::move(a));
    CHECK(m.at("t").data() == data);
}

// Whether [p, p + bytes) is mapped: mincore fails with ENOMEM on an address nothing maps.
static bool mapped(const void* p, size_t bytes) {
    const uintptr_t page = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
    std::vector<unsigned char> resident((bytes + 4095) / 4096 + 1);
    return mincore(reinterpret_cast<void*>(page), bytes, resident.data()) == 0;
}

// Whether the mapping that holds p was asked for huge pages (madvise MADV_HUGEPAGE: "hg" among
// its VmFlags in /proc/self/smaps), as the weights' mappings are. Once a mapping is given back,
// another thread may map its addresses again at any moment (OpenBLAS's worker, started when the
// library loads, makes its first 128 MiB malloc arena whenever it first runs; on a busy machine
// that fell on the freed addresses in 2 of 400 runs), but never with that flag.
static bool huge_mapping_holds(const void* p) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    std::ifstream smaps("/proc/self/smaps");
    bool holds = false;
    for (std::string line; std::getline(smaps, line);) {
        const size_t dash = line.find('-'), space = line.find(' ');
        if (dash != std::string::npos && space != std::string::npos && dash < space &&
            line.find_first_not_of("0123456789abcdef") == dash) {  // "start-end perms ...": a mapping
            const uintptr_t lo = std::stoull(line.substr(0, dash), nullptr, 16),
                            hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
            holds = lo <= at && at < hi;
        } else if (holds && line.rfind("VmFlags:", 0) == 0) {
            return (line + " ").find(" hg ") != std::string::npos;
        }
    }
    return false;
}

TEST_CASE("matrices transposed into a WeightArena sit one after another and outlive it", "[kv][memory]") {
    // (rows, cols) = (5, 3), (2, 7) float32 and (3, 4) f16, each with values that name their element
    const auto f32 = [](size_t rows, size_t cols, float first) {
        WeightTensor<2> v = WeightTensor<2>::from_shape({rows, cols});
        for (size_t i = 0; i < rows * cols; ++i) v.data()[i] = first + static_cast<float>(i);
        return WeightMatrix(std::move(v));
    };
    HalfVector bits(12);
    for (size_t i = 0; i < 12; ++i) bits[i] = static_cast<uint16_t>(0x3c00 + i);  // 1 + i/1024
    const WeightMatrix a = f32(5, 3, 0), b = f32(2, 7, 100), h(3, 4, bits);
    const void* arena_start = nullptr;
    std::optional<WeightMatrix> ta, tb, th, too_big;
    {
        WeightArena arena(1024);  // room for the three (60 + 56 + 24 bytes, 64-byte aligned), not for 4 KiB
        ta = a.transposed(&arena);
        tb = b.transposed(&arena);
        th = h.transposed(&arena);
        too_big = f32(32, 33, 0).transposed(&arena);  // 4,224 bytes: does not fit, allocated on its own
        arena_start = ta->f32();
    }  // the arena is gone; what was put in it stays until the last matrix goes
    // the transposes, element by element: out (cols, rows)[j, i] = in (rows, cols)[i, j]
    for (size_t i = 0; i < 5; ++i)
        for (size_t j = 0; j < 3; ++j) CHECK(ta->f32()[j * 5 + i] == a.f32()[i * 3 + j]);
    for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 7; ++j) CHECK(tb->f32()[j * 2 + i] == b.f32()[i * 7 + j]);
    for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 4; ++j) CHECK(th->f16()[j * 3 + i] == h.f16()[i * 4 + j]);
    CHECK(too_big->f32()[1 * 32 + 2] == 2 * 33 + 1);
    REQUIRE((ta->rows() == 3 && ta->cols() == 5 && th->dtype() == WeightDtype::F16));
    if (!kSanitized) {  // a sanitizer build allocates every matrix on its own (AddressSanitizer checks each)
        const auto at = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
        CHECK(at(ta->f32()) % (size_t{2} << 20) == 0);     // the mapping starts on a huge page
        CHECK(at(tb->f32()) == at(ta->f32()) + 64);        // 60 bytes, then the next 64-byte boundary
        CHECK(at(th->f16()) == at(tb->f32()) + 64);        // 56 bytes
        CHECK((at(too_big->f32()) < at(ta->f32()) || at(too_big->f32()) >= at(ta->f32()) + (size_t{2} << 20)));
        CHECK(mapped(arena_start, 4096));
        CHECK(huge_mapping_holds(arena_start));
        ta.reset();
        tb.reset();
        CHECK(mapped(arena_start, 4096));  // th still lives there
        CHECK(huge_mapping_holds(arena_start));
        th.reset();
        // the last one gone: the mapping is given back (its addresses unmapped, or mapped again
        // by another thread for something else)
        CHECK_FALSE((mapped(arena_start, 4096) && huge_mapping_holds(arena_start)));
    }
}

namespace {

// The flags of /proc/cpuinfo's first processor (Linux's own reading of CPUID), each between
// spaces; empty where there is no /proc/cpuinfo.
std::string cpuinfo_flags() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
    return "";
}

bool has_all(const std::string& flags, std::initializer_list<const char*> wanted) {
    for (const char* f : wanted)
        if (flags.find(" " + std::string(f) + " ") == std::string::npos) return false;
    return true;
}

}  // namespace

TEST_CASE("the kernels run the best target the processor's features allow", "[kv][kernels]") {
    // issue 24: the roofline and the kernels are judged per target, so the table chosen at start
    // (kernel_target) must be the highest level the processor reaches, and kernel_targets_supported
    // every level it reaches. The levels are the x86-64 psABI's, read here in Linux's flag names:
    // v2 (cx16 lahf_lm popcnt pni = SSE3, sse4_1 sse4_2 ssse3), v3 adds avx avx2 bmi1 bmi2 f16c
    // fma abm (LZCNT) movbe xsave, v4 adds avx512f avx512bw avx512cd avx512dq avx512vl.
    const std::string target = kernel_target();
    const std::vector<std::string> supported = kernel_targets_supported();
#if defined(__clang__)
    CHECK(target == "x86-64 (SSE2)");  // one target under clang (the fuzzing build)
    CHECK(supported == std::vector<std::string>{"x86-64"});
#else
    __builtin_cpu_init();
    const bool v3 = __builtin_cpu_supports("x86-64-v3"), v4 = __builtin_cpu_supports("x86-64-v4");
    const std::string by_gcc = v4 ? "x86-64-v4 (AVX-512)" : v3 ? "x86-64-v3 (AVX2, FMA)" : "x86-64 (SSE2)";
    CHECK(target == by_gcc);
    // a second reading of the features, not GCC's: the kernel's list of them
    const std::string flags = cpuinfo_flags();
    if (!flags.empty()) {
        const bool l2 = has_all(flags, {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"});
        const bool l3 = l2 && has_all(flags, {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"});
        const bool l4 = l3 && has_all(flags, {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
        const std::string by_linux = l4 ? "x86-64-v4 (AVX-512)" : l3 ? "x86-64-v3 (AVX2, FMA)" : "x86-64 (SSE2)";
        INFO("/proc/cpuinfo flags:" << flags);
        CHECK(target == by_linux);
        std::vector<std::string> levels;
        if (l4) levels.push_back("x86-64-v4");
        if (l3) levels.push_back("x86-64-v3");
        levels.push_back("x86-64");
        CHECK(supported == levels);
    }
#endif
}

TEST_CASE("measure_read_bandwidth reads a positive finite rate and refuses bad counts", "[kv]") {
    // 1 MiB + 3 floats: a tail no stream covers (the rate itself is the machine's: only its sign is a fact)
    const double rate = measure_read_bandwidth((size_t{1} << 20) + 12, 2, 1);
    CHECK(std::isfinite(rate));
    CHECK(rate > 0);
    CHECK_THROWS_AS(measure_read_bandwidth(size_t{1} << 20, 0, 1), Error);
    CHECK_THROWS_AS(measure_read_bandwidth(size_t{1} << 20, 1, 0), Error);
    const ReadBandwidthMeter meter((size_t{1} << 20) + 12);  // the same reading from buffers it keeps
    CHECK(meter.measure(1, 1) > 0);
    CHECK(std::isfinite(meter.measure(2, 2)));
    CHECK_THROWS_AS(meter.measure(0, 1), Error);
    CHECK_THROWS_AS(meter.measure(1, 0), Error);
}

TEST_CASE("measurement_disturbed flags ratios outside their physical bounds", "[kv]") {
    const double inf = std::numeric_limits<double>::infinity();
    // issue 23: chapter-07 --threads 2 on a busy machine printed both of these
    CHECK(measurement_disturbed(26.75, 0, 1));      // "2675 % of its roofline"
    CHECK(measurement_disturbed(0.1, 1, inf));      // "the cache is 0.1x faster"
    // quiet measurements, timer noise included
    CHECK_FALSE(measurement_disturbed(0.6, 0, 1));
    CHECK_FALSE(measurement_disturbed(1.05, 0, 1));  // within 10 % of the roofline
    CHECK(measurement_disturbed(1.11, 0, 1));
    CHECK_FALSE(measurement_disturbed(12.0, 1, inf));
    CHECK_FALSE(measurement_disturbed(0.95, 1, inf));  // the cache about as fast: a one-token run
    CHECK(measurement_disturbed(0.85, 1, inf));
    // a ratio that is no number (a 0 ms time) is never printed
    CHECK(measurement_disturbed(inf, 0, 1));
    CHECK(measurement_disturbed(std::nan(""), 1, inf));
}

TEST_CASE("gpt2_decode_bytes counts by hand and as the loaded model does and refuses 64-bit overflow", "[kv]") {
    ModelConfig gpt2 = golden::model().config();
    gpt2.vocab_size = 50257, gpt2.n_embd = 768, gpt2.n_layer = 12;
    CHECK(gpt2_decode_bytes(gpt2, 4) == 494616576u);  // 123,654,144 weights, worked in exercise 07.4's tests
    // the embedded checkpoint held as float32 (by default it stays f16: tests/test_f16.cpp counts that)
    CHECK(gpt2_decode_bytes(golden::model().config(), 4) ==
          Gpt2::load(golden::model_dir(), WeightDtype::F32).decode_weight_bytes());
    CHECK(decode_roofline_ms(gpt2, 2, 1e9) == Approx(247.308288).epsilon(1e-12));
    ModelConfig huge = gpt2;
    huge.n_embd = 2000000000, huge.n_layer = 1000;  // 12 C^2 alone wraps 64 bits
    CHECK_THROWS_AS(gpt2_decode_bytes(huge, 4), Error);
    CHECK_THROWS_AS(decode_roofline_ms(gpt2, 4, 0.0), Error);
}
