// decodebook-serve: the book's decoding behind an OpenAI-compatible HTTP server.
//
//   decodebook-serve                       (the embedded model on http://127.0.0.1:8000)
//   curl -s localhost:8000/v1/completions -H 'Content-Type: application/json' -d '{"prompt": "The best way to", "max_tokens": 16, "seed": 7}'
//
// POST /v1/completions takes OpenAI's fields (prompt, max_tokens, temperature, top_p, n, stop,
// seed, stream, presence_penalty, frequency_penalty, logit_bias), every other knob of the table
// under its table name (vLLM's convention: "top_k", "min_p", "regex", ...), and vLLM's
// structured_outputs {"regex"}, {"choice"} or {"json"} (a schema; "json_schema" takes one too). GET /v1/models, /health and /metrics (Prometheus'
// text). Threads (docs/design.md, "The engine behind a server"): cpp-httplib's workers parse and
// check a request, hand it to the one scheduler thread, then write that request's tokens as they
// come (server-sent events with "stream": true); the scheduler owns the PagedEngine (chapter 12:
// continuous batching on the paged cache with prefix caching). A client that disconnects, from a
// stream or while it waits for one body, cancels its request and its blocks return. SIGTERM or SIGINT: no new request is taken,
// those running or queued finish, and the server exits 0. Bad input gets OpenAI's error object.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <poll.h>
#include <random>
#include <sstream>
#include <string>
#include <netdb.h>
#include <sys/socket.h>
#include <thread>
#include <unordered_map>
#include <vector>

#include "decodebook/base/error.hpp"
#include "decodebook/base/utf8.hpp"
#include "decodebook/model/tokenizer.hpp"
#include "decodebook/course/cli.hpp"
#include "decodebook/course/logprobs_report.hpp"
#include "decodebook/course/model_dir.hpp"
#include "decodebook/decoding/bind.hpp"
#include "decodebook/decoding/constraint.hpp"
#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/paged_engine.hpp"
#include "decodebook/decoding/paged_serving.hpp"
#include "decodebook/decoding/scoring.hpp"

using namespace decodebook;
using json = nlohmann::ordered_json;  // fields in the order OpenAI writes them; top logprobs by rank

namespace {

// ------------------------------------------------------------------------- errors

// An error a client gets: HTTP status, and OpenAI's error object.
struct ApiError {
    int status;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param = "";
    std::string code = "";
};

json error_body(const ApiError& e) {
    return {{"error",
             {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_body(e).dump(), "application/json");
}

std::string message_of(const Error& e) { return e.problem() + "; " + e.fix(); }

// A knob's message names its command-line flag (--top-p); a request names the field (top_p).
std::string as_field(std::string message) {
    for (const Knob& k : knobs())
        for (size_t at; (at = message.find("--" + k.flag)) != std::string::npos &&
                        (at + 2 + k.flag.size() == message.size() || message[at + 2 + k.flag.size()] == ' ');)
            message.replace(at, 2 + k.flag.size(), k.name);
    return message;
}

// Code points of valid UTF-8 text (OpenAI's text_offset counts them, as Python's len does).
size_t code_points(const std::string& text) {
    size_t n = 0;
    for (unsigned char ch : text) n += (ch & 0xC0) != 0x80;
    return n;
}

// ------------------------------------------------------------------------- a client that left

// cpp-httplib 0.11 tells a handler that its client has closed only when a write fails, and a
// request answered in one body writes nothing until the end; nor does it show a handler its
// socket. The connection's four numbers (addresses and ports, which the request carries) name it:
// find the descriptor whose ends are those. -1 when none is (a test's fake request).
int client_socket(const httplib::Request& req) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        int fd = -1;
        try {
            fd = std::stoi(entry.path().filename().string());
        } catch (const std::exception&) {
            continue;
        }
        sockaddr_storage local{}, peer{};
        socklen_t local_len = sizeof local, peer_len = sizeof peer;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
            getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
            continue;
        char local_host[NI_MAXHOST], peer_host[NI_MAXHOST], local_port[NI_MAXSERV], peer_port[NI_MAXSERV];
        if (getnameinfo(reinterpret_cast<sockaddr*>(&local), local_len, local_host, sizeof local_host, local_port,
                        sizeof local_port, NI_NUMERICHOST | NI_NUMERICSERV) != 0 ||
            getnameinfo(reinterpret_cast<sockaddr*>(&peer), peer_len, peer_host, sizeof peer_host, peer_port,
                        sizeof peer_port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
            continue;
        if (peer_host == req.remote_addr && std::to_string(req.remote_port) == peer_port &&
            std::to_string(req.local_port) == local_port)
            return fd;
    }
    return -1;
}

// cpp-httplib 0.11 listens with a backlog of 5 connections waiting to be accepted (its build's
// CPPHTTPLIB_LISTEN_BACKLOG): a burst of clients connecting at once overflows it, and the kernel
// resets some of them. Listening again on the bound socket sets the system's largest backlog.
class Server : public httplib::Server {
  public:
    void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
};

// True when the client on `fd` has closed its connection (or it broke): the socket reads as
// ended. A client that pipelines its next request reads as data, not as gone. Never blocks.
bool client_gone(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
    char byte;
    const ssize_t got = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// ------------------------------------------------------------------------- what flows between threads

// One thing a request hears: a token's text, a sample's end, or a failure.
struct Event {
    enum class Kind { Token, Finish, Failure } kind;
    size_t choice = 0;              // prompt index * n + sample
    std::string text;               // Token: the text the step released (may be empty)
    std::optional<StepLogprobs> logprobs;  // Token: its numbers, when the request asked
    ServedRequest done;             // Finish
    ApiError failure{500, ""};      // Failure
};

// One HTTP request's events, filled by the scheduler and read by its worker thread.
struct Channel {
    std::mutex m;
    std::condition_variable cv;
    std::deque<Event> events;
    std::atomic<bool> cancelled{false};  // the client went away: the scheduler drops its requests

    void push(Event e) {
        {
            std::lock_guard lock(m);
            events.push_back(std::move(e));
        }
        cv.notify_one();
    }
    // The next event, waiting at most `wait`; none after it.
    std::optional<Event> pop(std::chrono::milliseconds wait) {
        std::unique_lock lock(m);
        if (!cv.wait_for(lock, wait, [&] { return !events.empty(); })) return std::nullopt;
        Event e = std::move(events.front());
        events.pop_front();
        return e;
    }
};

// One prompt of an HTTP request, checked and ready for the engine.
struct Pending {
    ServeRequest request;
    std::optional<LogprobsRequest> logprobs;  // chapter 11's records, when the request asked
    size_t first_choice = 0;  // its samples are choices first_choice .. first_choice + n - 1
    std::shared_ptr<Channel> channel;
};

// Prometheus histogram buckets, in seconds (vLLM's time-to-first-token buckets, shortened).
const std::vector<double> kBuckets{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0};

struct Histogram {
    std::vector<long> counts = std::vector<long>(kBuckets.size(), 0);
    long count = 0;
    double sum = 0;
    void observe(double seconds) {
        for (size_t b = 0; b < kBuckets.size(); ++b)
            if (seconds <= kBuckets[b]) counts[b] += 1;
        count += 1;
        sum += seconds;
    }
    void write(std::ostream& out, const std::string& name, const std::string& help) const {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
        for (size_t b = 0; b < kBuckets.size(); ++b) out << name << "_bucket{le=\"" << kBuckets[b] << "\"} " << counts[b] << "\n";
        out << name << "_bucket{le=\"+Inf\"} " << count << "\n" << name << "_sum " << sum << "\n" << name << "_count " << count << "\n";
    }
};

// What /metrics reports: written by the scheduler (and the workers' refusals), read by /metrics.
struct Metrics {
    std::mutex m;
    long finished = 0, cancelled = 0, refused = 0;
    long prompt_tokens = 0, generation_tokens = 0;
    Histogram ttft, tpot;
    size_t running = 0, waiting = 0;
    int free_blocks = 0, blocks = 0;
    long cache_queries = 0, cache_hits = 0;
};

// ------------------------------------------------------------------------- the scheduler

// The one thread that owns the engine: it takes the inbox's requests, drops cancelled ones, and
// steps while anything runs or waits.
class Scheduler {
public:
    Scheduler(const Gpt2& model, const Tokenizer& tokenizer, const PagedServeOptions& options, ServeClock clock,
              size_t max_queue, Metrics& metrics)
        : engine_(model, &tokenizer, options, std::move(clock)), max_queue_(max_queue), metrics_(metrics) {}

    // Check one prompt as the engine will (safe from any thread: it reads only the options and the model).
    void check(const ServeRequest& r, size_t index) const { engine_.check(r, index); }

    // Queue an HTTP request's prompts; false when the queue is full or the server is stopping.
    bool submit(std::vector<Pending> prompts) {
        {
            std::lock_guard lock(m_);
            if (stopping_ || inbox_.size() + waiting_ + prompts.size() > max_queue_) return false;
            for (Pending& p : prompts) inbox_.push_back(std::move(p));
        }
        cv_.notify_one();
        return true;
    }

    bool stopping() const {
        std::lock_guard lock(m_);
        return stopping_;
    }

    // Take no more requests; the thread ends when what runs and waits has finished.
    void stop() {
        {
            std::lock_guard lock(m_);
            stopping_ = true;
        }
        cv_.notify_one();
    }

    void wake() { cv_.notify_one(); }

    void run() {
        for (;;) {
            std::deque<Pending> arrived;
            {
                std::unique_lock lock(m_);
                cv_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !engine_.idle() || any_cancelled(); });
                if (stopping_ && inbox_.empty() && engine_.idle()) break;
                arrived.swap(inbox_);
            }
            for (Pending& p : arrived) admit(std::move(p));
            drop_cancelled();
            try {
                engine_.step();
            } catch (const Error& e) {  // a bug: every request fails rather than the server
                for (auto& [id, live] : live_)
                    live.channel->push({Event::Kind::Failure, 0, "", std::nullopt, {}, {500, message_of(e), "server_error"}});
                for (auto& [id, live] : live_) engine_.cancel(id);
                live_.clear();
            }
            publish();
        }
    }

private:
    struct Live {
        std::shared_ptr<Channel> channel;
        int remaining;  // samples not finished
    };

    PagedEngine engine_;
    size_t max_queue_;
    Metrics& metrics_;
    mutable std::mutex m_;
    std::condition_variable cv_;
    std::deque<Pending> inbox_;
    size_t waiting_ = 0;  // the engine's queue, as last published (read under m_)
    bool stopping_ = false;
    std::unordered_map<size_t, Live> live_;  // engine id -> its channel (scheduler thread only)

    bool any_cancelled() const {
        for (const auto& [id, live] : live_)
            if (live.channel->cancelled) return true;
        return false;
    }

    void admit(Pending p) {
        if (p.channel->cancelled) return;
        const std::shared_ptr<Channel> channel = p.channel;
        const size_t first = p.first_choice;
        const int n = p.request.n;
        EngineObserver observer{
            [channel, first](size_t, int sample, const StepRecord& record, const StepLogprobs* lp) {
                channel->push({Event::Kind::Token, first + static_cast<size_t>(sample), record.text,
                               lp ? std::optional<StepLogprobs>(*lp) : std::nullopt, {}, {500, ""}});
            },
            [this, channel, first](ServedRequest&& done) {
                const size_t choice = first + static_cast<size_t>(done.sample);
                record_finished(done);
                channel->push({Event::Kind::Finish, choice, "", std::nullopt, std::move(done), {500, ""}});
            }};
        try {
            const size_t id = engine_.add(std::move(p.request), std::move(observer), p.logprobs);
            live_[id] = {channel, n};
        } catch (const Error& e) {
            channel->push({Event::Kind::Failure, first, "", std::nullopt, {}, {400, message_of(e)}});
        }
    }

    void record_finished(const ServedRequest& done) {
        std::lock_guard lock(metrics_.m);
        metrics_.finished += 1;
        metrics_.generation_tokens += static_cast<long>(done.generation.ids.size());
        metrics_.ttft.observe(done.ttft() / 1000.0);
        if (done.generation.ids.size() > 1) metrics_.tpot.observe(done.tpot() / 1000.0);
        if (const auto it = live_.find(done.request); it != live_.end() && --it->second.remaining == 0) live_.erase(it);
    }

    void drop_cancelled() {
        for (auto it = live_.begin(); it != live_.end();) {
            if (it->second.channel->cancelled) {
                engine_.cancel(it->first);
                std::lock_guard lock(metrics_.m);
                metrics_.cancelled += 1;
                it = live_.erase(it);
            } else {
                ++it;
            }
        }
    }

    void publish() {
        const PagedServeStats s = engine_.stats();
        {
            std::lock_guard lock(metrics_.m);
            metrics_.running = engine_.running();
            metrics_.waiting = engine_.waiting();
            metrics_.free_blocks = engine_.pool().num_free_blocks();
            metrics_.blocks = engine_.pool().num_blocks();
            metrics_.cache_queries = s.cache.queries;
            metrics_.cache_hits = s.cache.hits;
        }
        std::lock_guard lock(m_);
        waiting_ = engine_.waiting();
    }
};

// ------------------------------------------------------------------------- reading a request

// The most stop strings a request may give (OpenAI takes 4, vLLM any number): each is matched
// against the text after every token, so a long list would slow every step of the request.
constexpr size_t kMaxStops = 64;

// The knob's value as the table's text: strings as they are, everything else as JSON.
std::string knob_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Knob groups a request may set (the engine decodes one token per request per step: no beams, no drafts).
bool servable(KnobGroup g) { return g != KnobGroup::Beams && g != KnobGroup::Speculative; }

struct Completion {
    std::vector<std::vector<int>> prompts;
    ServeRequest request;  // its config, seed and n; the prompt is filled per prompt
    bool stream = false;
    std::optional<int> logprobs;  // OpenAI's logprobs: the top K per token (chapter 11)
    bool echo = false;            // the prompt before the completion, with its logprobs when asked
};

std::vector<std::vector<int>> read_prompts(const json& p, const Tokenizer& tokenizer) {
    const auto bad = [] {
        return ApiError{400, "prompt must be a string, a list of strings, a list of token ids or a list of such lists",
                        "invalid_request_error", "prompt"};
    };
    const auto ids = [&](const json& list) {
        std::vector<int> out;
        for (const json& id : list) {
            if (!id.is_number_integer()) throw bad();
            const long v = id.get<long>();
            if (v < 0 || v >= tokenizer.vocab_size())
                throw ApiError{400, "prompt token id " + std::to_string(v) + " is outside the vocabulary of " +
                                        std::to_string(tokenizer.vocab_size()),
                               "invalid_request_error", "prompt"};
            out.push_back(static_cast<int>(v));
        }
        return out;
    };
    std::vector<std::vector<int>> out;
    if (p.is_string()) {
        out.push_back(tokenizer.encode(p.get<std::string>()));
    } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
        out.push_back(ids(p));
    } else if (p.is_array() && !p.empty()) {
        for (const json& one : p) {
            if (one.is_string()) out.push_back(tokenizer.encode(one.get<std::string>()));
            else if (one.is_array()) out.push_back(ids(one));
            else throw bad();
        }
    } else {
        throw bad();
    }
    for (const std::vector<int>& one : out)
        if (one.empty()) throw ApiError{400, "a prompt is empty: the model needs at least one token to continue", "invalid_request_error", "prompt"};
    return out;
}

// One completions body -> the checked requests, or an ApiError naming the field.
Completion read_completion(const std::string& body, const Tokenizer& tokenizer, const Gpt2& model,
                           const std::string& model_name, int default_max_tokens, size_t max_n) {
    json j;
    try {
        j = json::parse(body);
    } catch (const json::parse_error& e) {
        throw ApiError{400, std::string("the body is not JSON: ") + e.what()};
    }
    if (!j.is_object()) throw ApiError{400, "the body must be a JSON object"};
    Completion c;
    GenerationConfig& config = c.request.config;
    config.max_new_tokens = default_max_tokens;
    config.do_sample = true;  // OpenAI's temperature defaults to 1: sampling (temperature 0 is greedy)
    config.temperature = 1.0f;
    config.skip_special_tokens = true;  // vLLM's default: an EOS ends the text without its "<|endoftext|>"
    bool seeded = false;
    std::optional<json> prompt;
    for (const auto& item : j.items()) {  // not a structured binding: clang 14's lambdas cannot capture one
        const std::string& key = item.key();
        const json& value = item.value();
        const auto field = [&](const std::string& what) { return ApiError{400, key + " must be " + what, "invalid_request_error", key}; };
        const auto knob = [&](const std::string& name, const json& v) {
            try {
                set_knob(config, name, knob_text(v));
            } catch (const Error& e) {
                throw ApiError{400, as_field(message_of(e)), "invalid_request_error", key};
            }
        };
        if (key == "model") {
            if (!value.is_string()) throw field("a string");
            if (value.get<std::string>() != model_name)
                throw ApiError{404, "The model `" + value.get<std::string>() + "` does not exist: this server serves `" + model_name + "`",
                               "invalid_request_error", "model", "model_not_found"};
        } else if (key == "prompt") {
            prompt = value;
        } else if (key == "max_tokens") {
            if (value.is_null()) continue;
            if (!value.is_number_integer() || value.get<long>() < 0 || value.get<long>() > model.config().n_positions)
                throw field("an integer from 0 (with echo: score the prompt only) to the model's context of " +
                            std::to_string(model.config().n_positions));
            config.max_new_tokens = value.get<int>();
        } else if (key == "temperature" || key == "top_p" || key == "presence_penalty" || key == "frequency_penalty") {
            if (!value.is_number()) throw field("a number");
            knob(key, value);
        } else if (key == "n") {
            if (!value.is_number_integer() || value.get<long>() < 1 || static_cast<size_t>(value.get<long>()) > max_n)
                throw field("an integer from 1 to " + std::to_string(max_n) + " (the samples of a prompt run at once: --slots)");
            c.request.n = value.get<int>();
        } else if (key == "stop") {
            if (value.is_null()) continue;
            if (!value.is_string() && !value.is_array()) throw field("a string or a list of strings");
            config.stop.clear();
            if (value.is_array() && value.size() > kMaxStops)
                throw field("at most " + std::to_string(kMaxStops) + " strings (every token is checked against each)");
            for (const json& s : value.is_string() ? json::array({value}) : value) {
                if (!s.is_string() || s.get<std::string>().empty()) throw field("a string or a list of non-empty strings");
                config.stop.push_back(s.get<std::string>());
            }
        } else if (key == "seed") {
            if (value.is_null()) continue;
            if (!value.is_number_integer()) throw field("an integer");
            c.request.seed = static_cast<uint64_t>(value.get<int64_t>());
            seeded = true;
        } else if (key == "stream") {
            if (!value.is_boolean()) throw field("true or false");
            c.stream = value.get<bool>();
        } else if (key == "logit_bias") {
            if (!value.is_object()) throw field("an object of token ids to biases");
            knob("logit_bias", value);
        } else if (key == "structured_outputs") {  // vLLM's names: regex, choice, json
            if (!value.is_object() || value.size() != 1 ||
                !(value.contains("regex") || value.contains("choice") || value.contains("json")))
                throw field("an object with one of regex (a string), choice (a list of strings) or json (a schema)");
            if (value.contains("regex")) knob("regex", value["regex"]);
            else if (value.contains("choice")) knob("choice", value["choice"]);
            else if (!value["json"].is_object()) throw field("an object whose json is a JSON schema object");
            else knob("json_schema", value["json"]);
        } else if (key == "json_schema") {  // the schema itself: the table's file path would read the server's files
            if (!value.is_object()) throw field("a JSON schema object");
            knob("json_schema", value);
        } else if (key == "logprobs") {
            if (value.is_null()) continue;
            if (!value.is_number_integer() || value.get<long>() < 0 || value.get<long>() > kMaxLogprobs)
                throw field("an integer from 0 to " + std::to_string(kMaxLogprobs) + " (vLLM's max_logprobs), or null");
            c.logprobs = value.get<int>();
        } else if (key == "echo") {
            if (!value.is_boolean()) throw field("true or false");
            c.echo = value.get<bool>();
        } else if (key == "best_of" || key == "suffix" || key == "user" || key == "stream_options") {
            if (value.is_null() || (key == "best_of" && value == 1)) continue;
            throw ApiError{400, key + " is not served yet by decodebook-serve (docs/limitations.rst)", "invalid_request_error", key};
        } else {
            const Knob* k = nullptr;
            for (const Knob& row : knobs())
                if (row.name == key) k = &row;
            if (!k)
                throw ApiError{400, "unknown field " + key + ": give OpenAI's completion fields, or a knob of the table "
                                    "by its name (decodebook-generate --help lists them with dashes)",
                               "invalid_request_error", key};
            if (!servable(k->group))
                throw ApiError{400, key + " asks for another loop than one token per step, which the server does not run",
                               "invalid_request_error", key};
            if (key == "max_new_tokens") throw field("given as OpenAI's max_tokens");
            knob(key, value);
        }
    }
    if (!prompt) throw ApiError{400, "prompt is required", "invalid_request_error", "prompt"};
    if (config.max_new_tokens == 0 && !c.echo)
        throw ApiError{400, "max_tokens 0 generates nothing: give it with echo true to score the prompt", "invalid_request_error",
                       "max_tokens"};
    if (config.max_new_tokens == 0 && c.stream)
        throw ApiError{400, "max_tokens 0 scores the prompt and has nothing to stream", "invalid_request_error", "stream"};
    const int max_tokens = config.max_new_tokens;
    if (max_tokens == 0) config.max_new_tokens = 1;  // checked as one token; nothing is generated
    c.prompts = read_prompts(*prompt, tokenizer);
    if (!seeded) c.request.seed = std::random_device{}();  // OpenAI's default: a fresh draw
    try {
        check_knob_ids(config, tokenizer.vocab_size());
        bind_to_tokenizer(config, tokenizer, resolve_eos_ids(config, model.config().eos_token_id));
    } catch (const Error& e) {  // a constraint that does not compile is the constraint's field
        throw ApiError{400, message_of(e), "invalid_request_error", constraint_kind(config)};
    }
    config.max_new_tokens = max_tokens;
    return c;
}

std::string finish_reason(FinishReason r) {
    return r == FinishReason::Length ? "length" : r == FinishReason::Callback ? "abort" : "stop";
}

// ------------------------------------------------------------------------- the server

struct ServerConfig {
    std::string host, api_key, model_name;
    int port = 8000;
    size_t max_queue = 64;
    int max_tokens = 16;
    size_t max_n = 8;
    size_t max_body = 1 << 20;
};

class Api {
public:
    Api(const Gpt2& model, const Tokenizer& tokenizer, Scheduler& scheduler, Metrics& metrics, ServeClock clock,
        ServerConfig config)
        : model_(model), tokenizer_(tokenizer), scheduler_(scheduler), metrics_(metrics), clock_(std::move(clock)),
          config_(std::move(config)) {}

    void routes(httplib::Server& svr) {
        svr.set_payload_max_length(config_.max_body);
        svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            if (config_.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
            if (req.get_header_value("Authorization") != "Bearer " + config_.api_key) {
                send_error(res, {401, "missing or wrong API key: send the header Authorization: Bearer KEY",
                                 "authentication_error", "", "invalid_api_key"});
                return httplib::Server::HandlerResponse::Handled;
            }
            return httplib::Server::HandlerResponse::Unhandled;
        });
        svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return;
            if (res.status == 413) send_error(res, {413, "the body is larger than the server takes (--max-body)"});
            else if (res.status == 404) send_error(res, {404, "no route " + req.method + " " + req.path + ": the server has "
                                                              "POST /v1/completions, GET /v1/models, /health and /metrics",
                                                         "invalid_request_error", "", "not_found"});
            else send_error(res, {res.status, "the request could not be read (HTTP " + std::to_string(res.status) + ")"});
        });
        svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
            send_error(res, {500, "the server failed on this request", "server_error"});
        });
        svr.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content("{}", "application/json"); });
        svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
            const json body{{"object", "list"},
                            {"data", json::array({{{"id", config_.model_name}, {"object", "model"}, {"created", started_},
                                                   {"owned_by", "decodebook"}, {"max_model_len", model_.config().n_positions}}})}};
            res.set_content(body.dump(), "application/json");
        });
        svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { res.set_content(metrics_text(), "text/plain; version=0.0.4"); });
        svr.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { completions(req, res); });
    }

private:
    const Gpt2& model_;
    const Tokenizer& tokenizer_;
    Scheduler& scheduler_;
    Metrics& metrics_;
    ServeClock clock_;
    ServerConfig config_;
    std::atomic<long> next_id_{0};
    const long started_ = static_cast<long>(std::time(nullptr));

    void refuse(httplib::Response& res, const ApiError& e) {
        {
            std::lock_guard lock(metrics_.m);
            metrics_.refused += 1;
        }
        send_error(res, e);
    }

    // OpenAI's logprobs object of some rows, its text offsets counted from `offset` code points.
    json logprobs_json(const std::vector<LogprobsRow>& rows, size_t offset) const {
        json out = openai_logprobs(rows, tokenizer_);
        for (json& o : out["text_offset"]) o = o.get<size_t>() + offset;
        return out;
    }

    // With echo: the prompt's text, and its rows (the first without numbers) when logprobs are asked.
    std::vector<LogprobsRow> echoed_rows(const Completion& c, size_t prompt) const {
        if (!c.echo || !c.logprobs) return {};
        return prompt_rows(c.prompts[prompt], prompt_logprobs(model_, c.prompts[prompt], *c.logprobs));
    }

    std::string echoed_text(const Completion& c, size_t prompt) const {
        return c.echo ? to_valid_utf8(tokenizer_.decode(c.prompts[prompt])) : std::string();
    }

    void completions(const httplib::Request& req, httplib::Response& res) {
        Completion c;
        try {
            c = read_completion(req.body, tokenizer_, model_, config_.model_name, config_.max_tokens, config_.max_n);
        } catch (const ApiError& e) {
            return refuse(res, e);
        }
        const size_t n = static_cast<size_t>(c.request.n), choices = c.prompts.size() * n;
        long prompt_tokens = 0;
        for (const std::vector<int>& p : c.prompts) prompt_tokens += static_cast<long>(p.size());
        const json head{{"id", "cmpl-" + std::to_string(next_id_++)}, {"object", "text_completion"},
                        {"created", static_cast<long>(std::time(nullptr))}, {"model", config_.model_name}};
        if (c.request.config.max_new_tokens == 0) return score_only(res, c, head, prompt_tokens);
        auto channel = std::make_shared<Channel>();
        std::vector<Pending> prompts;
        for (size_t i = 0; i < c.prompts.size(); ++i) {
            ServeRequest r = c.request;
            r.prompt = c.prompts[i];
            r.arrival = clock_.now();
            try {
                scheduler_.check(r, i);
            } catch (const Error& e) {
                return refuse(res, {400, message_of(e), "invalid_request_error", "prompt"});
            }
            std::optional<LogprobsRequest> lp;
            if (c.logprobs) lp = LogprobsRequest{*c.logprobs, LogprobsMode::RawLogprobs};
            prompts.push_back({std::move(r), lp, i * n, channel});
        }
        if (scheduler_.stopping()) return refuse(res, {503, "the server is shutting down", "server_error"});
        if (!scheduler_.submit(std::move(prompts))) {
            res.set_header("Retry-After", "1");
            return refuse(res, {429, "the queue is full (--max-queue " + std::to_string(config_.max_queue) + "): retry later",
                                "rate_limit_error"});
        }
        {
            std::lock_guard lock(metrics_.m);
            metrics_.prompt_tokens += prompt_tokens;
        }
        const int socket = client_socket(req);
        if (c.stream) return stream(res, channel, head, std::make_shared<Completion>(std::move(c)), choices, socket);
        // one body at the end: every choice's text, logprobs and finish reason, and the usage
        std::vector<json> out(choices);
        long completion_tokens = 0;
        for (size_t finished = 0; finished < choices;) {
            const std::optional<Event> e = channel->pop(std::chrono::milliseconds(50));
            if (client_gone(socket)) {  // nobody to answer: free the slots and blocks now
                channel->cancelled = true;
                scheduler_.wake();
                return;
            }
            if (!e) continue;
            if (e->kind == Event::Kind::Failure) {
                channel->cancelled = true;
                scheduler_.wake();
                return send_error(res, e->failure);
            }
            if (e->kind != Event::Kind::Finish) continue;
            const size_t prompt = e->choice / n;
            const Generation& g = e->done.generation;
            const std::string echoed = echoed_text(c, prompt);
            json lp = nullptr;
            if (c.logprobs) {
                std::vector<LogprobsRow> rows = echoed_rows(c, prompt);
                const std::vector<LogprobsRow> made = generated_rows(g.ids, e->done.logprobs);
                rows.insert(rows.end(), made.begin(), made.end());
                lp = logprobs_json(rows, 0);
            }
            out[e->choice] = {{"text", echoed + g.text}, {"index", e->choice}, {"logprobs", lp},
                              {"finish_reason", finish_reason(g.finish_reason)}};
            completion_tokens += static_cast<long>(g.ids.size());
            ++finished;
        }
        json body = head;
        body["choices"] = out;
        body["usage"] = {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
                         {"total_tokens", prompt_tokens + completion_tokens}};
        res.set_content(body.dump(), "application/json");
    }

    // max_tokens 0 with echo: the prompts and their logprobs, nothing generated (how lm-eval's
    // harness scores a text through a completions API). No engine step: one forward per prompt.
    void score_only(httplib::Response& res, const Completion& c, json head, long prompt_tokens) {
        std::vector<json> out;
        for (size_t i = 0; i < c.prompts.size(); ++i) {
            const json lp = c.logprobs ? logprobs_json(echoed_rows(c, i), 0) : json(nullptr);
            for (int k = 0; k < c.request.n; ++k)
                out.push_back({{"text", echoed_text(c, i)}, {"index", out.size()}, {"logprobs", lp}, {"finish_reason", "length"}});
        }
        head["choices"] = out;
        head["usage"] = {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 0}, {"total_tokens", prompt_tokens}};
        res.set_content(head.dump(), "application/json");
    }

    // Server-sent events: the echoed prompt first (when asked), a chunk per token that released
    // text or carries logprobs, one per finished choice with its finish reason, then [DONE]. A
    // write that fails means the client left: cancel.
    void stream(httplib::Response& res, std::shared_ptr<Channel> channel, json head, std::shared_ptr<const Completion> c,
                size_t choices, int socket) {
        struct State {
            size_t finished = 0;
            bool echoed = false;
            std::vector<size_t> offset;  // per choice: code points of text sent so far
        };
        auto state = std::make_shared<State>();
        state->offset.assign(choices, 0);
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, channel, head, c, choices, state, socket](size_t, httplib::DataSink& sink) {
                const auto send = [&](const json& chunk) {
                    const std::string line = "data: " + chunk.dump() + "\n\n";
                    return sink.write(line.data(), line.size());
                };
                const auto gone = [&] {
                    channel->cancelled = true;
                    scheduler_.wake();
                    return false;
                };
                const auto piece = [&](size_t choice, const std::string& text, const json& lp, const json& reason) {
                    json chunk = head;
                    chunk["choices"] = json::array({{{"text", text}, {"index", choice}, {"logprobs", lp}, {"finish_reason", reason}}});
                    return chunk;
                };
                const size_t n = static_cast<size_t>(c->request.n);
                if (c->echo && !state->echoed) {  // the prompt, once per choice, before any token
                    state->echoed = true;
                    for (size_t choice = 0; choice < choices; ++choice) {
                        const std::string text = echoed_text(*c, choice / n);
                        const json lp = c->logprobs ? logprobs_json(echoed_rows(*c, choice / n), 0) : json(nullptr);
                        if (!send(piece(choice, text, lp, nullptr))) return gone();
                        state->offset[choice] = code_points(text);
                    }
                    return true;
                }
                if (state->finished == choices) {
                    const std::string done = "data: [DONE]\n\n";
                    if (!sink.write(done.data(), done.size())) return gone();
                    sink.done();
                    return true;
                }
                const std::optional<Event> e = channel->pop(std::chrono::milliseconds(200));
                if (!e) return client_gone(socket) ? gone() : true;
                json chunk;
                if (e->kind == Event::Kind::Failure) {
                    chunk = error_body(e->failure);
                    state->finished = choices;  // nothing more will come
                } else if (e->kind == Event::Kind::Token) {
                    // a token whose text is held back (a stop string's prefix, a cut character) sends nothing
                    // unless it carries logprobs
                    if (e->text.empty() && !e->logprobs) return true;
                    json lp = nullptr;
                    if (e->logprobs) lp = logprobs_json({{e->logprobs->token, *e->logprobs}}, state->offset[e->choice]);
                    chunk = piece(e->choice, e->text, lp, nullptr);
                    state->offset[e->choice] += code_points(e->text);
                } else {
                    chunk = piece(e->choice, "", nullptr, finish_reason(e->done.generation.finish_reason));
                    state->finished += 1;
                }
                return send(chunk) ? true : gone();
            });
    }

    std::string metrics_text() {
        std::lock_guard lock(metrics_.m);
        std::ostringstream out;
        const auto counter = [&](const std::string& name, const std::string& help, long v) {
            out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << v << "\n";
        };
        const auto gauge = [&](const std::string& name, const std::string& help, double v) {
            out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n" << name << " " << v << "\n";
        };
        counter("decodebook_requests_finished_total", "Samples that finished.", metrics_.finished);
        counter("decodebook_requests_cancelled_total", "Requests whose client left before they finished.", metrics_.cancelled);
        counter("decodebook_requests_refused_total", "Requests answered with an error before any work.", metrics_.refused);
        counter("decodebook_prompt_tokens_total", "Prompt tokens of the requests taken.", metrics_.prompt_tokens);
        counter("decodebook_generation_tokens_total", "Tokens generated by finished samples.", metrics_.generation_tokens);
        metrics_.ttft.write(out, "decodebook_time_to_first_token_seconds", "From arrival to the first token.");
        metrics_.tpot.write(out, "decodebook_time_per_output_token_seconds", "Per token after the first.");
        gauge("decodebook_num_requests_running", "Sequences running.", static_cast<double>(metrics_.running));
        gauge("decodebook_num_requests_waiting", "Sequences waiting for the pool.", static_cast<double>(metrics_.waiting));
        gauge("decodebook_kv_blocks_free", "Free blocks of the pool.", metrics_.free_blocks);
        gauge("decodebook_kv_blocks", "Blocks of the pool.", metrics_.blocks);
        counter("decodebook_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", metrics_.cache_queries);
        counter("decodebook_prefix_cache_hits_total", "Of those, tokens found cached.", metrics_.cache_hits);
        return out.str();
    }
};

// The in-process twin of an HTTP load run (tools/serve_load.py): the same requests, arriving at
// the same times, through serve_paged on the wall clock, with nothing between them and the engine.
// FILE: a JSON list of {"prompt", "max_tokens", "temperature", "seed", "arrival_ms"}; prints one JSON
// line per request: its TTFT and TPOT in ms and its tokens; then the pool's prefix-cache counters.
int replay(const Gpt2& model, const Tokenizer& tokenizer, const PagedServeOptions& options, const std::string& path) {
    std::ifstream in(path);
    if (!in) throw UsageError("--replay " + path + " cannot be opened", "pass a workload file that tools/serve_load.py wrote");
    json workload;
    try {
        workload = json::parse(in);
    } catch (const json::exception& e) {
        throw UsageError("--replay " + path + " is not a workload: " + e.what(), "pass a file tools/serve_load.py wrote");
    }
    std::vector<ServeRequest> requests;
    try {
        for (const json& w : workload) {
            ServeRequest r;
            r.prompt = tokenizer.encode(w.at("prompt").get<std::string>());
            r.config.max_new_tokens = w.at("max_tokens").get<int>();
            r.config.do_sample = true;
            r.config.temperature = w.at("temperature").get<float>();
            r.config.skip_special_tokens = true;
            r.config.min_new_tokens = w.value("min_tokens", 0);
            r.seed = w.at("seed").get<uint64_t>();
            r.arrival = w.at("arrival_ms").get<double>();
            requests.push_back(std::move(r));
        }
    } catch (const json::exception& e) {
        throw UsageError("--replay " + path + ": " + e.what(), "pass a file tools/serve_load.py wrote");
    }
    PagedServeStats stats;
    const std::vector<ServedRequest> served = serve_paged(model, &tokenizer, requests, options, wall_clock(), &stats);
    for (const ServedRequest& s : served)
        std::cout << json{{"ttft_ms", s.ttft()}, {"tpot_ms", s.tpot()}, {"tokens", s.generation.ids.size()},
                          {"finished_ms", s.finished}}
                         .dump()
                  << "\n";
    std::cout << json{{"cache_queries", stats.cache.queries}, {"cache_hits", stats.cache.hits}}.dump() << std::endl;
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ProgramInfo info{"decodebook-serve",
                     "Serve the model over HTTP in OpenAI's completions API: continuous batching on the paged cache "
                     "(chapter 12).",
                     ""};
    info.defaults.max_new_tokens = 16;  // OpenAI's default max_tokens
    info.show_steps = false;            // a server prints no step table: its steps go to clients
    info.extra = {
        {"host", "the address to listen on (loopback by default; anything else exposes the server)", "127.0.0.1"},
        {"port", "the port (0: any free one, printed at start)", "8000"},
        {"slots", "sequences running at once (vLLM's max_num_seqs); n of a request is at most this", "8"},
        {"max-queue", "prompts waiting at most; a request beyond gets 429 with Retry-After", "64"},
        {"blocks", "blocks of the paged cache's pool", "256"},
        {"block-size", "positions per block (vLLM's default 16)", "16"},
        {"api-key", "KEY: every request but /health must send Authorization: Bearer KEY (401 otherwise); default: none", ""},
        {"max-body", "the largest request body in bytes (413 beyond)", "1048576"},
        {"prefix-caching", "reuse the cached blocks of earlier prompts (vLLM's enable_prefix_caching): true or false", "true"},
        {"replay", "FILE: serve the workload in FILE in this process instead of over HTTP, and print each request's "
                   "times as JSON lines (tools/serve_load.py's in-process row)", ""},
    };
    CommandLine cl;
    if (const std::optional<int> exit_code = read_command_line(argc, argv, info, cl)) return *exit_code;
    return run_program([&] {
        ServerConfig sc;
        sc.host = cl.extra.at("host");
        sc.port = cl.extra_int("port", 0, 65535);
        sc.max_queue = static_cast<size_t>(cl.extra_int("max-queue", 1, 1 << 20));
        sc.max_tokens = cl.config.max_new_tokens;
        sc.api_key = cl.extra.at("api-key");
        sc.max_body = static_cast<size_t>(cl.extra_int("max-body", 1024, 1 << 30));
        PagedServeOptions options;
        options.max_running = static_cast<size_t>(cl.extra_int("slots", 1, static_cast<int>(kMaxServeSlots)));
        options.num_blocks = cl.extra_int("blocks", 1, 1 << 20);
        options.block_size = cl.extra_int("block-size", 1, 4096);
        sc.max_n = options.max_running;
        const std::string caching = cl.extra.at("prefix-caching");
        if (caching != "true" && caching != "false")
            throw UsageError("--prefix-caching " + caching + " is neither true nor false", "pass --prefix-caching true or false");
        options.prefix_caching = caching == "true";
        const Gpt2 model = Gpt2::load(cl.model_dir, cl.dtype);
        const Tokenizer tokenizer = Tokenizer::load(cl.model_dir);
        if (!cl.extra.at("replay").empty()) return replay(model, tokenizer, options, cl.extra.at("replay"));
        // the model's id: its folder's name, as vLLM names a model by the path it was given
        sc.model_name = std::filesystem::path(cl.model_dir).lexically_normal().filename().string();
        if (sc.model_name.empty()) sc.model_name = std::filesystem::path(cl.model_dir).parent_path().filename().string();
        // Signals go to one thread that waits for them: block them before any thread starts.
        sigset_t signals;
        sigemptyset(&signals);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGINT);
        pthread_sigmask(SIG_BLOCK, &signals, nullptr);
        const ServeClock clock = wall_clock();
        Metrics metrics;
        Scheduler scheduler(model, tokenizer, options, clock, sc.max_queue, metrics);
        Server svr;
        const size_t workers = options.max_running + sc.max_queue + 8;  // a worker per stream, and room to refuse
        svr.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
        Api api(model, tokenizer, scheduler, metrics, clock, sc);
        api.routes(svr);
        const int port = sc.port == 0 ? svr.bind_to_any_port(sc.host) : (svr.bind_to_port(sc.host, sc.port) ? sc.port : -1);
        if (port < 0)
            throw UsageError("cannot listen on " + sc.host + ":" + std::to_string(sc.port),
                             "choose a free port with --port, or --port 0 for any free one");
        svr.widen_backlog();
        std::thread scheduling([&] { scheduler.run(); });
        std::thread listening([&] { svr.listen_after_bind(); });
        std::cout << "decodebook-serve: " << display_model_dir(cl.model_dir) << " as " << sc.model_name << " on http://" << sc.host << ":" << port
                  << " (slots " << options.max_running << ", " << options.num_blocks << " blocks of " << options.block_size
                  << ")" << std::endl;
        int received = 0;
        sigwait(&signals, &received);
        std::cout << "decodebook-serve: " << (received == SIGTERM ? "SIGTERM" : "SIGINT")
                  << ": finishing what runs, taking nothing new" << std::endl;
        scheduler.stop();
        scheduling.join();  // every request taken has finished (or its client left)
        svr.stop();
        listening.join();
        std::cout << "decodebook-serve: stopped" << std::endl;
        return 0;
    });
}
