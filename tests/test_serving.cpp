// Chapter 07: serving requests that arrive over time (decoding/serving.hpp). Each request's tokens
// against the same request generated alone; a schedule on a fake clock worked out by hand for
// static and continuous batching; the refusals.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/cached_loops.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/decoding/serving.hpp"
#include "fake_clock.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::tokenizer;

namespace {

ServeRequest request(const std::string& prompt, const GenerationConfig& config, uint64_t seed, double arrival) {
    ServeRequest r;
    r.prompt = tokenizer().encode(prompt);
    r.config = config;
    r.seed = seed;
    r.arrival = arrival;
    return r;
}

// Five requests of different prompts and lengths, arriving one unit apart (more than any slot count below).
std::vector<ServeRequest> mixed_requests(bool sampled) {
    GenerationConfig config;
    config.do_sample = sampled;
    config.temperature = 0.9f;
    config.top_k = 40;
    const std::vector<std::string> prompts{"The best way to", "You will", "Q: What do you call", "Life is",
                                           "A computer is"};
    const std::vector<int> lengths{7, 3, 11, 5, 9};
    std::vector<ServeRequest> requests;
    for (size_t i = 0; i < prompts.size(); ++i) {
        config.max_new_tokens = lengths[i];
        requests.push_back(request(prompts[i], config, 100 + i, static_cast<double>(i)));
    }
    return requests;
}

}  // namespace

TEST_CASE("every served request gets the tokens generate_cached gives it alone", "[serve]") {
    for (bool sampled : {false, true}) {
        const std::vector<ServeRequest> requests = mixed_requests(sampled);
        std::vector<Generation> alone;
        for (const ServeRequest& r : requests)
            alone.push_back(generate_cached(model(), tokenizer(), r.prompt, r.config, make_sampler(r.config, r.seed)));
        for (Scheduling scheduling : {Scheduling::Static, Scheduling::Continuous}) {
            for (size_t slots : {1, 2, 3}) {
                FakeClock fake;
                const std::vector<ServedRequest> served =
                    serve_requests(model(), &tokenizer(), requests, slots, scheduling, fake.clock());
                REQUIRE(served.size() == requests.size());
                for (size_t i = 0; i < requests.size(); ++i) {
                    INFO((sampled ? "sampled" : "greedy") << ", " << to_string(scheduling) << ", " << slots
                                                          << " slots, request " << i);
                    CHECK(served[i].generation.ids == alone[i].ids);
                    CHECK(served[i].generation.text == alone[i].text);
                    CHECK(served[i].generation.finish_reason == alone[i].finish_reason);
                    CHECK(served[i].slot < slots);
                    CHECK(served[i].arrival <= served[i].admitted);
                    CHECK(served[i].admitted < served[i].first_token);
                    CHECK(served[i].first_token <= served[i].finished);
                }
            }
        }
    }
}

// Four requests, two slots, no EOS (each runs to max_new_tokens), one unit per model call:
//   A arrives 0, 4 tokens;  B arrives 0, 2 tokens;  C arrives 1, 3 tokens;  D arrives 20, 1 token.
// A step admits (one prefill each, which makes the first token), then decodes every busy row
// (one call, one token each). Worked by hand:
//
// Continuous: t=0 A -> slot 0, prefill ends 1 (A 1 token); B -> slot 1, prefill ends 2 (B 1);
//   decode {A,B} ends 3 (A 2, B 2: B done at 3). t=3: C (arrived 1) -> slot 1, prefill ends 4
//   (C 1); decode {A,C} ends 5 (A 3, C 2); decode {A,C} ends 6 (A 4 done, C 3 done). Idle until
//   20: D -> slot 0, prefill ends 21, done with its one token.
//   A: admitted 0, first 1, finished 6;  B: 1, 2, 3;  C: 3, 4, 6;  D: 20, 21, 21.
//   3 decode calls (6 rows), idle 20 - 6 = 14.
// Static: the same until 3, then C waits for A, the batch's longest: decode {A} ends 4 (A 3),
//   decode {A} ends 5 (A 4 done). t=5: C -> slot 0, prefill ends 6 (C 1); decode ends 7, 8 (C done
//   at 8). Idle until 20: D as above.
//   A: 0, 1, 5;  B: 1, 2, 3;  C: 5, 6, 8;  D: 20, 21, 21.  5 decode calls (6 rows), idle 12.
TEST_CASE("a schedule worked by hand on a fake clock for static and continuous batching", "[serve]") {
    GenerationConfig config;
    config.eos_token_id = std::vector<int>{};  // no EOS: every request runs to its max_new_tokens
    std::vector<ServeRequest> requests;
    const std::vector<std::pair<double, int>> arrival_length{{0, 4}, {0, 2}, {1, 3}, {20, 1}};
    const std::vector<std::string> prompts{"The best way to", "You will", "Life is", "Q: What do you call"};
    for (size_t i = 0; i < 4; ++i) {
        config.max_new_tokens = arrival_length[i].second;
        requests.push_back(request(prompts[i], config, 0, arrival_length[i].first));
    }
    struct Expected {
        size_t slot;
        double admitted, first_token, finished;
    };
    const auto check = [&](Scheduling scheduling, const std::vector<Expected>& expected, int decode_steps, double idle) {
        FakeClock fake;
        ServeStats stats;
        const std::vector<ServedRequest> served =
            serve_requests(model(), nullptr, requests, 2, scheduling, fake.clock(), 0, &stats);
        for (size_t i = 0; i < 4; ++i) {
            INFO(to_string(scheduling) << ", request " << "ABCD"[i]);
            CHECK(served[i].generation.ids.size() == static_cast<size_t>(requests[i].config.max_new_tokens));
            CHECK(served[i].generation.finish_reason == FinishReason::Length);
            CHECK(served[i].slot == expected[i].slot);
            CHECK(served[i].arrival == requests[i].arrival);
            CHECK(served[i].admitted == expected[i].admitted);
            CHECK(served[i].first_token == expected[i].first_token);
            CHECK(served[i].finished == expected[i].finished);
        }
        INFO(to_string(scheduling));
        CHECK(stats.prefills == 4);
        CHECK(stats.decode_steps == decode_steps);
        CHECK(stats.decoded_tokens == 6);  // 10 tokens, 4 of them from prefills
        CHECK(stats.idle == idle);
        return served;
    };
    const auto continuous = check(Scheduling::Continuous, {{0, 0, 1, 6}, {1, 1, 2, 3}, {1, 3, 4, 6}, {0, 20, 21, 21}}, 3, 14);
    const auto fixed = check(Scheduling::Static, {{0, 0, 1, 5}, {1, 1, 2, 3}, {0, 5, 6, 8}, {0, 20, 21, 21}}, 5, 12);
    // the metrics from those times: C's time to first token 4 - 1 = 3 against 6 - 1 = 5, and A's
    // time per output token (6 - 1) / 3 against (5 - 1) / 3: C's prefill and decodes slow A down
    CHECK(continuous[2].ttft() == 3);
    CHECK(fixed[2].ttft() == 5);
    CHECK(continuous[0].tpot() == Approx(5.0 / 3));
    CHECK(fixed[0].tpot() == Approx(4.0 / 3));
    CHECK(continuous[3].tpot() == 0);  // one token: no time per output token
}

TEST_CASE("serve_requests refuses what it cannot serve with the fix", "[serve][errors]") {
    GenerationConfig config;
    config.max_new_tokens = 4;
    const std::vector<ServeRequest> two{request("The best way to", config, 0, 0), request("Life is", config, 0, 2)};
    FakeClock fake;
    const ServeClock clock = fake.clock();
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, two, 0, Scheduling::Continuous, clock),
                      Catch::Contains("0 slots") && Catch::Contains("at least one row"));
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, {}, 2, Scheduling::Continuous, clock),
                      Catch::Contains("no requests"));
    // "The best way to" is 4 tokens: with 4 new ones it needs 8 positions
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, two, 2, Scheduling::Static, clock, 7),
                      Catch::Contains("request 0 needs 8 positions") && Catch::Contains("at least 8 positions"));
    std::vector<ServeRequest> unsorted = two;
    unsorted[0].arrival = 3;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, unsorted, 2, Scheduling::Static, clock),
                      Catch::Contains("request 1 arrives at 2, before request 0 at 3") &&
                          Catch::Contains("order of arrival"));
    std::vector<ServeRequest> negative = two;
    negative[0].arrival = -1;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, negative, 2, Scheduling::Static, clock),
                      Catch::Contains("request 0 arrives at -1") && Catch::Contains(">= 0"));
    std::vector<ServeRequest> empty_prompt = two;
    empty_prompt[1].prompt.clear();
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, empty_prompt, 2, Scheduling::Static, clock),
                      Catch::Contains("the prompt is empty"));
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, two, 2, Scheduling::Static, ServeClock{}),
                      Catch::Contains("without now or wait_until") && Catch::Contains("wall_clock()"));
    CHECK(fake.t == 0);  // refused before any model call
}

// Issue 42: a num_beams = 2 request was served as greedy, an arrival of 1e300 gave a TTFT of
// -1e300, and 2^62 slots threw std::length_error from the cache's allocation.
TEST_CASE("serve_requests refuses beams and prompt lookup and arrivals and slots past its bounds", "[serve][errors]") {
    GenerationConfig config;
    config.max_new_tokens = 4;
    const std::vector<ServeRequest> two{request("The best way to", config, 0, 0), request("Life is", config, 0, 2)};
    FakeClock fake;
    const ServeClock clock = fake.clock();
    std::vector<ServeRequest> beams = two;
    beams[1].config.num_beams = 2;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, beams, 2, Scheduling::Continuous, clock),
                      Catch::Contains("request 1 asks for beam search (num_beams 2)") &&
                          Catch::Contains("one token per request per step") && Catch::Contains("beam_search_cached"));
    std::vector<ServeRequest> lookup = two;
    lookup[0].config.prompt_lookup_num_tokens = 3;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, lookup, 2, Scheduling::Continuous, clock),
                      Catch::Contains("request 0 asks for speculative decoding (prompt_lookup_num_tokens 3)"));
    std::vector<ServeRequest> late = two;
    late[1].arrival = 1e300;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, late, 2, Scheduling::Static, clock),
                      Catch::Contains("request 1 arrives at 1e+300, after the 86400000") &&
                          Catch::Contains("from 0 to 86400000"));
    late[1].arrival = kMaxServeArrival;  // the bound itself is served
    CHECK_NOTHROW(serve_requests(model(), nullptr, late, 2, Scheduling::Static, clock));
    fake.t = 0;
    CHECK_THROWS_WITH(serve_requests(model(), nullptr, two, size_t{1} << 62, Scheduling::Continuous, clock),
                      Catch::Contains("4611686018427387904 slots, more than the 4096") &&
                          Catch::Contains("at most 4096 slots"));
    CHECK(fake.t == 0);  // refused before any model call
}
