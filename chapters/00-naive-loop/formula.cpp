// Chapter 00: the cost formula O(T (L + T) d^2) worked with the seed book's numbers, beside this
// machine's step times at the same lengths.
#include <cstdio>
#include <vector>

#include "chapter00.hpp"
#include "decodebook/course/terminal.hpp"

using namespace decodebook;

namespace chapter00 {

// The cost formula worked with the seed book's numbers, beside this machine's step times: a prompt
// of L tokens, T new tokens, width d. Step t forwards L + t positions, and each position goes
// through matrices of about d x d (d^2 multiply-adds each, times a constant per layer), so a step
// costs about (L + t) d^2 and the run sum_t (L + t) d^2 <= T (L + T) d^2: O(T (L + T) d^2).
// The times are this model's forward passes at those lengths (the fastest of `runs` each).
void print_worked_formula(const Gpt2& model, const std::vector<int>& ids, int runs) {
    const long L = 8, T = 20, d = 64;  // the seed's example
    const long d2 = d * d;
    const auto commas = [](long v) { return with_commas(static_cast<uint64_t>(v)); };
    std::printf("\nThe cost formula O(T (L + T) d^2), worked for L = %ld prompt tokens, T = %ld new tokens, width d = %ld:\n",
                L, T, d);
    std::printf("  (L + T) d^2     = %ld x %s = %s: a bound on one step (the ~115,000 quoted for this example)\n", L + T,
                commas(d2).c_str(), commas((L + T) * d2).c_str());
    std::printf("                    (the last step, t = %ld, forwards L + T - 1 = %ld positions: %s)\n", T - 1, L + T - 1,
                commas((L + T - 1) * d2).c_str());
    std::printf("  T (L + T) d^2   = %ld x %s = %s: the whole run's bound, what the O() counts\n", T,
                commas((L + T) * d2).c_str(), commas(T * (L + T) * d2).c_str());
    std::printf("  sum (L + t) d^2 = (T L + T(T-1)/2) d^2 = %ld x %s = %s: the run exactly, t = 0..%ld\n",
                T * L + T * (T - 1) / 2, commas(d2).c_str(), commas((T * L + T * (T - 1) / 2) * d2).c_str(), T - 1);
    std::vector<int> lengths;
    for (long t = 0; t < T; ++t) lengths.push_back(static_cast<int>(L + t));
    const std::vector<Timing> timings = time_contexts(model, ids, lengths, runs);
    std::printf("Those %ld steps on this model (width %d; the ratios do not depend on d), the fastest of %d passes each:\n", T,
                model.config().n_embd, runs);
    std::printf("%5s %10s %16s %14s %9s %14s  %s\n", "step", "positions", "(L + t) d^2", "formula/step 0", "ms",
                "time/step 0", "time");
    const double first = timings.front().best, max_ms = timings.back().best;
    for (size_t i = 0; i < timings.size(); ++i) {
        if (i % 2 != 0 && i + 1 != timings.size()) continue;
        const Timing& t = timings[i];
        std::printf("%5zu %10d %16s %13.2fx %9.3f %13.2fx  %s\n", i, t.context,
                    commas(static_cast<long>(t.context) * d2).c_str(), static_cast<double>(t.context) / L, t.best,
                    t.best / first, bar(t.best, max_ms, 30).c_str());
    }
    // A straight line through the measured points: time = fixed + per_position * positions.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = static_cast<double>(timings.size());
    for (const Timing& t : timings) {
        sx += t.context;
        sy += t.best;
        sxx += static_cast<double>(t.context) * t.context;
        sxy += t.context * t.best;
    }
    const double per_position = (n * sxy - sx * sy) / (n * sxx - sx * sx), fixed = (sy - per_position * sx) / n;
    std::printf("The formula says the last step costs %.2fx the first; measured, %.2fx. A straight line through the\n"
                "measured times is %.3f ms + %.1f us per position: the part that grows with the positions is the\n"
                "formula's, and the fixed part (reading every weight once per pass, whatever its length) is what\n"
                "the O() leaves out.\n",
                static_cast<double>(L + T - 1) / L, timings.back().best / first, fixed, 1000.0 * per_position);
}

}  // namespace chapter00
