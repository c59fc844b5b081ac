// Chapter 12: serving on a paged cache, a step at a time. Chapter 07's loop (serving.cpp), with a
// pool of blocks for its rows: admission by free blocks, prefixes reused by block hash, n samples
// forked from one prefill, prompts prefilled in chunks under a token budget, recompute preemption.
// The step follows vLLM v1's Scheduler.schedule() (vllm/v1/core/sched/scheduler.py): running
// requests first, each given the blocks its next tokens need (one for a decode, a chunk of its
// prompt for a prefill under way), preempting the last of the running list while none is free
// ("preempted_req = self.running.pop()", which goes back to the head of the waiting queue with its
// computed tokens forgotten); then, if nothing was preempted, waiting requests in order while the
// budget and the pool can hold them. Requests come and go between steps (add, cancel): the engine
// keeps only what runs or waits.
#include "decodebook/decoding/paged_engine.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <string>

#include "decodebook/base/error.hpp"

namespace decodebook {
namespace {

// The options' checks, before the pool is made.
const PagedServeOptions& checked(const PagedServeOptions& o) {
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
    return o;
}

}  // namespace

PagedEngine::PagedEngine(const Gpt2& model, const Tokenizer* tokenizer, const PagedServeOptions& options, ServeClock clock)
    : model_(model), tokenizer_(tokenizer), options_(checked(options)), clock_(std::move(clock)),
      pool_(options.num_blocks, options.block_size, BlockPoolOptions{options.prefix_caching, options.free_order}),
      // a call takes every running sequence's decode, or a step's budget; an invariant prefill
      // goes 64 tokens at a time; a sequence attends over at most the pool's positions and the
      // model's context
      cache_(model.config(), static_cast<size_t>(options.num_blocks), static_cast<size_t>(options.block_size),
             std::min(std::max({options.max_running, options.token_budget, size_t{64}}),
                      static_cast<size_t>(options.num_blocks) * static_cast<size_t>(options.block_size)),
             std::min(static_cast<size_t>(options.num_blocks) * static_cast<size_t>(options.block_size),
                      static_cast<size_t>(model.config().n_positions))) {
    if (!clock_.now) throw Error("a PagedEngine got a ServeClock without now", "pass wall_clock() or set now");
}

std::vector<int> PagedEngine::check(const ServeRequest& r, size_t i) const {
    std::vector<int> eos_ids = check_serve_request(model_.config(), r, i);
    const PagedServeOptions& o = options_;
    const size_t pool = static_cast<size_t>(o.num_blocks) * static_cast<size_t>(o.block_size);
    const size_t need = r.prompt.size() + static_cast<size_t>(r.config.max_new_tokens);
    if (need > pool)
        throw Error("request " + std::to_string(i) + " needs " + std::to_string(need) +
                        " positions (prompt + max_new_tokens), more than the pool's " + std::to_string(pool) + " (" +
                        std::to_string(o.num_blocks) + " blocks of " + std::to_string(o.block_size) + ")",
                    "give the pool at least " +
                        std::to_string((need + static_cast<size_t>(o.block_size) - 1) / static_cast<size_t>(o.block_size)) +
                        " blocks, or lower the request's max_new_tokens");
    const size_t n = static_cast<size_t>(r.n), bs = static_cast<size_t>(o.block_size);
    if (n > o.max_running)
        throw Error("request " + std::to_string(i) + " asks for " + std::to_string(n) +
                        " samples, and they start together, but only " + std::to_string(o.max_running) + " run at once",
                    "raise max_running to at least " + std::to_string(n) + ", or ask for fewer samples");
    // its samples start on the prompt's blocks, each beyond the first with its own partial block
    const size_t start = (r.prompt.size() + bs - 1) / bs + (r.prompt.size() % bs ? n - 1 : 0);
    if (start > static_cast<size_t>(o.num_blocks))
        throw Error("request " + std::to_string(i) + "'s " + std::to_string(n) + " samples start on " +
                        std::to_string(start) + " blocks, more than the pool's " + std::to_string(o.num_blocks),
                    "give the pool at least " + std::to_string(start) + " blocks, or ask for fewer samples");
    return eos_ids;
}

size_t PagedEngine::add(ServeRequest request, EngineObserver observer, std::optional<LogprobsRequest> logprobs) {
    const size_t id = next_request_;
    if (!std::isfinite(request.arrival) || request.arrival < 0)
        throw Error("request " + std::to_string(id) + " arrives at " + std::to_string(request.arrival),
                    "give its arrival a finite time >= 0 on the serving clock");
    std::vector<int> eos_ids = check(request, id);
    if (logprobs) check_logprobs_request(*logprobs);
    if (next_sequence_ + static_cast<size_t>(request.n) > static_cast<size_t>(INT_MAX))
        throw Error("the engine has numbered " + std::to_string(next_sequence_) + " sequences, and the pool names them by int",
                    "start a new engine");
    Request& r = requests_[id];
    r.r = std::move(request);
    r.eos_ids = std::move(eos_ids);
    r.first = next_sequence_;
    r.remaining = r.r.n;
    r.observer = std::move(observer);
    for (int k = 0; k < r.r.n; ++k) {
        Sequence& s = sequences_[next_sequence_ + static_cast<size_t>(k)];
        s.request = id;
        const uint64_t seed = r.r.seed + static_cast<uint64_t>(k);
        s.records = logprobs.has_value();  // the same tokens either way, the numbers only when asked
        s.sampler = logprobs ? make_logprobs_sampler(r.r.config, seed, *logprobs, s.logprobs)
                             : make_sampler(r.r.config, seed);
        s.out.request = id;
        s.out.sample = k;
    }
    waiting_.push_back(r.first);  // its other samples join it when its prompt is computed
    next_sequence_ += static_cast<size_t>(r.r.n);
    next_request_ += 1;
    return id;
}

bool PagedEngine::cancel(size_t request) {
    const auto found = requests_.find(request);
    if (found == requests_.end()) return false;
    const Request& r = found->second;
    for (size_t s = r.first; s < r.first + static_cast<size_t>(r.r.n); ++s) {
        if (!sequences_.count(s)) continue;  // finished already
        if (is_running(s)) {
            pool_.free(static_cast<int>(s));  // its cached blocks stay cached, waiting in the free queue
            running_.erase(std::find(running_.begin(), running_.end(), s));
        } else if (const auto w = std::find(waiting_.begin(), waiting_.end(), s); w != waiting_.end()) {
            waiting_.erase(w);
        }
        sequences_.erase(s);
    }
    requests_.erase(found);
    return true;
}

void PagedEngine::advance(double t) {
    t_ = std::max(t_, t);
}

PagedServeStats PagedEngine::stats() const {
    PagedServeStats out = stats_;
    out.cache = pool_.stats();
    return out;
}

PagedEngine::Sequence& PagedEngine::seq(size_t s) { return sequences_.at(s); }
const PagedEngine::Sequence& PagedEngine::seq(size_t s) const { return sequences_.at(s); }

const std::vector<int>& PagedEngine::prompt(size_t s) const { return requests_.at(seq(s).request).r.prompt; }

bool PagedEngine::prefilling(size_t s) const { return seq(s).held < seq(s).target; }

bool PagedEngine::is_running(size_t s) const {
    return std::find(running_.begin(), running_.end(), s) != running_.end();
}

std::vector<int> PagedEngine::tokens_of(size_t s) const {
    std::vector<int> tokens = prompt(s);
    if (const Sequence& q = seq(s); q.state) tokens.insert(tokens.end(), q.state->out.ids.begin(), q.state->out.ids.end());
    return tokens;
}

size_t PagedEngine::places(size_t s) const {
    const Request& r = requests_.at(seq(s).request);
    return s == r.first && !r.forked ? static_cast<size_t>(r.r.n) : 1;
}

bool PagedEngine::can_admit(size_t s, size_t budget) const {
    // room for all its samples, and blocks for the cached prefix and the first chunk; a request
    // not forked yet keeps one block free for each other sample's copy of the partial block
    const size_t n = places(s);
    const bool partial = prompt(s).size() % static_cast<size_t>(options_.block_size) != 0;
    const std::vector<int> tokens = tokens_of(s);
    return running_.size() + n <= options_.max_running &&
           pool_.blocks_to_allocate(tokens, true, options_.token_budget ? budget : 0) +
                   (partial ? static_cast<int>(n) - 1 : 0) <=
               pool_.num_free_blocks();
}

void PagedEngine::finish_call(size_t tokens) {
    if (clock_.computed) clock_.computed(tokens);
    t_ = clock_.now();
    stats_.peak_blocks = std::max(stats_.peak_blocks, pool_.num_blocks() - pool_.num_free_blocks());
}

bool PagedEngine::take(size_t s, double ms) {
    Sequence& q = seq(s);
    Request& r = requests_.at(q.request);
    const bool first_token = q.state->out.ids.empty();
    const int token = q.sampler(logits_, q.state->context());
    if (first_token) q.out.first_token = t_;
    q.out.token_times.push_back(t_);
    StepObserver told;
    if (r.observer.on_token)
        told = [&](const StepRecord& record) {
            r.observer.on_token(q.request, q.out.sample, record, q.records ? &q.logprobs.back() : nullptr);
            return StepAction::Continue;
        };
    if (!append_token(*q.state, token, logits_, ms, told)) return false;
    q.out.finished = t_;
    q.out.generation = std::move(q.state->out);
    q.out.logprobs = std::move(q.logprobs);
    pool_.free(static_cast<int>(s));  // its cached blocks stay cached, waiting in the free queue
    running_.erase(std::find(running_.begin(), running_.end(), s));
    ServedRequest done = std::move(q.out);
    const EngineObserver observer = r.observer;  // end may erase r
    end(s);
    if (observer.on_finish) observer.on_finish(std::move(done));
    return true;
}

void PagedEngine::end(size_t s) {
    const size_t request = seq(s).request;
    sequences_.erase(s);
    Request& r = requests_.at(request);
    if (--r.remaining == 0) requests_.erase(request);
}

void PagedEngine::preempt(size_t s) {
    pool_.free(static_cast<int>(s));  // its keys and values are forgotten; cached blocks may still be hit
    running_.erase(std::find(running_.begin(), running_.end(), s));
    seq(s).held = 0;
    waiting_.push_front(s);
    stats_.preemptions += 1;
}

// [ch12:schedule]
bool PagedEngine::schedule(size_t s, size_t n) {
    // while the pool has no blocks for them, the last of the running list gives its blocks back
    // (perhaps s itself: then it waits)
    while (!pool_.can_append(static_cast<int>(s), static_cast<int>(n)) && running_.back() != s) preempt(running_.back());
    if (!pool_.can_append(static_cast<int>(s), static_cast<int>(n))) {
        preempt(s);
        return false;
    }
    const std::vector<int> tokens = tokens_of(s);  // a decode's token is the last one picked
    Sequence& q = seq(s);
    pool_.append(static_cast<int>(s), std::span<const int>(tokens).subspan(q.held, n));
    q.held += n;
    return true;
}

size_t PagedEngine::admit(size_t s, size_t budget) {
    if (!seq(s).state) {  // its first admission: its samples' generations start
        const Request& r = requests_.at(seq(s).request);
        for (size_t c = s; c < s + places(s); ++c) {
            Sequence& q = seq(c);
            q.out.arrival = r.r.arrival;
            q.out.admitted = t_;
            q.state = std::make_unique<GenerationState>(model_.config(), tokenizer_, r.r.prompt, r.r.config, r.eos_ids);
        }
    }
    const std::vector<int> tokens = tokens_of(s);  // a preempted one recomputes its output too
    const size_t chunk = options_.token_budget ? budget : 0;  // 0: the whole prompt now
    const Admission a = pool_.allocate(static_cast<int>(s), tokens, true, chunk);
    const size_t cached = static_cast<size_t>(a.cached_tokens);
    Sequence& q = seq(s);
    q.target = tokens.size();
    q.held = chunk == 0 ? tokens.size() : std::min(tokens.size(), cached + chunk);
    stats_.prompt_tokens += static_cast<long>(tokens.size());
    running_.push_back(s);
    return q.held - cached;
}

void PagedEngine::step() {
    if (idle()) return;
    const long progress = stats_.steps.prefills + stats_.steps.decode_steps + stats_.preemptions;
    schedule_and_run();
    if (stats_.steps.prefills + stats_.steps.decode_steps + stats_.preemptions == progress)
        throw Error("the paged engine's step admitted and ran nothing",
                    "report this: a request that fits the pool alone is always admitted");
}

// One step (Sarathi-Serve's decode-first batching under vLLM's rules): every running sequence
// that decodes takes one token of the budget, then running prefills take their next chunks, in
// order of admission, then waiting requests are admitted while the budget, the places and the
// pool allow, unless someone was preempted this step. Then the model: each chunk a prefill call,
// all the decodes one call.
void PagedEngine::schedule_and_run() {
    size_t budget = options_.token_budget ? options_.token_budget : std::numeric_limits<size_t>::max();
    std::vector<size_t> decodes;                     // sequences that decode this step
    std::vector<std::pair<size_t, size_t>> chunks;   // (sequence, tokens) to prefill this step
    const int preemptions = stats_.preemptions;
    for (const size_t s : std::vector<size_t>(running_)) {  // decodes first: each one token
        if (!is_running(s) || prefilling(s)) continue;
        if (!schedule(s, 1)) break;
        decodes.push_back(s);
        budget -= 1;
    }
    for (const size_t s : std::vector<size_t>(running_)) {  // then prefills under way
        if (budget == 0) break;
        if (!is_running(s) || !prefilling(s)) continue;
        const size_t n = std::min(seq(s).target - seq(s).held, budget);
        if (!schedule(s, n)) break;
        chunks.push_back({s, n});
        budget -= n;
    }
    if (stats_.preemptions == preemptions) {  // vLLM admits no one in a step that preempted
        while (!waiting_.empty() && budget > 0 && can_admit(waiting_.front(), budget)) {
            const size_t s = waiting_.front();
            waiting_.pop_front();
            const size_t n = admit(s, budget);
            chunks.push_back({s, n});
            budget -= n;
        }
    }
    if (options_.token_budget > 0) {
        run_fused(decodes, chunks);  // one model call for the step, as vLLM's forward
        return;
    }
    for (const auto& [s, n] : chunks)
        if (is_running(s)) prefill_chunk(s, n);  // a fork may have preempted it
    decode(decodes);
}
// [/ch12:schedule]

void PagedEngine::prefill_chunk(size_t s, size_t n) {
    const std::vector<int> tokens = tokens_of(s);
    const size_t held = seq(s).held;
    const size_t from = held - n;  // positions from..held - 1; those before are in the cache
    const std::vector<int> chunk(tokens.begin() + static_cast<long>(from), tokens.begin() + static_cast<long>(held));
    const double t0 = t_;
    logits_ = model_.prefill(chunk, cache_, pool_.block_table(static_cast<int>(s)), from, options_.kernels);
    finish_call(n);
    stats_.steps.prefills += 1;
    stats_.computed_tokens += static_cast<long>(n);
    if (!prefilling(s)) pick_after_prompt(s, t_ - t0);  // else more chunks to come
}

void PagedEngine::pick_after_prompt(size_t s, double ms) {
    const size_t samples = places(s);
    if (samples > 1) fork(s);
    for (size_t c = s; c < s + samples; ++c)
        if (is_running(c)) take(c, ms);  // each from the same logits, with its own coins
}

// The step's tokens in one decode call: the chunks' tokens that need no logits first, then the
// tokens whose logits are picked from (each decode's, and the last of each prompt that is done),
// so the lm_head runs on those alone. Order does not matter to attention: every key and value of
// the call is written before any token attends.
void PagedEngine::run_fused(const std::vector<size_t>& decodes, const std::vector<std::pair<size_t, size_t>>& chunks) {
    std::vector<int> tokens;
    std::vector<PagedSlot> slots;
    std::vector<size_t> picks;      // the sequence of each token whose logits are wanted, in row order
    std::vector<char> prompt_done;  // per pick: the last token of a prompt (else a decode)
    for (const auto& [s, n] : chunks) {
        const std::vector<int> all = tokens_of(s);
        const size_t held = seq(s).held;
        const size_t end = held - (prefilling(s) ? 0 : 1);  // the prompt's last token goes with the picks
        for (size_t p = held - n; p < end; ++p) {
            tokens.push_back(all[p]);
            slots.push_back({pool_.block_table(static_cast<int>(s)), p});
        }
    }
    const size_t logits_from = tokens.size();
    for (const auto& [s, n] : chunks) {
        if (prefilling(s)) continue;
        const size_t held = seq(s).held;
        tokens.push_back(tokens_of(s)[held - 1]);
        slots.push_back({pool_.block_table(static_cast<int>(s)), held - 1});
        picks.push_back(s);
        prompt_done.push_back(1);
    }
    for (size_t s : decodes) {
        tokens.push_back(seq(s).state->out.ids.back());
        slots.push_back({pool_.block_table(static_cast<int>(s)), seq(s).held - 1});
        picks.push_back(s);
        prompt_done.push_back(0);
    }
    if (tokens.empty()) return;
    const double t0 = t_;
    model_.decode(tokens, slots, cache_, options_.kernels, logits_from);
    finish_call(tokens.size());
    long prefilled = 0;
    for (const auto& chunk : chunks) prefilled += static_cast<long>(chunk.second);
    stats_.steps.prefills += static_cast<int>(chunks.size());
    stats_.computed_tokens += prefilled;
    if (!decodes.empty()) stats_.steps.decode_steps += 1;
    stats_.steps.decoded_tokens += static_cast<long>(decodes.size());
    const size_t V = static_cast<size_t>(model_.config().vocab_size);
    for (size_t r = 0; r < picks.size(); ++r) {
        const size_t s = picks[r];
        if (!is_running(s)) continue;  // a fork before it preempted it
        if (logits_.size() != V) logits_ = xt::xtensor<float, 1>::from_shape({V});
        std::copy_n(cache_.logits().data() + r * V, V, logits_.data());  // row r of the picked rows
        if (prompt_done[r]) pick_after_prompt(s, t_ - t0);
        else take(s, t_ - t0);
    }
}

void PagedEngine::fork(size_t s) {
    Request& r = requests_.at(seq(s).request);
    r.forked = true;
    const size_t held = seq(s).held;
    const bool partial = held % static_cast<size_t>(options_.block_size) != 0;
    for (size_t c = s + 1; c < s + static_cast<size_t>(r.r.n); ++c) {
        // each copy of the partial block takes a free block: admission left them free, but a
        // running request may have taken them since; the latest other sequence gives its own back
        while (partial && pool_.num_free_blocks() == 0) {
            const auto victim = std::find_if(running_.rbegin(), running_.rend(), [&](size_t x) { return x != s; });
            if (victim == running_.rend()) break;  // cannot happen: the request's blocks fit the pool alone
            preempt(*victim);
        }
        if (const auto copy = pool_.fork(static_cast<int>(s), static_cast<int>(c)))
            cache_.copy_block(copy->first, copy->second, held % static_cast<size_t>(options_.block_size));
        seq(c).held = held;
        seq(c).target = seq(s).target;
        running_.push_back(c);
    }
}

void PagedEngine::decode(const std::vector<size_t>& sequences) {
    std::vector<size_t> batch;     // (B) the sequences still running (a fork may have preempted one)
    std::vector<int> tokens;       // (B) each one's last token
    std::vector<PagedSlot> slots;  // (B) its block table and that token's position
    for (size_t s : sequences) {
        if (!is_running(s)) continue;
        batch.push_back(s);
        tokens.push_back(seq(s).state->out.ids.back());
        slots.push_back({pool_.block_table(static_cast<int>(s)), seq(s).held - 1});
    }
    if (batch.empty()) return;
    const double t0 = t_;
    model_.decode(tokens, slots, cache_, options_.kernels);
    finish_call(batch.size());
    stats_.steps.decode_steps += 1;
    stats_.steps.decoded_tokens += static_cast<long>(batch.size());
    const size_t V = static_cast<size_t>(model_.config().vocab_size);
    for (size_t b = 0; b < batch.size(); ++b) {
        if (logits_.size() != V) logits_ = xt::xtensor<float, 1>::from_shape({V});
        std::copy_n(cache_.logits().data() + b * V, V, logits_.data());  // row b of (B, V)
        take(batch[b], t_ - t0);
    }
}

}  // namespace decodebook
