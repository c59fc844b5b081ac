#pragma once
/// @file course/logprobs_report.hpp
/// @brief Chapter 11: how a program shows a text's logprobs: a table per token for the terminal,
/// and the OpenAI completions `logprobs` object (`tokens`, `token_logprobs`, `top_logprobs`,
/// `text_offset`) as vLLM's server builds it (vllm/entrypoints/openai/serving_completion.py,
/// `_create_completion_logprobs`, at 3e342658).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/decoding/scoring.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

/// One token of a reported text: its id, and its numbers, or none (the prompt's first token; a
/// generated token when only the prompt's were asked for). Introduced in chapter 11.
struct LogprobsRow {
    int token = 0;                       ///< the id
    std::optional<StepLogprobs> entry;   ///< its value, rank and top entries; none: null in the JSON
};

/// The rows of prompt_logprobs: the first with no numbers. Introduced in chapter 11.
/// @param prompt the prompt's ids
/// @param entries prompt_logprobs(model, prompt, k)
/// @return one row per prompt token
std::vector<LogprobsRow> prompt_rows(const std::vector<int>& prompt, const std::vector<std::optional<PromptLogprob>>& entries);

/// The rows of a generation's records (make_logprobs_sampler, speculative decoding's LogprobsLog,
/// transition_scores), or rows with no numbers for `ids` when `records` is empty. Introduced in chapter 11.
/// @param ids the generated ids
/// @param records one per id, or none
/// @return one row per id
/// @throws Error when records are given for some ids only
std::vector<LogprobsRow> generated_rows(const std::vector<int>& ids, const std::vector<StepLogprobs>& records);

/// A token as the API spells it: its bytes, each invalid UTF-8 sequence replaced by U+FFFD (a
/// token that holds part of a character), as vLLM's per-token decode. Introduced in chapter 11.
/// @param tokenizer the tokenizer
/// @param id a token id
/// @return valid UTF-8
std::string api_token(const Tokenizer& tokenizer, int id);

/// Print a table of `rows`: position, token, value, rank, then its top entries as
/// `token value` pairs; a row with no numbers shows a dash. Introduced in chapter 11.
/// @param out where
/// @param title the first line, e.g. "logprobs (raw_logprobs, top 3)"
/// @param rows the rows
/// @param tokenizer to spell the tokens
void print_logprobs_table(std::ostream& out, const std::string& title, const std::vector<LogprobsRow>& rows,
                          const Tokenizer& tokenizer);

/// The value an API returns for `value`: -9999.0 for -inf and anything below it (JSON has no
/// infinity; vLLM's `max(logprob, -9999.0)`). Introduced in chapter 11.
/// @param value a logprob or logit
/// @return a finite number
double api_logprob(float value);

/// The OpenAI completions `logprobs` object of `rows`: `tokens` (api_token), `token_logprobs`
/// (api_logprob, or null), `top_logprobs` (an object token -> value per row, or null; two ids
/// that spell the same text keep the later one, as a Python dict does), `text_offset` (each
/// token's start in the text, in code points: the running sum of the previous tokens' lengths).
/// Introduced in chapter 11.
/// @param rows the prompt's rows (echo), then the generated ones
/// @param tokenizer to spell the tokens
/// @return the object
nlohmann::ordered_json openai_logprobs(const std::vector<LogprobsRow>& rows, const Tokenizer& tokenizer);

}  // namespace decodebook
