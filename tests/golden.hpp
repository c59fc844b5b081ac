// Shared by the engine tests: the embedded model, golden files from the independent reference
// (tests/reference/, see tests/data/*.json "regenerate"), and temporary folders.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/decoding/generation_config.hpp"
#include "decodebook/decoding/naive_loop.hpp"
#include "decodebook/decoding/sampler.hpp"
#include "decodebook/model/gpt2.hpp"
#include "decodebook/model/kernels.hpp"
#include "decodebook/model/tokenizer.hpp"

namespace golden {

/// The model the goldens were made with.
std::string model_dir();
/// Parse tests/data/<name>; fails the test with the regenerate command if it is missing.
nlohmann::json load(const std::string& name);
/// "48656c6c6f" -> "Hello"
std::string from_hex(const std::string& hex);
/// A fresh empty folder under the system temp dir, removed when the object dies.
struct TempDir {
    TempDir();
    ~TempDir();
    std::filesystem::path path;
    std::string file(const std::string& name) const { return (path / name).string(); }
};
/// Write bytes to a file.
void write_file(const std::string& path, const std::string& bytes);
/// "1, 2, 3" for messages.
std::string join(const std::vector<int>& ids);

/// The embedded model, loaded once per test process.
const decodebook::Gpt2& model();
/// A picker that ignores the logits and replays `script` (cycling).
decodebook::Picker scripted(std::vector<int> script);
/// The GenerationConfig of a golden case, through the knob table: every key of its "params"
/// object (tests/reference/sampling.py writes HF names), its "order", "seed" and "max_new_tokens".
decodebook::GenerationConfig config(const nlohmann::json& golden_case);
/// The embedded model's tokenizer, loaded once per test process.
const decodebook::Tokenizer& tokenizer();
/// Ids whose logit is finite (the candidates a chain left).
std::vector<int> finite_ids(const xt::xtensor<float, 1>& logits);
/// Ids whose flag is set.
std::vector<int> kept_ids(const std::vector<bool>& keep);

/// The kernels on `n` threads for one scope; one thread again when it ends (even on failure).
struct Threads {
    explicit Threads(int n) { decodebook::set_num_threads(n); }
    ~Threads() { decodebook::set_num_threads(1); }
    Threads(const Threads&) = delete;
    Threads& operator=(const Threads&) = delete;
};

/// One kernel target (set_kernel_target) for a scope; the best one again when it ends (even on
/// failure), so tests and the bench run every target this processor runs.
struct KernelTarget {
    explicit KernelTarget(const std::string& name) { decodebook::set_kernel_target(name); }
    ~KernelTarget() { decodebook::set_kernel_target(decodebook::kernel_targets_supported().front()); }
    KernelTarget(const KernelTarget&) = delete;
    KernelTarget& operator=(const KernelTarget&) = delete;
};

/// A byte string as C source ("ab\x0A"), so a failing case can be pasted into a test.
std::string c_literal(std::string_view bytes);

/// XGrammar's test_token_operations (mlc-ai/xgrammar tests/python/test_grammar_matcher_basic.py),
/// as facts: its 15 tokens ("</s>", id 1, the stop token), the tokens fed, and the allowed tokens
/// before each of them and after the last, for the builtin JSON grammar; `regex` is JSON of nesting
/// depth <= 2 with that grammar's whitespace ([ \n\t]* between elements, none at the ends), enough
/// for a run whose tokens never open a third level. Used by the engine's and exercise 09.2's tests.
struct TokenOperationsCase {
    std::vector<std::string> tokens;                 ///< the vocabulary, by id
    std::vector<std::string> input;                  ///< the tokens fed, in order
    std::vector<std::vector<std::string>> expected;  ///< allowed before each input token, then at the end
    std::string regex;                               ///< the JSON language, as a regex
};
const TokenOperationsCase& xgrammar_token_operations();

}  // namespace golden
