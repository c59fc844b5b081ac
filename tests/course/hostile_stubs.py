"""Stubs written the way an adversary would write them, for tests/course/broken_stub.py's copy of
exercises/ (docs/design.md, "A verdict the student's code cannot write, an answer it cannot
call"). Each must score 0 under ./grade, with a message that says why:

  - TWIN_CALLS: a stub whose body calls the library's answer: directly, through a `using`
    declaration, a macro, a function pointer, an asm label naming the answer's symbol, or the
    answer's parts (08.1 through accept_draft and residual) ->
    "(calls a library function it may not: scores 0)" and "calls decodebook::NAME, which is the
    answer";
  - FORGERIES: a worked solution (the right answer) that also tries to write the verdict: into
    Catch2's report named on its command line (then exits 0), to every open descriptor, from a
    static constructor, or by killing the test program; or to read what graded code may not: the
    reference's answers in tests/data (01.2), a solution module by dlopen (03.1); or a system call
    through the i386 ABI (09.2) -> the call fails with "made the system call '...'" and the
    exercise scores 0;
  - HARD_CODED: a stub that answers the test file's written cases only (the worked solution, wrong
    on any input unlike them) -> its cases drawn when the test runs fail, and it scores 0;
  - OBJECT_TWINS: for every exercise of the manifest, one extra file (compiled into chapter 05's
    library, never linked into a test) whose function calls that exercise's answer; grade's own
    check of the compiled objects must name the answer for each (the end-to-end cases above cover
    most exercises; chapter 04 does not compile in the copy, 01.1 exits and 02.1 allocates).
"""
import re
import subprocess
from pathlib import Path

MARK = "// written by tests/course/hostile_stubs.py"

# id -> (lines before `namespace decodebook`, lines inside it before the function, body of each
#        your_ function of the file, the library function the report must name)
TWIN_CALLS = {
    "00.1": ([], [], ["using decodebook::last_position_logits;\n    return last_position_logits(logits);"],
             "decodebook::last_position_logits"),
    "00.2": ([], [], ["return generate_naive(model, prompt, stop, pick, on_step);"], "decodebook::generate_naive"),
    "02.3": (["#define DRAW ::decodebook::sample_inverse_cdf"], [], ["return DRAW(probs, coin);"],
             "decodebook::sample_inverse_cdf"),
    "03.2": ([], ["std::vector<bool> hidden(const xt::xtensor<float, 1>& probs, double p, int min_keep) "
                  "__asm__(\"{answer}\");"],
             ["return hidden(probs, p, min_keep);"], "decodebook::top_p_keep"),
    "03.3": ([], [], ["auto* answer = &min_p_keep;\n    return answer(probs, min_p, min_keep);"],
             "decodebook::min_p_keep"),
    "05.1": ([], [], ["return beam_step(beams, logprobs, eos_ids, num_beams, last_step);"], "decodebook::beam_step"),
    "06.1": ([], [], ["return scan_stops(pending, stops);"], "decodebook::scan_stops"),
    "07.1": ([], [], ["return cached_attention_step(keys, values, position, qkv, n_head);"],
             "decodebook::cached_attention_step"),
    "07.2": ([], [], ["return kv_cache_bytes(n_layer, positions, width, bytes_per_value, rows);"],
             "decodebook::kv_cache_bytes"),
    "08.1": (['#include "decodebook/decoding/speculative.hpp"'], [],
             ["if (accept_draft(p, q, x, accept_coin)) return x;\n"
              "    return sample_inverse_cdf(residual(p, q, x), residual_coin);"], "decodebook::accept_draft"),
    "09.1": ([], [], ["return dfa.walk(state, token);"], "decodebook::Dfa::walk"),
    "10.1": ([], [], ["return typical_keep(probs, mass, min_keep);"], "decodebook::typical_keep"),
    "10.2": ([], [], ["(void)base;\n    const int length = dry_repeat_length(context, candidate, breakers);\n"
                      "    return length >= allowed_length ? multiplier : 0.0f;"], "decodebook::dry_repeat_length"),
    "11.2": (["#define SCORE ::decodebook::sliding_window_perplexity"], [],
             ["return SCORE(model, ids, max_length, stride);"], "decodebook::sliding_window_perplexity"),
    # the first function calls the answer; the second does nothing forbidden
    "12.1": ([], [], ["return hash_full_blocks(tokens, block_size);",
                      "(void)prompt, (void)cached;\n    return block_size;"], "decodebook::hash_full_blocks"),
    "12.2": ([], [], ["(void)table, (void)counts, (void)cached, (void)order;\n"
                      "    return FreeBlockQueue(static_cast<int>(counts.size()), queue).ids();"],
             "decodebook::FreeBlockQueue::FreeBlockQueue"),
}

FORGED_REPORT = "All tests passed (1 assertion in 1 test case)\\n"
# id -> (includes, code at namespace scope, the prologue put before the worked solution's body, what
#        the report must say)
FORGERIES = {
    "07.3": (["<fcntl.h>", "<unistd.h>", "<fstream>", "<iterator>", "<string>", "<vector>"], "",
             # Catch2's report is the file after --out on the test program's command line.
             """std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (size_t at = 0; at < all.size(); at = all.find('\\0', at) + 1) args.emplace_back(all.c_str() + at);
    for (size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--out" || args[i] == "-o") {
            const int fd = ::open(args[i + 1].c_str(), O_WRONLY | O_TRUNC);
            const char forged[] = "%s";
            (void)!::write(fd, forged, sizeof forged - 1);
            ::_exit(0);
        }
    }
""" % FORGED_REPORT, "made the system call 'openat'"),
    "02.2": (["<unistd.h>"], "",
             """const char forged[] = "%s";
    for (int fd = 0; fd < 1024; ++fd) (void)!::write(fd, forged, sizeof forged - 1);
""" % FORGED_REPORT, "made the system call 'write'"),
    "07.4": (["<signal.h>", "<unistd.h>"], "", "::kill(::getppid(), SIGKILL);\n", "made the system call 'kill'"),
    # the reference's answers from the repository, found from __FILE__ (issue 41): nothing may be opened
    "01.2": (["<fstream>", "<iterator>", "<string>"], "",
             """const std::string here = __FILE__;
    std::ifstream golden(here.substr(0, here.rfind("/exercises/")) + "/tests/data/greedy.json");
    const std::string reference((std::istreambuf_iterator<char>(golden)), std::istreambuf_iterator<char>());
    if (!reference.empty()) return {};  // a real cheat would return the reference's ids here
""", "made the system call 'openat'"),
    # a solution module, loaded to call its answer: nothing may be opened
    "03.1": (["<dlfcn.h>", "<string>"], "",
             """const std::string here = __FILE__;
    void* solutions = ::dlopen((here.substr(0, here.rfind("/exercises/")) + "/build-tests/tests/libsolution_module_03.so").c_str(),
                               RTLD_NOW);
    (void)solutions;
""", "made the system call 'openat'"),
    # a system call through the i386 ABI (int 0x80: getpid), which the filter must name, not die of
    "09.2": ([], "", """long i386_result = 20;
    __asm__ volatile("int $0x80" : "+a"(i386_result) : : "memory");
""", "made the system call 'getpid (through the i386 ABI)'"),
    "06.2": (["<fcntl.h>", "<unistd.h>"],
             # runs when the module is loaded, before any test calls the function
             """static const int forged_at_load = [] {
    const int fd = ::open("{forged_file}", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const char forged[] = "%s";
    return fd >= 0 ? static_cast<int>(::write(fd, forged, sizeof forged - 1)) : -1;
}();
""" % FORGED_REPORT, "", "made the system call 'openat'"),
}

# id -> (includes, the prologue put before the worked solution's body): a stub that answers the
# test file's written cases and nothing else, as a lookup table of them would. The prologue returns
# a wrong answer for an input unlike every written case; the cases drawn when the test runs
# (tests/exercises/drawn.hpp) are unlike them, so the exercise scores 0 with only its drawn test failing.
HARD_CODED = {
    # the written cases score 1 to 3 generated tokens
    "05.2": ([], "if (generated_len > 3) return sum_logprobs / 10;\n"),
    # the written cases ask for 1 to 5 tokens
    "08.2": ([], "if (num_tokens == 6) return {};\n"),
    # the written cases' coins are whole hundredths
    "10.3": (["<cmath>"], "if (std::abs(coin * 100 - std::round(coin * 100)) > 1e-9) return -1;\n"),
    # the written cases hold 1 to 5, 25 or 2048 values
    "11.1": ([], "if (values.size() >= 6 && values.size() <= 24) return {};\n"),
}

# id -> a function calling that exercise's answer (object-level check), and the start of the name
# the message must give
OBJECT_TWINS = {
    "00.1": ("xt::xtensor<float, 1> f(const xt::xtensor<float, 2>& z) { return last_position_logits(z); }",
             "decodebook::last_position_logits"),
    "00.2": ("std::vector<int> f(const Gpt2& m, const std::vector<int>& p, const StopRule& s, const Picker& k) "
             "{ return generate_naive(m, p, s, k); }", "decodebook::generate_naive"),
    "01.1": ("int f(const xt::xtensor<float, 1>& z) { return argmax(z); }", "decodebook::argmax"),
    "01.2": ("std::vector<int> f(const Gpt2& m, const std::vector<int>& p, const StopRule& s) "
             "{ return greedy_generate(m, p, s); }", "decodebook::greedy_generate"),
    "02.1": ("xt::xtensor<float, 1> f(const xt::xtensor<float, 1>& z) { return softmax(z); }", "decodebook::softmax"),
    "02.2": ("void f(xt::xtensor<float, 1>& z, float t) { apply_temperature(z, t); }", "decodebook::apply_temperature"),
    "02.3": ("int f(const xt::xtensor<float, 1>& p, double c) { return sample_inverse_cdf(p, c); }",
             "decodebook::sample_inverse_cdf"),
    "03.1": ("void f(xt::xtensor<float, 1>& z, int k) { apply_top_k(z, k, 1); }", "decodebook::apply_top_k"),
    "03.2": ("std::vector<bool> f(const xt::xtensor<float, 1>& p, double q) { return top_p_keep(p, q, 1); }",
             "decodebook::top_p_keep"),
    "03.3": ("std::vector<bool> f(const xt::xtensor<float, 1>& p, double q) { return min_p_keep(p, q, 1); }",
             "decodebook::min_p_keep"),
    "04.1": ("void f(xt::xtensor<float, 1>& z, const std::vector<int>& s) { apply_repetition_penalty(z, s, 1.2f); }",
             "decodebook::apply_repetition_penalty"),
    "04.2": ("void f(xt::xtensor<float, 1>& z, const std::vector<int>& s) { apply_presence_frequency(z, s, 1, 1); }",
             "decodebook::apply_presence_frequency"),
    "04.3": ("void f(xt::xtensor<float, 1>& z, const std::vector<int>& s) { apply_no_repeat_ngram(z, s, 3); }",
             "decodebook::apply_no_repeat_ngram"),
    "05.1": ("BeamStep f(const std::vector<Beam>& b, const std::vector<xt::xtensor<float, 1>>& l) "
             "{ return beam_step(b, l, {0}, 2, false); }", "decodebook::beam_step"),
    "05.2": ("double f(double s) { return beam_score(s, 3, false, 2, 1.0f, BeamScoring::HuggingFace); }",
             "decodebook::beam_score"),
    "06.1": ("StopScan f(std::string_view p, const std::vector<std::string>& s) { return scan_stops(p, s); }",
             "decodebook::scan_stops"),
    "06.2": ("void f() { const LogitsChain chain{GenerationConfig{}}; (void)chain; }", "decodebook::LogitsChain::"),
    "07.1": ("xt::xtensor<float, 1> f(xt::xtensor<float, 2>& k, xt::xtensor<float, 2>& v, "
             "const xt::xtensor<float, 1>& q) { return cached_attention_step(k, v, 0, q, 1); }",
             "decodebook::cached_attention_step"),
    "07.2": ("uint64_t f(int64_t n) { return kv_cache_bytes(n, n, n, 4, 1); }", "decodebook::kv_cache_bytes"),
    "07.3": ("void f(xt::xtensor<float, 3>& r, const std::vector<int>& s) { reorder_rows(r, s); }",
             "decodebook::reorder_rows"),
    "07.4": ("double f(const ModelConfig& c) { return decode_roofline_ms(c, 4, 1e9); }",
             "decodebook::decode_roofline_ms"),
    "08.1": ("bool f(const xt::xtensor<float, 1>& p, int x, double c) { return accept_draft(p, nullptr, x, c); }",
             "decodebook::accept_draft"),
    "08.2": ("std::vector<int> f(std::span<const int> s) { return prompt_lookup_hf(s, 3, 4, {}); }",
             "decodebook::prompt_lookup_hf"),
    "09.1": ("int32_t f(const Dfa& d, int32_t s, std::string_view t) { return d.walk(s, t); }", "decodebook::Dfa::walk"),
    "09.2": ("std::vector<int> f(const Dfa& d, const Vocabulary& v) { return allowed_tokens(d, d.start, v, {}); }",
             "decodebook::allowed_tokens"),
    "10.1": ("std::vector<bool> f(const xt::xtensor<float, 1>& p) { return typical_keep(p, 0.9, 1); }",
             "decodebook::typical_keep"),
    "10.2": ("float f(const std::vector<int>& c) { return dry_penalty(static_cast<int>(c.size()), 1.0f, 1.75f, 2); }",
             "decodebook::dry_penalty"),
    "10.3": ("int f(const xt::xtensor<float, 1>& z, double& mu) { return mirostat_v2_step(z, 5.0, 0.1, mu, 0.5); }",
             "decodebook::mirostat_v2_step"),
    "11.1": ("std::vector<LogprobEntry> f(const xt::xtensor<float, 1>& v, int s) { return top_logprobs(v, 5, s); }",
             "decodebook::top_logprobs"),
    "11.2": ("Perplexity f(const Gpt2& m, const std::vector<int>& ids) { return sliding_window_perplexity(m, ids, 256, 128); }",
             "decodebook::sliding_window_perplexity"),
    "12.1": ("std::vector<BlockHash> f(const std::vector<int>& t) { return hash_full_blocks(t, 4); }",
             "decodebook::hash_full_blocks"),
    "12.2": ("std::vector<int> f(const std::vector<int>& q) { return FreeBlockQueue(16, q).ids(); }",
             "decodebook::FreeBlockQueue::FreeBlockQueue"),
}
OBJECT_CHAPTER_DIR = "05-beam-search"   # the extra files are compiled into exercises_05


def signatures(stub_text):
    """The your_NAME definitions' heads in a stub, each up to and including its '{'."""
    return re.findall(r"^(?![ /#}])[^\n]*?\byour_\w+\([^{]*\)\s*\{", stub_text, re.M)


def mangled(build_dir, name):
    """The mangled symbol of the library function `name` (e.g. decodebook::apply_top_k)."""
    for lib in sorted((Path(build_dir) / "lib").glob("libdecodebook_*.a")):
        listed = subprocess.run(["nm", "--defined-only", str(lib)], capture_output=True, text=True).stdout
        symbols = [line.split()[-1] for line in listed.splitlines() if re.match(r"^[0-9a-f]+ T ", line)]
        names = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True, text=True).stdout
        for symbol, demangled in zip(symbols, names.splitlines()):
            if demangled.startswith(name + "("):
                return symbol
    raise RuntimeError(f"{name} is not in the library archives of {build_dir}")


def write_twin_calls(copy, manifest, build_dir):
    """Rewrite the copy's stubs of TWIN_CALLS."""
    by_id = {e["id"]: e for e in manifest}
    for ex_id, (before, inside, bodies, twin) in TWIN_CALLS.items():
        path = Path(copy) / by_id[ex_id]["files"][0].split("/", 1)[1]
        heads = signatures(path.read_text(encoding="utf-8"))
        assert len(heads) == len(bodies), f"{path}: {len(heads)} functions, {len(bodies)} bodies"
        functions = "\n\n".join(f"{head}\n    {body}\n}}" for head, body in zip(heads, bodies))
        path.write_text("\n".join([f"{MARK}: {ex_id} calls the library's answer",
                                   '#include "decodebook/exercises.hpp"', *before, "", "namespace decodebook {", "",
                                   *[line.replace("{answer}", mangled(build_dir, twin)) if "{answer}" in line
                                     else line for line in inside], functions, "",
                                   "}  // namespace decodebook", ""]), encoding="utf-8")


def write_forgeries(copy, manifest, root, forged_file):
    """Replace the copy's stubs of FORGERIES with their worked solution plus the forgery."""
    for ex in manifest:
        if ex["id"] not in FORGERIES:
            continue
        includes, at_scope, prologue, _ = FORGERIES[ex["id"]]
        text = (Path(root) / ex["solution_files"][0]).read_text(encoding="utf-8")
        head = signatures(text)[0]
        text = text.replace(head, head + "\n    " + prologue, 1)
        if at_scope:
            text = text.replace("namespace decodebook {", "namespace decodebook {\n\n" +
                                at_scope.replace("{forged_file}", str(forged_file)), 1)
        text = "\n".join(f"#include {i}" for i in includes) + "\n" + text
        path = Path(copy) / ex["files"][0].split("/", 1)[1]
        path.write_text(f"{MARK}: {ex['id']} is the worked solution and forges the verdict\n" + text,
                        encoding="utf-8")


def write_hard_coded(copy, manifest, root):
    """Replace the copy's stubs of HARD_CODED with their worked solution, wrong off the written cases."""
    for ex in manifest:
        if ex["id"] not in HARD_CODED:
            continue
        includes, prologue = HARD_CODED[ex["id"]]
        text = (Path(root) / ex["solution_files"][0]).read_text(encoding="utf-8")
        head = signatures(text)[0]
        text = "\n".join(f"#include {i}" for i in includes) + "\n" + text.replace(head, head + "\n    " + prologue, 1)
        path = Path(copy) / ex["files"][0].split("/", 1)[1]
        path.write_text(f"{MARK}: {ex['id']} answers only the written cases\n" + text, encoding="utf-8")


def write_object_twins(copy):
    """One extra file per exercise in the copy's chapter-05 folder: a function calling its answer."""
    for ex_id, (function, _) in OBJECT_TWINS.items():
        name = ex_id.replace(".", "_")
        path = Path(copy) / OBJECT_CHAPTER_DIR / f"zz_twin_{name}.cpp"
        path.write_text("\n".join([f"{MARK}: calls {ex_id}'s answer (read by grade's object check, never linked)",
                                   '#include "decodebook/exercises.hpp"',
                                   '#include "decodebook/decoding/sampler.hpp"',
                                   '#include "decodebook/decoding/speculative.hpp"', "",
                                   "namespace decodebook {", "",
                                   function.replace("f(", f"hostile_twin_{name}(", 1), "",
                                   "}  // namespace decodebook", ""]), encoding="utf-8")


def object_twin_findings(symbols, build_dir, manifest):
    """{exercise id: the grader's message} for OBJECT_TWINS, from chapter 05's compiled archive
    (symbols: the grader's module grader.symbols)."""
    entries = []
    for ex in manifest:
        name = ex["id"].replace(".", "_")
        entries.append(dict(ex, chapter="05", files=[f"exercises/{OBJECT_CHAPTER_DIR}/zz_twin_{name}.cpp"]))
    return symbols.check_calls(build_dir, "05", entries, solutions=False)
