#pragma once
/// @file decoding/paged_engine.hpp
/// @brief Chapter 12's serving loop as an object that keeps its state between steps: requests
/// added while others run, each token told as it is made, a request dropped when its client goes
/// away (the engine behind decodebook-serve; serve_paged drives it).
///
/// One step is chapter 12's schedule (decoding/paged_serving.hpp says it in full): every running
/// sequence that decodes takes one token of the budget, then running prefills take their next
/// chunks, then waiting requests are admitted first come first served while the budget, the
/// places and the pool allow (unless someone was preempted this step); then the model runs and
/// each sequence picks. The engine is single-threaded: a server calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "decodebook/decoding/block_pool.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/paged_serving.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/serving.hpp"
#include "decodebook/decoding/token_logprobs.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/paged_kv_cache.hpp"

namespace decodebook {

class Tokenizer;

/// What a request hears from the engine, on the engine's thread, inside PagedEngine::step. Either
/// function may be empty. Introduced in chapter 12.
struct EngineObserver {
    /// A token was appended to sample `sample` of request `request`: the record append_token made
    /// (its id, and the text it released, stop strings held back as chapter 06 holds them), and
    /// its logprobs record when add asked for them (chapter 11), else null.
    std::function<void(size_t request, int sample, const StepRecord& record, const StepLogprobs* logprobs)> on_token;
    /// A sample finished: its generation, finish reason and times (`request` and `sample` say whose).
    std::function<void(ServedRequest&& finished)> on_finish;
};

/// Chapter 12's paged serving loop, a step at a time. Introduced in chapter 12.
class PagedEngine {
public:
    /// An engine with an empty pool.
    /// @param model the model (its shape sizes the pool; it must outlive the engine)
    /// @param tokenizer the token bytes for each generation's text; null: no text (it must outlive the engine)
    /// @param options the pool and the scheduler's knobs
    /// @param clock the serving clock: `now` is read after every model call, `computed` told first
    /// @throws Error naming the fix: max_running 0 or above kMaxServeSlots, a token budget below
    /// max_running, a pool of no blocks, or a clock without `now`.
    PagedEngine(const Gpt2& model, const Tokenizer* tokenizer, const PagedServeOptions& options, ServeClock clock);

    /// Check a request as add would, without adding it: check_serve_request's checks, then that
    /// prompt + max_new_tokens fits the pool, that its n samples can run at once and that their
    /// first blocks fit the pool. `index` names it in messages.
    /// @return the EOS ids check_request resolved
    /// @throws Error naming the request and the fix.
    std::vector<int> check(const ServeRequest& request, size_t index) const;

    /// Check a request (its arrival must be a finite time >= 0 on the clock) and queue it behind the
    /// waiting ones. Its samples get the next sequence numbers. Nothing changes when it is refused.
    /// @param request what to serve
    /// @param observer told of each token and each finished sample
    /// @param logprobs if given, each sample picks with make_logprobs_sampler (the same tokens) and
    /// records each token's numbers (chapter 11): told with each token, and in ServedRequest::logprobs
    /// @return the request's id: 0, 1, 2, ... in the order added
    /// @throws Error as check does, for a K outside 0..kMaxLogprobs, or when the engine has
    /// numbered INT_MAX sequences.
    size_t add(ServeRequest request, EngineObserver observer = {}, std::optional<LogprobsRequest> logprobs = {});

    /// Drop a request that is running or waiting: its running sequences give their blocks back
    /// (cached blocks stay cached), waiting ones leave the queue, and its observer hears nothing
    /// more. Call it between steps.
    /// @return false when no such request is running or waiting (finished, cancelled, or unknown)
    bool cancel(size_t request);

    /// One step: schedule, then the model calls, then the picks (observers told as tokens come).
    /// Does nothing when idle.
    /// @throws Error when a step with work admits and runs nothing (a bug: report it).
    void step();

    /// Whether nothing runs or waits.
    bool idle() const { return running_.empty() && waiting_.empty(); }
    /// Sequences running (a request of n samples not forked yet counts once).
    size_t running() const { return running_.size(); }
    /// Sequences waiting: arrived, or preempted, and not running.
    size_t waiting() const { return waiting_.size(); }
    /// The clock's last reading (after the last model call), or what the caller set with `advance`.
    double now() const { return t_; }
    /// Move the engine's time forward to `t` without a model call (a driver waiting for an arrival).
    void advance(double t);
    /// The run's counts so far; `cache` holds the pool's prefix-cache counters.
    PagedServeStats stats() const;
    /// The pool's books (its free blocks, its prefix cache).
    const BlockPool& pool() const { return pool_; }

private:
    struct Request {  // a request and its observer, until its last sample ends
        ServeRequest r;
        std::vector<int> eos_ids;  // as check_request resolved them
        size_t first = 0;          // its first sequence; sample k is first + k
        bool forked = false;       // its other samples run
        int remaining = 0;         // samples not finished
        EngineObserver observer;
    };
    struct Sequence {  // one sample: where it stands in the pool, its generation, its coins
        size_t request = 0;
        size_t held = 0;                         // tokens the pool holds for it
        size_t target = 0;                       // where its prefill ends
        std::unique_ptr<GenerationState> state;  // made at its first admission
        Sampler sampler;                         // its own coins: seed + sample
        bool records = false;                    // the sampler appends to logprobs (chapter 11)
        std::vector<StepLogprobs> logprobs;      // one record per token, when asked
        ServedRequest out;                       // what happened to it
    };

    Sequence& seq(size_t s);
    const Sequence& seq(size_t s) const;
    const std::vector<int>& prompt(size_t s) const;
    std::vector<int> tokens_of(size_t s) const;  // what sequence s needs in the cache: prompt + output
    size_t places(size_t s) const;               // running places s takes: n for a request not forked yet
    bool prefilling(size_t s) const;
    bool can_admit(size_t s, size_t budget) const;
    void schedule_and_run();                     // step's body: the schedule, the model calls, the picks
    bool schedule(size_t s, size_t n);           // n more tokens for running s; false: s was preempted
    size_t admit(size_t s, size_t budget);       // the cached prefix and a first chunk; returns the chunk
    void prefill_chunk(size_t s, size_t n);      // the model on s's next n tokens
    void fork(size_t s);                         // the other samples of s's request join it
    void decode(const std::vector<size_t>& sequences);
    void run_fused(const std::vector<size_t>& decodes, const std::vector<std::pair<size_t, size_t>>& chunks);
    void pick_after_prompt(size_t s, double ms);  // s's prompt is computed: fork its samples, each picks
    void preempt(size_t s);                      // give s's blocks back; s waits at the queue's head
    bool take(size_t s, double ms);              // s picks from `logits_`; true when it finished
    void end(size_t s);                          // s finished or was cancelled: forget it
    void finish_call(size_t tokens);             // tell and read the clock after a model call
    bool is_running(size_t s) const;

    const Gpt2& model_;
    const Tokenizer* tokenizer_;
    PagedServeOptions options_;
    ServeClock clock_;
    PagedServeStats stats_;
    BlockPool pool_;                                 // the books: tables, counts, cached prefixes
    PagedKvCache cache_;                             // the numbers: every layer's blocks
    std::unordered_map<size_t, Request> requests_;   // running or waiting, by id (nodes stay put: states view their prompts)
    std::unordered_map<size_t, Sequence> sequences_; // running or waiting, by number
    std::vector<size_t> running_;                    // sequences, in order of admission
    std::deque<size_t> waiting_;                     // arrived or preempted, not running
    size_t next_request_ = 0;                        // the next request's id
    size_t next_sequence_ = 0;                       // the next sequence's number
    xt::xtensor<float, 1> logits_;                   // (V) what the next pick reads
    double t_ = 0;                                   // the serving clock's last reading
};

}  // namespace decodebook
