// Chapter 12's loop a step at a time (decoding/paged_engine.hpp), as a server drives it: requests
// added while others run get their tokens alone; the tokens an observer hears, text included, are
// the generation's; a cancelled request's blocks return and its observer hears nothing more; a
// refused request changes nothing.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/decoding/paged_engine.hpp"
#include "fake_clock.hpp"
#include "golden.hpp"

using namespace decodebook;
using golden::model;
using golden::tokenizer;

namespace {

ServeRequest sampled(const std::string& prompt, int max_new_tokens, uint64_t seed) {
    ServeRequest r;
    r.prompt = tokenizer().encode(prompt);
    r.config.do_sample = true;
    r.config.temperature = 0.9f;
    r.config.top_k = 40;
    r.config.max_new_tokens = max_new_tokens;
    r.seed = seed;
    return r;
}

// The request served alone by serve_paged, on a pool with nothing cached.
Generation alone(ServeRequest r, int sample = 0) {
    r.arrival = 0;
    FakeClock fake;
    PagedServeOptions o;
    o.prefix_caching = false;
    return serve_paged(model(), &tokenizer(), {r}, o, fake.clock()).at(static_cast<size_t>(sample)).generation;
}

// What one request's observer heard: per sample, the tokens and the text in order, and the
// finished results.
struct Heard {
    std::map<int, std::vector<int>> ids;
    std::map<int, std::string> text;
    std::map<int, std::vector<StepLogprobs>> logprobs;
    std::vector<ServedRequest> finished;
    EngineObserver observer(size_t id) {
        return {[this, id](size_t request, int sample, const StepRecord& record, const StepLogprobs* lp) {
                    CHECK(request == id);
                    ids[sample].push_back(record.token);
                    text[sample] += record.text;
                    if (lp) {
                        CHECK(lp->token == record.token);
                        logprobs[sample].push_back(*lp);
                    }
                },
                [this](ServedRequest&& done) { finished.push_back(std::move(done)); }};
    }
};

}  // namespace

TEST_CASE("requests added while others run get their tokens alone and the observer hears each token", "[paged-engine]") {
    const std::vector<ServeRequest> requests{sampled("The meaning of a fortune cookie is", 12, 3),
                                             sampled("You will", 9, 4), sampled("A dog is", 14, 5),
                                             sampled("The meaning of a fortune cookie is", 7, 6)};
    FakeClock fake;
    PagedServeOptions o{3, 24, 4, true};  // three at a time on a small pool: the fourth waits
    PagedEngine engine(model(), &tokenizer(), o, fake.clock());
    std::vector<Heard> heard(requests.size());
    size_t added = 0;
    for (int step = 0; added < requests.size() || !engine.idle(); ++step) {
        if (step % 3 == 0 && added < requests.size()) {  // one request every three steps
            ServeRequest r = requests[added];
            r.arrival = engine.now();
            CHECK(engine.add(r, heard[added].observer(added)) == added);
            ++added;
        }
        engine.step();
        engine.pool().check_invariants();
        REQUIRE(step < 200);
    }
    for (size_t i = 0; i < requests.size(); ++i) {
        INFO("request " << i);
        const Generation expected = alone(requests[i]);
        REQUIRE(heard[i].finished.size() == 1);
        const ServedRequest& done = heard[i].finished[0];
        CHECK(done.request == i);
        CHECK(done.generation.ids == expected.ids);
        CHECK(done.generation.text == expected.text);
        CHECK(heard[i].ids[0] == expected.ids);
        CHECK(heard[i].text[0] == expected.text);
        CHECK(done.first_token <= done.finished);
    }
    CHECK(engine.pool().num_free_blocks() == engine.pool().num_blocks());
    CHECK(engine.stats().cache.hits > 0);  // the fourth prompt found the first one's blocks
}

TEST_CASE("a streamed stop string is held back and never heard", "[paged-engine]") {
    ServeRequest r = sampled("Q: What is love? A:", 24, 11);
    const Generation free_run = alone(r);
    REQUIRE(free_run.text.size() > 8);
    const std::string stop = free_run.text.substr(free_run.text.size() / 2, 2);  // met half way
    r.config.stop = {stop};
    const Generation expected = alone(r);
    REQUIRE(expected.finish_reason == FinishReason::StopString);
    FakeClock fake;
    PagedEngine engine(model(), &tokenizer(), PagedServeOptions{}, fake.clock());
    Heard heard;
    engine.add(r, heard.observer(0));
    while (!engine.idle()) engine.step();
    CHECK(heard.text[0] == expected.text);
    CHECK(heard.text[0].find(stop) == std::string::npos);
    REQUIRE(heard.finished.size() == 1);
    CHECK(heard.finished[0].generation.matched_stop == stop);
}

TEST_CASE("n samples are heard apart and each is the request alone with its seed", "[paged-engine]") {
    ServeRequest r = sampled("Fortune favours", 8, 21);
    r.n = 3;
    FakeClock fake;
    PagedEngine engine(model(), &tokenizer(), PagedServeOptions{}, fake.clock());
    Heard heard;
    engine.add(r, heard.observer(0));
    while (!engine.idle()) engine.step();
    REQUIRE(heard.finished.size() == 3);
    for (int k = 0; k < 3; ++k) {
        ServeRequest one = r;
        one.n = 1;
        one.seed = r.seed + static_cast<uint64_t>(k);
        CHECK(heard.ids[k] == alone(one).ids);
    }
}

TEST_CASE("a cancelled request gives its blocks back and hears nothing more", "[paged-engine]") {
    FakeClock fake;
    PagedServeOptions o{2, 20, 4, true};
    PagedEngine engine(model(), &tokenizer(), o, fake.clock());
    Heard a, b, c;
    const size_t ia = engine.add(sampled("The early bird", 30, 1), a.observer(0));
    const size_t ib = engine.add(sampled("Nothing ventured", 10, 2), b.observer(1));
    const size_t ic = engine.add(sampled("A penny saved", 6, 3), c.observer(2));  // waits: two run at once
    for (int k = 0; k < 4; ++k) engine.step();
    REQUIRE(engine.running() == 2);
    REQUIRE(engine.waiting() == 1);
    const size_t heard_a = a.ids[0].size();
    REQUIRE(heard_a > 0);
    const int free_before = engine.pool().num_free_blocks();
    CHECK(engine.cancel(ia));  // running: its blocks return now
    CHECK(engine.pool().num_free_blocks() > free_before);
    engine.pool().check_invariants();
    CHECK(engine.cancel(ic));  // waiting: it leaves the queue
    CHECK(engine.waiting() == 0);
    CHECK_FALSE(engine.cancel(ia));  // twice
    CHECK_FALSE(engine.cancel(99));  // never added
    while (!engine.idle()) engine.step();
    CHECK(a.ids[0].size() == heard_a);
    CHECK(a.finished.empty());
    CHECK(c.ids.empty());
    CHECK(c.finished.empty());
    REQUIRE(b.finished.size() == 1);
    CHECK(b.finished[0].generation.ids == alone(sampled("Nothing ventured", 10, 2)).ids);
    CHECK_FALSE(engine.cancel(ib));  // finished
    CHECK(engine.pool().num_free_blocks() == engine.pool().num_blocks());
    engine.pool().check_invariants();
}

TEST_CASE("the engine refuses a request without changing anything", "[paged-engine][errors]") {
    FakeClock fake;
    PagedServeOptions o{2, 4, 4, true};  // 16 positions
    PagedEngine engine(model(), &tokenizer(), o, fake.clock());
    CHECK_THROWS_WITH(engine.add(sampled("A long prompt that does not fit", 20, 1)),
                      Catch::Contains("request 0 needs") && Catch::Contains("blocks of 4"));
    ServeRequest bad = sampled("Hi", 4, 1);
    bad.config.num_beams = 2;
    CHECK_THROWS_WITH(engine.add(bad), Catch::Contains("request 0 asks for beam search"));
    bad = sampled("Hi", 4, 1);
    bad.n = 3;
    CHECK_THROWS_WITH(engine.add(bad), Catch::Contains("request 0 asks for 3 samples"));
    bad.n = 1;
    bad.arrival = -1;
    CHECK_THROWS_WITH(engine.add(bad), Catch::Contains("arrives at"));
    CHECK(engine.idle());
    engine.step();  // an idle step does nothing
    CHECK(fake.t == 0);
    CHECK(engine.add(sampled("Hi", 4, 1)) == 0);  // the refused ones took no id
    CHECK_THROWS_WITH(PagedEngine(model(), nullptr, PagedServeOptions{}, ServeClock{}), Catch::Contains("without now"));
}

TEST_CASE("logprobs asked of the engine come with each token and change no token", "[paged-engine]") {
    ServeRequest r = sampled("The meaning of life is", 10, 31);
    r.n = 2;
    FakeClock fake;
    PagedEngine engine(model(), &tokenizer(), PagedServeOptions{}, fake.clock());
    Heard heard;
    engine.add(r, heard.observer(0), LogprobsRequest{3, LogprobsMode::RawLogprobs});
    while (!engine.idle()) engine.step();
    REQUIRE(heard.finished.size() == 2);
    for (const ServedRequest& done : heard.finished) {
        INFO("sample " << done.sample);
        ServeRequest one = r;
        one.n = 1;
        one.seed = r.seed + static_cast<uint64_t>(done.sample);
        CHECK(done.generation.ids == alone(one).ids);  // the recording sampler picks make_sampler's tokens
        REQUIRE(done.logprobs.size() == done.generation.ids.size());
        for (size_t i = 0; i < done.logprobs.size(); ++i) {
            const StepLogprobs& step = done.logprobs[i];
            CHECK(step.token == done.generation.ids[i]);
            CHECK(step.value <= 0.0f);
            CHECK(step.top.size() >= 3);
            CHECK(step.top[0].value >= step.value);
        }
        CHECK(heard.logprobs[done.sample].size() == done.logprobs.size());
    }
    CHECK_THROWS_WITH(engine.add(r, {}, LogprobsRequest{21, LogprobsMode::RawLogprobs}), Catch::Contains("21"));
}
