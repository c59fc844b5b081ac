#pragma once
/// @file decoding/processor.hpp
/// @brief What a logits stage works on: the DecodeContext it may read, the Processor it is (a
/// name and an edit of the logits in place) and the Draw a chain's end records (chapters 02, 04).
#include <functional>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>

namespace decodebook {

/// What a processor may look at besides the logits: views of the caller's ids, so a context for
/// any prefix of a sequence costs nothing (chapter 08 checks k drafted positions at once).
/// Introduced in chapter 04.
struct DecodeContext {
    std::span<const int> prompt;     ///< the prompt's ids
    std::span<const int> generated;  ///< ids generated so far (a view of the loop's own vector)
    int step = 0;                    ///< index of the token being chosen (generated.size())
    std::span<const int> eos_ids{};  ///< the ids that end generation (min_new_tokens masks them)
};

/// One step of the chain: a name for `--show-chain` and the edit it makes to the logits.
/// Introduced in chapter 02.
struct Processor {
    std::string name;  ///< e.g. "top_p(0.9)"
    std::function<void(xt::xtensor<float, 1>& logits, const DecodeContext& context)> apply;  ///< edits in place
};

/// One pick seen from the coin's side: the token, the coin, the token's probability in the
/// distribution the coin was drawn from, and its slice of that distribution's CDF, so the
/// coin -> token mapping can be checked by hand (`--show-steps`). Introduced in chapter 02.
struct Draw {
    double coin = 0;       ///< the step's coin (drawn even when the step is greedy)
    int token = 0;         ///< the token chosen
    float processed = 0;   ///< its probability after the chain's processors (softmax of the processed logits)
    float raw = 0;         ///< its probability under the raw logits (T = 1, no processor)
    double from = 0;       ///< its slice [from, to) of the processed CDF (candidate_order, as a fraction
    double to = 0;         ///< of the total): when sampling, the token is chosen iff from <= coin < to
    bool greedy = false;   ///< argmax step: no coin was used
};

}  // namespace decodebook
