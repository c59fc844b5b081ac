#pragma once
/// @file decoding/paged_serving.hpp
/// @brief Serving requests on a paged cache: blocks taken as requests grow, a prompt's cached
/// prefix reused, and a request preempted and recomputed when the pool runs out (chapter 12).
///
/// Chapter 07's serve_requests reserves for every running request a row as long as the longest
/// request. serve_paged keeps one pool of blocks instead (PagedKvCache holds the numbers,
/// BlockPool keeps the books): a request holds ceil(tokens / block_size) blocks and takes one
/// more only when it fills the last; a new prompt starts from the longest run of cached blocks
/// that match its start (prefix caching), and computes the rest; when a running request needs a
/// block and none is free, the most recently admitted request gives its blocks back and waits at
/// the head of the queue, to be recomputed from its prompt and the tokens it had made (vLLM v1's
/// recompute preemption, vllm/v1/core/sched/scheduler.py). On BatchKernels::Invariant (the
/// default) every product sums in one order whatever the batch and however a prompt is split
/// between the cache and the model, so each request's tokens are those it gets alone: with or
/// without cached prefixes, preempted or not.
#include <cstddef>
#include <vector>

#include "decodebook/decoding/block_pool.hpp"
#include "decodebook/decoding/serving.hpp"
#include "decodebook/model/gpt2.hpp"

namespace decodebook {

class Tokenizer;

/// serve_paged's knobs. Introduced in chapter 12.
struct PagedServeOptions {
    size_t max_running = 8;                          ///< the most requests running at once (vLLM's max_num_seqs)
    int num_blocks = 64;                             ///< blocks in the pool
    int block_size = 16;                             ///< positions per block (vLLM's default)
    bool prefix_caching = true;                      ///< reuse cached blocks (vLLM's enable_prefix_caching)
    FreeOrder free_order = FreeOrder::Lru;           ///< where freed blocks join the free queue
    BatchKernels kernels = BatchKernels::Invariant;  ///< prefill's and decode's products
    /// Tokens one step may compute (vLLM's max_num_batched_tokens with chunked prefill): every
    /// decode takes one, then prompts take chunks of what is left. At least max_running; 0: no
    /// budget, each prompt is prefilled whole in the step that admits it.
    size_t token_budget = 0;
};

/// Counts of one serve_paged run. Introduced in chapter 12.
struct PagedServeStats {
    ServeStats steps;          ///< prefill calls (one per chunk), decode steps, decoded tokens, idle time
    long prompt_tokens = 0;    ///< tokens admissions needed in the cache: prompts, and a resumed request's prompt and output
    long computed_tokens = 0;  ///< of those, tokens prefilled; the rest came from cached blocks (or, for a prompt
                               ///< preempted part way through its chunks, were never computed)
    PrefixCacheStats cache;    ///< the pool's prefix-cache counters
    int preemptions = 0;       ///< times a running request gave its blocks back
    int peak_blocks = 0;       ///< the most blocks held by running requests at once
};

/// Serve `requests` (in order of arrival) on a pool of `options.num_blocks` blocks. A request of
/// n samples runs as n sequences. Each step first gives every running sequence that decodes one
/// token of the step's budget, then running prefills their next chunks, in order of admission
/// (Sarathi-Serve's decode-first batching); a sequence whose tokens need a block when none is
/// free preempts the last of the running list (itself, if it is the last), which gives its
/// blocks back and waits at the head of the queue, to recompute its prompt and output when
/// readmitted. If nothing was preempted, waiting requests are admitted first come first served
/// while the budget lasts, max_running leaves room for all their samples and the pool has the
/// blocks their first chunk needs beyond the cached prefix (the first that does not fit stops
/// admission, as vLLM's scheduler does). Then the model runs: each chunk one prefill call, all
/// decodes one call. A prefill that reaches its last token gives the logits its samples pick from:
/// the other samples then fork from the first (BlockPool::fork: the prompt's full blocks shared,
/// the partial one copied), and each picks with its own sampler (seed + k). A finished sequence
/// frees its blocks (cached ones stay cached until taken). Returns one ServedRequest per sample,
/// request by request and sample by sample; its `slot` is 0 (there are no rows), `admitted` its
/// first admission. The pool's books are checked at the end, every block free.
/// Introduced in chapter 12.
/// @param model the model (its shape sizes the pool)
/// @param tokenizer the token bytes for each generation's text; null: no text
/// @param requests what to serve, in order of arrival
/// @param options the pool and the scheduler's knobs
/// @param clock the serving clock, read after every model call (a fake one in tests)
/// @param stats if not null, the run's counts
/// @throws Error naming the fix: max_running 0 or above kMaxServeSlots, a token budget below
/// max_running, a pool of no blocks, a
/// request whose prompt + max_new_tokens does not fit the whole pool, whose n samples cannot start
/// together (more than max_running, or their first blocks more than the pool), or what
/// check_serve_requests refuses.
std::vector<ServedRequest> serve_paged(const Gpt2& model, const Tokenizer* tokenizer,
                                       const std::vector<ServeRequest>& requests, const PagedServeOptions& options,
                                       const ServeClock& clock, PagedServeStats* stats = nullptr);

}  // namespace decodebook
