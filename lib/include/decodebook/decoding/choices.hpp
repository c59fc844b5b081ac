#pragma once
/// @file decoding/choices.hpp
/// @brief Chapter 11: answering a multiple-choice question by scoring each choice instead of
/// sampling an answer, by the rules of EleutherAI's lm-evaluation-harness (lm-eval; read at commit
/// 4e7e0d47f33b: `lm_eval/api/model.py` `TemplateLM._encode_pair`, `lm_eval/api/task.py`
/// `ConfigurableTask.process_results`, `lm_eval/api/metrics.py` `mean_stderr`). Each choice is one
/// loglikelihood request (context, choice), scored by score_continuation; a rule picks the choice
/// with the highest sum (`acc`), sum per character (`acc_norm`) or sum per byte (`acc_bytes`).
/// The course's task, the author of a held-out fortune among four, is models/tasks/author_choice.json
/// (course/model_dir.hpp's builtin_author_choice_task; tests/reference/author_task.py writes it).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decodebook/decoding/scoring.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

/// One multiple-choice question. lm-eval's request for choice i is (context, choices[i]) with no
/// delimiter between them: the context carries its own separator, as the author task's end in
/// "-- " (the same pair as lm-eval's default target_delimiter " " after a context ending in "--").
/// Introduced in chapter 11.
struct ChoiceItem {
    std::string context;               ///< the text every choice follows, valid UTF-8 with a non-whitespace character
    std::vector<std::string> choices;  ///< the texts to score, at least two, each valid UTF-8 and not empty
    int answer = 0;                    ///< the index of the right choice
};

/// Read a task file: a JSON object whose "items" array holds objects {"context": string,
/// "choices": [string, ...], "answer": index} (other keys are ignored), each checked as
/// check_choice_item checks one. Introduced in chapter 11.
/// @param path the file, e.g. builtin_author_choice_task()
/// @return the items, in file order
/// @throws Error naming the file (and the item) when it is missing, unreadable, over 64 MiB, not
///   JSON, has no "items" array, or an item is malformed; the fix says how to rebuild the course's task
std::vector<ChoiceItem> read_choice_task(const std::string& path);

/// Check one item: a context with a non-whitespace character, at least two choices, none empty,
/// all valid UTF-8 (lm-eval's strings are Python strings: its lengths count characters), and an
/// answer among them. Introduced in chapter 11.
/// @param item the item
/// @throws Error saying what is wrong
void check_choice_item(const ChoiceItem& item);

/// A (context, continuation) request as token ids. Introduced in chapter 11.
struct EncodedPair {
    std::vector<int> context;       ///< the context's ids, its trailing whitespace left out
    std::vector<int> continuation;  ///< the ids that follow them in the whole text's encoding
};

/// lm-eval's `_encode_pair` for a causal model: the context's trailing whitespace (every character
/// Python's `str.rstrip()` removes: ASCII's six, U+001C..U+001F, U+0085, U+00A0 and Unicode's
/// spaces) moves to the front of the continuation; context + continuation is encoded whole and the
/// continuation's ids are the whole's after as many ids as the context's own encoding has. Nothing
/// is prepended (GPT-2's tokenizer adds no BOS). When BPE merges across the cut, those ids are not
/// the continuation's own encoding, and may even be none (lm-eval does not check; score_choices
/// refuses a choice with no ids). Introduced in chapter 11.
/// @param tokenizer the model's tokenizer
/// @param context the context, not empty (lm-eval asserts it)
/// @param continuation the text to score after it
/// @return the two id lists
/// @throws Error for an empty context
EncodedPair encode_pair(const Tokenizer& tokenizer, std::string_view context, std::string_view continuation);

/// How long a choice is, by lm-eval's two measures. Introduced in chapter 11.
struct ChoiceLength {
    size_t chars = 0;  ///< Unicode characters (code points): Python's len(choice), lm-eval's completion_len
    size_t bytes = 0;  ///< UTF-8 bytes: lm-eval's byte_length
};

/// A choice's length in characters and bytes, taken on the choice alone (not the whitespace
/// encode_pair moves in front of it), as lm-eval takes it. Introduced in chapter 11.
/// @param choice valid UTF-8
/// @throws Error for invalid UTF-8
ChoiceLength choice_length(std::string_view choice);

/// One choice's score and length. Introduced in chapter 11.
struct ChoiceScore {
    ContinuationScore score;  ///< the loglikelihood of the choice after the context, and is_greedy
    ChoiceLength length;      ///< the choice's length in characters and bytes
};

/// Score every choice of `item` after its context, as lm-eval's loglikelihood requests: encode_pair
/// on (context, choice), then score_continuation on the ids (one forward per choice). Introduced in
/// chapter 11.
/// @param model the model
/// @param tokenizer the model's tokenizer
/// @param item the question, checked by check_choice_item
/// @return one score per choice, in the item's order
/// @throws Error for a malformed item, a choice whose ids with the context's exceed the model's
///   context (lm-eval would cut the context's left end; this refuses), or one left with no ids
std::vector<ChoiceScore> score_choices(const Gpt2& model, const Tokenizer& tokenizer, const ChoiceItem& item);

/// lm-eval's multiple-choice rules (ConfigurableTask.process_results). Introduced in chapter 11.
enum class ChoiceRule {
    Acc,       ///< `acc`: the highest sum of log-probabilities
    AccNorm,   ///< `acc_norm`: the highest sum divided by the choice's length in characters
    AccBytes,  ///< `acc_bytes`: the highest sum divided by the choice's length in UTF-8 bytes
};

/// The rules, in the order above. Introduced in chapter 11.
inline constexpr ChoiceRule kChoiceRules[] = {ChoiceRule::Acc, ChoiceRule::AccNorm, ChoiceRule::AccBytes};

/// lm-eval's name of a rule: "acc", "acc_norm" or "acc_bytes". Introduced in chapter 11.
/// @param rule the rule
std::string to_string(ChoiceRule rule);

/// The value `rule` compares: the sum, the sum per character or the sum per byte. Introduced in
/// chapter 11.
/// @param score one choice's score
/// @param rule the rule
double choice_value(const ChoiceScore& score, ChoiceRule rule);

/// The choice `rule` picks: the index of the highest choice_value, the first of equal ones
/// (np.argmax). Introduced in chapter 11.
/// @param scores every choice's score, at least one
/// @param rule the rule
/// @throws Error for no scores
int pick_choice(const std::vector<ChoiceScore>& scores, ChoiceRule rule);

/// Accuracy over items, with lm-eval's standard error. Introduced in chapter 11.
struct Accuracy {
    size_t correct = 0;  ///< items answered right
    size_t items = 0;    ///< items counted
    /// Count one item. Introduced in chapter 11.
    /// @param hit whether it was answered right
    void add(bool hit);
    /// The fraction answered right: lm-eval's mean of the 0/1 hits. Introduced in chapter 11.
    /// @return correct / items; 0 for no items
    double value() const;
    /// lm-eval's `mean_stderr`: the hits' sample standard deviation (dividing by n - 1) over
    /// sqrt(n), which for 0/1 hits is sqrt(p (1 - p) / (n - 1)). Introduced in chapter 11.
    /// @return the standard error, or std::nullopt for fewer than two items (lm-eval prints "N/A")
    std::optional<double> standard_error() const;
};

/// The accuracy of guessing at random: the mean over items of 1 / (number of choices). Introduced
/// in chapter 11.
/// @param items the task
/// @return 1/4 for four choices each; 0 for no items
double chance_accuracy(const std::vector<ChoiceItem>& items);

/// A task's result: each item's scores, each rule's accuracy, and what an evaluation gets when the
/// server returns no prompt logprobs (an `echo` that brings back no numbers): every choice
/// scores the same, np.argmax picks the first, and the accuracy is the share of items whose answer
/// is first. Introduced in chapter 11.
struct TaskResult {
    std::vector<std::vector<ChoiceScore>> scores;  ///< per item, per choice
    std::vector<Accuracy> by_rule;                 ///< per rule of kChoiceRules, in that order
    Accuracy without_logprobs;                     ///< every sum equal: the first choice each time
    double chance = 0;                             ///< chance_accuracy of the items
};

/// Score every item (score_choices) and count each rule's hits. Introduced in chapter 11.
/// @param model the model
/// @param tokenizer its tokenizer
/// @param items the task's items
/// @return the scores and accuracies
/// @throws Error as score_choices
TaskResult evaluate_choice_task(const Gpt2& model, const Tokenizer& tokenizer, const std::vector<ChoiceItem>& items);

}  // namespace decodebook
