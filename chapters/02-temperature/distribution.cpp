// Chapter 02, parts 1 and 2: temperature reshapes one step's distribution. z / T: T < 1 sharpens
// it toward greedy, T > 1 flattens it toward uniform; the entropy says how many tokens it is like
// choosing among. --csv FILE writes the distribution at five temperatures for the site's plot.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "chapter02.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/sampling/sampling.hpp"

using namespace decodebook;

namespace chapter02 {

Vec with_temperature(const Vec& logits, float t) {
    Vec z = logits;
    apply_temperature(z, t);
    return z;
}

void distribution_at_temperatures(const Vec& logits, const Tokenizer& tok) {
    const float temperatures[] = {0.5f, 1.0f, 1.5f};
    const double scale = softmax(with_temperature(logits, 0.5f))(static_cast<size_t>(argmax(logits)));
    for (float t : temperatures) {
        std::printf("  T = %.1f%s\n", t, t == 1.0f ? "  (the model's own distribution)" : "");
        print_distribution(softmax(with_temperature(logits, t)), tok, 8, scale);
    }
}

void entropy_against_temperature(const Vec& logits) {
    std::printf("  %6s %10s %14s %8s\n", "T", "entropy", "like choosing", "p(top)");
    for (float t : {0.1f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 2.0f, 4.0f}) {
        const Vec p = softmax(with_temperature(logits, t));
        const double h = entropy(p);
        std::printf("  %6.2f %7.3f nats %8.1f tokens %7.3f  %s\n", t, h, std::exp(h), p(static_cast<size_t>(argmax(p))),
                    bar(h, std::log(static_cast<double>(p.size())), 30).c_str());
    }
    std::printf("  (\"like choosing\" = e^entropy: the number of equally likely tokens with the same entropy;\n"
                "   the maximum is the vocabulary, %zu tokens, ln V = %.2f nats)\n", logits.size(),
                std::log(static_cast<double>(logits.size())));
}

// The ranks are those at T = 1; dividing by T > 0 keeps the order, so they hold at every T.
void write_temperature_csv(const std::string& path, const Vec& logits, const Tokenizer& tok) {
    CsvFile csv(path, "temperature,rank,id,token,probability");
    std::ofstream& out = csv.out();
    const std::vector<int> ids = top_ids(softmax(logits), 20);
    for (float t : {0.25f, 0.5f, 1.0f, 1.5f, 2.0f}) {
        const Vec p = softmax(with_temperature(logits, t));
        for (size_t rank = 0; rank < ids.size(); ++rank) {
            const int id = ids[rank];
            out << t << ',' << rank + 1 << ',' << id << ',' << csv_quoted(visible_token(tok.token_bytes(id))) << ','
                << p(static_cast<size_t>(id)) << '\n';
        }
    }
    csv.close();
}

}  // namespace chapter02
