// Chapter 07: serving requests that arrive over time on a cache of `slots` rows, with static or
// continuous batching. The loop mirrors two engines' schedulers, cut down to one idea each:
//  - vLLM v1, vllm/v1/core/sched/scheduler.py, Scheduler.schedule(): "First, schedule the RUNNING
//    requests", "Next, schedule the WAITING requests" while fewer than max_num_running_reqs
//    (max_num_seqs, our `slots`) run; every running request gets one token per engine step.
//  - llama.cpp's server, tools/server/server-context.cpp, update_slots(): a fixed set of slots
//    (--parallel); "first, add sampled tokens from any ongoing sequences" to one batch, then a
//    started slot's prompt; one llama_decode for all of it.
// Unlike both, a prefill here is its own call before the step's decode (Gpt2::prefill is GEMM over
// the prompt; decode is the matvec), so the rows already running wait for it: what vLLM's chunked
// prefill and llama.cpp's n_batch limit soften.
#include "decodebook/decoding/serving.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/kv_cache.hpp"

namespace decodebook {
namespace {

std::string number(double x) {
    if (std::abs(x) >= 1e15) {  // to_string would write every digit of 1e300
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", x);
        return buf;
    }
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

// Refuse what cannot be served, before any work; returns the positions each row needs.
size_t check_requests(const ModelConfig& mc, const std::vector<ServeRequest>& requests, size_t slots, size_t positions,
                      std::vector<std::vector<int>>& eos_ids) {
    if (slots == 0) throw Error("serve_requests got 0 slots", "give the cache at least one row (slots >= 1)");
    if (slots > kMaxServeSlots)
        throw Error("serve_requests got " + std::to_string(slots) + " slots, more than the " +
                        std::to_string(kMaxServeSlots) + " rows its cache may have",
                    "pass at most " + std::to_string(kMaxServeSlots) + " slots (the most requests running at once)");
    eos_ids = check_serve_requests(mc, requests);
    for (size_t i = 0; i < requests.size(); ++i)
        if (requests[i].n != 1)
            throw Error("request " + std::to_string(i) + " asks for n " + std::to_string(requests[i].n) +
                            " samples, and serve_requests serves one per request",
                        "serve it with serve_paged (chapter 12), which forks the samples from one prefill, or set n 1");
    size_t longest = 0;
    for (const ServeRequest& r : requests)
        longest = std::max(longest, r.prompt.size() + static_cast<size_t>(r.config.max_new_tokens));
    if (positions == 0) return std::min(longest, static_cast<size_t>(mc.n_positions));
    for (size_t i = 0; i < requests.size(); ++i) {
        const size_t need = requests[i].prompt.size() + static_cast<size_t>(requests[i].config.max_new_tokens);
        if (need > positions)
            throw Error("request " + std::to_string(i) + " needs " + std::to_string(need) +
                            " positions (prompt + max_new_tokens), more than a row's " + std::to_string(positions),
                        "give the cache at least " + std::to_string(need) +
                            " positions per row (0: the longest request's), or lower its max_new_tokens");
    }
    return positions;
}

}  // namespace

std::vector<int> check_serve_request(const ModelConfig& mc, const ServeRequest& r, size_t i) {
    if (decode_loop(r.config, false) != DecodeLoop::Plain)
        throw Error("request " + std::to_string(i) + " asks for " +
                        (r.config.num_beams > 1 ? "beam search (num_beams " + std::to_string(r.config.num_beams) + ")"
                                                : "speculative decoding (prompt_lookup_num_tokens " +
                                                      std::to_string(r.config.prompt_lookup_num_tokens) + ")") +
                        ", and serve_requests decodes one token per request per step",
                    "serve it with num_beams 1 and prompt_lookup_num_tokens 0, or run it alone (beam_search_cached, "
                    "generate_speculative)");
    if (r.n < 1 || static_cast<size_t>(r.n) > kMaxServeSlots)
        throw Error("request " + std::to_string(i) + " asks for n " + std::to_string(r.n) + " samples",
                    "ask for 1 to " + std::to_string(kMaxServeSlots) + " samples of a prompt");
    return check_request(mc, r.prompt, r.config);
}

std::vector<std::vector<int>> check_serve_requests(const ModelConfig& mc, const std::vector<ServeRequest>& requests) {
    if (requests.empty()) throw Error("serve_requests got no requests", "pass at least one request");
    std::vector<std::vector<int>> eos_ids;
    for (size_t i = 0; i < requests.size(); ++i) {
        const ServeRequest& r = requests[i];
        if (!std::isfinite(r.arrival) || r.arrival < 0)
            throw Error("request " + std::to_string(i) + " arrives at " + number(r.arrival),
                        "give every arrival a finite time >= 0 on the serving clock (0 = when serving starts)");
        if (r.arrival > kMaxServeArrival)
            throw Error("request " + std::to_string(i) + " arrives at " + number(r.arrival) + ", after the " +
                            number(kMaxServeArrival) + " (one day in milliseconds) serve_requests schedules",
                        "give every arrival a time from 0 to " + number(kMaxServeArrival) + " on the serving clock");
        if (i > 0 && r.arrival < requests[i - 1].arrival)
            throw Error("request " + std::to_string(i) + " arrives at " + number(r.arrival) + ", before request " +
                            std::to_string(i - 1) + " at " + number(requests[i - 1].arrival),
                        "list the requests in order of arrival (sort them by arrival time)");
        eos_ids.push_back(check_serve_request(mc, r, i));
    }
    return eos_ids;
}

const char* to_string(Scheduling scheduling) {
    return scheduling == Scheduling::Static ? "static" : "continuous";
}

double ServedRequest::tpot() const {
    const size_t n = generation.ids.size();
    return n > 1 ? (finished - first_token) / static_cast<double>(n - 1) : 0.0;
}

ServeClock wall_clock() {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    const auto at = [start](double ms) {
        return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
    };
    return {[start] { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); },
            [at](double ms) { std::this_thread::sleep_until(at(ms)); }};
}

namespace {

// What the serving loop keeps: the cache of `slots` rows, which request each row serves, every
// request's generation so far and its own sampler, and the clock's last reading.
struct Server {
    Server(const Gpt2& model, const Tokenizer* tokenizer, const std::vector<ServeRequest>& requests, size_t slots,
           const ServeClock& clock, size_t positions, ServeStats& stats);
    size_t busy() const;                  // rows serving a request
    void wait_for(double arrival);        // nothing to do before a request arrives at `arrival`
    void admit(size_t i, size_t slot);    // request i into a free row: clear, prefill, first token
    void decode_busy_rows();              // one decode call: every busy row's next token
    void take(size_t i, double ms);       // request i picks from `logits`; a finished one frees its row

    const Gpt2& model;
    const Tokenizer* tokenizer;
    const std::vector<ServeRequest>& requests;
    const ServeClock& clock;
    ServeStats& stats;
    std::vector<std::vector<int>> eos_ids;                    // per request, as check_request resolved them
    KvCache cache;                                            // (slots, positions) per layer
    std::vector<std::optional<size_t>> in_slot;               // the request each row serves, if any
    std::vector<std::unique_ptr<GenerationState>> states;     // made when a request is admitted
    std::vector<Sampler> samplers;                            // each request's own coins
    std::vector<ServedRequest> out;                           // what happened to each request
    xt::xtensor<float, 1> logits;                             // (V) what the next pick reads
    double t = 0;                                             // the serving clock's last reading
};

Server::Server(const Gpt2& m, const Tokenizer* tok, const std::vector<ServeRequest>& r, size_t slots,
               const ServeClock& c, size_t positions, ServeStats& st)
    : model(m), tokenizer(tok), requests(r), clock(c), stats(st),
      cache(m.config(), slots, check_requests(m.config(), r, slots, positions, eos_ids)), in_slot(slots),
      states(r.size()), out(r.size()) {
    for (const ServeRequest& q : requests) samplers.push_back(make_sampler(q.config, q.seed));
    stats = ServeStats{};
}

size_t Server::busy() const {
    return static_cast<size_t>(std::count_if(in_slot.begin(), in_slot.end(), [](const auto& s) { return s.has_value(); }));
}

void Server::wait_for(double arrival) {
    clock.wait_until(arrival);
    stats.idle += arrival - t;
    t = arrival;
}

void Server::take(size_t i, double ms) {
    const int token = samplers[i](logits, states[i]->context());
    out[i].token_times.push_back(t);
    if (!append_token(*states[i], token, logits, ms)) return;
    out[i].finished = t;
    out[i].generation = std::move(states[i]->out);
    in_slot[out[i].slot].reset();
}

// [ch07:serve-step]
void Server::admit(size_t i, size_t slot) {
    in_slot[slot] = i;
    out[i].request = i;
    out[i].slot = slot;
    out[i].arrival = requests[i].arrival;
    out[i].admitted = t;
    states[i] = std::make_unique<GenerationState>(model.config(), tokenizer, requests[i].prompt, requests[i].config,
                                                  eos_ids[i]);
    cache.clear(slot);  // the row may hold a finished request's positions: start it at length 0
    const double t0 = t;
    logits = model.prefill(requests[i].prompt, cache, slot);
    if (clock.computed) clock.computed(requests[i].prompt.size());
    t = clock.now();
    stats.prefills += 1;
    out[i].first_token = t;
    take(i, t - t0);  // the prefill's logits give the first token
}

void Server::decode_busy_rows() {
    std::vector<size_t> rows;  // (B) the busy rows
    std::vector<int> tokens;   // (B) each one's last token
    for (size_t s = 0; s < in_slot.size(); ++s) {
        if (!in_slot[s]) continue;
        rows.push_back(s);
        tokens.push_back(states[*in_slot[s]]->out.ids.back());
    }
    if (rows.empty()) return;  // every admitted request ended at its first token
    const double t0 = t;
    model.decode(tokens, rows, cache, BatchKernels::Invariant);  // a row's bits as if alone
    if (clock.computed) clock.computed(rows.size());
    t = clock.now();
    stats.decode_steps += 1;
    stats.decoded_tokens += static_cast<long>(rows.size());
    const size_t V = static_cast<size_t>(model.config().vocab_size);
    for (size_t b = 0; b < rows.size(); ++b) {
        if (logits.size() != V) logits = xt::xtensor<float, 1>::from_shape({V});
        std::copy_n(cache.logits().data() + b * V, V, logits.data());  // row b of (B, V)
        take(*in_slot[rows[b]], t - t0);
    }
}
// [/ch07:serve-step]

}  // namespace

// [ch07:serve-requests]
std::vector<ServedRequest> serve_requests(const Gpt2& model, const Tokenizer* tokenizer,
                                          const std::vector<ServeRequest>& requests, size_t slots,
                                          Scheduling scheduling, const ServeClock& clock, size_t positions,
                                          ServeStats* stats) {
    if (!clock.now || !clock.wait_until)
        throw Error("serve_requests got a ServeClock without now or wait_until", "pass wall_clock() or set both functions");
    ServeStats local;
    Server server(model, tokenizer, requests, slots, clock, positions, stats ? *stats : local);  // checks the requests
    std::deque<size_t> waiting;  // arrived, not admitted: first come, first served
    size_t next = 0;             // the first request that has not arrived yet
    while (next < requests.size() || !waiting.empty() || server.busy() > 0) {
        while (next < requests.size() && requests[next].arrival <= server.t) waiting.push_back(next++);
        if (server.busy() == 0 && waiting.empty()) {
            server.wait_for(requests[next].arrival);
            continue;
        }
        // admit: Static only into an empty cache, Continuous into every free row
        if (scheduling == Scheduling::Continuous || server.busy() == 0) {
            for (size_t slot = 0; slot < slots && !waiting.empty(); ++slot) {
                if (server.in_slot[slot]) continue;
                server.admit(waiting.front(), slot);
                waiting.pop_front();
            }
        }
        server.decode_busy_rows();  // those just admitted too
    }
    return std::move(server.out);
}
// [/ch07:serve-requests]

}  // namespace decodebook
