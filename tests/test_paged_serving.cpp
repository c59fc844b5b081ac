// Chapter 12: serving on the paged cache (decoding/paged_serving.hpp). Each request's tokens
// against the same request served alone, with prefix caching on and off, preempted or not; the
// prefill tokens a shared prefix saves, counted by hand; a hot cache's run against the cold one;
// the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/paged_serving.hpp"
#include "fake_clock.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::tokenizer;

namespace {

// Six sampled requests that share a preamble of several blocks, arriving one unit apart.
std::vector<ServeRequest> shared_prompt_requests() {
    GenerationConfig config;
    config.do_sample = true;
    config.temperature = 0.9f;
    config.top_k = 40;
    const std::string preamble = "Q: What is the meaning of a fortune cookie that says nothing at all? A: ";
    const std::vector<std::string> endings{"It", "Nothing", "The", "You", "Silence is", "A"};
    std::vector<ServeRequest> requests;
    for (size_t i = 0; i < endings.size(); ++i) {
        ServeRequest r;
        r.prompt = tokenizer().encode(preamble + endings[i]);
        r.config = config;
        r.config.max_new_tokens = 6 + static_cast<int>(i % 3) * 4;
        r.seed = 40 + i;
        r.arrival = static_cast<double>(i);
        requests.push_back(r);
    }
    return requests;
}

// Each request served alone, on a pool that never runs out, with nothing cached.
std::vector<Generation> served_alone(const std::vector<ServeRequest>& requests) {
    std::vector<Generation> alone;
    for (ServeRequest r : requests) {
        r.arrival = 0;
        FakeClock fake;
        PagedServeOptions o;
        o.prefix_caching = false;
        alone.push_back(serve_paged(model(), &tokenizer(), {r}, o, fake.clock()).at(0).generation);
    }
    return alone;
}

}  // namespace

TEST_CASE("each request served on the paged cache gets its tokens alone: cached prefix or not and preempted or not", "[paged-serve]") {
    const std::vector<ServeRequest> requests = shared_prompt_requests();
    const std::vector<Generation> alone = served_alone(requests);
    struct Run {
        const char* name;
        PagedServeOptions options;
    };
    std::vector<Run> runs;
    for (const bool caching : {true, false})
        for (const int bs : {16, 3}) runs.push_back({"roomy pool", {4, 64 * 16 / bs, bs, caching}});
    runs.push_back({"one at a time", {1, 64, 16, true}});
    for (const size_t budget : {size_t{4}, size_t{16}, size_t{64}}) {  // chunked prefill: one call a step
        PagedServeOptions o{4, 64, 16, true};
        o.token_budget = budget;
        runs.push_back({"chunked", o});
    }
    PagedServeOptions chunked_small{3, 12, 4, true};
    chunked_small.token_budget = 5;
    runs.push_back({"small pool chunked", chunked_small});
    // 12 blocks of 4: three running requests outgrow it, so the latest is preempted and recomputed
    runs.push_back({"small pool", {3, 12, 4, true}});
    runs.push_back({"small pool without caching", {3, 12, 4, false}});
    for (const Run& run : runs) {
        FakeClock fake;
        PagedServeStats stats;
        const std::vector<ServedRequest> served = serve_paged(model(), &tokenizer(), requests, run.options,
                                                              fake.clock(), &stats);
        REQUIRE(served.size() == requests.size());
        INFO(run.name << ", caching " << run.options.prefix_caching << ", block size " << run.options.block_size
                      << ", budget " << run.options.token_budget);
        for (size_t i = 0; i < requests.size(); ++i) {
            INFO("request " << i);
            CHECK(served[i].generation.ids == alone[i].ids);
            CHECK(served[i].generation.text == alone[i].text);
            CHECK(served[i].generation.finish_reason == alone[i].finish_reason);
            CHECK(served[i].arrival <= served[i].admitted);
            CHECK(served[i].admitted < served[i].first_token);
            CHECK(served[i].first_token <= served[i].finished);
            CHECK(served[i].token_times.size() == served[i].generation.ids.size());
            CHECK(std::is_sorted(served[i].token_times.begin(), served[i].token_times.end()));
        }
        if (run.options.prefix_caching) {
            CHECK(stats.computed_tokens < stats.prompt_tokens);  // the preamble's blocks were hit
            // every token an admission needed was hit or computed, save the rest of a prompt
            // preempted part way through its chunks (it is needed again when readmitted)
            if (run.options.token_budget == 0 || stats.preemptions == 0)
                CHECK(stats.cache.hits == stats.prompt_tokens - stats.computed_tokens);
            else
                CHECK(stats.cache.hits <= stats.prompt_tokens - stats.computed_tokens);
        } else {
            CHECK(stats.computed_tokens == stats.prompt_tokens);
        }
        if (run.options.num_blocks == 12) CHECK(stats.preemptions > 0);
        else CHECK(stats.preemptions == 0);
        CHECK(stats.peak_blocks <= run.options.num_blocks);
    }
}

TEST_CASE("a shared prefix saves its full blocks' prefill and no more", "[paged-serve]") {
    // A is 40 tokens; B shares A's first 32 (two blocks of 16) and differs after. A computes 40 and
    // caches its two full blocks (the partial third never is); B hits both and computes 8.
    std::vector<int> a(40), b;
    std::iota(a.begin(), a.end(), 1);
    b.assign(a.begin(), a.begin() + 32);
    for (int t = 100; t < 108; ++t) b.push_back(t);
    GenerationConfig greedy;
    greedy.max_new_tokens = 2;
    const std::vector<ServeRequest> requests = {{a, greedy, 0, 0}, {b, greedy, 0, 0}};
    FakeClock fake;
    PagedServeStats stats;
    serve_paged(model(), nullptr, requests, PagedServeOptions{}, fake.clock(), &stats);
    CHECK(stats.prompt_tokens == 80);
    CHECK(stats.computed_tokens == 48);
    CHECK(stats.cache.requests == 2);
    CHECK(stats.cache.queries == 80);
    CHECK(stats.cache.hits == 32);
    CHECK(stats.steps.prefills == 2);
    CHECK(stats.peak_blocks == 4);  // A's three, and B's own third beside the two it shares
}

TEST_CASE("a hot prefix cache gives the cold run's tokens on the invariant kernels", "[paged-serve]") {
    // the same requests twice, the second time after the first have finished: each prompt's full
    // blocks are all cached then (the pool never had to evict), and the tokens do not change
    const std::vector<ServeRequest> cold = shared_prompt_requests();
    std::vector<ServeRequest> requests = cold;
    long more_hits = 0;  // what the second copies hit: every whole block before each prompt's last token
    for (const ServeRequest& r : cold) {
        ServeRequest again = r;
        again.arrival = 1000 + r.arrival;
        requests.push_back(again);
        more_hits += static_cast<long>((r.prompt.size() - 1) / 16 * 16);
    }
    FakeClock cold_clock, hot_clock;
    PagedServeStats cold_stats, stats;
    serve_paged(model(), &tokenizer(), cold, PagedServeOptions{}, cold_clock.clock(), &cold_stats);
    const std::vector<ServedRequest> served =
        serve_paged(model(), &tokenizer(), requests, PagedServeOptions{}, hot_clock.clock(), &stats);
    const size_t n = cold.size();
    for (size_t i = 0; i < n; ++i) {
        INFO("request " << i);
        CHECK(served[n + i].generation.ids == served[i].generation.ids);
        CHECK(served[n + i].generation.text == served[i].generation.text);
    }
    CHECK(more_hits > 0);
    CHECK(stats.cache.hits == cold_stats.cache.hits + more_hits);
}

TEST_CASE("n = 4 at T 1 prefills once and each sample is the single run with its own seed", "[paged-serve]") {
    // vLLM gives child k the seed + k (vllm/v1/engine/parallel_sampling.py); copying one seeded
    // request made n identical children there once (vLLM PR 10980): ours differ
    GenerationConfig t1;
    t1.do_sample = true;
    t1.temperature = 1.0f;
    t1.max_new_tokens = 12;
    for (const char* text : {"Q: What did the fortune cookie say?", "You will"}) {
        ServeRequest r{tokenizer().encode(text), t1, 7, 0, 4};
        for (const int bs : {16, static_cast<int>(r.prompt.size())}) {  // a partial last block, then none
            INFO("prompt '" << text << "' block size " << bs);
            FakeClock fake;
            PagedServeStats stats;
            PagedServeOptions o;
            o.block_size = bs;
            o.num_blocks = 64 * 16 / bs;
            const std::vector<ServedRequest> served = serve_paged(model(), &tokenizer(), {r}, o, fake.clock(), &stats);
            REQUIRE(served.size() == 4);
            CHECK(stats.steps.prefills == 1);
            CHECK(stats.computed_tokens == static_cast<long>(r.prompt.size()));
            for (int k = 0; k < 4; ++k) {
                INFO("sample " << k);
                CHECK(served[static_cast<size_t>(k)].request == 0);
                CHECK(served[static_cast<size_t>(k)].sample == k);
                ServeRequest single = r;
                single.n = 1;
                single.seed = r.seed + static_cast<uint64_t>(k);
                FakeClock alone_clock;
                const ServedRequest alone = serve_paged(model(), &tokenizer(), {single}, o, alone_clock.clock()).at(0);
                CHECK(served[static_cast<size_t>(k)].generation.ids == alone.generation.ids);
                CHECK(served[static_cast<size_t>(k)].first_token == served[0].first_token);
                for (int j = 0; j < k; ++j)
                    CHECK(served[static_cast<size_t>(k)].generation.text != served[static_cast<size_t>(j)].generation.text);
            }
        }
    }
}

TEST_CASE("samples of several requests share a small pool through preemption and keep their tokens", "[paged-serve]") {
    std::vector<ServeRequest> requests = shared_prompt_requests();
    for (ServeRequest& r : requests) r.n = 2;
    // alone: each sample as a request of its own, with its seed
    std::vector<ServeRequest> singles;
    for (const ServeRequest& r : requests)
        for (int k = 0; k < r.n; ++k) {
            ServeRequest single = r;
            single.n = 1;
            single.seed = r.seed + static_cast<uint64_t>(k);
            singles.push_back(single);
        }
    const std::vector<Generation> alone = served_alone(singles);
    for (const size_t budget : {size_t{0}, size_t{6}}) {  // whole prompts, then chunks of a 6-token step
        FakeClock fake;
        PagedServeStats stats;
        PagedServeOptions o{4, 14, 4, true};
        o.token_budget = budget;
        const std::vector<ServedRequest> served = serve_paged(model(), &tokenizer(), requests, o, fake.clock(), &stats);
        REQUIRE(served.size() == alone.size());
        for (size_t s = 0; s < served.size(); ++s) {
            INFO("budget " << budget << " sample " << s);
            CHECK(served[s].request == s / 2);
            CHECK(served[s].generation.ids == alone[s].ids);
        }
        CHECK(stats.preemptions > 0);
        if (budget == 0) CHECK(stats.steps.prefills < static_cast<int>(served.size()) + stats.preemptions);  // one for two
    }
}

TEST_CASE("chunked prefill trades the long prompt's first token for the running requests' worst gap", "[paged-serve]") {
    // a cost model for the fake clock: a model call costs 4 units plus 1 per token it computes
    struct CostClock {
        double t = 0;
        size_t pending = 0;
        ServeClock clock() {
            return {[this] { return t += 4 + static_cast<double>(std::exchange(pending, 0)); },
                    [this](double until) { t = until; }, [this](size_t tokens) { pending += tokens; }};
        }
    };
    GenerationConfig short_config;
    short_config.max_new_tokens = 40;
    GenerationConfig long_config;
    long_config.max_new_tokens = 4;
    std::vector<int> long_prompt;
    for (int i = 0; i < 150; ++i) long_prompt.push_back((i * 37 + 11) % 2000);
    std::vector<ServeRequest> requests;
    for (const char* text : {"You will", "Life is", "The best"})
        requests.push_back({tokenizer().encode(text), short_config, 0, 0});
    requests.push_back({long_prompt, long_config, 0, 30});
    struct Outcome {
        double worst_gap = 0;  // the short requests' longest wait between two tokens
        double long_ttft = 0;  // the long request's time to first token
        std::vector<std::vector<int>> ids;
    };
    const auto serve = [&](size_t budget) {
        CostClock cost;
        PagedServeOptions o;
        o.max_running = 4;
        o.token_budget = budget;
        const std::vector<ServedRequest> served = serve_paged(model(), nullptr, requests, o, cost.clock());
        Outcome out;
        for (size_t i = 0; i < 3; ++i)
            for (size_t k = 1; k < served[i].token_times.size(); ++k)
                out.worst_gap = std::max(out.worst_gap, served[i].token_times[k] - served[i].token_times[k - 1]);
        out.long_ttft = served[3].ttft();
        for (const ServedRequest& r : served) out.ids.push_back(r.generation.ids);
        return out;
    };
    const Outcome whole = serve(0), chunked = serve(16);
    INFO("worst gap " << whole.worst_gap << " -> " << chunked.worst_gap << ", long TTFT " << whole.long_ttft << " -> "
                      << chunked.long_ttft);
    // whole: the 150-token prefill (154 units) stalls every running request once; chunked: a step
    // is at most 4 + 16 units
    CHECK(whole.worst_gap >= 154);
    CHECK(chunked.worst_gap <= 20);
    CHECK(chunked.long_ttft > whole.long_ttft);
    CHECK(chunked.ids == whole.ids);
}

TEST_CASE("serve_paged refuses what it cannot serve with a fix", "[paged-serve][errors]") {
    const std::vector<ServeRequest> requests = shared_prompt_requests();
    FakeClock fake;
    const ServeClock clock = fake.clock();
    PagedServeOptions o;
    o.max_running = 0;
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, requests, o, clock), Catch::Contains("max_running 0"));
    o = {};
    o.num_blocks = 0;
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, requests, o, clock), Catch::Contains("at least one block"));
    o = {};
    o.num_blocks = 1;  // 16 positions: request 0 is the first that does not fit
    const size_t need = requests[0].prompt.size() + static_cast<size_t>(requests[0].config.max_new_tokens);
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, requests, o, clock),
                      Catch::Contains("request 0 needs " + std::to_string(need)) &&
                          Catch::Contains("at least " + std::to_string((need + 15) / 16) + " blocks"));
    o = {};
    o.max_running = 2;
    std::vector<ServeRequest> many = requests;
    many[1].n = 3;
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, many, o, clock),
                      Catch::Contains("request 1 asks for 3 samples") && Catch::Contains("raise max_running to at least 3"));
    many[1].n = 0;
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, many, PagedServeOptions{}, clock), Catch::Contains("asks for n 0"));
    many[1].n = 2;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, many, 2, Scheduling::Continuous, clock),
                      Catch::Contains("asks for n 2") && Catch::Contains("serve_paged"));
    o = {};
    o.token_budget = 7;
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, requests, o, clock),
                      Catch::Contains("token budget of 7 for 8 running") && Catch::Contains("max_num_batched_tokens"));
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, {}, PagedServeOptions{}, clock), Catch::Contains("no requests"));
    CHECK_THROWS_WITH(serve_paged(model(), nullptr, requests, PagedServeOptions{}, ServeClock{}),
                      Catch::Contains("without now"));
}
