// Chapter 03, parts 1 and 2: top-k, top-p and min-p side by side on real steps: the step after the
// prompt, then a peaked and a flat one, where a fixed size and an adaptive rule part ways.
// --csv FILE writes part 2's steps for the site's plot.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "chapter03.hpp"
#include "decodebook/course/csv.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/naive_loop.hpp"

using namespace decodebook;

namespace chapter03 {

void three_truncations(const Vec& logits, const Tokenizer& tok) {
    print_survivors("none", logits, tok);
    print_survivors("top_k 5", filtered(logits, only_k(5)), tok);
    print_survivors("top_p 0.9", filtered(logits, only_p(0.9f)), tok);
    print_survivors("min_p 0.1", filtered(logits, only_min_p(0.1f)), tok);
}

std::pair<Step, Step> peaked_and_flat(const Gpt2& model, const std::vector<int>& prompt, int steps) {
    Step peaked{{}, -1, 0}, flat{{}, 2, 0};
    std::vector<int> context = prompt;
    for (int i = 0; i < steps; ++i) {
        const Vec z = last_position_logits(model.forward(context));
        const Vec p = softmax(z);
        const int best = argmax(z);
        const Step here{context, p(static_cast<size_t>(best)), entropy(p)};
        if (here.top1 > peaked.top1) peaked = here;
        if (here.top1 < flat.top1) flat = here;
        context.push_back(best);
    }
    return {peaked, flat};
}

void print_peaked_and_flat(const Gpt2& model, const Tokenizer& tok, const Step& peaked, const Step& flat) {
    std::printf("  (the most and the least confident of the first %d greedy steps)\n", kScanned);
    for (const Step* s : {&peaked, &flat}) {
        const Vec z = last_position_logits(model.forward(s->context));
        std::printf("  %s step, after ...%s: top token p = %.3f, entropy %.2f nats\n", s == &peaked ? "peaked" : "flat",
                    visible_token(tok.decode({s->context.end() - std::min<long>(4, static_cast<long>(s->context.size())), s->context.end()})).c_str(),
                    s->top1, s->entropy);
        print_survivors("top_k 10", filtered(z, only_k(10)), tok);
        print_survivors("top_p 0.9", filtered(z, only_p(0.9f)), tok);
        print_survivors("min_p 0.1", filtered(z, only_min_p(0.1f)), tok);
    }
}

// --csv FILE: the 40 most likely tokens of the peaked and the flat step of part 2, each with
// whether top_k 10, top_p 0.9 and min_p 0.1 keep it (1) or remove it (0), and the step's entropy
// (nats, over the whole vocabulary), for the site's plot.
void write_truncation_csv(const std::string& path, const Gpt2& model, const Tokenizer& tok, const Step& peaked,
                          const Step& flat) {
    CsvFile csv(path, "step,rank,id,token,probability,top_k,top_p,min_p,entropy");
    std::ofstream& out = csv.out();
    for (const Step* s : {&peaked, &flat}) {
        const Vec z = last_position_logits(model.forward(s->context));
        const Vec p = softmax(z);
        const Vec by_k = filtered(z, only_k(10)), by_p = filtered(z, only_p(0.9f)), by_min_p = filtered(z, only_min_p(0.1f));
        const std::vector<int> ids = top_ids(p, 40);
        for (size_t rank = 0; rank < ids.size(); ++rank) {
            const size_t id = static_cast<size_t>(ids[rank]);
            out << (s == &peaked ? "peaked" : "flat") << ',' << rank + 1 << ',' << id << ','
                << csv_quoted(visible_token(tok.token_bytes(ids[rank]))) << ',' << p(id) << ',' << std::isfinite(by_k(id))
                << ',' << std::isfinite(by_p(id)) << ',' << std::isfinite(by_min_p(id)) << ',' << s->entropy << '\n';
        }
    }
    csv.close();
}

}  // namespace chapter03
