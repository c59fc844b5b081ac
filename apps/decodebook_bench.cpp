// decodebook-bench (chapter 07): how fast the cached model decodes on this machine, against the
// fastest this machine's memory allows. Not a test: it prints figures, each with its ratio to
// the roofline measured in the same run, so a noisy machine shows as low ratios, not as failures.
//
//   decodebook-bench [--gpt2-small-dir DIR] [--json FILE] [--naive-tokens 200] [--part all|model|mask] ...
//
// On a GPT-2-124M-shaped model with random weights (written by the library's write_random_gpt2,
// as decodebook-random-model --gpt2-small does, into DIR when it is not there yet):
//   decode tokens/s (128 new tokens) with the weights held in f32, f16, q8_0 and q4_0, on 1 and 2 threads,
//   each beside the machine's read bandwidth
//   measured in the same rounds, and the decode roofline, and matvec's (and of it the MLP
//   projection's, whose long rows read four at a time), the lm_head's and attention's read rates
//   as shares of the plain read, for each kernel target this processor runs
//   (--kernel-target all|NAME); prefill tokens/s of a 128-token prompt with
//   each BLAS library (--blas-list: the linked OpenBLAS, Debian's BLIS); cached vs naive for 200 new
//   tokens; peak memory; then the cached vs naive ratio on the embedded model; then (chapter 08)
//   the cost of one decode call verifying k = 1..8 drafted tokens against one decode step on the
//   GPT-2 124M shape, and the speed-up of speculative decoding on the embedded model; then (chapter
//   11) what recording each token's logprobs costs a sampled run, K = 0, 5 and 20, against none.
// Then (chapter 09, apps/bench_mask.cpp) a constraint's index build time and its token mask's cost
// per decoding step, on the embedded vocabulary and on GPT-2's 50,257 tokens (installed by
// tools/install-deps.sh --bench; --gpt2-vocab DIR). `--part model` or `--part mask` runs one half.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <span>
#include <system_error>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/speculative.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/model/cached_sequence.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"
#include "decodebook/model/weights.hpp"

#include "bench_mask.hpp"

using namespace decodebook;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Peak resident memory of this process so far (bytes).
double peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

// Peak resident memory since the last reset_peak_rss (Linux's VmHWM, bytes), or 0 where it cannot be read.
double peak_rss_since_reset() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;  // "VmHWM:  123 kB"
    return 0;
}

// Start the peak over from what the process holds now (writing 5 to clear_refs, Linux 4.0 on), so
// the f16 model's peak is not the f32 model's before it. False where the kernel refuses.
bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5" << std::flush;
    return static_cast<bool>(clear);
}

int argmax_row(const KvCache& cache, size_t row) {
    const size_t V = cache.logits().shape(1);
    const float* p = cache.logits().data() + row * V;
    return static_cast<int>(std::max_element(p, p + V) - p);
}

// A prompt of n ids spread over the vocabulary (the weights are random: any ids will do).
std::vector<int> prompt_of(const ModelConfig& c, size_t n) {
    std::vector<int> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int>((i * 7919 + 13) % static_cast<size_t>(c.vocab_size));
    return ids;
}

// Greedy decode of `new_tokens` after an 8-token prompt: seconds per decode step, best of `repeats`.
double decode_seconds_per_token(const Gpt2& model, int new_tokens, int repeats) {
    const std::vector<int> prompt = prompt_of(model.config(), 8);
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(new_tokens));
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        cache.clear(0);
        const xt::xtensor<float, 1> first = model.prefill(prompt, cache, 0);
        int token = argmax(first);
        const auto start = Clock::now();
        for (int i = 1; i < new_tokens; ++i) {
            model.decode({token}, {0}, cache);
            token = argmax_row(cache, 0);
        }
        best = std::min(best, seconds_since(start) / (new_tokens - 1));
    }
    return best;
}

// The read rates of decode's three kernels, in bytes per second, on the model's shapes (random
// values make no difference to a kernel's speed): the blocks' matvec over 4 layers' four matrices
// (held (out, in): 3C x C, C x C, 4C x C, C x 4C: more than the caches hold, so each pass reads
// memory as a decode step does; the C x 4C ones also timed alone), the lm_head's matvec over wte
// (V x C), and attention (attend_rows) of one query over 1024 cached positions in each of 12
// layers' keys and values (75 MB). Best of `repeats`
// passes each, on num_threads() threads and the kernel target in use. The buffers are made once
// (as the bandwidth meter's are: freeing memory slows what is timed next, roofline.hpp).
struct KernelRates {
    double matvec = 0, mlp_proj = 0, lm_head = 0, attention = 0;  // mlp_proj: the C x 4C matrices alone
};

class KernelRateMeter {
public:
    // The weights held in `dtype` (WeightMatrix::hold: f32 as is, f16 rounded, q8_0 and q4_0
    // quantized); bytes read count what each matrix holds (WeightMatrix::bytes).
    KernelRateMeter(const ModelConfig& mc, WeightDtype dtype)
        : mc_(mc), C_(static_cast<size_t>(mc.n_embd)), V_(static_cast<size_t>(mc.vocab_size)),
          kv_(kCacheLayers * 2 * kPositions * C_, 0.01f), x_(4 * C_, 0.5f), y_(std::max(4 * C_, V_)),
          scores_(static_cast<size_t>(mc.n_head) * kPositions), out_(C_) {
        const auto held = [&](size_t out, size_t in) {
            WeightTensor<2> v = WeightTensor<2>::from_shape({out, in});
            v.fill(0.01f);
            return WeightMatrix::hold(std::move(v), dtype, "the bench's matrix");
        };
        for (size_t l = 0; l < kLayers; ++l)
            for (const auto& [out, in] : shapes()) blocks_.push_back(held(out, in));
        wte_ = held(V_, C_);
    }

    KernelRates measure(int repeats) {
        KernelRates best;
        for (int r = 0; r < repeats; ++r) {
            auto start = Clock::now();
            double block_bytes = 0, mlp_proj_bytes = 0;
            double mlp_proj_seconds = 0;  // the C x 4C matrices' share of the pass (rows of 4C: kernels/dots.hpp)
            for (const WeightMatrix& w : blocks_) {
                const auto product_start = Clock::now();
                w.matvec(x_.data(), 1, nullptr, y_.data());
                if (w.cols() == 4 * C_) {
                    mlp_proj_seconds += seconds_since(product_start);
                    mlp_proj_bytes += static_cast<double>(w.bytes());
                }
                block_bytes += static_cast<double>(w.bytes());
            }
            best.matvec = std::max(best.matvec, block_bytes / seconds_since(start));
            best.mlp_proj = std::max(best.mlp_proj, mlp_proj_bytes / mlp_proj_seconds);
            start = Clock::now();
            wte_.matvec(x_.data(), 1, nullptr, y_.data());
            best.lm_head = std::max(best.lm_head, static_cast<double>(wte_.bytes()) / seconds_since(start));
            start = Clock::now();
            for (size_t l = 0; l < kCacheLayers; ++l) {
                const float* keys = kv_.data() + l * 2 * kPositions * C_;
                const float* values = keys + kPositions * C_;
                attend_rows(x_.data(), C_, 1, &keys, &values, &kPositions, C_, mc_.n_head, scores_.data(), kPositions,
                            out_.data());
            }
            best.attention = std::max(best.attention, static_cast<double>(kv_.size() * sizeof(float)) / seconds_since(start));
        }
        return best;
    }

private:
    static constexpr size_t kLayers = 4, kCacheLayers = 12;
    static constexpr size_t kPositions = 1024;
    std::vector<std::pair<size_t, size_t>> shapes() const {  // a block's four matrices, (out, in)
        return {{3 * C_, C_}, {C_, C_}, {4 * C_, C_}, {C_, 4 * C_}};
    }
    const ModelConfig& mc_;
    size_t C_, V_;
    std::vector<WeightMatrix> blocks_;
    WeightMatrix wte_;
    std::vector<float, WeightAllocator<float>> kv_;
    std::vector<float> x_, y_, scores_, out_;
};

// Seconds to prefill an n-token prompt, best of `repeats`.
double prefill_seconds(const Gpt2& model, size_t n, int repeats) {
    const std::vector<int> prompt = prompt_of(model.config(), n);
    KvCache cache(model.config(), 1, n);
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        cache.clear(0);
        const auto start = Clock::now();
        model.prefill(prompt, cache, 0);
        best = std::min(best, seconds_since(start));
    }
    return best;
}

// Total seconds of `new_tokens` greedy tokens after an 8-token prompt: chapter 00's loop (whole
// sequence every step) and the cached one (prefill, then one position per step).
std::pair<double, double> naive_and_cached_seconds(const Gpt2& model, int new_tokens) {
    const std::vector<int> prompt = prompt_of(model.config(), 8);
    auto start = Clock::now();
    std::vector<int> sequence = prompt;
    for (int i = 0; i < new_tokens; ++i) sequence.push_back(argmax(last_position_logits(model.forward(sequence))));
    const double naive = seconds_since(start);
    start = Clock::now();
    KvCache cache(model.config(), 1, prompt.size() + static_cast<size_t>(new_tokens));
    std::vector<int> cached = prompt;
    cached.push_back(argmax(model.prefill(prompt, cache, 0)));
    for (int i = 1; i < new_tokens; ++i) {
        model.decode({cached.back()}, {0}, cache);
        cached.push_back(argmax_row(cache, 0));
    }
    const double fast = seconds_since(start);
    if (cached != sequence) std::cout << "  note: the two loops chose different tokens (float rounding near a tie)\n";
    return {naive, fast};
}

// One decode call of k + 1 tokens (a speculative round's verification: the last kept token and
// k drafts, BatchKernels::Invariant) and one of a single token, interleaved at the end of an
// 8-token prompt, the cache cut back after each. Median seconds of each over `repeats` pairs.
std::pair<double, double> step_and_verify_seconds(const Gpt2& model, int k, int repeats) {
    const std::vector<int> prompt = prompt_of(model.config(), 8);
    const std::vector<int> batch = prompt_of(model.config(), static_cast<size_t>(k) + 1);
    KvCache cache(model.config(), 1, prompt.size() + batch.size(), batch.size());
    CachedSequence seq(model, cache, 0, BatchKernels::Invariant);
    seq.prefill(prompt);
    std::vector<double> one, many;
    for (int r = 0; r < repeats; ++r) {
        auto start = Clock::now();
        seq.append(std::span<const int>(batch).first(1));
        one.push_back(seconds_since(start));
        seq.truncate(prompt.size());
        start = Clock::now();
        seq.append(batch);
        many.push_back(seconds_since(start));
        seq.truncate(prompt.size());
    }
    std::sort(one.begin(), one.end());
    std::sort(many.begin(), many.end());
    return {one[one.size() / 2], many[many.size() / 2]};
}

// Greedy on the embedded model: plain cached decoding against speculative decoding with `config`'s
// drafter; tokens/s of each (the fastest of `repeats`) and what speculation did.
struct SpecFigures {
    double plain_tps = 0, spec_tps = 0;
    SpeculativeStats stats;
};
SpecFigures speculative_figures(const Gpt2& target, const Tokenizer& tok, const Gpt2* draft, const GenerationConfig& config,
                                const std::vector<int>& prompt, int repeats) {
    SpecFigures f;
    const std::vector<int> eos = resolve_eos_ids(config, target.config().eos_token_id);
    for (int r = 0; r < repeats; ++r) {
        auto start = Clock::now();
        const Generation plain = generate_cached(target, tok, prompt, config, make_sampler(config, config.seed));
        f.plain_tps = std::max(f.plain_tps, plain.ids.size() / seconds_since(start));
        const Drafter drafter = make_drafter(config, draft, eos, prompt.size() + static_cast<size_t>(config.max_new_tokens));
        start = Clock::now();
        const Generation spec = generate_speculative(target, tok, prompt, config, drafter, &f.stats);
        f.spec_tps = std::max(f.spec_tps, spec.ids.size() / seconds_since(start));
    }
    return f;
}

void row(const char* what, const std::string& value, const std::string& ratio = "") {
    std::printf("  %-44s %-22s %s\n", what, value.c_str(), ratio.c_str());
}

std::string fixed(double v, int digits, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f %s", digits, v, unit);
    return buf;
}

std::string percent_of(double part, double whole, const char* of) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%5.1f %% of %s", 100.0 * part / whole, of);
    return buf;
}

// What measure_model reads from the command line (main checked --kernel-target).
struct ModelOptions {
    int decode_tokens = 0, prefill_tokens = 0, naive_tokens = 0, max_threads = 0, rounds = 0;
    std::vector<std::string> blas_list;
    std::string dir;  // the GPT-2-124M-shaped model's folder
};

ModelOptions read_model_options(const CommandLine& cl) {
    ModelOptions o;
    o.decode_tokens = cl.extra_int("decode-tokens", 2, 1000);
    o.prefill_tokens = cl.extra_int("prefill-tokens", 1, 1000);
    o.naive_tokens = cl.extra_int("naive-tokens", 0, 1000);
    o.max_threads = cl.extra_int("max-threads", 1, 64);
    o.rounds = cl.extra_int("rounds", 1, 20);
    for (size_t a = 0, b; a <= cl.extra.at("blas-list").size(); a = b + 1) {
        b = std::min(cl.extra.at("blas-list").find(',', a), cl.extra.at("blas-list").size());
        if (b > a) o.blas_list.push_back(cl.extra.at("blas-list").substr(a, b - a));
    }
    if (o.blas_list.empty()) throw UsageError("--blas-list is empty", "pass e.g. --blas-list openblas,blis");
    // a name or a path the user gave is refused now, not as a table row after minutes of measuring;
    // only BLIS may be missing (the default list names it: its row says how to install it)
    for (const std::string& name : o.blas_list) {
        if (name == "openblas" || name == "blis") continue;
        try {
            use_blas(name);
        } catch (const Error& e) {
            use_blas("openblas");
            throw UsageError("--blas-list names '" + name + "': " + e.problem(),
                             "pass --blas-list with openblas, blis or paths of CBLAS libraries, comma-separated");
        }
    }
    use_blas("openblas");
    o.dir = cl.extra.at("gpt2-small-dir");
    return o;
}

// The GPT-2-124M-shaped model with random weights, written into `dir` unless it is there (as
// decodebook-random-model --gpt2-small writes it). True when this run wrote it.
bool write_model_if_missing(const std::string& dir) {
    const bool writes_model = !fs::exists(fs::path(dir) / "model.safetensors");
    if (writes_model) {
        std::cout << "writing a GPT-2-124M-shaped model with random weights to " << dir << " (once) ...\n";
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec || !fs::is_directory(dir)) {
            throw Error("cannot make the model folder '" + dir + "': " + (ec ? ec.message() : "not a folder"),
                        "pass --gpt2-small-dir with a folder that can be written (or remove a dangling link)");
        }
        write_random_gpt2(dir, gpt2_small_config(), 1, DType::F16);
    }
    return writes_model;
}

// Peak resident memory of loading, one prefill and a decode run, read before the bandwidth
// measurement allocates its buffer (not the model's memory): the process's whole peak, and the f32
// model's own from a peak reset before them (Linux's clear_refs, where the kernel allows it).
struct Peaks {
    bool resets = false;
    double whole = 0, f32 = 0;
};

Peaks peaks_of_first_runs(const Gpt2& model, const ModelOptions& o) {
    Peaks p;
    p.resets = reset_peak_rss();
    prefill_seconds(model, static_cast<size_t>(o.prefill_tokens), 1);
    decode_seconds_per_token(model, o.decode_tokens, 1);
    p.whole = peak_rss_bytes();
    p.f32 = p.resets ? peak_rss_since_reset() : p.whole;
    return p;
}

// 1. decode on 1..N threads against the roofline, the weights held in f32, f16, q8_0 and q4_0, on
// each kernel target this processor runs (--kernel-target): every weight read once per token,
// at this machine's read bandwidth. Each round measures, target after target, the bandwidth,
// decode on as many threads and the bandwidth again, so decode is held against the machine it
// ran on: a shared host's bandwidth can change between rounds (docs/measurements.md). The figures
// are those of the round with the fastest decode (other work only ever slows a measurement down),
// against the higher of that round's two bandwidth readings. Each dtype's roofline counts the
// bytes it reads (decode_weight_bytes).
struct TargetFigures {
    double decode_tps = 0, bandwidth = 0, bandwidth_highest = 0, matvec = 0, mlp_proj = 0, lm_head = 0, attention = 0;
};
struct DecodeRun {
    WeightDtype dtype;
    double weight_bytes = 0, peak = 0;
    std::vector<std::vector<TargetFigures>> figures;  // [target][threads - 1]
    bool same_logits = true;  // the first step's logits equal the f32 model's, bit for bit
};

// One round on the kernel target set, on `threads` threads: the bandwidth, decode, the bandwidth
// again, and the kernels' read rates. `f` keeps the fastest decode with its round's bandwidth, and
// the highest of every other figure.
void measure_round(const Gpt2& m, int decode_tokens, int threads, const ReadBandwidthMeter& meter,
                   KernelRateMeter& kernel_rates, TargetFigures& f) {
    const double before = meter.measure(threads, 2);
    const double tps = 1.0 / decode_seconds_per_token(m, decode_tokens, 1);
    const double read = std::max(before, meter.measure(threads, 2));
    const KernelRates rates = kernel_rates.measure(3);
    f.matvec = std::max(f.matvec, rates.matvec);
    f.mlp_proj = std::max(f.mlp_proj, rates.mlp_proj);
    f.lm_head = std::max(f.lm_head, rates.lm_head);
    f.attention = std::max(f.attention, rates.attention);
    f.bandwidth_highest = std::max(f.bandwidth_highest, read);
    if (tps > f.decode_tps) {
        f.decode_tps = tps;
        f.bandwidth = read;
    }
}

// Whether the f16-held model's first decode step gives the f32 model's logits bit for bit: the
// checkpoint is F16, so holding it in f16 loses nothing.
bool same_first_logits(const Gpt2& model, const Gpt2& held_f16) {
    const ModelConfig& mc = model.config();
    const std::vector<int> prompt = prompt_of(mc, 8);
    KvCache a(mc, 1, 9), b(mc, 1, 9);
    model.prefill(prompt, a, 0);
    held_f16.prefill(prompt, b, 0);
    model.decode({1}, {0}, a);
    held_f16.decode({1}, {0}, b);
    return std::equal(a.logits().begin(), a.logits().end(), b.logits().begin());
}

// Decode with the weights held in `dtype` (other than f32: a copy loaded from the folder, with its
// own peak memory), `rounds` rounds on each thread count, every target interleaved in each round.
DecodeRun measure_decode(const Gpt2& model, WeightDtype dtype, const ModelOptions& o,
                         const std::vector<std::string>& targets, const Peaks& peaks) {
    std::optional<Gpt2> held;
    if (dtype != WeightDtype::F32) {
        reset_peak_rss();
        held.emplace(Gpt2::load(o.dir, dtype));
        decode_seconds_per_token(*held, o.decode_tokens, 1);
    }
    const Gpt2& m = held ? *held : model;
    DecodeRun run{dtype, static_cast<double>(m.decode_weight_bytes()),
                  held ? (peaks.resets ? peak_rss_since_reset() : 0.0) : peaks.f32, {}, true};
    run.figures.assign(targets.size(), std::vector<TargetFigures>(static_cast<size_t>(o.max_threads)));
    // made after the peak readings (not counted in them) and kept through the rounds: freeing
    // them between readings slows the decode timed next (docs/measurements.md; roofline.hpp,
    // ReadBandwidthMeter)
    const ReadBandwidthMeter meter(size_t{1} << 29);
    KernelRateMeter kernel_rates(model.config(), dtype);
    meter.measure(1, 1);  // one read of each buffer before the first timing
    if (dtype == WeightDtype::F16) run.same_logits = same_first_logits(model, *held);
    for (int t = 1; t <= o.max_threads; ++t) {
        set_num_threads(t);
        for (int r = 0; r < o.rounds; ++r) {
            for (size_t k = 0; k < targets.size(); ++k) {  // the targets interleaved in every round
                set_kernel_target(targets[k]);
                measure_round(m, o.decode_tokens, t, meter, kernel_rates, run.figures[k][static_cast<size_t>(t - 1)]);
            }
        }
    }
    set_num_threads(1);
    return run;
}

// 2. prefill on 1 thread with each BLAS library of --blas-list; the linked OpenBLAS afterwards.
struct PrefillRun {
    std::string blas, description, missing;  // missing: why it could not be loaded
    double tokens_per_s = 0;
};

std::vector<PrefillRun> measure_prefill(const Gpt2& model, const ModelOptions& o) {
    std::vector<PrefillRun> prefill_runs;
    for (const std::string& name : o.blas_list) {
        PrefillRun run{name, "", "", 0};
        try {
            run.description = use_blas(name);
        } catch (const Error& e) {
            const std::string message = e.what();  // "problem\n  fix: ...": the problem fits the table
            run.missing = message.substr(0, message.find('\n'));
            prefill_runs.push_back(run);
            continue;
        }
        run.tokens_per_s = o.prefill_tokens / prefill_seconds(model, static_cast<size_t>(o.prefill_tokens), 3);
        prefill_runs.push_back(run);
    }
    use_blas("openblas");
    return prefill_runs;
}

// The BLAS linked and the kernel targets: what the figures below ran on.
void print_machine() {
    std::cout << "\nmachine\n";
    row("BLAS linked (prefill's GEMM by default)", blas_description());
    std::string supported;
    for (const std::string& name : kernel_targets_supported()) supported += (supported.empty() ? "" : ", ") + name;
    row("kernel targets this processor runs", supported);
    row("kernel target programs run (the best)", kernel_target());
}

// One target's decode figures on `t` threads (`f`) against the roofline and the plain read,
// printed and added to the report.
void print_target_figures(const DecodeRun& run, const TargetFigures& f, const std::string& target, int t,
                          nlohmann::json& report) {
    const std::string d = to_string(run.dtype);
    const std::string threads = std::to_string(t) + " thread(s)";
    const double roof = f.bandwidth / run.weight_bytes;
    row(("read bandwidth, " + threads).c_str(), fixed(f.bandwidth / 1e9, 1, "GB/s"),
        "highest in the run: " + fixed(f.bandwidth_highest / 1e9, 1, "GB/s"));
    row(("roofline (" + d + "), " + threads).c_str(), fixed(roof, 1, "tokens/s"));
    row(("decode (" + d + "), " + threads).c_str(), fixed(f.decode_tps, 1, "tokens/s"),
        percent_of(f.decode_tps, roof, "roofline"));
    if (f.decode_tps > roof)
        std::cout << "  (decode beat its roofline: the host's bandwidth changed during the round; run again)\n";
    row(("  matvec (" + d + ") reads, " + threads).c_str(), fixed(f.matvec / 1e9, 1, "GB/s"),
        percent_of(f.matvec, f.bandwidth_highest, "the plain read"));
    row(("      MLP projection (" + d + "), " + threads).c_str(), fixed(f.mlp_proj / 1e9, 1, "GB/s"),
        percent_of(f.mlp_proj, f.bandwidth_highest, "the plain read"));
    row(("  lm_head (" + d + ") reads, " + threads).c_str(), fixed(f.lm_head / 1e9, 1, "GB/s"),
        percent_of(f.lm_head, f.bandwidth_highest, "the plain read"));
    row(("  attention reads, " + threads).c_str(), fixed(f.attention / 1e9, 1, "GB/s"),
        percent_of(f.attention, f.bandwidth_highest, "the plain read"));
    if (measurement_disturbed(f.matvec / f.bandwidth_highest, 0, 1) ||
        measurement_disturbed(f.mlp_proj / f.bandwidth_highest, 0, 1) ||
        measurement_disturbed(f.lm_head / f.bandwidth_highest, 0, 1) ||
        measurement_disturbed(f.attention / f.bandwidth_highest, 0, 1))
        std::cout << "  (a kernel read faster than the plain read: the host's bandwidth changed between them; run again)\n";
    report["decode"].push_back({{"dtype", d},
                                {"target", target},
                                {"threads", t},
                                {"tokens_per_s", f.decode_tps},
                                {"roofline_tokens_per_s", roof},
                                {"weight_bytes_per_token", run.weight_bytes},
                                {"read_bandwidth_bytes_per_s", f.bandwidth},
                                {"read_bandwidth_highest_bytes_per_s", f.bandwidth_highest},
                                {"matvec_read_bytes_per_s", f.matvec},
                                {"mlp_proj_read_bytes_per_s", f.mlp_proj},
                                {"lm_head_read_bytes_per_s", f.lm_head},
                                {"attention_read_bytes_per_s", f.attention}});
}

// Every dtype's decode runs, target by target (each set while its figures print).
void print_decode(const std::vector<DecodeRun>& runs, const std::vector<std::string>& targets, const ModelOptions& o,
                  nlohmann::json& report) {
    for (const DecodeRun& run : runs) {
        const std::string d = to_string(run.dtype);
        std::cout << "\ndecode, weights in " << d << " (" << o.decode_tokens << " new tokens; roofline = bandwidth / "
                  << fixed(run.weight_bytes / 1e6, 1, "MB") << " read per token; the fastest of " << o.rounds
                  << " rounds, against the bandwidth read just before and after it; each kernel's read\n"
                     "rate against the highest plain read of the run; every kernel target interleaved in each round)\n";
        if (run.dtype == WeightDtype::F16)
            row("logits of the f16-held model", run.same_logits ? "bit-identical" : "DIFFERENT", "to the f32-held model's (the checkpoint is F16)");
        for (size_t k = 0; k < targets.size(); ++k) {
            set_kernel_target(targets[k]);
            std::cout << "kernel target " << kernel_target() << ", weights in " << d << "\n";
            for (int t = 1; t <= o.max_threads; ++t)
                print_target_figures(run, run.figures[k][static_cast<size_t>(t - 1)], targets[k], t, report);
        }
    }
}

// Decode in f16 against f32 and in q8_0 and q4_0 against f16, on each target and thread count,
// beside the bytes each reads.
void print_fewer_bytes(const std::vector<DecodeRun>& runs, const std::vector<std::string>& targets, int max_threads,
                        nlohmann::json& report) {
    std::cout << "\nfewer bytes per weight: f16 against f32, and ggml's q8_0 and q4_0 blocks against f16\n";
    for (size_t k = 0; k < targets.size(); ++k) {
        for (int t = 1; t <= max_threads; ++t) {
            const size_t n = static_cast<size_t>(t - 1);
            const double ratio = runs[1].figures[k][n].decode_tps / runs[0].figures[k][n].decode_tps;
            row(("decode f16 / f32, " + targets[k] + ", " + std::to_string(t) + " thread(s)").c_str(), fixed(ratio, 2, "x"),
                "bytes read: " + fixed(runs[0].weight_bytes / runs[1].weight_bytes, 2, "x fewer"));
            report["f16_over_f32"].push_back({{"target", targets[k]}, {"threads", t}, {"decode_ratio", ratio}});
            for (size_t q = 2; q < runs.size(); ++q) {  // chapter 13's blocks against f16
                const std::string d = to_string(runs[q].dtype);
                const double over_f16 = runs[q].figures[k][n].decode_tps / runs[1].figures[k][n].decode_tps;
                row(("decode " + d + " / f16, " + targets[k] + ", " + std::to_string(t) + " thread(s)").c_str(),
                    fixed(over_f16, 2, "x"), "bytes read: " + fixed(runs[1].weight_bytes / runs[q].weight_bytes, 2, "x fewer"));
                report[d + "_over_f16"].push_back({{"target", targets[k]}, {"threads", t}, {"decode_ratio", over_f16}});
            }
        }
    }
}

// An f32 model (the same shape, random float32 weights) rounded once to f16: what changes.
void print_f16_rounding(const ModelConfig& mc, nlohmann::json& report) {
    const TensorMap random = random_gpt2_tensors(mc, 7);
    const Gpt2 exact = Gpt2::from_tensors(mc, random, WeightDtype::F32);
    const Gpt2 rounded = Gpt2::from_tensors(mc, random, WeightDtype::F16);
    const int steps = 32;
    LogitAgreement total;
    int whole = 0;
    for (size_t p = 0; p < 4; ++p) {
        const std::vector<int> prompt = prompt_of(mc, 4 + 3 * p);
        const LogitAgreement g = compare_greedy_logits(exact, rounded, prompt, steps);
        total.max_diff = std::max(total.max_diff, g.max_diff);
        total.steps += g.steps, total.differ += g.differ;
        whole += g.differ == 0;
    }
    row("f32 model rounded to f16: max |logit error|", fixed(total.max_diff, 6, ""),
        "random f32 weights, 4 prompts x " + std::to_string(steps) + " greedy steps of the f32 model");
    row("  greedy picks unchanged", std::to_string(total.steps - total.differ) + " of " + std::to_string(total.steps),
        std::to_string(whole) + " of 4 prompts keep their whole continuation");
    report["f32_rounded_to_f16"] = {{"max_logit_error", total.max_diff}, {"steps", total.steps},
                                    {"steps_changed", total.differ}, {"prompts_unchanged", whole}};
}

// Prefill per BLAS library against llama.cpp's 480 tokens/s, and against decode on the first
// target measured, 1 thread (`decode_tps`).
void print_prefill(const Gpt2& model, const std::vector<PrefillRun>& prefill_runs, double decode_tps,
                   const std::string& target, int prefill_tokens, nlohmann::json& report) {
    const ModelConfig& mc = model.config();
    const double weight_bytes = static_cast<double>(model.decode_weight_bytes());
    const double prefill_tps = prefill_runs.front().tokens_per_s;  // the first of the list (default: the linked one)
    // 2 flops per weight per prompt token in the blocks; the lm_head (V x C) runs for the last one only
    const double lm_head = static_cast<double>(mc.vocab_size) * mc.n_embd;
    const double prefill_flops = 2.0 * (weight_bytes / sizeof(float) - lm_head) * prefill_tokens + 2.0 * lm_head;
    std::cout << "\nprefill (" << prefill_tokens << "-token prompt, 1 thread; llama.cpp: 480-500 tokens/s)\n";
    for (const PrefillRun& run : prefill_runs) {
        if (!run.missing.empty()) {
            row(("prefill, --blas " + run.blas).c_str(), "not measured", run.missing);
            report["prefill_by_blas"].push_back({{"blas", run.blas}, {"error", run.missing}});
            continue;
        }
        const double gflops = prefill_flops / (prefill_tokens / run.tokens_per_s) / 1e9;
        row(("prefill, --blas " + run.blas).c_str(), fixed(run.tokens_per_s, 1, "tokens/s"),
            fixed(gflops, 1, "GFLOP/s, ") + percent_of(run.tokens_per_s, 480.0, "480"));
        row("", run.description);
        report["prefill_by_blas"].push_back({{"blas", run.blas}, {"description", run.description},
                                             {"tokens_per_s", run.tokens_per_s}, {"gflops", gflops}});
    }
    if (prefill_tps > 0)
        row("prefill / decode per token", fixed(prefill_tps / decode_tps, 1, "x"), "decode is bandwidth-bound (" + target + ")");
    report["prefill"] = {{"tokens", prefill_tokens}, {"tokens_per_s", prefill_tps}, {"blas", prefill_runs.front().description}};
}

// The weights, the prefill run's KV cache and the peaks read before the bandwidth reading.
void print_memory(const Gpt2& model, const std::vector<DecodeRun>& runs, const Peaks& peaks, double rss_before,
                  bool writes_model, int prefill_tokens, nlohmann::json& report) {
    const ModelConfig& mc = model.config();
    const double weight_bytes = static_cast<double>(model.decode_weight_bytes());
    const double cache_bytes = static_cast<double>(
        kv_cache_bytes(mc.n_layer, prefill_tokens, mc.n_embd, sizeof(float)));
    const double peak = peaks.whole;
    const bool peak_resets = peaks.resets;
    std::cout << "\nmemory\n";
    row("weights in memory (float32)", fixed(weight_bytes / 1e6, 1, "MB"));
    row("weights in memory (f16 matrices)", fixed(runs[1].weight_bytes / 1e6, 1, "MB"));
    row("KV cache of the prefill run", fixed(cache_bytes / 1e6, 1, "MB"));
    row("peak resident memory", fixed(peak / 1e6, 1, "MB"),
        percent_of(peak, weight_bytes + cache_bytes, "weights + cache"));
    // read before the bandwidth measurement allocates its buffer, which is not the model's memory
    std::cout << "  (loading, a prefill and a decode run: read before the bandwidth reading's own buffer is allocated)\n";
    // each model's own peak: loading, one decode run (and for f32 a prefill), from a reset peak
    // (Linux's clear_refs) that still counts what the process held before (the f32 model, for f16)
    if (peak_resets) {
        row("  since loading the f32 model", fixed(runs[0].peak / 1e6, 1, "MB"));
        row("  since loading the f16 model", fixed(runs[1].peak / 1e6, 1, "MB"), "the f32 model still loaded");
    }
    if (writes_model) std::cout << "  (this run also wrote the model, which peaks higher: run again for the loader's figure)\n";
    report["memory"] = {{"peak_rss_bytes", peak}, {"rss_before_load_bytes", rss_before},
                        {"weights_bytes", weight_bytes}, {"weights_f16_bytes", runs[1].weight_bytes},
                        {"peak_since_f32_load_bytes", runs[0].peak}, {"peak_since_f16_load_bytes", runs[1].peak},
                        {"cache_bytes", cache_bytes}};
}

// 3. cached vs naive, on this model and on the embedded one
void print_cached_vs_naive(const Gpt2& model, const CommandLine& cl, int naive_tokens, nlohmann::json& report) {
    std::cout << "\ncached vs naive (" << naive_tokens << " new tokens, 1 thread)\n";
    const auto [naive, cached] = naive_and_cached_seconds(model, naive_tokens);
    row("GPT-2 124M shape: naive loop", fixed(naive, 2, "s"));
    row("GPT-2 124M shape: cached loop", fixed(cached, 2, "s"), fixed(naive / cached, 1, "x faster"));
    const Gpt2 small = Gpt2::load(cl.model_dir, cl.dtype);
    const int small_tokens = std::min(naive_tokens, small.config().n_positions - 8);
    const auto [naive_s, cached_s] = naive_and_cached_seconds(small, small_tokens);
    row(("embedded model (" + std::to_string(small_tokens) + " tokens): naive").c_str(), fixed(naive_s * 1e3, 1, "ms"));
    row(("embedded model (" + std::to_string(small_tokens) + " tokens): cached").c_str(),
        fixed(cached_s * 1e3, 1, "ms"), fixed(naive_s / cached_s, 1, "x faster"));
    report["cached_vs_naive"] = {{"new_tokens", naive_tokens}, {"naive_s", naive}, {"cached_s", cached},
                                 {"embedded_new_tokens", small_tokens},
                                 {"embedded_naive_s", naive_s}, {"embedded_cached_s", cached_s}};
}

// 4. speculative decoding (chapter 08): what one decode call verifying k drafts costs on the
// GPT-2 124M shape, against one decode step
void print_verify_costs(const Gpt2& model, nlohmann::json& report) {
    std::cout << "\nspeculative decoding (chapter 08; 1 thread)\n";
    std::cout << "one decode call verifying k drafts (k + 1 tokens, Invariant kernels), GPT-2 124M shape, median "
                 "of 5 interleaved with single steps:\n";
    for (int k = 1; k <= 8; ++k) {
        const auto [one, many] = step_and_verify_seconds(model, k, 5);
        row(("verify k = " + std::to_string(k)).c_str(), fixed(many * 1e3, 1, "ms"),
            fixed(many / one, 2, "x one decode step (") + fixed(one * 1e3, 1, "ms)"));
        report["verify"].push_back({{"k", k}, {"step_s", one}, {"verify_s", many}, {"ratio", many / one}});
    }
}

// ... and the speed-up on the embedded model, with prompt lookup and with the draft model
void print_speculative_speedup(const Gpt2& small, const Tokenizer& tok, const std::optional<Gpt2>& draft,
                               nlohmann::json& report) {
    const std::vector<int> prompt = tok.encode("The best way to");
    GenerationConfig config;
    config.max_new_tokens = 96;
    std::cout << "embedded model, greedy, 96 new tokens after 'The best way to' (the fastest of 5):\n";
    GenerationConfig lookup = config;
    lookup.prompt_lookup_num_tokens = 4;
    std::vector<std::pair<std::string, GenerationConfig>> runs{{"prompt lookup (HF, 4 tokens)", lookup}};
    if (draft) {
        for (const int k : {2, 4}) {
            GenerationConfig c = config;
            c.num_assistant_tokens = k;
            runs.emplace_back("draft model, k = " + std::to_string(k), c);
        }
    }
    for (const auto& [name, c] : runs) {
        const SpecFigures f = speculative_figures(small, tok, draft ? &*draft : nullptr, c, prompt, 5);
        row(name.c_str(), fixed(f.spec_tps, 0, "tokens/s"),
            fixed(f.spec_tps / f.plain_tps, 2, "x plain (") + fixed(f.plain_tps, 0, "tokens/s), ") +
                fixed(static_cast<double>(f.stats.emitted) / f.stats.rounds, 2, "tokens per target call"));
        report["speculative"].push_back({{"drafter", name}, {"plain_tokens_per_s", f.plain_tps},
                                         {"speculative_tokens_per_s", f.spec_tps},
                                         {"tokens_per_call", static_cast<double>(f.stats.emitted) / f.stats.rounds},
                                         {"acceptance", f.stats.acceptance()}});
    }
}

// 5. logprobs (chapter 11): what recording each token's numbers costs a sampled run on the
// embedded model, against the same run with no recording (make_sampler, which is unchanged)
void print_logprobs_cost(const Gpt2& small, const Tokenizer& tok, nlohmann::json& report) {
    const std::vector<int> prompt = tok.encode("The best way to");
    GenerationConfig config;
    config.do_sample = true;
    config.temperature = 0.7f;
    config.top_p = 0.9f;
    config.max_new_tokens = 96;
    config.min_new_tokens = 96;  // every run the same length: no EOS ends one early
    struct Variant {
        std::string name;
        std::optional<LogprobsRequest> request;  // none: make_sampler
        double tps = 0;
    };
    std::vector<Variant> variants{{"no logprobs (make_sampler)", std::nullopt},
                                  {"--logprobs 0 (the token alone)", LogprobsRequest{0, LogprobsMode::RawLogprobs}},
                                  {"--logprobs 5", LogprobsRequest{5, LogprobsMode::RawLogprobs}},
                                  {"--logprobs 5, processed_logprobs", LogprobsRequest{5, LogprobsMode::ProcessedLogprobs}},
                                  {"--logprobs 20", LogprobsRequest{20, LogprobsMode::RawLogprobs}}};
    std::vector<StepLogprobs> records;
    records.reserve(static_cast<size_t>(config.max_new_tokens));
    for (int r = 0; r < 7; ++r) {  // interleaved, the fastest of 7 each: the host is noisy
        for (Variant& v : variants) {
            records.clear();
            const Sampler sampler = v.request ? make_logprobs_sampler(config, config.seed, *v.request, records)
                                              : make_sampler(config, config.seed);
            const auto start = Clock::now();
            const Generation g = generate_cached(small, tok, prompt, config, sampler);
            v.tps = std::max(v.tps, g.ids.size() / seconds_since(start));
        }
    }
    std::cout << "\nlogprobs (chapter 11): the embedded model, temperature 0.7, top-p 0.9, 96 new tokens after 'The best "
                 "way to' (the fastest of 7, interleaved)\n";
    for (const Variant& v : variants) {
        row(v.name.c_str(), fixed(v.tps, 0, "tokens/s"),
            v.request ? fixed(v.tps / variants[0].tps, 3, "x no logprobs") : std::string());
        report["logprobs"].push_back({{"variant", v.name}, {"tokens_per_s", v.tps},
                                      {"ratio", v.tps / variants[0].tps}});
    }
}

// Chapters 07 and 08 on the GPT-2-124M-shaped model (and the embedded one): decode against the
// roofline, prefill per BLAS, memory, cached vs naive, speculative decoding. Measures first, then
// prints and fills `report`.
// What the speculative figures run on: the embedded model, its tokenizer and --assistant-model's
// draft, checked against it (main opens them before measuring anything).
struct SpeculativeModels {
    Gpt2 model;
    Tokenizer tokenizer;
    std::optional<Gpt2> draft;
};

SpeculativeModels open_speculative_models(const CommandLine& cl) {
    SpeculativeModels m{Gpt2::load(cl.model_dir, cl.dtype), Tokenizer::load(cl.model_dir), std::nullopt};
    m.draft = open_draft_model(resolve_assistant_dir(cl.extra.at("assistant-model")), std::nullopt, m.model, m.tokenizer);
    return m;
}

void measure_model(const CommandLine& cl, const ModelOptions& o, const SpeculativeModels& speculative,
                   nlohmann::json& report) {
    const bool writes_model = write_model_if_missing(o.dir);
    std::cout << "decodebook-bench: GPT-2 124M shape, random weights (stored F16), greedy; decode with the weights "
                 "held in float32, float16, and ggml's q8_0 and q4_0 blocks (quantized at load), everything else in float32\n";
    const double rss_before = peak_rss_bytes();
    const Gpt2 model = Gpt2::load(o.dir, WeightDtype::F32);
    set_num_threads(1);

    const std::string best_target = kernel_targets_supported().front();
    std::vector<std::string> targets = kernel_targets_supported();
    if (cl.extra.at("kernel-target") != "all") targets = {cl.extra.at("kernel-target")};  // main checked it
    const Peaks peaks = peaks_of_first_runs(model, o);
    std::vector<DecodeRun> runs;
    for (const WeightDtype dtype : {WeightDtype::F32, WeightDtype::F16, WeightDtype::Q8_0, WeightDtype::Q4_0})
        runs.push_back(measure_decode(model, dtype, o, targets, peaks));
    set_kernel_target(best_target);  // the rest of the bench runs on the best target
    set_num_threads(1);
    const std::vector<PrefillRun> prefill_runs = measure_prefill(model, o);

    print_machine();
    print_decode(runs, targets, o, report);
    print_fewer_bytes(runs, targets, o.max_threads, report);
    print_f16_rounding(model.config(), report);  // on the last target print_decode set
    set_kernel_target(best_target);
    print_prefill(model, prefill_runs, runs[0].figures[0][0].decode_tps, targets[0], o.prefill_tokens, report);
    print_memory(model, runs, peaks, rss_before, writes_model, o.prefill_tokens, report);
    report["kernels"] = kernel_target();
    report["kernel_targets"] = kernel_targets_supported();
    if (o.naive_tokens > 0) print_cached_vs_naive(model, cl, o.naive_tokens, report);
    print_verify_costs(model, report);
    print_speculative_speedup(speculative.model, speculative.tokenizer, speculative.draft, report);
    print_logprobs_cost(speculative.model, speculative.tokenizer, report);
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info("decodebook-bench",
                     "decode and prefill speed of the cached model against this machine's memory roofline (chapter 07), "
                     "what verifying drafts costs (chapter 08), and what a constraint's token mask costs (chapter 09)",
                     "");
    info.knob_groups = {};  // no decoding knobs: it measures greedy decoding
    info.extra = {{"gpt2-small-dir", "folder of the GPT-2-124M-shaped random model (written there if missing)",
                   "gpt2-small-random"},
                  {"json", "also write every figure to this JSON file", ""},
                  {"decode-tokens", "new tokens per decode measurement", "128"},
                  {"prefill-tokens", "prompt length of the prefill measurement", "128"},
                  {"naive-tokens", "new tokens of the cached vs naive comparison (0 skips it)", "200"},
                  {"max-threads", "measure decode on 1..N threads", "2"},
                  {"rounds", "rounds of (read bandwidth, decode, read bandwidth) per thread count; the fastest decode counts, against its own round's bandwidth", "3"},
                  {"blas-list", "BLAS libraries to measure prefill with, comma-separated (see --blas)", "openblas,blis"},
                  {"assistant-model", "the draft model of the speculative figures (chapter 08)", builtin_draft_dir()},
                  {"kernel-target", "decode's kernel targets to measure: all (every one this processor runs, "
                                    "interleaved) or one of them (x86-64-v4, x86-64-v3, x86-64)", "all"},
                  {"part", "what to measure: all, model (chapters 07-08, and 11's logprobs), mask (constrained decoding, "
                           "chapter 09) or logprobs (chapter 11's row alone)", "all"},
                  {"gpt2-vocab", "GPT-2's vocabulary folder (vocab.json + merges.txt) for the mask figures; "
                                 "tools/install-deps.sh --bench puts it here", default_gpt2_vocab_dir()},
                  {"mask-documents", "valid outputs per constraint whose decoding steps the mask figures time", "40"}};
    CommandLine cl;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, cl)) return *exit_code;
    return run_program([&] {
        const std::string part = cl.extra.at("part");
        if (part != "all" && part != "model" && part != "mask" && part != "logprobs")
            throw UsageError("--part is '" + part + "'", "pass --part all, --part model, --part mask or --part logprobs");
        const int mask_documents = cl.extra_int("mask-documents", 1, 1000);
        const std::string target = cl.extra.at("kernel-target");
        const std::vector<std::string> supported = kernel_targets_supported();
        if (target != "all" && std::find(supported.begin(), supported.end(), target) == supported.end()) {
            std::string names;
            for (const std::string& name : supported) names += ", " + name;
            throw UsageError("--kernel-target is '" + target + "', not a kernel target this processor runs",
                             "pass --kernel-target all" + names);
        }
        const std::string json_path = cl.extra.at("json");
        if (!json_path.empty()) {  // refuse an unwritable report before minutes of measuring
            std::ofstream probe(json_path, std::ios::app);
            if (!probe) throw UsageError("cannot write '" + json_path + "'", "give --json a file in a writable folder");
        }
        // every input is checked before anything is measured: the model part's options and the
        // draft model (another tokenizer used to be measured without a word)
        const ModelOptions model_options = read_model_options(cl);
        const SpeculativeModels speculative = open_speculative_models(cl);
        nlohmann::json report;
        if (part == "logprobs") print_logprobs_cost(speculative.model, speculative.tokenizer, report);
        if (part == "all" || part == "model") measure_model(cl, model_options, speculative, report);
        if (part == "all" || part == "mask") report["mask"] = run_mask_bench({cl.model_dir, cl.extra.at("gpt2-vocab"), mask_documents});
        if (!json_path.empty()) {
            std::ofstream(json_path) << report.dump(2) << "\n";
            std::cout << "\nwrote " << json_path << "\n";
        }
        return 0;
    });
}
