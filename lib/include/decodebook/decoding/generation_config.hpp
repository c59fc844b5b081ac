#pragma once
/// @file decoding/generation_config.hpp
/// @brief Every decoding parameter, declared once (chapters 02-06): `GenerationConfig` and the
/// knob table that validation, `--help`, every program's flags, `--show-config`, the REPL's
/// `:set`/`:show` and the test helpers all read.
///
/// Names follow Hugging Face's `GenerationConfig`. A knob is spelled twice by necessity: its HF
/// name (`top_p`, used in golden files and messages) and its flag (`--top-p`, `:set top-p`).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace decodebook {
struct StageTable;
}  // namespace decodebook

namespace decodebook {

struct Constraint;  // decoding/constraint.hpp (chapter 09)

/// llama.cpp's default DRY sequence breakers: a newline, a colon, a double quote and an asterisk. Introduced in chapter 10.
std::vector<std::string> default_dry_sequence_breakers();

/// Which tokens the repetition penalty looks at. Introduced in chapter 04.
enum class PenaltyScope {
    PromptAndOutput,  ///< "prompt_and_output" (HF and vLLM): every token of the prompt and the output
    OutputOnly,       ///< "output_only": only generated tokens
    LastN,            ///< "last_n" (llama.cpp): the last `penalty_last_n` tokens of prompt + output
};

/// The spelling of a scope: "prompt_and_output", "output_only" or "last_n". Introduced in chapter 04.
std::string to_string(PenaltyScope scope);
/// Parse a scope's spelling. Introduced in chapter 04.
/// @throws Error naming the accepted values.
PenaltyScope parse_penalty_scope(const std::string& text);

/// Processor orders of the engines decodebook compares. Introduced in chapter 03.
enum class ChainOrder {
    HuggingFace,  ///< "hf": penalties -> temperature -> top-k -> top-p -> min-p -> sample
    LlamaCpp,     ///< "llama.cpp": penalties -> top-k -> top-p -> min-p -> temperature -> sample
    Vllm,         ///< "vllm": penalties -> temperature -> min-p -> top-k -> top-p -> sample
};

/// The spelling of an order: "hf", "llama.cpp" or "vllm". Introduced in chapter 03.
std::string to_string(ChainOrder order);

/// Parse an order's spelling. Introduced in chapter 03.
/// @throws Error naming the accepted values.
ChainOrder parse_chain_order(const std::string& text);

/// Beam search's stopping rule (HF's `early_stopping`). Introduced in chapter 05.
enum class EarlyStopping {
    Heuristic,  ///< "false" (HF's default): stop when the best running beam, scored at the current
                ///< length, cannot beat the worst finished hypothesis
    Done,       ///< "true": stop as soon as num_beams hypotheses are finished
    Never,      ///< "never": stop only when no running beam can beat a finished one (canonical)
};
/// "false", "true" or "never". Introduced in chapter 05.
std::string to_string(EarlyStopping rule);
/// @throws Error naming the accepted values. Introduced in chapter 05.
EarlyStopping parse_early_stopping(const std::string& text);

/// How a finished beam's summed log-probability is normalised by length. Introduced in chapter 05.
enum class BeamScoring {
    HuggingFace,  ///< "hf": / generated_len ^ length_penalty (prompt excluded, EOS counted)
    Vllm,         ///< "vllm": / (prompt + generated, EOS not counted) ^ length_penalty
};
/// "hf" or "vllm". Introduced in chapter 05.
std::string to_string(BeamScoring scoring);

/// How many tokens a draft model proposes next round (HF's `num_assistant_tokens_schedule`).
/// Introduced in chapter 08.
enum class AssistantSchedule {
    Constant,   ///< "constant" (HF's default): num_assistant_tokens every round
    Heuristic,  ///< "heuristic": +2 after a round whose drafts were all kept, else -1 (at least 1)
};
/// "constant" or "heuristic". Introduced in chapter 08.
std::string to_string(AssistantSchedule schedule);

/// How the target decides on a drafted token. Introduced in chapter 08.
enum class VerifyRule {
    Leviathan,         ///< "leviathan" (HF, vLLM): keep with min(1, p/q), else draw from max(0, p - q)
    SampleAndCompare,  ///< "sample_and_compare" (llama.cpp): draw the target's own token, keep the draft if they match
};
/// "leviathan" or "sample_and_compare". Introduced in chapter 08.
std::string to_string(VerifyRule rule);
/// @throws Error naming the accepted values. Introduced in chapter 08.
VerifyRule parse_verify_rule(const std::string& text);
/// @throws Error naming the accepted values. Introduced in chapter 08.
AssistantSchedule parse_assistant_schedule(const std::string& text);
/// @throws Error naming the accepted values. Introduced in chapter 05.
BeamScoring parse_beam_scoring(const std::string& text);

/// Which stop string wins when several match. Introduced in chapter 06.
enum class StopMatch {
    Earliest,      ///< "earliest" (llama.cpp): the one that starts first in the text
    Vllm,          ///< "vllm" (vLLM today, since vllm-project/vllm PR #49391): the one that completes
                   ///< first in the text; at the same end, the first in the list
    ListOrder,     ///< "list_order" (vLLM before PR #49391): the first in the list that matches
    TokenOverlap,  ///< "token_overlap" (HF): only a stop that overlaps the last token counts
};
/// "earliest", "vllm", "list_order" or "token_overlap". Introduced in chapter 06.
std::string to_string(StopMatch rule);
/// @throws Error naming the accepted values. Introduced in chapter 06.
StopMatch parse_stop_match(const std::string& text);

/// Every decoding parameter, with Hugging Face's names and defaults, except `top_k`: HF samples
/// with top_k = 50 by default, decodebook with 0 = off, so each chapter adds one filter at a time.
/// Programs may start from other defaults (chapters 02-04 sample by default). Introduced in chapter 02.
struct GenerationConfig {
    // -- length and stopping
    int max_new_tokens = 32;  ///< stop after this many new tokens (>= 1)
    int min_new_tokens = 0;   ///< every EOS id is masked (-inf) until this many new tokens (HF); 0 = off
    /// End-of-sequence ids: generating any of them stops, and it stays in the ids (HF).
    /// nullopt: the model's `eos_token_id`; an empty list: never stop on a token.
    std::optional<std::vector<int>> eos_token_id = std::nullopt;
    /// Stop strings (vLLM's `stop`): generation ends when the text contains one. Introduced in chapter 06.
    std::vector<std::string> stop{};
    bool include_stop_str_in_output = false;  ///< vLLM's flag: keep the matched stop in the text
    StopMatch stop_match = StopMatch::Earliest;  ///< which of several matching stops wins
    /// Hugging Face's decode flag: special tokens (`<|endoftext|>`) are left out of the text, never
    /// out of the ids. false keeps them, as HF's `decode` does by default (vLLM's default is true).
    /// Introduced in chapter 01.
    bool skip_special_tokens = false;
    // -- sampling
    bool do_sample = false;           ///< false: greedy (argmax after the penalties), as HF's default
    float temperature = 1.0f;         ///< z / T when sampling; 0 = greedy; must be >= 0
    int top_k = 0;                    ///< keep the k most likely (ties kept); 0 = off
    float top_p = 1.0f;               ///< nucleus mass in [0, 1]; 1 = off; 0 keeps one token
    float min_p = 0.0f;               ///< keep p >= min_p * p_max, in [0, 1]; 0 = off
    int min_tokens_to_keep = 1;       ///< the truncations never keep fewer (>= 1)
    ChainOrder order = ChainOrder::HuggingFace;  ///< where temperature and min-p sit in the chain
    uint64_t seed = 42;               ///< the coin stream of the sampler (any 64-bit value)
    // -- penalties (applied whether sampling or not, as HF's logits processors)
    float repetition_penalty = 1.0f;  ///< CTRL penalty theta > 0; 1 = off
    PenaltyScope penalty_scope = PenaltyScope::PromptAndOutput;  ///< tokens the repetition penalty sees
    int penalty_last_n = 64;          ///< window for PenaltyScope::LastN (>= 1)
    float presence_penalty = 0.0f;    ///< OpenAI presence penalty in [-2, 2], over the output
    float frequency_penalty = 0.0f;   ///< OpenAI frequency penalty in [-2, 2], over the output
    int no_repeat_ngram_size = 0;     ///< ban repeating any n-gram (HF); 0 = off
    // -- the field's other samplers (chapter 10). Each runs only in the orders of the engines that
    //    have it (validate refuses the others, naming them); sampling/other_samplers.hpp has the rules.
    float typical_p = 1.0f;           ///< locally typical mass in (0, 1]; 1 = off (HF, llama.cpp)
    float epsilon_cutoff = 0.0f;      ///< remove p < epsilon, in [0, 1); 0 = off (HF)
    float eta_cutoff = 0.0f;          ///< remove p < min(eta, sqrt(eta) e^-H), in [0, 1); 0 = off (HF)
    float top_n_sigma = -1.0f;        ///< keep logits >= max - n sigma; <= 0 = off (llama.cpp's -1)
    float xtc_probability = 0.0f;     ///< chance per step that XTC removes the top choices, in [0, 1]; 0 = off (llama.cpp)
    float xtc_threshold = 0.1f;       ///< XTC's threshold in [0, 1]; > 0.5 = off (llama.cpp's default 0.1)
    int mirostat = 0;                 ///< 0 = off, 1 = mirostat, 2 = mirostat 2.0 (llama.cpp)
    float mirostat_tau = 5.0f;        ///< mirostat's target surprise in bits (> 0)
    float mirostat_eta = 0.1f;        ///< mirostat's learning rate (> 0)
    float dynatemp_range = 0.0f;      ///< dynamic temperature: T +- range by entropy, >= 0; 0 = off (llama.cpp)
    float dynatemp_exponent = 1.0f;   ///< exponent of the normalised entropy (> 0)
    float dry_multiplier = 0.0f;      ///< DRY's strength, >= 0; 0 = off (llama.cpp)
    float dry_base = 1.75f;           ///< DRY's base (>= 1)
    int dry_allowed_length = 2;       ///< repeats shorter than this are free (>= 0)
    int dry_penalty_last_n = -1;      ///< tokens DRY looks back over; -1 = all, 0 = off
    /// DRY's sequence breakers (llama.cpp's defaults): a repeat never reaches back across one.
    std::vector<std::string> dry_sequence_breakers = default_dry_sequence_breakers();
    std::vector<std::pair<int, float>> logit_bias{};                 ///< token id -> bias (llama.cpp, vLLM)
    std::vector<std::pair<std::vector<int>, float>> sequence_bias{};  ///< token sequence -> bias (HF)
    std::vector<std::vector<int>> bad_words_ids{};                   ///< token sequences never to complete (HF, vLLM)
    std::vector<int> suppress_tokens{};                              ///< ids always -inf (HF)
    std::vector<int> begin_suppress_tokens{};                        ///< ids -inf at the first new token (HF)
    /// dry_sequence_breakers as token sequences for the tokenizer in use (the same binding step
    /// that builds `constraint`): not a knob. The chain refuses DRY with breakers but none bound.
    std::shared_ptr<const std::vector<std::vector<int>>> dry_breaker_ids{};
    // -- beam search (chapter 05)
    int num_beams = 1;                ///< hypotheses kept per step; 1 = no beam search
    float length_penalty = 1.0f;      ///< exponent of the length a finished score is divided by (1 is not neutral)
    EarlyStopping early_stopping = EarlyStopping::Heuristic;  ///< when beam search ends
    int num_return_sequences = 1;     ///< finished hypotheses returned, <= num_beams
    BeamScoring beam_scoring = BeamScoring::HuggingFace;       ///< the length a score is normalised by
    // -- speculative decoding (chapter 08): used when a program is given a drafter
    int num_assistant_tokens = 20;    ///< tokens a draft model proposes per round, at first (HF's default 20)
    AssistantSchedule num_assistant_tokens_schedule = AssistantSchedule::Constant;  ///< how that number moves
    int prompt_lookup_num_tokens = 0;  ///< > 0: draft by prompt lookup, this many tokens per round (HF); 0 = off
    int max_matching_ngram_size = 2;   ///< prompt lookup tries n-grams this long first (HF's default 2)
    /// 0: Hugging Face's lookup rule (n from max_matching_ngram_size down to 1, leftmost match);
    /// n >= 1: vLLM's (longest n-gram of at least n tokens, earliest occurrence; vLLM's `prompt_lookup_min`).
    int prompt_lookup_min = 0;
    VerifyRule verify_rule = VerifyRule::Leviathan;  ///< how a drafted token is kept (both are exact)
    // -- constrained decoding (chapter 09): at most one of the three (vLLM's rule)
    std::string regex{};               ///< the whole output must match this regex; empty = off
    std::vector<std::string> choice{};  ///< the whole output must be one of these strings; empty = off
    std::string json_schema{};         ///< a JSON schema file the output must satisfy; empty = off
    /// The constraint built from regex, choice or json_schema for the tokenizer in use
    /// (make_constraint, decoding/constraint.hpp): not a knob. The loops refuse a config that asks
    /// for a constraint without one built.
    std::shared_ptr<Constraint> constraint{};
};

/// The groups a program chooses its knobs by. Introduced in chapter 02.
enum class KnobGroup {
    Length,     ///< max_new_tokens: every program
    Stopping,   ///< min_new_tokens, eos_token_id, stop, include_stop_str_in_output, stop_match, skip_special_tokens
    Sampling,   ///< do_sample, temperature, top_k, top_p, min_p, min_tokens_to_keep, order, seed; chapter 10's
                ///< typical_p, epsilon_cutoff, eta_cutoff, top_n_sigma, xtc_*, mirostat*, dynatemp_*
    Penalties,  ///< repetition, presence, frequency, no-repeat-ngram; chapter 10's dry_*, logit_bias,
                ///< sequence_bias, bad_words_ids, suppress_tokens, begin_suppress_tokens
    Beams,      ///< num_beams, length_penalty, early_stopping, num_return_sequences, beam_scoring
    Speculative,  ///< num_assistant_tokens, num_assistant_tokens_schedule, prompt_lookup_num_tokens,
                  ///< max_matching_ngram_size, prompt_lookup_min, verify_rule (chapter 08)
    Constraint,   ///< regex, choice, json_schema (chapter 09)
};

/// One row of the table: everything about one knob, written once. Introduced in chapter 02.
struct Knob {
    std::string name;        ///< Hugging Face's name, e.g. "top_p"
    std::string flag;        ///< the command-line name without dashes, e.g. "top-p"
    KnobGroup group;         ///< which programs take it
    std::string help;        ///< one line for `--help`
    std::string rule;        ///< the valid values, e.g. "in [0, 1] (1 = off)"
    bool implies_sampling;   ///< giving it on a command line (or :set) turns do_sample on
    std::function<std::string(const GenerationConfig&)> get;          ///< the value, as text
    std::function<void(GenerationConfig&, const std::string&)> set;  ///< parse, check, store
    std::function<bool(const GenerationConfig&)> valid;               ///< the stored value is valid
    bool repeatable = false;  ///< a list: each `--flag VALUE` on a command line adds to it (`add`)
    /// A repeatable knob: parse one `--flag VALUE` and append what it holds (`set` replaces).
    std::function<void(GenerationConfig&, const std::string&)> add = {};
};

/// The table, in the order `--help` and `--show-config` print it. Introduced in chapter 02.
const std::vector<Knob>& knobs();

/// The row whose name ("top_p") or flag ("top-p") is `name`. Introduced in chapter 02.
/// @throws Error listing the knobs when there is none.
const Knob& find_knob(const std::string& name);

/// Set one knob from text, as a command line or the REPL does: the value is parsed and checked,
/// and a knob that implies sampling turns do_sample on. Introduced in chapter 02.
/// @throws Error naming the knob, the bad value and the valid range; the config is unchanged.
void set_knob(GenerationConfig& config, const std::string& name, const std::string& value);

/// Check every knob, and the knobs together: min_new_tokens <= max_new_tokens,
/// num_return_sequences <= num_beams, no sampling with beams, no stop strings with beams (beam
/// search does not apply them: refused rather than ignored), prompt_lookup_min <=
/// max_matching_ngram_size; from chapter 10, a sampler only under an order whose engine has it
/// (dry_multiplier only under llama.cpp's order, the message naming the orders that have it), and
/// mirostat (llama.cpp's order) without the knobs its chain ignores (top_k, top_p, min_p,
/// typical_p, top_n_sigma, XTC, DRY, the penalties, dynatemp), beams, prompt lookup, do_sample
/// false or temperature 0. Token ids are checked against a vocabulary by check_knob_ids
/// (decoding/bind.hpp). Which engine has which sampler, and what a mirostat chain ignores, come
/// from `stages` (decoding/stages.hpp; the library's stage_table() unless a test passes its own).
/// Introduced in chapter 02.
/// @throws Error on the first bad value: "top_p = 1.5 is invalid: it must be in [0, 1] (1 = off)".
void validate(const GenerationConfig& config, const StageTable& stages);
/// validate(config, stage_table()). Introduced in chapter 02.
void validate(const GenerationConfig& config);

/// The loops a config can run. Introduced in chapter 08.
enum class DecodeLoop {
    Plain,        ///< the general loop, one token per step (chapter 02; on the cache, chapter 07)
    Beams,        ///< beam search (chapter 05): num_beams > 1
    Speculative,  ///< speculative decoding (chapter 08): a draft model, or prompt_lookup_num_tokens > 0
};

/// Which loop runs `config`: every program that runs what a config asks for dispatches on this.
/// Introduced in chapter 08.
/// @param config the knobs (num_beams, prompt_lookup_num_tokens, mirostat)
/// @param has_draft_model a draft model was given (`--assistant-model`)
/// @throws Error for beam search with a drafter (HF's assisted generation is greedy or sampling),
/// a draft model with prompt lookup (one drafter per round; HF would silently use prompt lookup),
/// or a draft model with mirostat (make_drafter's refusal, known here before any output).
DecodeLoop decode_loop(const GenerationConfig& config, bool has_draft_model);

/// "max_new_tokens 32, do_sample true, temperature 0.7, ..." for the knobs of `groups`
/// (all of them when empty). Introduced in chapter 02.
std::string describe(const GenerationConfig& config, const std::vector<KnobGroup>& groups = {});

/// The EOS ids a generation stops at: config.eos_token_id, or the model's when that is unset
/// (-1 in the model: none). Introduced in chapter 02.
std::vector<int> resolve_eos_ids(const GenerationConfig& config, int model_eos_token_id);

}  // namespace decodebook
