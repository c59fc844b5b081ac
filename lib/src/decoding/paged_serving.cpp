// Chapter 12: serving on a paged cache. Chapter 07's loop (serving.cpp), with a pool of blocks
// for its rows: admission by free blocks, prefixes reused by block hash, recompute preemption.
// The scheduler follows vLLM v1's Scheduler.schedule() (vllm/v1/core/sched/scheduler.py): running
// requests first, each given the blocks its new token needs, preempting the last of the running
// list while none is free ("preempted_req = self.running.pop()", which goes back to the head of
// the waiting queue with its computed tokens forgotten); then waiting requests, in order, while
// the pool can hold them.
#include "decodebook/decoding/paged_serving.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <string>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/generate.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/paged_kv_cache.hpp"

namespace decodebook {
namespace {

// Refuse what cannot be served, before any work; returns the most positions a request needs.
size_t check_paged(const ModelConfig& mc, const std::vector<ServeRequest>& requests, const PagedServeOptions& o,
                   std::vector<std::vector<int>>& eos_ids) {
    if (o.max_running == 0 || o.max_running > kMaxServeSlots)
        throw Error("serve_paged got max_running " + std::to_string(o.max_running),
                    "let 1 to " + std::to_string(kMaxServeSlots) + " requests run at once");
    if (o.num_blocks < 1 || o.block_size < 1)
        throw Error("serve_paged got a pool of " + std::to_string(o.num_blocks) + " blocks of " +
                        std::to_string(o.block_size) + " positions",
                    "give the pool at least one block of at least one position (16 is vLLM's default)");
    eos_ids = check_serve_requests(mc, requests);
    size_t longest = 0;
    const size_t pool = static_cast<size_t>(o.num_blocks) * static_cast<size_t>(o.block_size);
    for (size_t i = 0; i < requests.size(); ++i) {
        const size_t need = requests[i].prompt.size() + static_cast<size_t>(requests[i].config.max_new_tokens);
        if (need > pool)
            throw Error("request " + std::to_string(i) + " needs " + std::to_string(need) +
                            " positions (prompt + max_new_tokens), more than the pool's " + std::to_string(pool) +
                            " (" + std::to_string(o.num_blocks) + " blocks of " + std::to_string(o.block_size) + ")",
                        "give the pool at least " +
                            std::to_string((need + static_cast<size_t>(o.block_size) - 1) / static_cast<size_t>(o.block_size)) +
                            " blocks, or lower the request's max_new_tokens");
        longest = std::max(longest, need);
    }
    return longest;
}

// What the loop keeps: the pool's books and numbers, the running requests in order of admission,
// every request's generation so far and its own sampler, and the clock's last reading.
struct PagedServer {
    PagedServer(const Gpt2& model, const Tokenizer* tokenizer, const std::vector<ServeRequest>& requests,
                const PagedServeOptions& options, const ServeClock& clock, PagedServeStats& stats);
    std::vector<int> tokens_of(size_t i) const;  // what request i needs in the cache: prompt + output
    bool can_admit(size_t i) const;
    void admit(size_t i);                        // allocate, prefill what is not cached, pick a token
    void preempt(size_t i);                      // give i's blocks back; i waits at the queue's head
    void decode_running();                       // a block for each last token, then one decode call
    bool take(size_t i, double ms);              // i picks from `logits`; true when it finished
    void count_blocks();

    const Gpt2& model;
    const Tokenizer* tokenizer;
    const std::vector<ServeRequest>& requests;
    const PagedServeOptions& options;
    const ServeClock& clock;
    PagedServeStats& stats;
    std::vector<std::vector<int>> eos_ids;                 // per request, as check_request resolved them
    size_t longest;                                        // the most positions a request needs
    BlockPool pool;                                        // the books: tables, counts, cached prefixes
    PagedKvCache cache;                                    // the numbers: every layer's blocks
    std::vector<size_t> running;                           // in order of admission
    std::deque<size_t> waiting;                            // arrived or preempted, not running
    std::vector<std::unique_ptr<GenerationState>> states;  // made at a request's first admission
    std::vector<Sampler> samplers;                         // each request's own coins
    std::vector<ServedRequest> out;                        // what happened to each request
    xt::xtensor<float, 1> logits;                          // (V) what the next pick reads
    double t = 0;                                          // the serving clock's last reading
};

PagedServer::PagedServer(const Gpt2& m, const Tokenizer* tok, const std::vector<ServeRequest>& r,
                         const PagedServeOptions& o, const ServeClock& c, PagedServeStats& st)
    : model(m), tokenizer(tok), requests(r), options(o), clock(c), stats(st),
      longest(check_paged(m.config(), r, o, eos_ids)),
      pool(o.num_blocks, o.block_size, BlockPoolOptions{o.prefix_caching, o.free_order}),
      // a decode call takes every running request; an invariant prefill goes 64 tokens at a time
      cache(m.config(), static_cast<size_t>(o.num_blocks), static_cast<size_t>(o.block_size),
            std::min(std::max<size_t>(o.max_running, 64),
                     static_cast<size_t>(o.num_blocks) * static_cast<size_t>(o.block_size)),
            longest),
      states(r.size()), out(r.size()) {
    for (const ServeRequest& q : requests) samplers.push_back(make_sampler(q.config, q.seed));
    stats = PagedServeStats{};
}

std::vector<int> PagedServer::tokens_of(size_t i) const {
    std::vector<int> tokens = requests[i].prompt;
    if (states[i]) tokens.insert(tokens.end(), states[i]->out.ids.begin(), states[i]->out.ids.end());
    return tokens;
}

bool PagedServer::can_admit(size_t i) const {
    return running.size() < options.max_running && pool.can_allocate(tokens_of(i));
}

void PagedServer::count_blocks() {
    stats.peak_blocks = std::max(stats.peak_blocks, pool.num_blocks() - pool.num_free_blocks());
}

bool PagedServer::take(size_t i, double ms) {
    const int token = samplers[i](logits, states[i]->context());
    if (!append_token(*states[i], token, logits, ms)) return false;
    out[i].finished = t;
    out[i].generation = std::move(states[i]->out);
    pool.free(static_cast<int>(i));  // its cached blocks stay cached, waiting in the free queue
    return true;
}

void PagedServer::admit(size_t i) {
    const bool resumed = states[i] != nullptr;  // preempted before: its prompt and output are recomputed
    if (!resumed) {
        out[i].arrival = requests[i].arrival;
        out[i].admitted = t;
        states[i] = std::make_unique<GenerationState>(model.config(), tokenizer, requests[i].prompt,
                                                      requests[i].config, eos_ids[i]);
    }
    const std::vector<int> tokens = tokens_of(i);
    const Admission a = pool.allocate(static_cast<int>(i), tokens);  // the cached prefix, then new blocks
    count_blocks();
    const size_t cached = static_cast<size_t>(a.cached_tokens);  // at least the last token is computed
    const std::vector<int> rest(tokens.begin() + static_cast<long>(cached), tokens.end());
    const double t0 = t;
    logits = model.prefill(rest, cache, pool.block_table(static_cast<int>(i)), cached, options.kernels);
    t = clock.now();
    stats.steps.prefills += 1;
    stats.prompt_tokens += static_cast<long>(tokens.size());
    stats.computed_tokens += static_cast<long>(rest.size());
    if (!resumed) out[i].first_token = t;
    if (!take(i, t - t0)) running.push_back(i);
}

void PagedServer::preempt(size_t i) {
    pool.free(static_cast<int>(i));  // its keys and values are forgotten; cached blocks may still be hit
    running.erase(std::find(running.begin(), running.end(), i));
    waiting.push_front(i);
    stats.preemptions += 1;
}

void PagedServer::decode_running() {
    // each running request's last token gets its position in the pool; with no free block, the
    // latest admitted request is preempted (perhaps this one: then it and those after it wait)
    for (size_t k = 0; k < running.size(); ++k) {
        const size_t i = running[k];
        while (!pool.can_append(static_cast<int>(i), 1) && running.back() != i) preempt(running.back());
        if (!pool.can_append(static_cast<int>(i), 1)) {
            preempt(i);  // the last of the list: nothing after it runs this step
            break;
        }
        const int last = states[i]->out.ids.back();
        pool.append(static_cast<int>(i), std::span<const int>(&last, 1));
    }
    count_blocks();
    if (running.empty()) return;
    std::vector<int> tokens;       // (B) each running request's last token
    std::vector<PagedSlot> slots;  // (B) its block table and that token's position
    for (size_t i : running) {
        tokens.push_back(states[i]->out.ids.back());
        slots.push_back({pool.block_table(static_cast<int>(i)), requests[i].prompt.size() + states[i]->out.ids.size() - 1});
    }
    const double t0 = t;
    model.decode(tokens, slots, cache, options.kernels);
    t = clock.now();
    stats.steps.decode_steps += 1;
    stats.steps.decoded_tokens += static_cast<long>(tokens.size());
    const size_t V = static_cast<size_t>(model.config().vocab_size);
    const std::vector<size_t> batch = running;
    running.clear();
    for (size_t b = 0; b < batch.size(); ++b) {
        if (logits.size() != V) logits = xt::xtensor<float, 1>::from_shape({V});
        std::copy_n(cache.logits().data() + b * V, V, logits.data());  // row b of (B, V)
        if (!take(batch[b], t - t0)) running.push_back(batch[b]);
    }
}

}  // namespace

std::vector<ServedRequest> serve_paged(const Gpt2& model, const Tokenizer* tokenizer,
                                       const std::vector<ServeRequest>& requests, const PagedServeOptions& options,
                                       const ServeClock& clock, PagedServeStats* stats) {
    if (!clock.now || !clock.wait_until)
        throw Error("serve_paged got a ServeClock without now or wait_until", "pass wall_clock() or set both functions");
    PagedServeStats local;
    PagedServer server(model, tokenizer, requests, options, clock, stats ? *stats : local);  // checks the requests
    size_t next = 0;  // the first request that has not arrived yet
    while (next < requests.size() || !server.waiting.empty() || !server.running.empty()) {
        while (next < requests.size() && requests[next].arrival <= server.t) server.waiting.push_back(next++);
        if (server.running.empty() && server.waiting.empty()) {
            server.clock.wait_until(requests[next].arrival);
            server.stats.steps.idle += requests[next].arrival - server.t;
            server.t = requests[next].arrival;
            continue;
        }
        // admit in order while the pool holds them; the first that does not fit waits
        while (!server.waiting.empty() && server.can_admit(server.waiting.front())) {
            const size_t i = server.waiting.front();
            server.waiting.pop_front();
            server.admit(i);
        }
        server.decode_running();  // those just admitted too
    }
    server.stats.cache = server.pool.stats();
    server.pool.check_invariants();
    if (server.pool.num_free_blocks() != server.pool.num_blocks())
        throw Error("serve_paged ended with blocks still held", "report this: every request frees its blocks");
    return std::move(server.out);
}

}  // namespace decodebook
