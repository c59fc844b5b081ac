// Chapter 12: serving a list of requests on a paged cache. The loop itself is PagedEngine
// (paged_engine.cpp): this driver checks the whole list first, adds each request when the clock
// reaches its arrival, steps while anything runs or waits, and waits for the next arrival
// otherwise, collecting each sample's result as it finishes.
#include "decodebook/decoding/paged_serving.hpp"

#include <string>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/paged_engine.hpp"

namespace decodebook {

std::vector<ServedRequest> serve_paged(const Gpt2& model, const Tokenizer* tokenizer,
                                       const std::vector<ServeRequest>& requests, const PagedServeOptions& options,
                                       const ServeClock& clock, PagedServeStats* stats) {
    if (!clock.now || !clock.wait_until)
        throw Error("serve_paged got a ServeClock without now or wait_until", "pass wall_clock() or set both functions");
    PagedEngine engine(model, tokenizer, options, clock);  // checks the options
    check_serve_requests(model.config(), requests);        // the list: arrivals in order, within a day
    size_t samples = 0;
    for (size_t i = 0; i < requests.size(); ++i) {  // every request before any work
        engine.check(requests[i], i);
        samples += static_cast<size_t>(requests[i].n);
    }
    std::vector<ServedRequest> out(samples);       // request by request, sample by sample
    std::vector<size_t> first(requests.size(), 0);  // per request: its first sample's place in out
    for (size_t i = 1; i < requests.size(); ++i) first[i] = first[i - 1] + static_cast<size_t>(requests[i - 1].n);
    const EngineObserver collect{{}, [&](ServedRequest&& done) {
                                     out[first[done.request] + static_cast<size_t>(done.sample)] = std::move(done);
                                 }};
    size_t next = 0;  // the first request that has not arrived yet
    double idle = 0;  // time spent waiting for an arrival with nothing to serve
    while (next < requests.size() || !engine.idle()) {
        while (next < requests.size() && requests[next].arrival <= engine.now()) engine.add(requests[next++], collect);
        if (engine.idle()) {
            clock.wait_until(requests[next].arrival);
            idle += requests[next].arrival - engine.now();
            engine.advance(requests[next].arrival);
            continue;
        }
        engine.step();
    }
    const BlockPool& pool = engine.pool();
    pool.check_invariants();
    if (pool.num_free_blocks() != pool.num_blocks())
        throw Error("serve_paged ended with blocks still held", "report this: every request frees its blocks");
    if (stats) {
        *stats = engine.stats();
        stats->steps.idle = idle;
    }
    return out;
}

}  // namespace decodebook
