// Chapter 07: the threads, the BLAS behind prefill's products (gemm), and the table of each CPU
// target's kernels: the best one this processor runs, or the one set_kernel_target chose.
// Shapes are in the comments; every matrix is row-major. See model/kernels.hpp for why two kinds.
#include "decodebook/model/kernels.hpp"

#include <dlfcn.h>  // use_blas: another CBLAS library, loaded at run time
#include <omp.h>

#include <iterator>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "decodebook/base/error.hpp"

namespace decodebook {
namespace kernels_detail {

std::atomic<int> g_threads{1};
Blas g_blas;

namespace {

// One table per target, best first. (Under clang, the fuzzing build, only the default.)
#define DECODEBOOK_TABLE(NS, name, description)                                                     \
    KernelTable {                                                                                   \
        name, description, &NS::dots, &NS::head_scores, \
            &NS::weighted_sum, &NS::heads_scores, &NS::heads_weighted_sum, &NS::gelu_in_place, {&NS::sum_floats_1, &NS::sum_floats_2, &NS::sum_floats_4} \
    }
const KernelTable kTables[] = {
#if DECODEBOOK_MULTI_TARGET
    DECODEBOOK_TABLE(v4, "x86-64-v4", "x86-64-v4 (AVX-512)"),
    DECODEBOOK_TABLE(v3, "x86-64-v3", "x86-64-v3 (AVX2, FMA)"),
#endif
    DECODEBOOK_TABLE(x86_64, "x86-64", "x86-64 (SSE2)"),
};

// Whether this processor runs the table's target: GCC's reading of CPUID, the same levels its
// target("arch=...") compiles for (v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, XSAVE on
// top of v2; v4: AVX512F, BW, CD, DQ, VL on top of v3).
bool runs(const KernelTable& table) {
#if DECODEBOOK_MULTI_TARGET
    __builtin_cpu_init();
    if (table.name == std::string_view("x86-64-v4")) return __builtin_cpu_supports("x86-64-v4");
    if (table.name == std::string_view("x86-64-v3")) return __builtin_cpu_supports("x86-64-v3");
#endif
    return table.name == std::string_view("x86-64");
}

// The table in use: the first (best) one this processor runs, chosen once, unless changed.
std::atomic<const KernelTable*>& table_in_use() {
    static std::atomic<const KernelTable*> table{[] {
        for (const KernelTable& t : kTables)
            if (runs(t)) return &t;
        return &kTables[std::size(kTables) - 1];
    }()};
    return table;
}

}  // namespace

const KernelTable& kernels() { return *table_in_use().load(std::memory_order_relaxed); }

}  // namespace kernels_detail

using namespace kernels_detail;

void set_num_threads(int n) {
    if (n < 1) throw Error("--threads must be at least 1 (got " + std::to_string(n) + ")", "pass --threads 1 or 2");
    g_threads = n;
    // One pool of threads, OpenMP's: the BLAS runs on one thread and gemm splits its columns over
    // OpenMP's threads. OpenBLAS's own worker threads keep spinning (sched_yield) for about 0.1 s
    // after each call; behind a prefill they took a core from the decode steps that followed.
    openblas_set_num_threads(1);
    if (g_blas.set_threads) g_blas.set_threads(1);
}

std::string use_blas(const std::string& name) {
    const std::string fix = "pass --blas openblas (the linked one), --blas blis (Debian's BLIS: apt-get install "
                            "libblis4-openmp), or the path of a shared library with the CBLAS interface";
    if (name == "openblas") {
        g_blas = Blas{};
        return blas_description();
    }
    if (name != "blis" && name.find('/') == std::string::npos) throw Error("unknown BLAS '" + name + "'", fix);
    const std::string file = name == "blis" ? "libblis.so.4" : name;
    // RTLD_DEEPBIND: the library's own symbols first, so its cblas_sgemm calls its own sgemm_, not
    // the linked OpenBLAS's of the same name (AddressSanitizer builds cannot, and measure OpenBLAS there)
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | (kAsan ? 0 : RTLD_DEEPBIND));
    if (!lib) throw Error("cannot load the BLAS '" + name + "': " + dlerror(), fix);
    Blas blas;
    blas.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm"));
    if (!blas.sgemm) throw Error("'" + file + "' has no cblas_sgemm: it is not a CBLAS library", fix);
    blas.set_threads = reinterpret_cast<void (*)(int64_t)>(dlsym(lib, "bli_thread_set_num_threads"));
    const auto version = reinterpret_cast<const char* (*)()>(dlsym(lib, "bli_info_get_version_str"));
    const auto arch_id = reinterpret_cast<int (*)()>(dlsym(lib, "bli_arch_query_id"));
    const auto arch_name = reinterpret_cast<const char* (*)(int)>(dlsym(lib, "bli_arch_string"));
    if (version && arch_id && arch_name) {
        blas.description = std::string("BLIS ") + version() + " (kernels " + arch_name(arch_id()) + ")";
    } else {
        Dl_info where{};
        blas.description = "cblas_sgemm of " + std::string(dladdr(reinterpret_cast<void*>(blas.sgemm), &where) &&
                                                                       where.dli_fname ? where.dli_fname : file.c_str());
    }
    g_blas = blas;
    if (g_blas.set_threads) g_blas.set_threads(1);  // gemm splits the work over OpenMP's threads
    return g_blas.description;
}

int num_threads() { return g_threads; }

// y[:, j0:j1] (T, j1 - j0) = x (T, in) W[j0:j1, :]^T + bias[j0:j1], W held (out, in), on one BLAS thread
namespace {
void gemm_columns(const float* x, size_t T, const float* W, const float* bias, size_t out, size_t in, size_t j0,
                  size_t j1, float* y) {
    if (j1 <= j0) return;
    const auto n = [](size_t v) { return static_cast<int>(v); };
    g_blas.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n(T), n(j1 - j0), n(in), 1.0f, x, n(in), W + j0 * in, n(in),
                 0.0f, y + j0, n(out));
    if (!bias) return;
    for (size_t t = 0; t < T; ++t)
        for (size_t j = j0; j < j1; ++j) y[t * out + j] += bias[j];
}
}  // namespace

void gemm(const float* x, size_t T, const float* W, const float* bias, size_t out, size_t in, float* y) {
    // y (T, out) = x (T, in) W^T + bias, W held (out, in): each thread its own block of outputs (rows of W)
    const int threads = g_threads;
    if (threads == 1) return gemm_columns(x, T, W, bias, out, in, 0, out, y);
#pragma omp parallel num_threads(threads)
    {
        const auto [j0, j1] = chunk(out, omp_get_num_threads(), omp_get_thread_num());
        gemm_columns(x, T, W, bias, out, in, j0, j1, y);
    }
}

std::string kernel_target() { return kernels().description; }

std::vector<std::string> kernel_targets_supported() {
    std::vector<std::string> names;
    for (const KernelTable& t : kTables)
        if (runs(t)) names.emplace_back(t.name);
    return names;
}

std::string set_kernel_target(const std::string& name) {
    std::string runnable;
    for (const std::string& n : kernel_targets_supported()) runnable += (runnable.empty() ? "" : ", ") + n;
    for (const KernelTable& t : kTables) {
        if (name != t.name) continue;
        if (!runs(t)) throw Error("this processor does not run the kernel target '" + name + "'", "pass one it runs: " + runnable);
        table_in_use().store(&t);
        return t.description;
    }
    throw Error("unknown kernel target '" + name + "'", "pass one this processor runs: " + runnable);
}

std::string blas_description() {
    if (!g_blas.description.empty()) return g_blas.description;
    std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
    const size_t space = config.find(' ', config.find(' ') + 1);
    return config.substr(0, space) + " (core " + openblas_get_corename() + ")";
}

}  // namespace decodebook
