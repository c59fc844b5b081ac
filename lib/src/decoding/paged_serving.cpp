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
        const size_t n = static_cast<size_t>(requests[i].n), bs = static_cast<size_t>(o.block_size);
        if (n > o.max_running)
            throw Error("request " + std::to_string(i) + " asks for " + std::to_string(n) +
                            " samples, and they start together, but only " + std::to_string(o.max_running) + " run at once",
                        "raise max_running to at least " + std::to_string(n) + ", or ask for fewer samples");
        // its samples start on the prompt's blocks, each beyond the first with its own partial block
        const size_t start = (requests[i].prompt.size() + bs - 1) / bs + (requests[i].prompt.size() % bs ? n - 1 : 0);
        if (start > static_cast<size_t>(o.num_blocks))
            throw Error("request " + std::to_string(i) + "'s " + std::to_string(n) + " samples start on " +
                            std::to_string(start) + " blocks, more than the pool's " + std::to_string(o.num_blocks),
                        "give the pool at least " + std::to_string(start) + " blocks, or ask for fewer samples");
        longest = std::max(longest, need);
    }
    return longest;
}

// What the loop keeps: the pool's books and numbers, the running sequences in order of admission,
// every sequence's generation so far and its own sampler, and the clock's last reading. A request
// of n samples is n sequences, numbered from first[request]; the pool names a sequence by its number.
struct PagedServer {
    PagedServer(const Gpt2& model, const Tokenizer* tokenizer, const std::vector<ServeRequest>& requests,
                const PagedServeOptions& options, const ServeClock& clock, PagedServeStats& stats);
    const std::vector<int>& prompt(size_t s) const { return requests[request_of[s]].prompt; }
    std::vector<int> tokens_of(size_t s) const;  // what sequence s needs in the cache: prompt + output
    bool can_admit(size_t s) const;
    void admit(size_t s);                        // allocate, prefill what is not cached, fork, pick
    void preempt(size_t s);                      // give s's blocks back; s waits at the queue's head
    void decode_running();                       // a block for each last token, then one decode call
    bool take(size_t s, double ms);              // s picks from `logits`; true when it finished
    void count_blocks();

    const Gpt2& model;
    const Tokenizer* tokenizer;
    const std::vector<ServeRequest>& requests;
    const PagedServeOptions& options;
    const ServeClock& clock;
    PagedServeStats& stats;
    std::vector<std::vector<int>> eos_ids;                 // per request, as check_request resolved them
    size_t longest;                                        // the most positions a sequence needs
    std::vector<size_t> first;                             // per request: its first sequence
    std::vector<size_t> request_of;                        // per sequence: its request
    BlockPool pool;                                        // the books: tables, counts, cached prefixes
    PagedKvCache cache;                                    // the numbers: every layer's blocks
    std::vector<size_t> running;                           // sequences, in order of admission
    std::deque<size_t> waiting;                            // arrived or preempted, not running
    std::vector<std::unique_ptr<GenerationState>> states;  // per sequence, made at its first admission
    std::vector<Sampler> samplers;                         // per sequence: its own coins
    std::vector<ServedRequest> out;                        // per sequence: what happened to it
    xt::xtensor<float, 1> logits;                          // (V) what the next pick reads
    double t = 0;                                          // the serving clock's last reading
};

PagedServer::PagedServer(const Gpt2& m, const Tokenizer* tok, const std::vector<ServeRequest>& r,
                         const PagedServeOptions& o, const ServeClock& c, PagedServeStats& st)
    : model(m), tokenizer(tok), requests(r), options(o), clock(c), stats(st),
      longest(check_paged(m.config(), r, o, eos_ids)),
      pool(o.num_blocks, o.block_size, BlockPoolOptions{o.prefix_caching, o.free_order}),
      // a decode call takes every running sequence; an invariant prefill goes 64 tokens at a time
      cache(m.config(), static_cast<size_t>(o.num_blocks), static_cast<size_t>(o.block_size),
            std::min(std::max<size_t>(o.max_running, 64),
                     static_cast<size_t>(o.num_blocks) * static_cast<size_t>(o.block_size)),
            longest) {
    for (size_t i = 0; i < requests.size(); ++i) {
        first.push_back(request_of.size());
        for (int k = 0; k < requests[i].n; ++k) {
            request_of.push_back(i);
            samplers.push_back(make_sampler(requests[i].config, requests[i].seed + static_cast<uint64_t>(k)));
            out.emplace_back();
            out.back().request = i;
            out.back().sample = k;
        }
    }
    states.resize(request_of.size());
    stats = PagedServeStats{};
}

std::vector<int> PagedServer::tokens_of(size_t s) const {
    std::vector<int> tokens = prompt(s);
    if (states[s]) tokens.insert(tokens.end(), states[s]->out.ids.begin(), states[s]->out.ids.end());
    return tokens;
}

bool PagedServer::can_admit(size_t s) const {
    if (states[s]) return running.size() < options.max_running && pool.can_allocate(tokens_of(s));  // resumed
    // a new request: all n samples at once, each beyond the first with a copy of the partial block
    const size_t n = static_cast<size_t>(requests[request_of[s]].n);
    const bool partial = prompt(s).size() % static_cast<size_t>(options.block_size) != 0;
    return running.size() + n <= options.max_running &&
           pool.blocks_to_allocate(prompt(s)) + (partial ? static_cast<int>(n) - 1 : 0) <= pool.num_free_blocks();
}

void PagedServer::count_blocks() {
    stats.peak_blocks = std::max(stats.peak_blocks, pool.num_blocks() - pool.num_free_blocks());
}

bool PagedServer::take(size_t s, double ms) {
    const int token = samplers[s](logits, states[s]->context());
    if (!append_token(*states[s], token, logits, ms)) return false;
    out[s].finished = t;
    out[s].generation = std::move(states[s]->out);
    pool.free(static_cast<int>(s));  // its cached blocks stay cached, waiting in the free queue
    return true;
}

void PagedServer::admit(size_t s) {
    const bool resumed = states[s] != nullptr;  // preempted before: its prompt and output are recomputed
    const size_t n = resumed ? 1 : static_cast<size_t>(requests[request_of[s]].n);
    for (size_t c = s; c < s + n; ++c) {  // a new request's samples start together
        if (resumed) break;
        out[c].arrival = requests[request_of[c]].arrival;
        out[c].admitted = t;
        states[c] = std::make_unique<GenerationState>(model.config(), tokenizer, prompt(c),
                                                      requests[request_of[c]].config, eos_ids[request_of[c]]);
    }
    const std::vector<int> tokens = tokens_of(s);
    const Admission a = pool.allocate(static_cast<int>(s), tokens);  // the cached prefix, then new blocks
    const size_t cached = static_cast<size_t>(a.cached_tokens);     // at least the last token is computed
    const std::vector<int> rest(tokens.begin() + static_cast<long>(cached), tokens.end());
    const double t0 = t;
    logits = model.prefill(rest, cache, pool.block_table(static_cast<int>(s)), cached, options.kernels);
    // the other samples share the prompt's full blocks and copy its partial one: one prefill for n
    for (size_t c = s + 1; c < s + n; ++c) {
        if (const auto copy = pool.fork(static_cast<int>(s), static_cast<int>(c)))
            cache.copy_block(copy->first, copy->second, tokens.size() % static_cast<size_t>(options.block_size));
    }
    count_blocks();
    t = clock.now();
    stats.steps.prefills += 1;
    stats.prompt_tokens += static_cast<long>(tokens.size());
    stats.computed_tokens += static_cast<long>(rest.size());
    for (size_t c = s; c < s + n; ++c) {
        if (!resumed) out[c].first_token = t;
        if (!take(c, t - t0)) running.push_back(c);  // each sample draws its own token from the same logits
    }
}

void PagedServer::preempt(size_t s) {
    pool.free(static_cast<int>(s));  // its keys and values are forgotten; cached blocks may still be hit
    running.erase(std::find(running.begin(), running.end(), s));
    waiting.push_front(s);
    stats.preemptions += 1;
}

void PagedServer::decode_running() {
    // each running sequence's last token gets its position in the pool; with no free block, the
    // latest admitted sequence is preempted (perhaps this one: then it and those after it wait)
    for (size_t k = 0; k < running.size(); ++k) {
        const size_t s = running[k];
        while (!pool.can_append(static_cast<int>(s), 1) && running.back() != s) preempt(running.back());
        if (!pool.can_append(static_cast<int>(s), 1)) {
            preempt(s);  // the last of the list: nothing after it runs this step
            break;
        }
        const int last = states[s]->out.ids.back();
        pool.append(static_cast<int>(s), std::span<const int>(&last, 1));
    }
    count_blocks();
    if (running.empty()) return;
    std::vector<int> tokens;       // (B) each running sequence's last token
    std::vector<PagedSlot> slots;  // (B) its block table and that token's position
    for (size_t s : running) {
        tokens.push_back(states[s]->out.ids.back());
        slots.push_back({pool.block_table(static_cast<int>(s)), prompt(s).size() + states[s]->out.ids.size() - 1});
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
        while (next < requests.size() && requests[next].arrival <= server.t) server.waiting.push_back(server.first[next++]);
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
