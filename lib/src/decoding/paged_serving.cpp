// Chapter 12: serving on a paged cache. Chapter 07's loop (serving.cpp), with a pool of blocks
// for its rows: admission by free blocks, prefixes reused by block hash, n samples forked from one
// prefill, prompts prefilled in chunks under a token budget, recompute preemption. The step
// follows vLLM v1's Scheduler.schedule() (vllm/v1/core/sched/scheduler.py): running requests
// first, each given the blocks its next tokens need (one for a decode, a chunk of its prompt for
// a prefill under way), preempting the last of the running list while none is free
// ("preempted_req = self.running.pop()", which goes back to the head of the waiting queue with its
// computed tokens forgotten); then, if nothing was preempted, waiting requests in order while the
// budget and the pool can hold them.
#include "decodebook/decoding/paged_serving.hpp"

#include <algorithm>
#include <deque>
#include <limits>
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
    if (o.token_budget > 0 && o.token_budget < o.max_running)
        throw Error("serve_paged got a token budget of " + std::to_string(o.token_budget) + " for " +
                        std::to_string(o.max_running) + " running requests",
                    "give a budget of at least max_running tokens, one for each running request's decode "
                    "(vLLM asks max_num_batched_tokens >= max_num_seqs), or 0 for no chunking");
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
    size_t places(size_t s) const;               // running places s takes: n for a request not forked yet
    bool prefilling(size_t s) const { return held[s] < target[s]; }
    bool can_admit(size_t s, size_t budget) const;
    void step();                                 // schedule, then the model calls, then the picks
    bool schedule(size_t s, size_t n);           // n more tokens for running s; false: s was preempted
    size_t admit(size_t s, size_t budget);       // the cached prefix and a first chunk; returns the chunk
    void prefill_chunk(size_t s, size_t n);      // the model on s's next n tokens
    void fork(size_t s);                         // the other samples of s's request join it
    void decode(const std::vector<size_t>& sequences);
    void run_fused(const std::vector<size_t>& decodes, const std::vector<std::pair<size_t, size_t>>& chunks);
    void pick_after_prompt(size_t s, double ms);  // s's prompt is computed: fork its samples, each picks
    void preempt(size_t s);                      // give s's blocks back; s waits at the queue's head
    bool take(size_t s, double ms);              // s picks from `logits`; true when it finished
    void finish_call(size_t tokens);             // tell and read the clock after a model call
    bool is_running(size_t s) const { return std::find(running.begin(), running.end(), s) != running.end(); }

    const Gpt2& model;
    const Tokenizer* tokenizer;
    const std::vector<ServeRequest>& requests;
    const PagedServeOptions& options;
    const ServeClock& clock;
    PagedServeStats& stats;
    std::vector<std::vector<int>> eos_ids;                 // per request, as check_request resolved them
    size_t longest;                                        // the most positions a sequence needs
    std::vector<size_t> first;                             // per request: its first sequence
    std::vector<char> forked;                              // per request: its other samples run
    std::vector<size_t> request_of;                        // per sequence: its request
    std::vector<size_t> held;                              // per sequence: tokens the pool holds for it
    std::vector<size_t> target;                            // per sequence: where its prefill ends
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
      forked(r.size(), 0),
      pool(o.num_blocks, o.block_size, BlockPoolOptions{o.prefix_caching, o.free_order}),
      // a call takes every running sequence's decode, or a step's budget; an invariant prefill
      // goes 64 tokens at a time
      cache(m.config(), static_cast<size_t>(o.num_blocks), static_cast<size_t>(o.block_size),
            std::min(std::max({o.max_running, o.token_budget, size_t{64}}),
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
    held.assign(request_of.size(), 0);
    target.assign(request_of.size(), 0);
    stats = PagedServeStats{};
}

std::vector<int> PagedServer::tokens_of(size_t s) const {
    std::vector<int> tokens = prompt(s);
    if (states[s]) tokens.insert(tokens.end(), states[s]->out.ids.begin(), states[s]->out.ids.end());
    return tokens;
}

size_t PagedServer::places(size_t s) const {
    const size_t i = request_of[s];
    return s == first[i] && !forked[i] ? static_cast<size_t>(requests[i].n) : 1;
}

bool PagedServer::can_admit(size_t s, size_t budget) const {
    // room for all its samples, and blocks for the cached prefix and the first chunk; a request
    // not forked yet keeps one block free for each other sample's copy of the partial block
    const size_t n = places(s);
    const bool partial = prompt(s).size() % static_cast<size_t>(options.block_size) != 0;
    const std::vector<int> tokens = tokens_of(s);
    return running.size() + n <= options.max_running &&
           pool.blocks_to_allocate(tokens, true, options.token_budget ? budget : 0) +
                   (partial ? static_cast<int>(n) - 1 : 0) <=
               pool.num_free_blocks();
}

void PagedServer::finish_call(size_t tokens) {
    if (clock.computed) clock.computed(tokens);
    t = clock.now();
    stats.peak_blocks = std::max(stats.peak_blocks, pool.num_blocks() - pool.num_free_blocks());
}

bool PagedServer::take(size_t s, double ms) {
    const bool first_token = states[s]->out.ids.empty();
    const int token = samplers[s](logits, states[s]->context());
    if (first_token) out[s].first_token = t;
    out[s].token_times.push_back(t);
    if (!append_token(*states[s], token, logits, ms)) return false;
    out[s].finished = t;
    out[s].generation = std::move(states[s]->out);
    pool.free(static_cast<int>(s));  // its cached blocks stay cached, waiting in the free queue
    running.erase(std::find(running.begin(), running.end(), s));
    return true;
}

void PagedServer::preempt(size_t s) {
    pool.free(static_cast<int>(s));  // its keys and values are forgotten; cached blocks may still be hit
    running.erase(std::find(running.begin(), running.end(), s));
    held[s] = 0;
    waiting.push_front(s);
    stats.preemptions += 1;
}

// [ch12:schedule]
bool PagedServer::schedule(size_t s, size_t n) {
    // while the pool has no blocks for them, the last of the running list gives its blocks back
    // (perhaps s itself: then it waits)
    while (!pool.can_append(static_cast<int>(s), static_cast<int>(n)) && running.back() != s) preempt(running.back());
    if (!pool.can_append(static_cast<int>(s), static_cast<int>(n))) {
        preempt(s);
        return false;
    }
    const std::vector<int> tokens = tokens_of(s);  // a decode's token is the last one picked
    pool.append(static_cast<int>(s), std::span<const int>(tokens).subspan(held[s], n));
    held[s] += n;
    return true;
}

size_t PagedServer::admit(size_t s, size_t budget) {
    if (!states[s]) {  // its first admission: its samples' generations start
        const size_t i = request_of[s];
        for (size_t c = s; c < s + places(s); ++c) {
            out[c].arrival = requests[i].arrival;
            out[c].admitted = t;
            states[c] = std::make_unique<GenerationState>(model.config(), tokenizer, prompt(c), requests[i].config,
                                                          eos_ids[i]);
        }
    }
    const std::vector<int> tokens = tokens_of(s);  // a preempted one recomputes its output too
    const size_t chunk = options.token_budget ? budget : 0;  // 0: the whole prompt now
    const Admission a = pool.allocate(static_cast<int>(s), tokens, true, chunk);
    const size_t cached = static_cast<size_t>(a.cached_tokens);
    target[s] = tokens.size();
    held[s] = chunk == 0 ? tokens.size() : std::min(tokens.size(), cached + chunk);
    stats.prompt_tokens += static_cast<long>(tokens.size());
    running.push_back(s);
    return held[s] - cached;
}

// One step (Sarathi-Serve's decode-first batching under vLLM's rules): every running sequence
// that decodes takes one token of the budget, then running prefills take their next chunks, in
// order of admission, then waiting requests are admitted while the budget, the places and the
// pool allow, unless someone was preempted this step. Then the model: each chunk a prefill call,
// all the decodes one call.
void PagedServer::step() {
    size_t budget = options.token_budget ? options.token_budget : std::numeric_limits<size_t>::max();
    std::vector<size_t> decodes;                     // sequences that decode this step
    std::vector<std::pair<size_t, size_t>> chunks;   // (sequence, tokens) to prefill this step
    const size_t preemptions = static_cast<size_t>(stats.preemptions);
    for (const size_t s : std::vector<size_t>(running)) {  // decodes first: each one token
        if (!is_running(s) || prefilling(s)) continue;
        if (!schedule(s, 1)) break;
        decodes.push_back(s);
        budget -= 1;
    }
    for (const size_t s : std::vector<size_t>(running)) {  // then prefills under way
        if (budget == 0) break;
        if (!is_running(s) || !prefilling(s)) continue;
        const size_t n = std::min(target[s] - held[s], budget);
        if (!schedule(s, n)) break;
        chunks.push_back({s, n});
        budget -= n;
    }
    if (static_cast<size_t>(stats.preemptions) == preemptions) {  // vLLM admits no one in a step that preempted
        while (!waiting.empty() && budget > 0 && can_admit(waiting.front(), budget)) {
            const size_t s = waiting.front();
            waiting.pop_front();
            const size_t n = admit(s, budget);
            chunks.push_back({s, n});
            budget -= n;
        }
    }
    if (options.token_budget > 0) {
        run_fused(decodes, chunks);  // one model call for the step, as vLLM's forward
        return;
    }
    for (const auto& [s, n] : chunks)
        if (is_running(s)) prefill_chunk(s, n);  // a fork may have preempted it
    decode(decodes);
}
// [/ch12:schedule]

void PagedServer::prefill_chunk(size_t s, size_t n) {
    const std::vector<int> tokens = tokens_of(s);
    const size_t from = held[s] - n;  // positions from..held[s] - 1; those before are in the cache
    const std::vector<int> chunk(tokens.begin() + static_cast<long>(from), tokens.begin() + static_cast<long>(held[s]));
    const double t0 = t;
    logits = model.prefill(chunk, cache, pool.block_table(static_cast<int>(s)), from, options.kernels);
    finish_call(n);
    stats.steps.prefills += 1;
    stats.computed_tokens += static_cast<long>(n);
    if (!prefilling(s)) pick_after_prompt(s, t - t0);  // else more chunks to come
}

void PagedServer::pick_after_prompt(size_t s, double ms) {
    const size_t samples = places(s);
    if (samples > 1) fork(s);
    for (size_t c = s; c < s + samples; ++c)
        if (is_running(c)) take(c, ms);  // each from the same logits, with its own coins
}

// The step's tokens in one decode call: the chunks' tokens that need no logits first, then the
// tokens whose logits are picked from (each decode's, and the last of each prompt that is done),
// so the lm_head runs on those alone. Order does not matter to attention: every key and value of
// the call is written before any token attends.
void PagedServer::run_fused(const std::vector<size_t>& decodes, const std::vector<std::pair<size_t, size_t>>& chunks) {
    std::vector<int> tokens;
    std::vector<PagedSlot> slots;
    std::vector<size_t> picks;    // the sequence of each token whose logits are wanted, in row order
    std::vector<char> prompt_done;  // per pick: the last token of a prompt (else a decode)
    for (const auto& [s, n] : chunks) {
        const std::vector<int> all = tokens_of(s);
        const size_t end = held[s] - (prefilling(s) ? 0 : 1);  // the prompt's last token goes with the picks
        for (size_t p = held[s] - n; p < end; ++p) {
            tokens.push_back(all[p]);
            slots.push_back({pool.block_table(static_cast<int>(s)), p});
        }
    }
    const size_t logits_from = tokens.size();
    for (const auto& [s, n] : chunks) {
        if (prefilling(s)) continue;
        tokens.push_back(tokens_of(s)[held[s] - 1]);
        slots.push_back({pool.block_table(static_cast<int>(s)), held[s] - 1});
        picks.push_back(s);
        prompt_done.push_back(1);
    }
    for (size_t s : decodes) {
        tokens.push_back(states[s]->out.ids.back());
        slots.push_back({pool.block_table(static_cast<int>(s)), held[s] - 1});
        picks.push_back(s);
        prompt_done.push_back(0);
    }
    if (tokens.empty()) return;
    const double t0 = t;
    model.decode(tokens, slots, cache, options.kernels, logits_from);
    finish_call(tokens.size());
    long prefilled = 0;
    for (const auto& chunk : chunks) prefilled += static_cast<long>(chunk.second);
    stats.steps.prefills += static_cast<int>(chunks.size());
    stats.computed_tokens += prefilled;
    if (!decodes.empty()) stats.steps.decode_steps += 1;
    stats.steps.decoded_tokens += static_cast<long>(decodes.size());
    const size_t V = static_cast<size_t>(model.config().vocab_size);
    for (size_t r = 0; r < picks.size(); ++r) {
        const size_t s = picks[r];
        if (!is_running(s)) continue;  // a fork before it preempted it
        if (logits.size() != V) logits = xt::xtensor<float, 1>::from_shape({V});
        std::copy_n(cache.logits().data() + r * V, V, logits.data());  // row r of the picked rows
        if (prompt_done[r]) pick_after_prompt(s, t - t0);
        else take(s, t - t0);
    }
}

void PagedServer::fork(size_t s) {
    const size_t i = request_of[s];
    forked[i] = 1;
    const bool partial = held[s] % static_cast<size_t>(options.block_size) != 0;
    for (size_t c = s + 1; c < s + static_cast<size_t>(requests[i].n); ++c) {
        // each copy of the partial block takes a free block: admission left them free, but a
        // running request may have taken them since; the latest other sequence gives its own back
        while (partial && pool.num_free_blocks() == 0) {
            const auto victim = std::find_if(running.rbegin(), running.rend(), [&](size_t r) { return r != s; });
            if (victim == running.rend()) break;  // cannot happen: the request's blocks fit the pool alone
            preempt(*victim);
        }
        if (const auto copy = pool.fork(static_cast<int>(s), static_cast<int>(c)))
            cache.copy_block(copy->first, copy->second, held[s] % static_cast<size_t>(options.block_size));
        held[c] = held[s];
        target[c] = target[s];
        running.push_back(c);
    }
}

void PagedServer::decode(const std::vector<size_t>& sequences) {
    std::vector<size_t> batch;     // (B) the sequences still running (a fork may have preempted one)
    std::vector<int> tokens;       // (B) each one's last token
    std::vector<PagedSlot> slots;  // (B) its block table and that token's position
    for (size_t s : sequences) {
        if (!is_running(s)) continue;
        batch.push_back(s);
        tokens.push_back(states[s]->out.ids.back());
        slots.push_back({pool.block_table(static_cast<int>(s)), held[s] - 1});
    }
    if (batch.empty()) return;
    const double t0 = t;
    model.decode(tokens, slots, cache, options.kernels);
    finish_call(batch.size());
    stats.steps.decode_steps += 1;
    stats.steps.decoded_tokens += static_cast<long>(batch.size());
    const size_t V = static_cast<size_t>(model.config().vocab_size);
    for (size_t b = 0; b < batch.size(); ++b) {
        if (logits.size() != V) logits = xt::xtensor<float, 1>::from_shape({V});
        std::copy_n(cache.logits().data() + b * V, V, logits.data());  // row b of (B, V)
        take(batch[b], t - t0);
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
        const long progress = server.stats.steps.prefills + server.stats.steps.decode_steps + server.stats.preemptions;
        server.step();
        if (server.stats.steps.prefills + server.stats.steps.decode_steps + server.stats.preemptions == progress)
            throw Error("serve_paged's step admitted and ran nothing", "report this: a request that fits the pool alone is always admitted");
    }
    server.stats.cache = server.pool.stats();
    server.pool.check_invariants();
    if (server.pool.num_free_blocks() != server.pool.num_blocks())
        throw Error("serve_paged ended with blocks still held", "report this: every request frees its blocks");
    return std::move(server.out);
}

}  // namespace decodebook
