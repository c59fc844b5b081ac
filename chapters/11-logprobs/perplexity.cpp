// Chapter 11, part 3: perplexity of the held-out fortunes by a sliding window, with three strides.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "chapter11.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/scoring.hpp"
#include "decodebook/model/gpt2.hpp"

using namespace decodebook;

namespace chapter11 {

void perplexity_by_strides(const Session& s, const std::vector<std::string>& fortunes) {
    const std::vector<int> ids = held_out_ids(s, fortunes);
    const int context = s.model.config().n_positions;
    std::printf("%zu held-out fortunes, %s tokens; the model's context: %d positions\n\n", fortunes.size(),
                with_commas(ids.size()).c_str(), context);
    std::printf("%8s %8s %9s %15s %11s %8s\n", "window", "stride", "forwards", "tokens scored", "perplexity", "ms");
    for (const int stride : {context, context / 2}) {  // the guide's two cases: no overlap, and half
        const auto start = std::chrono::steady_clock::now();
        const Perplexity p = sliding_window_perplexity(s.model, ids, context, stride);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::printf("%8d %8d %9zu %15s %11.2f %8.0f\n", context, stride, p.windows, with_commas(p.tokens).c_str(),
                    p.value(), ms);
    }
}

}  // namespace chapter11
