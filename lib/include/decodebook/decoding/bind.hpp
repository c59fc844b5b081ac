#pragma once
/// @file decoding/bind.hpp
/// @brief Chapter 10: the step that binds a config to the tokenizer in use, before decoding: the
/// constraint built for its vocabulary (chapter 09), DRY's sequence breakers turned from text into
/// token sequences, and every token id a knob names checked against the vocabulary.
#include <string>
#include <vector>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace decodebook {

/// DRY's sequence breakers as token sequences, by llama.cpp's rule (get_overlapping_token_sequences
/// in src/llama-sampler.cpp, from koboldcpp): for each breaker (cut to 40 bytes, as llama.cpp does),
/// every token whose text contains the whole breaker is a breaker alone ({id}); every token whose
/// text ends with a proper prefix of the breaker is the head of a breaker whose tail is the
/// tokenization of the rest of it, cut to 20 tokens ({id, tail...}). Duplicates are dropped; the
/// order is by breaker, then by id. Introduced in chapter 10.
/// @param tokenizer the tokenizer whose vocabulary the breakers are found in
/// @param breakers the breakers' text (config.dry_sequence_breakers); an empty one is skipped
std::vector<std::vector<int>> dry_breaker_sequences(const Tokenizer& tokenizer, const std::vector<std::string>& breakers);

/// Refuse a token id a knob names (logit_bias, sequence_bias, bad_words_ids, suppress_tokens,
/// begin_suppress_tokens) that is not below `vocab_size`, and knobs that together ban every token
/// at the first step (suppress_tokens, begin_suppress_tokens, a -inf logit_bias or one-token
/// sequence_bias). Introduced in chapter 10.
/// @throws Error naming the knob, the id and the vocabulary size, or the knobs that ban them all.
void check_knob_ids(const GenerationConfig& config, int vocab_size);

/// Bind `config` to a tokenizer, once, before decoding (every program does it where it builds its
/// request): validate it, check the ids its knobs name (check_knob_ids), build config.constraint
/// (make_constraint, chapter 09) and, when DRY is on, fill config.dry_breaker_ids
/// (dry_breaker_sequences). Introduced in chapter 10.
/// @param config the knobs; constraint and dry_breaker_ids are written
/// @param tokenizer the tokenizer in use
/// @param eos_ids the ids that end generation (the constraint allows them only at a whole match)
/// @throws Error on a bad config, an id outside the vocabulary, or a constraint make_constraint refuses.
void bind_to_tokenizer(GenerationConfig& config, const Tokenizer& tokenizer, const std::vector<int>& eos_ids);

}  // namespace decodebook
