#pragma once
/// @file decoding/constraint.hpp
/// @brief Constrained decoding (chapter 09): the automaton of `--regex`, `--choice` or
/// `--json-schema` over a vocabulary, used as a mask at the head of every chain (greedy,
/// sampling, beam search, speculative verification) and as a stopping criterion for a dead end.
#include <memory>
#include <string>
#include <vector>

#include "decodebook/base/vocabulary.hpp"
#include "decodebook/constrain/token_index.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/stopping.hpp"

namespace decodebook {

/// A constraint built for one vocabulary: what `--show-chain` calls it, and its token index.
/// Introduced in chapter 09.
struct Constraint {
    std::string name;                   ///< e.g. "regex(0|[1-9][0-9]*)", "choice(3)", "json_schema(FILE)"
    std::string regex;                  ///< the whole-output regex it was compiled from
    std::shared_ptr<TokenIndex> index;  ///< the automaton and the allowed tokens of its states
};

/// Which constraint the config asks for: "regex", "choice", "json_schema", or "" for none.
/// Introduced in chapter 09.
/// @param config the knobs (at most one of regex, choice, json_schema is set: validate checks it)
std::string constraint_kind(const GenerationConfig& config);

/// The regex of the config's constraint: `regex` as it is, `choice`'s escaped alternation, or the
/// regex of the schema in the file `json_schema` (constrain/json_schema.hpp). Introduced in chapter 09.
/// @param config the knobs
/// @throws Error for an unreadable schema file or a schema outside the supported subset.
std::string constraint_regex(const GenerationConfig& config);

/// Compile the config's regex and the regex of its JSON schema now (reading the schema file), so a
/// bad one is refused where it is given (a command line, the REPL's :set) rather than when the
/// constraint is bound. The knob table takes their text only. Introduced in chapter 09.
/// @throws Error as constraint_regex and compile_regex do.
void check_constraint(const GenerationConfig& config);

/// Build the config's constraint for a vocabulary (nullptr when it asks for none), refusing
/// before any decoding a pattern that matches nothing, and one no token of the vocabulary can
/// begin. Introduced in chapter 09.
/// @param config the knobs
/// @param vocabulary the tokenizer's bytes per id and special ids
/// @param eos_ids the ids that end generation (allowed only where the output is a whole match)
/// @throws Error naming the problem (the regex compiler's, the schema converter's, or these).
std::shared_ptr<Constraint> make_constraint(const GenerationConfig& config, const Vocabulary& vocabulary,
                                            const std::vector<int>& eos_ids);

/// The mask: every logit -inf except the tokens the constraint allows after `context.generated`.
/// LogitsChain puts it first when the config holds a constraint. Introduced in chapter 09.
/// @param constraint the constraint (shared: its index caches the states it visits)
Processor constraint_mask(std::shared_ptr<Constraint> constraint);

/// Stop with FinishReason::DeadEnd when the tokens so far lead to a state where the vocabulary
/// allows nothing (no token continues a match and the output is not a whole match). Added by
/// stopping_criteria when the config holds a constraint. Introduced in chapter 09.
/// @param constraint the constraint
StoppingCriterion dead_end_criterion(std::shared_ptr<Constraint> constraint);

}  // namespace decodebook
