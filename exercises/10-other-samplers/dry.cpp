// Exercise 10.2 - DRY's penalty for one candidate.                 Chapter 10: other samplers
//
// DRY ("don't repeat yourself", llama.cpp's sampler from koboldcpp) punishes the token that would
// extend a repeat of earlier text, more for a longer repeat. For one candidate token:
//   1. Its repeat length L: the largest L such that the last L tokens of `context`, followed by
//      `candidate`, occur earlier in `context`. An occurrence may overlap the end (in
//      [5, 5, 5, 5] the candidate 5 has L = 3). When `candidate` never follows anything in
//      `context` (it is not at positions 1 .. n-1), it repeats nothing: return 0.
//   2. The sequence breakers: a repeat never reaches back across one. If `context` holds a
//      breaker, L is at most the number of tokens after the last breaker. A candidate that is
//      itself a breaker is never penalised (return 0).
//   3. The penalty: multiplier * base^(L - allowed_length) when L >= allowed_length, else 0.
//      llama.cpp clamps the exponent so the power stays finite in float: when base > 1.000001,
//      the exponent is at most int(88.7228391f / std::log(base)) (with float arithmetic, as
//      llama.cpp writes it). Compute the power in double and return it as a float.
// multiplier 0 or base < 1 turns DRY off (return 0). Throw decodebook::Error (problem, fix) when
// multiplier or allowed_length is negative.
//
//   context [0, 1, 2, 0, 1] (llama.cpp's own case), multiplier 1, base 1.1, allowed_length 2:
//     candidate 2: [0, 1] then 2 occurs at 0..2, and [2, 0, 1] then 2 does not: L = 2;
//     2 >= 2, penalty 1 * 1.1^0                                                 -> 1
//     candidate 0: at position 3 it follows 2, not the last token 1: L = 0       -> 0
//     the same with multiplier 2                                                -> 2 for candidate 2
//   context [5, 9, 1, 2, 6, 5, 9, 1, 2], breakers {9}, multiplier 1, base 1.75:
//     candidate 6: [5, 9, 1, 2] then 6 occurs at 0..4, so L would be 4, but only 2 tokens
//     follow the last breaker: L = 2; allowed_length 2                          -> 1
//     allowed_length 3: 2 < 3                                                   -> 0
//     candidate 9 is a breaker                                                  -> 0
//
// Tested by: "ex10.2 ..." in tests/exercises/test_10_other_samplers.cpp (llama.cpp's five
// test_dry cases, each candidate's penalty; L == allowed_length and one below; breakers; the
// longest of several occurrences; overlapping repeats; the clamped exponent; bad input).
// Do not call decodebook::dry_repeat_length, dry_penalty or apply_dry: they are the answer.
// Graded by: ./grade 10
#include <algorithm>
#include <cmath>

#include "decodebook/exercises.hpp"

namespace decodebook {

float your_dry_penalty(const std::vector<int>& context, int candidate, const std::vector<int>& breakers,
                       float multiplier, float base, int allowed_length) {
    // TODO: find the longest repeat the candidate would extend, cap it at the last breaker, then
    // turn it into a penalty.
    (void)context, (void)candidate, (void)breakers, (void)multiplier, (void)base, (void)allowed_length;
    throw NotImplemented("10.2 (your_dry_penalty)", "exercises/10-other-samplers/dry.cpp");
}

}  // namespace decodebook
