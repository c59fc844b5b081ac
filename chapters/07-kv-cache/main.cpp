// Chapter 07 - The KV cache: prefill and decode, and why decoding is bound by memory.
//
// The naive loop of chapter 00 runs the whole sequence through the model at every step, although
// the keys and values of the earlier positions never change. The KV cache keeps them: the prompt
// goes through once (prefill, matrix-matrix products), then each new token costs one position
// (decode, matrix-vector products that read every weight once). This program measures all of it
// in the run: the naive loop against the cached one, time to first token against time per output
// token, the cache's size, this machine's read bandwidth and the lowest time per token it allows,
// batches, and why temperature 0 stops being deterministic once prompts share a batch; then
// requests that arrive over time, served with static and with continuous batching; and what
// holding the weights in float16 (half the bytes) does to speed and to the logits.
//
// Library code this chapter introduces: KvCache, kv_cache_bytes, reorder_rows,
// cached_attention_step (kv_cache.hpp); Gpt2::prefill, Gpt2::decode, Gpt2::decode_weight_bytes
// (gpt2.hpp); WeightDtype, WeightMatrix (weights.hpp); matvec, matvec_f16, attend, gemm (kernels.hpp); gpt2_decode_bytes, decode_roofline_ms,
// measure_read_bandwidth (roofline.hpp); cached_logits, generate_cached, generate_batch
// (cached_loops.hpp); CachedSequence (cached_sequence.hpp); the loop's NextLogits seam
// (generate.hpp); with_commas, human_bytes (terminal.hpp); SeriesRows, write_series_csv (csv.hpp);
// serve_requests, Scheduling, ServeClock, wall_clock (serving.hpp).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <xtensor/xview.hpp>

#include "chapter07.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/exercise_status.hpp"
#include "decodebook/course/random_model.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/exercises.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/kv_cache.hpp"
#include "decodebook/model/roofline.hpp"

using namespace decodebook;
using namespace chapter07;

namespace {

// Your turn: the examples of the chapter through your exercises (exercises/07-kv-cache/).
void report_exercises() {
    // 07.1: a cache of 5 positions (C 4, two heads), positions 0 and 1 filled, the new token at 2
    xt::xtensor<float, 2> keys = xt::zeros<float>({5, 4}), values = xt::zeros<float>({5, 4});
    for (size_t s = 0; s < 2; ++s)
        for (size_t j = 0; j < 4; ++j) {
            keys(s, j) = static_cast<float>(std::sin(1.0 + s * 4 + j));
            values(s, j) = static_cast<float>(std::cos(2.0 + s * 4 + j));
        }
    Vec qkv = xt::zeros<float>({12});
    for (size_t j = 0; j < 12; ++j) qkv(j) = static_cast<float>(std::sin(0.5 * j) * 2);
    auto k_lib = keys, v_lib = values, k_yours = keys, v_yours = values;
    const Vec lib = cached_attention_step(k_lib, v_lib, 2, qkv, 2);
    Vec yours;
    const ExerciseAttempt a = try_exercise([&] { yours = your_cached_attention_step(k_yours, v_yours, 2, qkv, 2); });
    bool same = yours.size() == lib.size() && k_yours == k_lib && v_yours == v_lib;
    for (size_t j = 0; same && j < lib.size(); ++j) same = std::fabs(yours(j) - lib(j)) <= 1e-5f;
    const auto show = [](const Vec& v) {
        std::string s = "[";
        char buf[32];
        for (size_t j = 0; j < v.size(); ++j) {
            std::snprintf(buf, sizeof buf, "%s%.4f", j ? ", " : "", v(j));
            s += buf;
        }
        return s + "]";
    };
    print_exercise_status(course_exercise("your_cached_attention_step"), a, same,
                          show(yours) + (k_yours == k_lib && v_yours == v_lib ? "" : ", cache rows differ"), show(lib));

    // 07.2: the 7B example of part 3
    uint64_t bytes_yours = 0;
    const ExerciseAttempt b = try_exercise([&] { bytes_yours = your_kv_cache_bytes(32, 8192, 4096, 2, 1); });
    const uint64_t bytes_lib = kv_cache_bytes(32, 8192, 4096, 2, 1);
    print_exercise_status(course_exercise("your_kv_cache_bytes"), b, bytes_yours == bytes_lib,
                          with_commas(bytes_yours) + " bytes", with_commas(bytes_lib) + " bytes");

    // 07.3: rows A B C with source {1, 0, 0}: the in-place copy gives B B B
    xt::xtensor<float, 3> rows = xt::zeros<float>({3, 2, 2});
    for (size_t r = 0; r < 3; ++r) xt::view(rows, r, xt::all(), xt::all()) = static_cast<float>(r);
    auto rows_lib = rows, rows_yours = rows;
    reorder_rows(rows_lib, {1, 0, 0});
    const ExerciseAttempt c = try_exercise([&] { your_reorder_rows(rows_yours, {1, 0, 0}); });
    const auto letters = [](const xt::xtensor<float, 3>& t) {
        std::string s;
        for (size_t r = 0; r < t.shape(0); ++r) {
            const float v = t(r, 0, 0);
            bool whole = v == 0.0f || v == 1.0f || v == 2.0f;
            for (size_t i = 0; i < 2; ++i)
                for (size_t j = 0; j < 2; ++j) whole = whole && t(r, i, j) == v;
            s += std::string(r ? " " : "") + (whole ? std::string(1, static_cast<char>('A' + static_cast<int>(v))) : "?");
        }
        return std::string("A B C -> ") + s;
    };
    print_exercise_status(course_exercise("your_reorder_rows"), c, rows_yours == rows_lib, letters(rows_yours),
                          letters(rows_lib));

    // 07.4: GPT-2 124M in float32 at 20 GB/s
    double ms_yours = 0;
    const ExerciseAttempt d = try_exercise([&] { ms_yours = your_decode_roofline_ms(gpt2_small_config(), 4, 20e9); });
    const double ms_lib = decode_roofline_ms(gpt2_small_config(), 4, 20e9);
    const auto ms_text = [](double ms) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6f ms per token", ms);
        return std::string(buf);
    };
    print_exercise_status(course_exercise("your_decode_roofline_ms"), d, std::fabs(ms_yours - ms_lib) <= 1e-9 * ms_lib,
                          ms_text(ms_yours), ms_text(ms_lib));
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info = sampling_chapter("chapter-07", "The KV cache: prefill, decode, batches, and the memory bound.",
                                        "The best way to");
    info.defaults.do_sample = false;  // the subject is speed: greedy, so the two loops must agree token for token
    info.defaults.max_new_tokens = 80;  // the naive loop is quadratic: 80 keep the whole chapter within ~3 s
    info.csv_columns = "series,x,y";
    info.steers = {{"part 1", {"max-new-tokens"}}};  // greedy in every part: the two loops agree token for token
    CommandLine opt;  // --threads N sets num_threads()
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, opt)) return *exit_code;
    const int threads = num_threads();
    return run_program([&] {
        const Session session = open_session(opt);
        CsvRows csv_rows;  // parts 1, 5 and 7 add their measurements for --csv
        const size_t part1_positions = naive_against_cached(session, opt, threads, csv_rows);  // part 1
        const Phases short_p = prefill_against_decode(session);                                // part 2
        cache_sizes(session.model.config(), part1_positions);                                  // part 3
        roofline(session.model, short_p, threads);                                             // part 4
        const BatchRates part5 = batches(session, csv_rows);                                   // part 5
        temperature_zero_in_batch(session, part5);                                             // part 6
        serving(session, csv_rows);                                                            // part 7
        bytes_per_weight(session, opt, threads);                                               // part 8

        if (!opt.csv.empty()) {
            write_series_csv(opt.csv, info.csv_columns, csv_rows);
            std::printf("\n(wrote the step times of part 1, the batch rates of part 5 and the requests of part 7 to %s)\n",
                        opt.csv.c_str());
        }

        std::printf("\nYour exercises (./grade 07 grades them):\n");
        report_exercises();
        return 0;
    });
}
