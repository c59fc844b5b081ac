// Chapter 07: the kernels' versions per CPU target (issue 24). Every target this processor runs
// must give the same bits as the best one: the golden prompts' logits (prefill and decode, one and
// two threads, a batch of one row and of five) and each kernel alone on odd shapes. No value here
// is computed by hand: each target is checked against the best target's output, and the best
// target against double-precision loops and the float64 reference in test_kv_cache.cpp, so every
// target is held to those through bit identity.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::KernelTarget;
using golden::Threads;

namespace {

// How many floats of a and b differ in their bits (0 when a and b are bit-identical).
size_t bits_differ(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return std::max(a.size(), b.size());
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return n;
}

void append(std::vector<float>& to, const float* p, size_t n) { to.insert(to.end(), p, p + n); }

// The golden prompts (tests/data/greedy.json) through the model on the target in use: each prompt
// alone (prefill's logits, then kSteps decode steps along its golden greedy ids), and the first
// five as one batch of five rows (BatchKernels::Invariant); every logit in one vector.
constexpr size_t kSteps = 4, kBatch = 5;
struct GoldenRun {
    std::vector<float> alone;    // per prompt: prefill's last position, then each decode step
    std::vector<float> batched;  // per step: the five rows' logits
    std::vector<float> alone_decode_of_first_five;  // the decode steps of the first five prompts alone
};

// Prefill on `prefill_threads`, decode on `decode_threads` (two threads may split a prefill's
// GEMM differently from one; decode's sums never change order).
GoldenRun golden_logits(int prefill_threads, int decode_threads) {
    const nlohmann::json g = golden::load("greedy.json");
    const ModelConfig& mc = model().config();
    const size_t V = static_cast<size_t>(mc.vocab_size);
    GoldenRun run;
    std::vector<std::vector<int>> prompts, next;
    for (const auto& c : g["cases"]) {
        prompts.push_back(c["prompt_ids"].get<std::vector<int>>());
        next.push_back(c["ids"].get<std::vector<int>>());
        REQUIRE(next.back().size() >= kSteps);
    }
    REQUIRE(prompts.size() >= kBatch);
    for (size_t p = 0; p < prompts.size(); ++p) {
        KvCache cache(mc, 1, prompts[p].size() + kSteps);
        set_num_threads(prefill_threads);
        const xt::xtensor<float, 1> first = model().prefill(prompts[p], cache, 0);
        append(run.alone, first.data(), V);
        set_num_threads(decode_threads);
        for (size_t s = 0; s < kSteps; ++s) {
            model().decode({next[p][s]}, {0}, cache, BatchKernels::Invariant);
            append(run.alone, cache.logits().data(), V);
            if (p < kBatch) append(run.alone_decode_of_first_five, cache.logits().data(), V);
        }
    }
    size_t longest = 0;
    for (size_t p = 0; p < kBatch; ++p) longest = std::max(longest, prompts[p].size());
    KvCache batch(mc, kBatch, longest + kSteps);
    set_num_threads(prefill_threads);
    for (size_t p = 0; p < kBatch; ++p) model().prefill(prompts[p], batch, p);
    set_num_threads(decode_threads);
    for (size_t s = 0; s < kSteps; ++s) {
        std::vector<int> tokens;
        for (size_t p = 0; p < kBatch; ++p) tokens.push_back(next[p][s]);
        model().decode(tokens, {0, 1, 2, 3, 4}, batch, BatchKernels::Invariant);
        append(run.batched, batch.logits().data(), kBatch * V);
    }
    set_num_threads(1);
    return run;
}

// The batch's logits regrouped as the alone runs hold them: per prompt, per step.
std::vector<float> batch_by_prompt(const std::vector<float>& batched, size_t V) {
    std::vector<float> out;
    for (size_t p = 0; p < kBatch; ++p)
        for (size_t s = 0; s < kSteps; ++s) append(out, batched.data() + (s * kBatch + p) * V, V);
    return out;
}

std::vector<float> random_floats(size_t n, std::mt19937& gen) {
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> v(n);
    for (float& e : v) e = u(gen);
    return v;
}

// Each public kernel alone on shapes that leave tails everywhere (n % 16 != 0, odd row ranges,
// in % 4 != 0, head sizes that are not multiples of 64 or 8), on 1, 2 and 3 threads; every output
// in one vector.
std::vector<float> kernels_on_odd_shapes() {
    std::mt19937 gen(2024);
    std::vector<float> all;
    // matvec, W held (out, in): in % 16 != 0 and in a multiple of 16, out odd and even (odd row
    // ranges on every thread count); batches of 1, 2, 3, 5 and 9 rows (every remainder of the
    // blocks of rows); with a bias (the blocks) and without (the lm_head); in = 2801: one row of
    // x reads four weight rows at a time on AVX2 and AVX-512 and two on the default target
    for (const auto& [out, in] : {std::pair<size_t, size_t>{53, 37}, {97, 771}, {200, 64}, {1001, 100}, {9, 16}, {59, 2801}}) {
        const std::vector<float> W = random_floats(in * out, gen), bias = random_floats(out, gen);
        for (const size_t B : {1, 2, 3, 5, 9}) {
            const std::vector<float> x = random_floats(B * in, gen);
            for (const int threads : {1, 2, 3}) {
                Threads t(threads);
                std::vector<float> y(B * out);
                matvec(x.data(), B, W.data(), bias.data(), out, in, y.data());
                append(all, y.data(), y.size());
                matvec(x.data(), B, W.data(), nullptr, out, in, y.data());
                append(all, y.data(), y.size());
            }
        }
    }
    // attention: head sizes 64 (no tail), 72 (tails), 40 (a tail of 8 in the weighted sum), 12
    // (not a multiple of 8); lengths around the groups of four
    for (const size_t D : {64, 72, 40, 12}) {
        const size_t H = 3, C = H * D, stride = C + 5;
        for (const size_t length : {1, 3, 4, 5, 9, 37}) {
            const std::vector<float> q = random_floats(C, gen), keys = random_floats(length * stride, gen),
                                     values = random_floats(length * stride, gen);
            std::vector<float> scores(length), out(C);
            attend(q.data(), keys.data(), values.data(), length, stride, C, static_cast<int>(H), scores.data(),
                   out.data());
            append(all, out.data(), C);
        }
    }
    // GELU over n % 16 != 0 values, wide enough to reach both branches and the cap at 100
    std::vector<float> g = random_floats(1003, gen);
    for (float& v : g) v *= 12;
    gelu_in_place(g.data(), g.size());
    append(all, g.data(), g.size());
    return all;
}

}  // namespace

TEST_CASE("set_kernel_target switches to each target this processor runs and refuses others by name", "[kernels][targets]") {
    const std::vector<std::string> supported = kernel_targets_supported();
    REQUIRE(!supported.empty());
    CHECK(supported.back() == "x86-64");  // every x86-64 processor runs the default
    std::string listed;
    for (const std::string& name : supported) listed += name + " ";
    INFO("targets this processor runs: " << listed);
    const std::string best = kernel_target();
    for (const std::string& name : supported) {
        KernelTarget t(name);
        CHECK(kernel_target().rfind(name + " (", 0) == 0);  // "x86-64-v3 (AVX2, FMA)" for "x86-64-v3"
    }
    CHECK(kernel_target() == best);  // the guard put the best one back
    for (const std::string bad : {"avx2", "", "x86-64-v5", "X86-64-V3"}) {
        INFO("asked for '" << bad << "'");
        CHECK_THROWS_AS(set_kernel_target(bad), Error);
        CHECK_THROWS_WITH(set_kernel_target(bad), Catch::Contains("unknown kernel target '" + std::string(bad) + "'"));
        for (const std::string& name : supported) CHECK_THROWS_WITH(set_kernel_target(bad), Catch::Contains(name));
        CHECK(kernel_target() == best);  // a refusal changes nothing
    }
    // a target this build compiles but this processor does not run (none on an AVX-512 machine)
    for (const std::string known : {"x86-64-v4", "x86-64-v3"}) {
        if (std::find(supported.begin(), supported.end(), known) != supported.end()) continue;
        INFO("asked for '" << known << "'");
        CHECK_THROWS_WITH(set_kernel_target(known), Catch::Contains("'" + std::string(known) + "'") &&
                                                        Catch::Contains(supported.front()));
    }
}

TEST_CASE("every kernel target gives the golden prompts' logits bit for bit", "[kernels][targets]") {
    const std::vector<std::string> supported = kernel_targets_supported();
    if (supported.size() == 1) WARN("this processor runs one kernel target only: nothing to compare across targets");
    const size_t V = static_cast<size_t>(model().config().vocab_size);
    for (const int threads : {1, 2}) {
        GoldenRun best;
        for (const std::string& name : supported) {
            KernelTarget target(name);
            const GoldenRun run = golden_logits(threads, threads);
            INFO("target " << name << " (" << kernel_target() << "), " << threads << " thread(s)");
            // within the target: a row gets the same bits alone and in a batch of five
            CHECK(bits_differ(batch_by_prompt(run.batched, V), run.alone_decode_of_first_five) == 0);
            if (name == supported.front()) {
                best = run;
                continue;
            }
            // against the best target: prefill's and decode's logits, alone and in the batch
            INFO("against " << supported.front());
            CHECK(run.alone.size() == best.alone.size());
            CHECK(bits_differ(run.alone, best.alone) == 0);
            CHECK(bits_differ(run.batched, best.batched) == 0);
        }
    }
}

TEST_CASE("decode gives the same bits on one thread and on two on every kernel target", "[kernels][targets]") {
    const size_t V = static_cast<size_t>(model().config().vocab_size);
    for (const std::string& name : kernel_targets_supported()) {
        KernelTarget target(name);
        const GoldenRun one = golden_logits(1, 1), two = golden_logits(1, 2);
        INFO("target " << name);
        CHECK(bits_differ(one.batched, two.batched) == 0);
        CHECK(bits_differ(one.alone_decode_of_first_five, two.alone_decode_of_first_five) == 0);
        CHECK(one.batched.size() == kSteps * kBatch * V);
    }
}

TEST_CASE("each kernel alone gives the same bits on every target on odd shapes", "[kernels][targets]") {
    const std::vector<std::string> supported = kernel_targets_supported();
    std::vector<float> best;
    for (const std::string& name : supported) {
        KernelTarget target(name);
        const std::vector<float> out = kernels_on_odd_shapes();
        INFO("target " << name << " against " << supported.front());
        CHECK(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
        if (name == supported.front()) best = out;
        else CHECK(bits_differ(out, best) == 0);
    }
}
