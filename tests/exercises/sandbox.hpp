// The graded tests' sandbox (docs/design.md, "A verdict the student's code cannot write"): the
// student's code is not linked into the test program. Each call of a your_NAME function goes
// through its proxy (proxies.cpp), which forks; the child installs a seccomp filter, loads the
// chapter's module (the student's code, built as a shared object), calls the real function and
// writes its result to a pipe; the parent reads the result and returns it. Every comparison and
// Catch2's report are made by the parent, which never runs a line of the student's code.
//
// Inside a child (in_child), a proxy calls the module's function directly, so a test may run a
// whole loop of calls in one child (one fork instead of thousands): see run.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "decodebook/exercises.hpp"

namespace sandbox {

/// One row of the table every module exports (generated from exercises/manifest.json).
struct Entry {
    const char* name;      ///< e.g. "your_softmax"
    const void* function;  ///< its address, taken with the signature of exercises.hpp
};

/// The name of the table a module exports: an array of Entry ending with {nullptr, nullptr}.
inline constexpr const char* kTableSymbol = "decodebook_exercise_table";

/// The module this test program grades (the path is compiled into each test program).
const char* module_path();

// ---------------------------------------------------------------- results as bytes

/// Bytes written by the child.
class Writer {
public:
    void raw(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }
    const std::string& bytes() const { return bytes_; }

private:
    std::string bytes_;
};

/// Bytes read by the parent: every read is checked against what is left, so bytes that a
/// student's code shaped cannot make the parent read past them.
class Reader {
public:
    explicit Reader(std::string bytes) : bytes_(std::move(bytes)) {}
    void raw(void* data, size_t size) {
        if (size > bytes_.size() - at_) throw std::runtime_error("the result ended early (it was cut or forged)");
        std::memcpy(data, bytes_.data() + at_, size);
        at_ += size;
    }
    size_t count(size_t element_size) {  // a length that fits in what is left
        uint64_t n = 0;
        raw(&n, sizeof n);
        if (element_size && n > (bytes_.size() - at_) / element_size)
            throw std::runtime_error("the result holds an impossible length (it was cut or forged)");
        return static_cast<size_t>(n);
    }
    bool done() const { return at_ == bytes_.size(); }
    size_t left() const { return bytes_.size() - at_; }

private:
    std::string bytes_;
    size_t at_ = 0;
};

template <class T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
void put(Writer& w, const T& v) { w.raw(&v, sizeof v); }
template <class T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
void get(Reader& r, T& v) { r.raw(&v, sizeof v); }

void put(Writer& w, const std::string& s);
void get(Reader& r, std::string& s);
void put(Writer& w, const std::vector<bool>& v);
void get(Reader& r, std::vector<bool>& v);

template <class T>
void put(Writer& w, const std::vector<T>& v) {
    put(w, static_cast<uint64_t>(v.size()));
    for (const T& x : v) put(w, x);
}
template <class T>
void get(Reader& r, std::vector<T>& v) {
    v.assign(r.count(1), T{});
    for (T& x : v) get(r, x);
}

template <class T>
void put(Writer& w, const std::optional<T>& v) {
    put(w, v.has_value());
    if (v) put(w, *v);
}
template <class T>
void get(Reader& r, std::optional<T>& v) {
    bool has = false;
    get(r, has);
    if (!has) return v.reset();
    T x{};
    get(r, x);
    v = x;
}

template <class T, size_t N>
void put(Writer& w, const xt::xtensor<T, N>& t) {
    for (size_t d = 0; d < N; ++d) put(w, static_cast<uint64_t>(t.shape(d)));
    w.raw(t.data(), t.size() * sizeof(T));
}
template <class T, size_t N>
void get(Reader& r, xt::xtensor<T, N>& t) {
    std::array<size_t, N> shape{};
    size_t total = 1;
    for (size_t d = 0; d < N; ++d) {
        shape[d] = r.count(0);
        if (shape[d] && total > r.left() / shape[d]) throw std::runtime_error("the result is cut or forged");
        total *= shape[d];
    }
    if (total > r.left() / sizeof(T)) throw std::runtime_error("the result is cut or forged");  // before allocating
    t = xt::xtensor<T, N>::from_shape(shape);
    r.raw(t.data(), total * sizeof(T));
}

template <class... T>
void put(Writer& w, const std::tuple<T...>& t) {
    std::apply([&](const auto&... x) { (put(w, x), ...); }, t);
}
template <class... T>
void get(Reader& r, std::tuple<T...>& t) {
    std::apply([&](auto&... x) { (get(r, x), ...); }, t);
}

void put(Writer& w, const decodebook::Beam& b);
void get(Reader& r, decodebook::Beam& b);
void put(Writer& w, const decodebook::BeamStep& s);
void get(Reader& r, decodebook::BeamStep& s);
void put(Writer& w, const decodebook::StopScan& s);
void get(Reader& r, decodebook::StopScan& s);
void put(Writer& w, const decodebook::StepRecord& s);
void get(Reader& r, decodebook::StepRecord& s);
void put(Writer& w, const decodebook::LogprobEntry& e);
void get(Reader& r, decodebook::LogprobEntry& e);
void put(Writer& w, const decodebook::Perplexity& p);
void get(Reader& r, decodebook::Perplexity& p);

// ---------------------------------------------------------------- running code in a child

/// True inside a sandboxed child (then proxies call the module directly).
bool in_child();

/// The module's function `name` (only inside a child).
const void* function(const char* name);

/// Fork; in the child, under the filter and with the module loaded, run `body`, which writes its
/// result; -> the result's bytes, read by the parent. A child that threw, crashed, was stopped by
/// the filter or ended without a result ends here too: the parent rethrows what it threw
/// (decodebook::Error, std::logic_error, std::bad_alloc, std::runtime_error with its message),
/// dies of the signal that killed it, or throws a message that says what happened. `what` names
/// the code for those messages, e.g. "your_softmax".
std::string run_bytes(const std::string& what, const std::function<void(Writer&)>& body);

/// Run `body` in one sandboxed child and return its result (anything put/get know).
template <class R, class F>
R run(const std::string& what, F body) {
    if (in_child()) return body();
    Reader r(run_bytes(what, [&](Writer& w) { put(w, static_cast<R>(body())); }));
    R result{};
    get(r, result);
    if (!r.done()) throw std::runtime_error(what + ": the result has bytes left over (it was forged)");
    return result;
}

/// The module's function `name` with the type of its proxy: `fn(&your_softmax, "your_softmax")`.
template <class F>
F fn(F /*the proxy, for its type*/, const char* name) {
    return reinterpret_cast<F>(function(name));
}

}  // namespace sandbox
