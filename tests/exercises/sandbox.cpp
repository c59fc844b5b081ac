// The sandbox of the graded tests: fork, filter, load the student's module, call, report back.
// See sandbox.hpp and docs/design.md ("A verdict the student's code cannot write").
#include "sandbox.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <new>
#include <sched.h>

namespace sandbox {

void put(Writer& w, const std::string& s) {
    put(w, static_cast<uint64_t>(s.size()));
    w.raw(s.data(), s.size());
}
void get(Reader& r, std::string& s) {
    s.assign(r.count(1), '\0');
    r.raw(s.data(), s.size());
}
void put(Writer& w, const std::vector<bool>& v) {
    put(w, static_cast<uint64_t>(v.size()));
    for (bool b : v) put(w, b);
}
void get(Reader& r, std::vector<bool>& v) {
    v.assign(r.count(1), false);
    for (size_t i = 0; i < v.size(); ++i) {
        bool b = false;
        get(r, b);
        v[i] = b;
    }
}
void put(Writer& w, const decodebook::Beam& b) { put(w, std::tie(b.ids, b.sum_logprobs)); }
void get(Reader& r, decodebook::Beam& b) {
    auto t = std::tie(b.ids, b.sum_logprobs);
    get(r, t);
}
void put(Writer& w, const decodebook::BeamStep& s) { put(w, std::tie(s.running, s.finished)); }
void get(Reader& r, decodebook::BeamStep& s) {
    auto t = std::tie(s.running, s.finished);
    get(r, t);
}
void put(Writer& w, const decodebook::StopScan& s) { put(w, std::tie(s.safe, s.stop)); }
void get(Reader& r, decodebook::StopScan& s) {
    auto t = std::tie(s.safe, s.stop);
    get(r, t);
}
void put(Writer& w, const decodebook::StepRecord& s) {
    put(w, std::tie(s.step, s.context_length, s.token, s.logit, s.probability, s.milliseconds, s.text));
}
void get(Reader& r, decodebook::StepRecord& s) {
    auto t = std::tie(s.step, s.context_length, s.token, s.logit, s.probability, s.milliseconds, s.text);
    get(r, t);
}
void put(Writer& w, const decodebook::LogprobEntry& e) { put(w, std::tie(e.token, e.value, e.rank)); }
void get(Reader& r, decodebook::LogprobEntry& e) {
    auto t = std::tie(e.token, e.value, e.rank);
    get(r, t);
}
void put(Writer& w, const decodebook::Perplexity& p) { put(w, std::tie(p.nll_sum, p.tokens, p.windows)); }
void get(Reader& r, decodebook::Perplexity& p) {
    auto t = std::tie(p.nll_sum, p.tokens, p.windows);
    get(r, t);
}

namespace {

// What a child's frame holds: [kind: 1 byte][length: 8 bytes][payload].
enum Kind : uint8_t {
    kResult = 1,       // the result's bytes
    kError,            // a decodebook::Error: its what()
    kLogicError,       // a std::logic_error (an untouched stub's NotImplemented): its what()
    kBadAlloc,         // std::bad_alloc
    kOtherException,   // another std::exception: its what()
    kUnknownException, // something that is not a std::exception
    kForbidden,        // the filter stopped a system call: its number (int)
    kSetup,            // the module could not be loaded: dlerror()
    kExited,           // the code called exit()
};

constexpr size_t kMaxResult = size_t{256} << 20;  // bytes a result may have

bool g_in_child = false;
int g_out = -1;                        // the child's end of the pipe
const Entry* g_table = nullptr;        // the module's table, in the child

bool write_all(int fd, const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

[[noreturn]] void send_and_exit(Kind kind, const void* payload, uint64_t size) {
    char head[9];
    head[0] = static_cast<char>(kind);
    std::memcpy(head + 1, &size, sizeof size);
    write_all(g_out, head, sizeof head);
    write_all(g_out, payload, size);
    ::syscall(SYS_exit_group, 0);
    __builtin_unreachable();
}

[[noreturn]] void send_text_and_exit(Kind kind, const std::string& text) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    send_and_exit(kind, text.data(), text.size());
}

// The filter's trap: report which system call was refused, and through which ABI (its audit
// architecture: x86-64, i386 by `int 0x80`, or x32), then end (async-signal-safe).
void on_forbidden(int, siginfo_t* info, void*) {
    const int call[2] = {info->si_syscall, static_cast<int>(info->si_arch)};
    send_and_exit(kForbidden, call, sizeof call);
}

// Reading, after the module is loaded: nothing is opened any more. Before it, Landlock (where the
// kernel has it) lets the loader read the module file and the system's folders only, so neither a
// static constructor nor the code itself can read the repository (the tests' data, a solution
// module). Returns false where the kernel has no Landlock: then only the second filter holds.
bool restrict_reading_to_the_module() {
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return false;
    landlock_ruleset_attr attr{};
    attr.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
    const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
    if (ruleset < 0) return false;
    const auto allow_beneath = [&](const char* path, uint64_t access) {
        const int fd = ::open(path, O_PATH | O_CLOEXEC);
        if (fd < 0) return;  // a folder this system does not have
        landlock_path_beneath_attr rule{};
        rule.allowed_access = access;
        rule.parent_fd = fd;
        ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
        ::close(fd);
    };
    const uint64_t all = attr.handled_access_fs, file = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
    for (const char* system : {"/usr", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev"}) allow_beneath(system, all);
    allow_beneath(module_path(), file);  // the module itself, and nothing beside it
    const bool restricted = ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
                            ::syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
    ::close(ruleset);
    return restricted;
}

// The second filter, installed once the module is loaded: no file may be opened at all.
void forbid_opening() {
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    if (!f) send_text_and_exit(kSetup, "seccomp_init failed");
    seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
    seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 0);  // set by the first filter already (prctl is refused now)
    for (int call : {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(open_by_handle_at)})
        seccomp_rule_add(f, SCMP_ACT_TRAP, call, 0);
    const int loaded = seccomp_load(f);
    seccomp_release(f);
    if (loaded != 0) send_text_and_exit(kSetup, "seccomp_load failed: " + std::string(std::strerror(-loaded)));
}

// Allow computing only (docs/design.md): memory, reading, writing to stdout, stderr and the
// pipe, threads, clocks, signals to oneself, exiting. Everything else traps (on_forbidden).
void install_filter() {
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_TRAP);
    if (!f) send_text_and_exit(kSetup, "seccomp_init failed");
    // A call through another ABI (i386's `int 0x80`, x32) traps too, and is reported by name.
    seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
    auto allow = [&](int call) { seccomp_rule_add(f, SCMP_ACT_ALLOW, call, 0); };
    for (int call : {SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(lseek), SCMP_SYS(close),
                     SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(stat), SCMP_SYS(lstat),
                     SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(readlink),
                     SCMP_SYS(readlinkat), SCMP_SYS(getcwd), SCMP_SYS(getdents64),
                     SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(mremap), SCMP_SYS(madvise),
                     SCMP_SYS(brk), SCMP_SYS(futex), SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
                     SCMP_SYS(getcpu), SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep), SCMP_SYS(clock_gettime),
                     SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(getrusage),
                     SCMP_SYS(times), SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getppid), SCMP_SYS(getuid),
                     SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(uname), SCMP_SYS(sysinfo),
                     SCMP_SYS(getrlimit), SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask),
                     SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack), SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
                     SCMP_SYS(set_tid_address), SCMP_SYS(getrandom), SCMP_SYS(exit), SCMP_SYS(exit_group),
                     SCMP_SYS(membarrier), SCMP_SYS(restart_syscall), SCMP_SYS(mbind),
                     SCMP_SYS(get_mempolicy), SCMP_SYS(set_mempolicy)})
        allow(call);
    // Opening: read-only, never creating or truncating.
    const scmp_datum_t writing = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, writing, 0));
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, writing, 0));
    // Writing: standard output and error (printf debugging) and the result pipe only.
    for (int fd : {1, 2, g_out}) {
        for (int call : {SCMP_SYS(write), SCMP_SYS(writev)})
            seccomp_rule_add(f, SCMP_ACT_ALLOW, call, 1, SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(fd)));
    }
#ifdef DECODEBOOK_SANITIZED
    // The sanitizer job (tools/run-tests.sh) checks memory, not the filter: ASan tells readable
    // memory from unreadable by writing it into a pipe of its own (IsAccessibleMemoryRange), so
    // there the child may make pipes and write to any descriptor. Everything else holds, and the
    // filter itself is proven in the normal build (tests/course/broken_stub.py's forgeries).
    allow(SCMP_SYS(pipe2));
    allow(SCMP_SYS(pipe));
    allow(SCMP_SYS(write));
#endif
    // Asking a descriptor about itself (isatty, flags), never duplicating it.
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, TCGETS));
    for (int cmd : {F_GETFD, F_GETFL, F_SETFD})
        seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1, SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(cmd)));
    // One more filter may be added (the sandbox's own second one, after loading): a filter only
    // ever takes permissions away.
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(seccomp), 1, SCMP_A0(SCMP_CMP_EQ, SECCOMP_SET_MODE_FILTER));
    // Limits may be read, not changed.
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_EQ, 0));
    // Threads (OpenMP, BLAS), never a new process; clone3's flags cannot be inspected, so it says
    // "not supported" and the C library falls back to clone.
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
    seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    // Signals to itself only (abort, raise).
    const auto self = static_cast<scmp_datum_t>(::getpid());
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_EQ, self));
    seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, self));
    const int loaded = seccomp_load(f);
    seccomp_release(f);
    if (loaded != 0) send_text_and_exit(kSetup, "seccomp_load failed: " + std::string(std::strerror(-loaded)));
}

// Registered in the child, so it runs before the parent's own exit handlers (Catch2's among them).
void on_exit() { send_text_and_exit(kExited, ""); }

[[noreturn]] void child(const std::string& what, const std::function<void(Writer&)>& body, int out) {
    g_in_child = true;
    g_out = out;
    // A crash ends the child by its signal (the parent dies of it in turn), not in Catch2's handler.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
    std::atexit(on_exit);
    struct sigaction action {};
    action.sa_sigaction = on_forbidden;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSYS, &action, nullptr);
    restrict_reading_to_the_module();
    install_filter();
    try {
        // Loaded under the filters: the module's static constructors are the student's code too.
        void* module = ::dlopen(module_path(), RTLD_NOW | RTLD_LOCAL);
        if (!module) send_text_and_exit(kSetup, std::string("cannot load ") + module_path() + ": " + ::dlerror());
        g_table = static_cast<const Entry*>(::dlsym(module, kTableSymbol));
        if (!g_table) send_text_and_exit(kSetup, std::string(module_path()) + " has no " + kTableSymbol);
#ifndef DECODEBOOK_SANITIZED
        forbid_opening();  // the sanitizer job: ASan's reports read /proc/self/maps (see install_filter)
#endif
        Writer w;
        body(w);
        std::cout.flush();
        std::fflush(stdout);
        send_and_exit(kResult, w.bytes().data(), w.bytes().size());
    } catch (const decodebook::Error& e) {
        send_text_and_exit(kError, e.what());
    } catch (const std::bad_alloc&) {
        send_text_and_exit(kBadAlloc, "");
    } catch (const std::logic_error& e) {
        send_text_and_exit(kLogicError, e.what());
    } catch (const std::exception& e) {
        send_text_and_exit(kOtherException, e.what());
    } catch (...) {
        send_text_and_exit(kUnknownException, what);
    }
}

std::string read_all(int fd, const std::string& what) {
    std::string bytes;
    char buffer[1 << 16];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (bytes.size() + static_cast<size_t>(n) > kMaxResult + 9) {
            ::close(fd);
            throw std::runtime_error(what + " returned more than " + std::to_string(kMaxResult >> 20) +
                                     " MB: is a length wrong?");
        }
        bytes.append(buffer, static_cast<size_t>(n));
    }
    return bytes;
}

// "openat", or "write (through the i386 ABI)" for a call made another way than the native one.
std::string syscall_name(int number, uint32_t arch) {
    const uint32_t native = seccomp_arch_native();
    char* name = seccomp_syscall_resolve_num_arch(arch ? arch : native, number);
    if (!name && arch == SCMP_ARCH_X86_64 && (number & 0x40000000))  // x32: the native audit arch, bit 30 set
        name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X32, number);
    std::string s = name ? name : "number " + std::to_string(number);
    std::free(name);
    if (arch == SCMP_ARCH_X86 || (arch == SCMP_ARCH_X86_64 && (number & 0x40000000)))
        s += arch == SCMP_ARCH_X86 ? " (through the i386 ABI)" : " (through the x32 ABI)";
    else if (arch && arch != native)
        s += " (through another ABI)";
    return s;
}

[[noreturn]] void rethrow(const std::string& what, Kind kind, const std::string& payload) {
    switch (kind) {
    case kError: {
        const std::string marker = "\n  fix: ";
        const size_t at = payload.find(marker);
        if (at == std::string::npos) throw decodebook::Error(payload, "(no fix given)");
        throw decodebook::Error(payload.substr(0, at), payload.substr(at + marker.size()));
    }
    case kLogicError: throw std::logic_error(payload);
    case kBadAlloc: throw std::bad_alloc();
    case kOtherException: throw std::runtime_error(payload);
    case kUnknownException: throw std::runtime_error(what + " threw something that is not a std::exception");
    case kForbidden: {
        int call[2] = {-1, 0};
        if (payload.size() == sizeof call) std::memcpy(call, payload.data(), sizeof call);
        throw std::runtime_error(what + " (or a static initialiser in its chapter's files) made the system call '" +
                                 syscall_name(call[0], static_cast<uint32_t>(call[1])) +
                                 "', which graded code may not make: an exercise only computes its result from its "
                                 "arguments (no opening files, no writing to files other than standard output, "
                                 "no new processes, no signals to other processes). Remove that code.");
    }
    case kExited:
        throw std::runtime_error(what + " ended its process with exit() before returning: an exercise returns its "
                                 "result (graded code that calls exit() scores nothing)");
    case kSetup: throw std::runtime_error("the grader could not run " + what + ": " + payload + " (tell your instructor)");
    default: throw std::runtime_error(what + ": the result is malformed (it was forged)");
    }
}

}  // namespace

bool in_child() { return g_in_child; }

const void* function(const char* name) {
    if (!g_in_child || !g_table) throw std::logic_error("sandbox::function outside a sandboxed child");
    for (const Entry* e = g_table; e->name; ++e)
        if (std::strcmp(e->name, name) == 0) return e->function;
    throw std::runtime_error(std::string(name) + " is not in " + module_path() + " (tell your instructor)");
}

std::string run_bytes(const std::string& what, const std::function<void(Writer&)>& body) {
    std::cout.flush();  // or the child would print the parent's unflushed output a second time
    std::cerr.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("the grader could not make a pipe");
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw std::runtime_error("the grader could not fork to run " + what);
    }
    if (pid == 0) {
        ::close(fds[0]);
        child(what, body, fds[1]);
    }
    ::close(fds[1]);
    std::string bytes;
    try {
        bytes = read_all(fds[0], what);
    } catch (...) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        throw;
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        // Die of the same signal, so ./grade says what it always said: a crash, or the CPU limit.
        const int sig = WTERMSIG(status);
        if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT || sig == SIGXCPU ||
            sig == SIGXFSZ || sig == SIGKILL) {
            ::raise(sig);
        }
        throw std::runtime_error(what + " was killed by signal " + std::to_string(sig));
    }
    uint64_t size = 0;
    if (bytes.size() < 9 || (std::memcpy(&size, bytes.data() + 1, sizeof size), bytes.size() - 9 != size)) {
        throw std::runtime_error(what + " ended its process (exit status " + std::to_string(WEXITSTATUS(status)) +
                                 ") before returning: did it call exit()?");
    }
    const auto kind = static_cast<Kind>(bytes[0]);
    std::string payload = bytes.substr(9);
    if (kind == kResult) return payload;
    rethrow(what, kind, payload);
}

}  // namespace sandbox
