#pragma once
/// @file decoding/serving.hpp
/// @brief Serving many requests that arrive over time on one cache of `slots` rows: static
/// batching against continuous batching (chapter 07).
///
/// A server does not know its prompts in advance: requests arrive while others are running.
/// `serve_requests` runs a list of them, each with its arrival time, on a cache of a fixed number
/// of rows (slots), and says when each one waited, got its first token and finished. Both
/// schedules decode every busy row in one `Gpt2::decode` call on BatchKernels::Invariant, so a
/// request's tokens are exactly those it gets alone (generate_cached): only the timings differ.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/model/gpt2.hpp"

namespace decodebook {

class Tokenizer;

/// When a serving loop lets a waiting request into a free slot. Introduced in chapter 07.
enum class Scheduling {
    Static,      ///< only when every slot is free: a batch runs until its longest request ends (HF's generate on a batch)
    Continuous,  ///< at every step: a finished request's slot is refilled at the next step (iteration-level scheduling, Orca)
};

/// "static" or "continuous". Introduced in chapter 07.
const char* to_string(Scheduling scheduling);

/// One request to serve: what generate_cached takes, and when it arrives. Introduced in chapter 07.
struct ServeRequest {
    std::vector<int> prompt;  ///< the prompt's ids
    GenerationConfig config;  ///< its own knobs (length, stopping, sampling)
    uint64_t seed = 0;        ///< its sampler's seed (make_sampler(config, seed)), as vLLM's per-request seed
    double arrival = 0;       ///< when it arrives, on the serving clock (0 = when serving starts)
    /// Samples of this prompt (vLLM's SamplingParams.n; chapter 12's serve_paged): sample k draws
    /// from make_sampler(config, seed + k), as vLLM gives child k the seed + k. serve_requests
    /// serves 1 only.
    int n = 1;
};

/// What happened to one request, on the serving clock. Introduced in chapter 07.
struct ServedRequest {
    Generation generation;   ///< ids, text (with a tokenizer) and finish reason: as generate_cached alone
    size_t request = 0;      ///< which request it serves (its index in the list)
    int sample = 0;          ///< which of the request's n samples (0 with n = 1)
    size_t slot = 0;         ///< the cache row it ran in
    double arrival = 0;      ///< when it arrived
    double admitted = 0;     ///< when it got its slot and its prefill started (it queued from arrival to here)
    double first_token = 0;  ///< when its first token was made (the end of its prefill)
    double finished = 0;     ///< when its last token was made
    std::vector<double> token_times;  ///< when each token was made: the gaps are its inter-token latencies
    /// Each token's numbers (chapter 11), when chapter 12's PagedEngine::add asked for them; else empty.
    std::vector<StepLogprobs> logprobs;

    /// Time to first token: queueing and prefill, from arrival to the first token.
    double ttft() const { return first_token - arrival; }
    /// Time per output token after the first: (finished - first_token) / (tokens - 1); 0 for one token.
    double tpot() const;
};

/// The serving loop's clock. The loop never reads a clock of its own: it calls `now` once after
/// every model call (each prefill, each decode step) to stamp what that call made, and
/// `wait_until` when no request is running or waiting and the next one arrives later. Times are
/// counted from the start of serving, the origin of the requests' arrivals. A fake clock for tests
/// adds one unit per call of `now` (one unit per model call); wall_clock() is the real one.
/// Introduced in chapter 07.
struct ServeClock {
    std::function<double()> now;                 ///< the time now
    std::function<void(double)> wait_until;      ///< return at (or after) this time: nothing to do before it
    /// Told how many tokens each model call computed, just before `now` is read after it; may be
    /// empty. A fake clock can charge by them (chapter 12's cost model: a call costs a fixed
    /// part plus a part per token, which is what makes chunked prefill a trade).
    std::function<void(size_t)> computed = {};
};

/// Milliseconds of std::chrono::steady_clock since this call; wait_until sleeps. Introduced in chapter 07.
ServeClock wall_clock();

/// Counts of one serve_requests run, for the chapter's table. Introduced in chapter 07.
struct ServeStats {
    int prefills = 0;              ///< requests prefilled (one per request)
    int decode_steps = 0;          ///< decode calls made
    long decoded_tokens = 0;       ///< rows those calls computed (busy rows per step, summed)
    double idle = 0;               ///< time spent waiting for a request to arrive, on the serving clock
};

/// The most rows serve_requests' cache may have (vLLM's max_num_seqs defaults to 256; llama.cpp's
/// server takes --parallel slots). Introduced in chapter 07.
inline constexpr size_t kMaxServeSlots = 4096;

/// The latest arrival serve_requests takes, in the serving clock's units: one day in
/// milliseconds. A later one is no schedule (1e300 left every timing at -1e300). Introduced in
/// chapter 07.
inline constexpr double kMaxServeArrival = 86'400'000.0;

/// The checks of one request that every serving loop makes (chapter 12's PagedEngine::add makes
/// them alone): one token per step (no beams, no prompt lookup), n from 1 to kMaxServeSlots, and
/// what check_request checks. `index` names the request in messages. Introduced in chapter 07.
/// @return the EOS ids check_request resolved
/// @throws Error naming the request and the fix.
std::vector<int> check_serve_request(const ModelConfig& mc, const ServeRequest& request, size_t index);

/// The checks every serving loop makes before any work (chapter 07's serve_requests and chapter
/// 12's serve_paged): at least one request; arrivals finite, >= 0, at most kMaxServeArrival and
/// in order; then each request as check_serve_request checks it. Introduced in chapter 07.
/// @return per request, the EOS ids check_request resolved
/// @throws Error naming the request and the fix.
std::vector<std::vector<int>> check_serve_requests(const ModelConfig& mc, const std::vector<ServeRequest>& requests);

/// Serve `requests` (in order of arrival) on a cache of `slots` rows. Waiting requests queue in
/// arrival order (first come, first served). Each step of the loop first admits requests into
/// free slots, by `scheduling`: Static only when every slot is free (up to `slots` arrived
/// requests, then none until all of them finish); Continuous into every free slot. An admitted
/// request is prefilled into its row (the row is cleared first: a slot is reused) and picks its
/// first token. Then one decode call on BatchKernels::Invariant takes the last token of every busy
/// row; a request that meets its stopping criteria frees its slot. Returns one ServedRequest per
/// request, in the same order. Introduced in chapter 07.
/// @param model the model (its shape sizes the cache)
/// @param tokenizer the token bytes for each generation's text; null: no text
/// @param requests what to serve, in order of arrival
/// @param slots the cache's rows: the most requests running at once
/// @param scheduling when a waiting request may take a free slot
/// @param clock the serving clock, read after every model call (a fake one in tests)
/// @param positions positions per cache row; 0: enough for the longest request (prompt + max_new_tokens)
/// @param stats if not null, the run's counts
/// @throws Error naming the fix: slots 0 or more than kMaxServeSlots, no requests, arrivals out
/// of order, negative, not finite or after kMaxServeArrival, n other than 1, a request that asks for another loop
/// than one token per step (num_beams > 1, prompt lookup: decode_loop), a request that does not
/// fit a row of `positions`, or a bad request (check_request).
std::vector<ServedRequest> serve_requests(const Gpt2& model, const Tokenizer* tokenizer,
                                          const std::vector<ServeRequest>& requests, size_t slots,
                                          Scheduling scheduling, const ServeClock& clock, size_t positions = 0,
                                          ServeStats* stats = nullptr);

}  // namespace decodebook
