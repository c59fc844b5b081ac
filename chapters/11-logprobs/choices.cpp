// Chapter 11, part 4: a multiple-choice task scored by log-likelihood, as evaluation harnesses do.
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "chapter11.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/course/terminal.hpp"
#include "decodebook/decoding/choices.hpp"

using namespace decodebook;

namespace chapter11 {
namespace {

// "0.330 (66 of 200), 95 % interval 0.265 to 0.395"
std::string accuracy_text(const Accuracy& a) {
    char text[128];
    const double half = 1.96 * a.standard_error().value_or(0.0);
    std::snprintf(text, sizeof text, "%.3f (%zu of %zu), 95 %% interval %.3f to %.3f", a.value(), a.correct, a.items,
                  a.value() - half, a.value() + half);
    return text;
}

}  // namespace

// [ch11:choices]
void author_choice(const Session& s, int items) {
    std::vector<ChoiceItem> task = read_choice_task(builtin_author_choice_task());
    task.resize(std::min(task.size(), static_cast<size_t>(items)));
    const TaskResult r = evaluate_choice_task(s.model, s.tokenizer, task);
    // the first item in full: each choice's sum, its length and what each rule compares
    const ChoiceItem& first = task.front();
    std::printf("item 1: \"%s\"\n", one_line(first.context).c_str());
    std::printf("  %-44s %9s %7s %6s %12s\n", "choice", "log p sum", "tokens", "chars", "sum per char");
    for (size_t c = 0; c < first.choices.size(); ++c) {
        const ChoiceScore& sc = r.scores.front()[c];
        std::printf("  %-44s %9.3f %7zu %6zu %12.4f%s\n", one_line(first.choices[c]).substr(0, 44).c_str(),
                    sc.score.logprob, sc.score.tokens, sc.length.chars, choice_value(sc, ChoiceRule::AccNorm),
                    static_cast<int>(c) == first.answer ? "  <- the author" : "");
    }
    std::printf("  acc picks choice %d, acc_norm choice %d\n\n", pick_choice(r.scores.front(), ChoiceRule::Acc) + 1,
                pick_choice(r.scores.front(), ChoiceRule::AccNorm) + 1);
    std::printf("the first %zu items (decodebook-score --task author scores all 200):\n", task.size());
    for (size_t i = 0; i < 2; ++i)  // acc and acc_norm (acc_bytes equals acc_norm on ASCII authors)
        std::printf("  %-9s %s\n", to_string(kChoiceRules[i]).c_str(), accuracy_text(r.by_rule[i]).c_str());
    std::printf("  %-9s %.3f (one of four)\n", "chance", r.chance);
    std::printf("  %-9s %s\n", "no echo", accuracy_text(r.without_logprobs).c_str());
    std::printf("(no echo: a server that returns no prompt logprobs scores every choice alike, and the harness's\n"
                " argmax takes the first choice every time: the share of items whose author is listed first)\n");
}
// [/ch11:choices]

}  // namespace chapter11
