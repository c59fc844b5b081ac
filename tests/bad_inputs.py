#!/usr/bin/python3
"""The bad-input matrix: every bad model folder, file, parameter and prompt of issue 11 gets a
clear error, a non-zero exit and no partial output.

    /usr/bin/python3 tests/bad_inputs.py --bin-dir BUILD [--case NAME ...]   (default: every case)
    /usr/bin/python3 tests/bad_inputs.py --list                            (the case names)

Each case builds its own broken copy of the embedded model folder (or bad command line) in a
temporary folder, runs one program on it with a time limit (a hang fails), and checks
  - the exit code (the exact one where the programs promise it: 2 for a bad option or model
    folder, 1 for a refused request or a bad model file),
  - that nothing was printed on standard output before the error (no partial output),
  - the first line of the message (standard error, blank lines skipped), and where given the
    `  fix:` line after it.
A few cases check that a good input the programs used to refuse now works (the expected exit
code is 0 and the pattern is matched against standard error, e.g. a --verbose note).
tests/CMakeLists.txt registers one CTest test per case (label "chapter"), so tools/run-tests.sh
and CI run them all. Exit status 0 when every selected case passed, 1 otherwise.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "fortunes-gpt2")
TIMEOUT = 60  # seconds; every case takes well under one (a hang used to read /dev/urandom forever)


# ---- fixtures -----------------------------------------------------------------------------------

def model_copy(tmp):
    """A copy of the embedded model folder that a case may break."""
    d = os.path.join(tmp, "model")
    shutil.copytree(MODEL, d)
    return d


def read_st(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_st(path, header, data, header_len=None):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if header_len is None else header_len) + text + data)


def edit_json(path, **changes):
    with open(path) as f:
        j = json.load(f)
    j.update(changes)
    with open(path, "w") as f:
        json.dump(j, f)


def replace_with(path, target):
    """Make `path` a symlink to `target` (a device), or a folder when target is None."""
    os.remove(path)
    if target is None:
        os.mkdir(path)
    else:
        os.symlink(target, path)


def resized_vocab(d, size):
    """vocab.json of `size` ids (the first ids of the real one, <|endoftext|> last, made-up tokens
    of byte symbols beyond), and the merges it still supports."""
    with open(os.path.join(d, "vocab.json")) as f:
        vocab = json.load(f)
    by_id = sorted((i, t) for t, i in vocab.items() if t != "<|endoftext|>")
    keep = [t for _, t in by_id[:size - 1]]
    n = 0
    while len(keep) < size - 1:
        keep.append("zzq" + str(n))
        n += 1
    new = {t: i for i, t in enumerate(keep)}
    new["<|endoftext|>"] = size - 1
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(new, f)
    with open(os.path.join(d, "merges.txt")) as f:
        lines = f.read().splitlines()
    kept = [l for l in lines if l.startswith("#") or
            (len(l.split(" ")) == 2 and all(x in new for x in l.split(" ") + [l.replace(" ", "")]))]
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("\n".join(kept) + "\n")


def weights(d):
    return os.path.join(d, "model.safetensors")


def st_edit(d, fn):
    """Rewrite model.safetensors through fn(header, data) -> (header, data)."""
    header, data = read_st(weights(d))
    header, data = fn(header, data)
    write_st(weights(d), header, data)


def overlap(header, data):
    # two tensors of the same byte size, the later one moved onto the earlier one's bytes
    a, b = "h.0.ln_1.weight", "h.0.ln_2.weight"
    assert header[a]["data_offsets"][0] < header[b]["data_offsets"][0]
    header[b]["data_offsets"] = list(header[a]["data_offsets"])
    return header, data


def with_nan(header, data):
    name = "h.1.mlp.c_fc.weight"
    begin = header[name]["data_offsets"][0]
    width = 2 if header[name]["dtype"] in ("F16", "BF16") else 4
    nan = {"F16": b"\x00\x7e", "BF16": b"\xc0\x7f", "F32": b"\x00\x00\xc0\x7f"}[header[name]["dtype"]]
    at = begin + 5 * width
    return header, data[:at] + nan + data[at + width:]


def with_mask_buffers(header, data):
    # what older Hugging Face GPT-2 checkpoints carry: the causal mask as U8, per block
    end = len(data)
    for i in range(4):
        header["h.%d.attn.bias" % i] = {"dtype": "U8", "shape": [1, 1, 256, 256],
                                       "data_offsets": [end, end + 65536]}
        end += 65536
        data += bytes(65536)
    return header, data


def zero_element_huge(header, data):
    header["empty"] = {"dtype": "F32", "shape": [0, 2 ** 63], "data_offsets": [len(data), len(data)]}
    return header, data


def huge_header_length(d):
    header, data = read_st(weights(d))
    write_st(weights(d), header, data, header_len=2 ** 63)


def sparse_file(path, size):
    os.remove(path)
    with open(path, "wb") as f:
        f.truncate(size)


# ---- the cases ----------------------------------------------------------------------------------

class Case:
    def __init__(self, name, item, program, args, code, first, fix=None, setup=None, stdin=None, check_stdout=None):
        self.name, self.item, self.program, self.args = name, item, program, args
        self.code, self.first, self.fix, self.setup, self.stdin = code, first, fix, setup, stdin
        self.check_stdout = check_stdout  # a REPL prints its errors on stdout: a pattern for it instead


def model_case(name, item, change, code, first, program="chapter-00", args=(), fix=None):
    """A case on a broken copy of the embedded model: change(d) breaks folder d."""
    def setup(tmp):
        d = model_copy(tmp)
        change(d)
        return ["--model", d, "-n", "2"] + list(args)
    return Case(name, item, program, [], code, first, fix=fix, setup=setup)


def symlink_loop(tmp):
    loop = os.path.join(tmp, "loop")
    os.symlink(loop, loop)
    return ["--model", loop]


def existing_file(tmp):
    path = os.path.join(tmp, "file")
    open(path, "w").close()
    return [path]


def deep_schema(tmp):
    """A JSON schema of 10,000 nested arrays (240 KB): it used to overflow the converter's stack."""
    path = os.path.join(tmp, "deep.json")
    with open(path, "w") as f:
        f.write('{"type": "array", "items": ' * 10000 + '{"type": "integer"}' + "}" * 10000)
    return ["--json-schema", path]


def doubling_schema(tmp):
    """20 nested arrays (518 bytes): each array writes its items' regex twice, so the regex doubled
    per level and the DFA compiler took 15-30 s and 2.7 GB to refuse it (618 bytes: bad_alloc)."""
    path = os.path.join(tmp, "arrays.json")
    with open(path, "w") as f:
        f.write('{"type":"array","items":' * 20 + '{"type":"integer"}' + "}" * 20)
    return ["--json-schema", path]


def big_enum(tmp):
    """An enum of 100,000 strings: its converter de-duplicated alternatives in quadratic time (38 s)."""
    path = os.path.join(tmp, "enum.json")
    with open(path, "w") as f:
        json.dump({"enum": [f"w{i}" for i in range(100000)]}, f)
    return ["--json-schema", path]


DRAFT = os.path.join(ROOT, "models", "fortunes-draft")


def draft_copy(tmp):
    """A copy of the embedded draft model folder that a case may change."""
    d = os.path.join(tmp, "draft")
    shutil.copytree(DRAFT, d)
    return d


def short_context_draft(tmp):
    """The draft model cut to a context of 8 positions (wpe's first 8 rows): it used to be refused
    after the prompt was printed, as 'the model's context of 8'."""
    d = draft_copy(tmp)
    header, data = read_st(weights(d))
    meta = header.pop("__metadata__", None)
    out, new = b"", {}
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = t["data_offsets"]
        if name == "wpe.weight":
            end = begin + (end - begin) * 8 // t["shape"][0]
            t = dict(t, shape=[8] + t["shape"][1:])
        new[name] = dict(t, data_offsets=[len(out), len(out) + end - begin])
        out += data[begin:end]
    if meta is not None:
        new["__metadata__"] = meta
    write_st(weights(d), new, out)
    with open(os.path.join(d, "config.json")) as f:
        config = json.load(f)
    config["n_positions"] = 8
    config.pop("n_ctx", None)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    return ["--assistant-model", d]


def other_tokenizer_draft(tmp):
    """The draft model with tokens 0 and 1 swapped in its vocab.json (tests/draft_other_tokenizer.sh)."""
    d = draft_copy(tmp)
    with open(os.path.join(d, "vocab.json")) as f:
        vocab = json.load(f)
    first = {i: t for t, i in vocab.items() if i in (0, 1)}
    vocab[first[0]], vocab[first[1]] = 1, 0
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    return ["--assistant-model", d]


LONG_PROMPT = " ".join(["cat"] * 245)  # 246 tokens with the embedded tokenizer: fits 256 with -n 1

CASES = [
    # 7. crashes
    Case("7 a symlink loop as --model", 7, "chapter-00", [], 2,
         r"^error: model folder '.*loop' \(from --model\) cannot be read: Too many levels of symbolic links$",
         fix=r"^  fix: pass --model DIR", setup=symlink_loop),
    model_case("7 model.safetensors is a folder", 7, lambda d: replace_with(weights(d), None), 1,
               r"^error: model weights '.*/model.safetensors' is a folder, not a file$"),
    model_case("7 config.json is a folder", 7, lambda d: replace_with(os.path.join(d, "config.json"), None), 1,
               r"^error: model config '.*/config.json' is a folder, not a file$"),
    Case("7 random-model into a path under a file", 7, "decodebook-random-model", ["/etc/passwd/x"], 1,
         r"^error: cannot make the folder '/etc/passwd/x': Not a directory$"),
    Case("7 random-model onto an existing file", 7, "decodebook-random-model", [], 1,
         r"^error: '.*/file' exists and is not a folder$", setup=existing_file),
    Case("7 random-model into /proc", 7, "decodebook-random-model", ["/proc"], 1,
         r"^error: cannot write '/proc/config.json'$"),
    # 8. hangs: devices and oversized files are refused before reading
    model_case("8 vocab.json linked to /dev/urandom", 8, lambda d: replace_with(os.path.join(d, "vocab.json"), "/dev/urandom"),
               1, r"^error: tokenizer file '.*/vocab.json' is not a regular file \(a device, pipe or socket\)$"),
    model_case("8 merges.txt linked to /dev/zero", 8, lambda d: replace_with(os.path.join(d, "merges.txt"), "/dev/zero"),
               1, r"^error: tokenizer file '.*/merges.txt' is not a regular file"),
    model_case("8 config.json linked to /dev/urandom", 8, lambda d: replace_with(os.path.join(d, "config.json"), "/dev/urandom"),
               1, r"^error: model config '.*/config.json' is not a regular file"),
    model_case("8 model.safetensors linked to /dev/zero", 8, lambda d: replace_with(weights(d), "/dev/zero"),
               1, r"^error: model weights '.*/model.safetensors' is not a regular file"),
    model_case("8 a 100 MB vocab.json", 8, lambda d: sparse_file(os.path.join(d, "vocab.json"), 100 << 20),
               1, r"^error: tokenizer file '.*/vocab.json' is 104857600 bytes, more than the 67108864 such a file can sensibly hold$"),
    # 9. undefined behaviour on malformed safetensors
    model_case("9 a zero-element tensor with a 2^63 dimension", 9, lambda d: st_edit(d, zero_element_huge), 1,
               r"^error: '.*/model.safetensors' is not a valid safetensors file: tensor 'empty': shape \[0,9223372036854775808\] is impossibly large$"),
    model_case("9 a header length of 2^63", 9, huge_header_length, 1,
               r"^error: '.*/model.safetensors' is not a valid safetensors file: header length 9223372036854775808 is larger than the file"),
    # 10. silent accepts
    model_case("10 overlapping data_offsets", 10, lambda d: st_edit(d, overlap), 1,
               r"^error: '.*' is not a valid safetensors file: tensors 'h.0.ln_1.weight' and 'h.0.ln_2.weight' overlap \(data bytes \[[0-9]+, [0-9]+\) and \[[0-9]+, [0-9]+\)\)$"),
    model_case("10 n_layer 2 on a 4-layer file", 10, lambda d: edit_json(os.path.join(d, "config.json"), n_layer=2), 1,
               r"^error: '.*' holds blocks h.0 to h.3 \(4 layers\) but config.json says n_layer 2$",
               fix=r"^  fix: config.json and model.safetensors must describe the same model: set n_layer to 4"),
    model_case("10 n_inner other than 4 n_embd", 10, lambda d: edit_json(os.path.join(d, "config.json"), n_inner=100), 1,
               r"^error: '.*/config.json': n_inner 100 is not supported \(decodebook's GPT-2 MLP is 4 \* n_embd = 768 wide\)$"),
    model_case("10 an empty merges.txt", 10, lambda d: open(os.path.join(d, "merges.txt"), "w").close(), 1,
               r"^error: '.*/merges.txt' holds no merges$"),
    model_case("10 a vocab.json of 1000 tokens for vocab_size 2048", 10, lambda d: resized_vocab(d, 1000), 1,
               r"^error: '.*/vocab.json' holds 1000 tokens but config.json's vocab_size is 2048$"),
    model_case("10 a vocab.json of 3048 tokens for vocab_size 2048", 10, lambda d: resized_vocab(d, 3048), 1,
               r"^error: '.*/vocab.json' holds 3048 tokens but config.json's vocab_size is 2048$"),
    model_case("10 a NaN weight", 10, lambda d: st_edit(d, with_nan), 1,
               r"^error: '.*/model.safetensors': tensor 'h.1.mlp.c_fc.weight' holds NaN at element 5 \(of 147456\)$"),
    model_case("10 layer_norm_epsilon 1e-50", 10,
               lambda d: edit_json(os.path.join(d, "config.json"), layer_norm_epsilon=1e-50), 1,
               r"^error: '.*/config.json': layer_norm_epsilon 1e-50 must be a number in \[1.2e-38, 1\]"),
    model_case("10 layer_norm_epsilon 1e300", 10,
               lambda d: edit_json(os.path.join(d, "config.json"), layer_norm_epsilon=1e300), 1,
               r"^error: '.*/config.json': layer_norm_epsilon 1e\+300 must be a number in \[1.2e-38, 1\]"),
    model_case("10 eos_token_id as a string", 10, lambda d: edit_json(os.path.join(d, "config.json"), eos_token_id="2047"),
               1, r"^error: '.*/config.json': eos_token_id \"2047\" must be a whole number in \[0, 2047\]",
               fix=r"^  fix: write it as a number"),
    # 11. unused tensors in a dtype we do not read are skipped and named under --verbose
    model_case("11 U8 causal-mask buffers are skipped and noted", 11, lambda d: st_edit(d, with_mask_buffers), 0,
               r"^note: .*: skipped 4 tensors the model does not read: h.0.attn.bias \(U8 \(1, 1, 256, 256\), a causal mask\);",
               args=["--verbose"]),
    # 12. chapter 03's demo walks greedy steps past the prompt: a prompt that fits -n 1 but leaves
    # no room for them is refused up front, with a message about the user's prompt
    Case("12 chapter-03 with a prompt that fits -n 1 but not its demo", 12, "chapter-03", ["-p", LONG_PROMPT, "-n", "1"], 1,
         r"^error: the prompt has 246 tokens, but chapter-03 continues it by [0-9]+ tokens for its demonstrations, "
         r"and the model's context holds 256$",
         fix=r"^  fix: shorten --prompt to at most [0-9]+ tokens$"),
    # 13. a tiny temperature: HF takes any T > 0, and so does decodebook since issue 23 (all but
    # greedy, computed without overflow); only a T a float cannot hold is refused
    Case("13 --temperature 2e-38 samples all but greedily", 13, "decodebook-generate",
         ["--temperature", "2e-38", "-n", "4"], 0, r"^\[4 tokens in [0-9.]+ s: .*finish_reason length\]$"),
    Case("13 --temperature 1e-39 below a float", 13, "chapter-02", ["--temperature", "1e-39"], 2,
         r"^error: temperature = 1e-39 is invalid: it is too close to 0 for a float"),
    # 14. parameters
    Case("14 --seed -1", 14, "decodebook-generate", ["--seed", "-1"], 2,
         r"^error: seed = -1 is invalid: it must be in \[0, 2\^64\)$"),
    Case("14 --seed 2^64", 14, "chapter-02", ["--seed", "18446744073709551616"], 2,
         r"^error: seed = 18446744073709551616 is invalid: it must be in \[0, 2\^64\)$"),
    Case("14 REPL :set seed 5 extra", 14, "decodebook-generate", ["--interactive"], 0, None,
         stdin=":set seed 7\n:set seed 5 extra\n:show\n:quit\n",
         check_stdout=r"error: --seed needs a whole number, got '5 extra'\n  fix: e.g. --seed [0-9]+\n> .*seed 7,"),
    Case("14 --csv into a missing folder", 14, "chapter-00", ["--csv", "/nonexistent/x.csv"], 2,
         r"^error: cannot write the --csv file '/nonexistent/x.csv': folder '/nonexistent' does not exist$",
         fix=r"^  fix: pass --csv with a path in a folder that exists and is writable$"),
    Case("14 --dtype bf16", 14, "chapter-07", ["--dtype", "bf16"], 2,
         r"^error: --dtype bf16 is not a weight dtype decodebook holds$",
         fix=r"^  fix: pass --dtype f32 \(4 bytes per weight\), --dtype f16 \(2 bytes, IEEE binary16\), --dtype q8_0 \(8.5 bits\) or --dtype q4_0 \(4.5 bits: ggml's blocks\);"),
    Case("14 --top-k 0.7", 14, "decodebook-generate", ["--top-k", "0.7"], 2,
         r"^error: --top-k needs a whole number, got '0.7'$", fix=r"^  fix: e.g. --top-k 0$"),
    Case("14 --max-new-tokens 2.5", 14, "chapter-01", ["--max-new-tokens", "2.5"], 2,
         r"^error: --max-new-tokens needs a whole number, got '2.5'$", fix=r"^  fix: e.g. --max-new-tokens [0-9]+$"),
    Case("14 --top-k 99999999999", 14, "decodebook-generate", ["--top-k", "99999999999"], 2,
         r"^error: top_k = 99999999999 is invalid: it must be at most 2147483647, the largest top_k can hold",
         fix=r"^  fix: pass --top-k with a value >= 0 \(0 = off\), at most 2147483647$"),
    Case("14 --max-new-tokens 1000000000000", 14, "chapter-01", ["--max-new-tokens", "1000000000000"], 2,
         r"^error: max_new_tokens = 1000000000000 is invalid: it must be at most 2147483647"),
    Case("14 REPL :set top-k 99999999999", 14, "decodebook-generate", ["--interactive"], 0, None,
         stdin=":set top-k 99999999999\n:quit\n",
         check_stdout=r"error: top_k = 99999999999 is invalid: it must be at most 2147483647"),
    Case("14 --temperature 1e39", 14, "decodebook-generate", ["--temperature", "1e39"], 2,
         r"^error: temperature = 1e39 is invalid: it is beyond a float's range \(about 3.4e38\)"),
    Case("14 random-model --seed abc", 14, "decodebook-random-model", ["DIR", "--seed", "abc"], 2,
         r"^error: --seed = abc is invalid: it must be a whole number in \[0, 2\^64\)$", fix=r"^  fix: e.g. --seed 7$"),
    # a program's own flag, read after parsing, is a usage error too: exit 2, as a bad knob
    Case("14 bench --part foo", 14, "decodebook-bench", ["--part", "foo"], 2,
         r"^error: --part is 'foo'$", fix=r"^  fix: pass --part all, --part model, --part mask or --part logprobs$"),
    Case("14 bench --kernel-target avx2", 14, "decodebook-bench", ["--kernel-target", "avx2"], 2,
         r"^error: --kernel-target is 'avx2', not a kernel target this processor runs$",
         fix=r"^  fix: pass --kernel-target all, (x86-64-v4, )?(x86-64-v3, )?x86-64$"),
    Case("14 bench --mask-documents 0", 14, "decodebook-bench", ["--part", "mask", "--mask-documents", "0"], 2,
         r"^error: --mask-documents = 0 is invalid: it must be a whole number in \[1, 1000\]$"),
    Case("14 chapter-08 refuses --mirostat before any output", 14, "chapter-08", ["--mirostat", "2"], 2,
         r"^error: chapter-08 sets its own mirostat: --mirostat steers none of its parts$"),
    Case("14 chapter-09 refuses --mirostat before any output", 14, "chapter-09", ["--mirostat", "2"], 2,
         r"^error: chapter-09 sets its own mirostat: --mirostat steers none of its parts$"),
    Case("14 chapter-09 --samples 3", 14, "chapter-09", ["--samples", "3"], 2,
         r"^error: --samples = 3 is invalid: it must be a whole number in \[8, 10000\]$"),
    Case("14 chapter-01 --reference of a missing file", 14, "chapter-01", ["--reference", "/nonexistent.json"], 2,
         r"^error: --reference '/nonexistent.json' is not a file$",
         fix=r"^  fix: pass --reference the reference's greedy goldens, tests/data/greedy.json$"),
    Case("14 --skip-special-tokens maybe", 14, "decodebook-generate", ["--skip-special-tokens", "maybe"], 2,
         r"^error: --skip-special-tokens needs true or false, got 'maybe'$", fix=r"^  fix: e.g. --skip-special-tokens true$"),
]

# 22. chapter 10's knobs (issue 22): a bad value, a token outside the vocabulary, a knob under an
# order whose engine lacks it and mirostat with what its chain ignores exit 2 with the same message
# in every program (they all go through set_knob, validate and check_knob_ids)
CHAPTER10_BAD = [
    ("--typical-p 1.5", ["--typical-p", "1.5"],
     r"^error: typical_p = 1.5 is invalid: it must be in \(0, 1\] \(1 = off\)$",
     r"^  fix: pass --typical-p with a value in \(0, 1\] \(1 = off\)$"),
    ("--mirostat 3", ["--mirostat", "3"],
     r"^error: mirostat = 3 is invalid: it must be 0, 1 or 2 \(0 = off\)$", None),
    ("--dry-base 0.5", ["--dry-base", "0.5"], r"^error: dry_base = 0.5 is invalid: it must be >= 1$", None),
    ("--logit-bias 5:101", ["--logit-bias", "5:101"],
     r"^error: logit_bias = 5:101 is invalid: it must be ID:BIAS with ID >= 0 and BIAS in \[-100, 100\]", None),
    ("--logit-bias 99999:1", ["--logit-bias", "99999:1"],
     r"^error: logit_bias names token 99999, outside the vocabulary of 2048 tokens \(ids 0..2047\)$",
     r"^  fix: pass --logit-bias with ids below 2048$"),
    ("--suppress-tokens 2048", ["--suppress-tokens", "2048"],
     r"^error: suppress_tokens names token 2048, outside the vocabulary of 2048 tokens", None),
    ("--dry-multiplier 1 with --order hf", ["--dry-multiplier", "1", "--order", "hf"],
     r"^error: dry_multiplier = 1 is llama.cpp's sampler, and --order is hf \(its chain has no such step\)$",
     r"^  fix: add --order llama.cpp, or drop --dry-multiplier$"),
    ("--epsilon-cutoff 0.001 with --order vllm", ["--epsilon-cutoff", "0.001", "--order", "vllm"],
     r"^error: epsilon_cutoff = 0.001 is hf's sampler, and --order is vllm", r"^  fix: add --order hf, or drop --epsilon-cutoff$"),
    ("--mirostat 2 with --top-k 40", ["--mirostat", "2", "--top-k", "40", "--order", "llama.cpp"],
     r"^error: top_k = 40 has no effect with mirostat = 2 \(llama.cpp's mirostat chain is logit_bias -> temperature -> "
     r"mirostat: refused rather than ignored\)$", r"^  fix: drop --top-k \(or pass --top-k 0\), or drop --mirostat$"),
    ("--dry-sequence-breakers with an unknown escape", ["--dry-sequence-breakers", "\\q"],
     r"^error: dry_sequence_breakers = \\q has the unknown escape \\q", None),
]
for _what, _args, _first, _fix in CHAPTER10_BAD:
    for _program in ("decodebook-generate",):  # the chapters that offer chapter 10's knobs: none (each sets its own)
        CASES.append(Case("22 %s: %s" % (_program, _what), 22, _program, _args, 2, _first, fix=_fix))
for program in ("decodebook-generate", "chapter-09"):  # issue 42 item 1: exit 139 before
    CASES.append(Case(f"42 {program} refuses a schema nested 10000 deep", 42, program, [], 2,
                      r"^error: the JSON schema .*deep.json nests objects and arrays more than 128 levels deep$",
                      fix=r"^  fix: flatten the schema: at most 128 levels of nesting are supported$", setup=deep_schema))
for program in ("decodebook-generate", "chapter-09"):  # issue 42 item 2: 15-30 s and 2.7 GB before
    CASES.append(Case(f"42 {program} refuses 20 nested arrays as their regex doubles", 42, program, [], 2,
                      r"^error: the regex of the schema at /items/items/items/items/items/items grows past 1048576 "
                      r"bytes, more than the DFA compiler could take \(each array writes its items' regex twice",
                      fix=r"^  fix: make the schema smaller: fewer nested arrays", setup=doubling_schema))
CASES.append(Case("42 decodebook-generate refuses an enum of 100000 strings as a schema too large", 42,
                  "decodebook-generate", [], 2,
                  r"^error: the JSON schema .*enum.json converts to a regex too large for the DFA compiler: ",
                  fix=r"^  fix: make the schema smaller \(fewer enum values", setup=big_enum))
CASES.append(Case("42 decodebook-generate refuses 101 --dry-sequence-breakers", 42, "decodebook-generate",
                  ["--order", "llama.cpp", "--dry-multiplier", "0.8"] +
                  [a for i in range(101) for a in ("--dry-sequence-breakers", f"b{i}")], 2,
                  r"^error: dry_sequence_breakers holds 101 strings, more than the 100 decodebook binds to a tokenizer$",
                  fix=r"^  fix: pass at most 100 --dry-sequence-breakers"))
for name, value, first in [  # issue 42 item 5: each was accepted and did something else
        ("an empty JSON array", "[]", r"^error: --choice \[\] gives no choice$"),
        ("a broken JSON array", '["a",', r'^error: choice = \["a", is not a JSON array of strings$'),
        ("invalid UTF-8", "\udcff", r'^error: choice = ".*" is not valid UTF-8, so no text can match it')]:
    CASES.append(Case(f"42 decodebook-generate refuses --choice with {name}", 42, "decodebook-generate",
                      ["--choice", value], 2, first))
# issue 42 item 5: banning every token was refused at the first step, after the prompt was printed
ALL_IDS = "[" + ",".join(str(i) for i in range(2048)) + "]"
for program in ("decodebook-generate",):  # no chapter offers --suppress-tokens
    CASES.append(Case(f"42 {program} refuses suppressing every token before any output", 42, program,
                      ["--suppress-tokens", ALL_IDS], 2,
                      r"^error: suppress_tokens ban all 2048 tokens of the vocabulary at the first step$",
                      fix=r"^  fix: leave at least one token unbanned"))
CASES.append(Case("42 decodebook-generate refuses banning every token by two knobs before any output", 42,
                  "decodebook-generate",
                  ["--suppress-tokens", "[" + ",".join(str(i) for i in range(1, 2048)) + "]", "--logit-bias", "0:-inf"],
                  2, r"^error: logit_bias and suppress_tokens ban all 2048 tokens of the vocabulary at the first step$",
                  ))
# issue 42 item 5: a draft model given with prompt lookup was dropped without a word; a draft whose
# context is too small, and mirostat with a draft model, were refused after the prompt was printed
CASES.append(Case("42 decodebook-generate refuses a draft model with prompt lookup", 42, "decodebook-generate",
                  ["--assistant-model", DRAFT, "--prompt-lookup-num-tokens", "3", "-n", "4"], 2,
                  r"^error: a draft model and prompt lookup \(prompt_lookup_num_tokens 3\) are both given, and one "
                  r"drafter drafts each round",
                  fix=r"^  fix: drop --assistant-model \(or pass --assistant-model none\), or --prompt-lookup-num-tokens$"))
CASES.append(Case("42 decodebook-generate refuses a draft of 8 positions before any output", 42, "decodebook-generate",
                  ["-n", "8"], 1,
                  r"^error: the draft model in '.*/draft' holds 8 positions of context, fewer than the 12 this run "
                  r"needs \(the prompt's 4 tokens \+ max_new_tokens 8\)$",
                  fix=r"^  fix: pass --assistant-model a draft model with a context of at least 12 positions, or "
                      r"shorten --prompt and --max-new-tokens to 8 together$", setup=short_context_draft))
CASES.append(Case("42 chapter-08 refuses a draft of 8 positions before any output", 42, "chapter-08", ["-n", "4"], 1,
                  r"^error: the draft model in '.*/draft' holds 8 positions of context, fewer than the 14 this run "
                  r"needs \(the prompt's 4 tokens \+ the 10 tokens chapter-08 continues it by\)$",
                  setup=short_context_draft))
CASES.append(Case("42 decodebook-generate refuses mirostat with a draft model before any output", 42,
                  "decodebook-generate", ["--assistant-model", DRAFT, "--order", "llama.cpp", "--mirostat", "2"], 2,
                  r"^error: mirostat = 2 with speculative decoding is not offered: verifying k drafts at once",
                  fix=r"^  fix: drop --assistant-model, or --mirostat$"))
# issue 41 item 2: chapter 08 needs its draft model (none printed a blank line and exited 1), and
# mirostat with a drafter is refused for the drafter under any order: told to add --order
# llama.cpp, the reader was then refused for the drafter
CASES.append(Case("41 chapter-08 refuses --assistant-model none before any output", 41, "chapter-08",
                  ["--assistant-model", "none"], 2, r"^error: chapter-08 needs a draft model, and --assistant-model is none$",
                  fix=r"^  fix: drop --assistant-model \(the embedded draft model, .*fortunes-draft\), or pass "
                      r"--assistant-model a draft model's folder; decodebook-generate decodes without one$"))
CASES.append(Case("41 decodebook-generate refuses mirostat with a draft model under --order hf for the draft model", 41,
                  "decodebook-generate", ["--assistant-model", DRAFT, "--mirostat", "2"], 2,
                  r"^error: mirostat = 2 with speculative decoding is not offered: verifying k drafts at once",
                  fix=r"^  fix: drop --assistant-model, or --mirostat$"))
CASES.append(Case("41 decodebook-generate refuses mirostat with prompt lookup under --order hf for prompt lookup", 41,
                  "decodebook-generate", ["--prompt-lookup-num-tokens", "3", "--mirostat", "2"], 2,
                  r"^error: mirostat = 2 with speculative decoding \(prompt_lookup_num_tokens 3\) is not offered",
                  fix=r"^  fix: drop --prompt-lookup-num-tokens, or --mirostat$"))
# issue 41 item 1: a flag that steers none of a chapter's parts is refused before any output,
# naming the flag and the program that takes it (a knob) or what the chapter prints instead
for program, args in [("chapter-08", ["--verify-rule", "sample_and_compare"]),
                      ("chapter-08", ["--num-assistant-tokens-schedule", "heuristic"]),
                      ("chapter-10", ["--top-k", "5"]), ("chapter-10", ["--typical-p", "0.5"]),
                      ("chapter-07", ["--temperature", "0.8"]), ("chapter-05", ["-s", "3"]),
                      ("chapter-03", ["--num-beams", "2"]), ("chapter-02", ["--top-k=5"])]:
    knob = args[0].lstrip("-").split("=")[0]
    knob = {"s": "seed"}.get(knob, knob)
    CASES.append(Case(f"41 {program} refuses {args[0].split('=')[0]}", 41, program, args, 2,
                      rf"^error: {program} sets its own {knob.replace('-', '_')}: --{knob} steers none of its parts$",
                      fix=rf"^  fix: drop --{knob} \({program} --help lists the knobs that steer a part\); "
                          r"decodebook-generate takes every knob$"))
for program in ("chapter-09", "chapter-10", "chapter-11"):
    CASES.append(Case(f"41 {program} refuses --show-steps", 41, program, ["--show-steps"], 2,
                      rf"^error: {program} prints no step table: --show-steps is not offered, its parts print tables of their own$",
                      fix=r"^  fix: drop --show-steps \(see " + program + r" --help\); decodebook-generate --show-steps"))
CASES.append(Case("41 chapter-03 refuses --show-chain", 41, "chapter-03", ["--show-chain"], 2,
                  r"^error: chapter-03 prints no processor chain: --show-chain is not offered"))

# issue 36 (chapter 11): decodebook-generate's logprobs flags, each refused with its range or why
for what, args, first, fix in [
        ("--logprobs 21", ["--logprobs", "21"], r"^error: --logprobs = 21 is invalid: it must be a whole number in \[0, 20\]$",
         r"^  fix: pass --logprobs with a value in \[0, 20\]$"),
        ("--prompt-logprobs -1", ["--prompt-logprobs", "-1"],
         r"^error: --prompt-logprobs = -1 is invalid: it must be a whole number in \[0, 20\]$", None),
        ("an unknown --logprobs-mode", ["--logprobs", "2", "--logprobs-mode", "raw"],
         r"^error: --logprobs-mode: logprobs mode 'raw' is not one of vLLM's four$",
         r"^  fix: pass raw_logprobs \(the default\), raw_logits, processed_logprobs or processed_logits$"),
        ("--logprobs-mode without --logprobs", ["--logprobs-mode", "raw_logits", "--prompt-logprobs", "2"],
         r"^error: --logprobs-mode says what --logprobs reports, and --logprobs is not given$",
         r"^  fix: add --logprobs K \(prompt logprobs are always raw_logprobs\), or drop --logprobs-mode$"),
        ("--logprobs with --show-steps", ["--logprobs", "2", "--show-steps"],
         r"^error: --show-steps and --logprobs both report each step, through different samplers$", None),
        ("--json with --interactive", ["--json", "out.json", "--interactive"],
         r"^error: --json writes one run's response, and --interactive runs many$", None),
        ("--json into a missing folder", ["--json", "/nonexistent/out.json", "-n", "2"],
         r"^error: cannot write the --json file '/nonexistent/out.json'$", r"^  fix: pass --json a path in a writable folder$")]:
    CASES.append(Case(f"36 decodebook-generate refuses {what}", 36, "decodebook-generate", args, 2, first, fix=fix))
for what, program, args, first, fix in [
        ("a stride beyond the window", "decodebook-score", ["--stride", "300"],
         r"^error: --stride = 300 is invalid: it must be a whole number in \[1, 256\]$", None),
        ("a window beyond the context", "decodebook-score", ["--window", "257"],
         r"^error: --window = 257 is invalid: it must be a whole number in \[2, 256\]$", None),
        ("--context without --continuation", "decodebook-score", ["--context", "Q:"],
         r"^error: --context is given without --continuation$", r"^  fix: pass both: --context TEXT --continuation TEXT"),
        ("--stride with --continuation", "decodebook-score", ["--context", "Q:", "--continuation", " A", "--stride", "8"],
         r"^error: --stride is perplexity's, and --continuation scores a continuation$", None),
        ("an unknown task", "decodebook-score", ["--task", "arc"], r"^error: --task is 'arc'$",
         r"^  fix: pass --task author \(the one task shipped\)$"),
        ("--items without --task", "decodebook-score", ["--items", "3"],
         r"^error: --items counts the task's items, and --task is not given$", None),
        ("a missing --text file", "decodebook-score", ["--text", "/nonexistent/text.txt"],
         r"^error: cannot read the --text file '/nonexistent/text.txt'$", None),
        ("--items 0", "chapter-11", ["--items", "0"],
         r"^error: --items = 0 is invalid: it must be a whole number in \[1, 200\]$", None)]:
    CASES.append(Case(f"36 {program} refuses {what}", 36, program, args, 2, first, fix=fix))
# issue 42 item 4: decodebook-bench checks every input before it measures (a draft of another
# tokenizer was measured without a word; a bogus --blas-list became a table row after minutes)
CASES.append(Case("42 bench refuses a draft model of another tokenizer before measuring", 42, "decodebook-bench",
                  ["--part", "model"], 1,
                  r"^error: the draft model in '.*/draft' has another tokenizer: token 0 differs from the model's$",
                  setup=other_tokenizer_draft))
CASES.append(Case("42 bench refuses --blas-list bogus before measuring", 42, "decodebook-bench",
                  ["--part", "model", "--blas-list", "openblas,bogus"], 2,
                  r"^error: --blas-list names 'bogus': unknown BLAS 'bogus'$",
                  fix=r"^  fix: pass --blas-list with openblas, blis or paths of CBLAS libraries, comma-separated$"))
CASES.append(Case("42 bench refuses --blas-list of a missing library before measuring", 42, "decodebook-bench",
                  ["--part", "mask", "--blas-list", "/nonexistent/libcblas.so"], 2,
                  r"^error: --blas-list names '/nonexistent/libcblas.so': cannot load the BLAS"))
CASES.append(Case("42 bench refuses --json in a missing folder as a usage error", 42, "decodebook-bench",
                  ["--json", "/nonexistent/x.json"], 2, r"^error: cannot write '/nonexistent/x.json'$",
                  fix=r"^  fix: give --json a file in a writable folder$"))
CASES.append(Case("22 REPL :set typical-p 1.5", 22, "decodebook-generate", ["--interactive"], 0, None,
                  stdin=":set typical-p 1.5\n:quit\n",
                  check_stdout=r"error: typical_p = 1.5 is invalid: it must be in \(0, 1\] \(1 = off\)"))


# ---- running ------------------------------------------------------------------------------------

def run_case(case, bin_dir):
    tmp = tempfile.mkdtemp(prefix="decodebook-bad-")
    try:
        args = list(case.args)
        if case.setup:
            args = case.setup(tmp) + args
        args = [os.path.join(tmp, "out") if a == "DIR" else a for a in args]
        cmd = [os.path.join(bin_dir, case.program)] + args
        try:
            p = subprocess.run(cmd, input=(case.stdin or "").encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=TIMEOUT, cwd=tmp)
        except subprocess.TimeoutExpired:
            return ["hang: no exit within %d s" % TIMEOUT]
        except OSError as e:
            return ["cannot run %s: %s" % (cmd[0], e)]
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        problems = []
        if p.returncode < 0:
            problems.append("crash: killed by signal %d" % -p.returncode)
        elif p.returncode != case.code:
            problems.append("exit code %d, expected %d" % (p.returncode, case.code))
        if case.check_stdout:
            if not re.search(case.check_stdout, out):
                problems.append("standard output does not match /%s/" % case.check_stdout)
        else:
            if case.code != 0 and out:
                problems.append("partial output before the error: standard output holds %d bytes" % len(out))
            lines = [l for l in err.splitlines() if l.strip()]
            first = lines[0] if lines else ""
            if not re.search(case.first, first):
                problems.append("first line %r does not match /%s/" % (first, case.first))
            if case.fix and not (len(lines) > 1 and re.search(case.fix, lines[1])):
                problems.append("second line %r does not match /%s/" % (lines[1] if len(lines) > 1 else "", case.fix))
        if problems:
            problems.append("command: %s\nstdout (first 500 bytes): %s\nstderr (first 1000 bytes): %s"
                            % (" ".join(cmd)[:600], out[:500], err[:1000]))
        return problems
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", help="folder holding chapter-NN and the decodebook-* tools")
    ap.add_argument("--case", action="append", default=[], help="run only this case (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the case names, one a line, and exit")
    a = ap.parse_args()
    if a.list:
        for c in CASES:
            print(c.name)
        return 0
    if not a.bin_dir:
        ap.error("--bin-dir is required")
    a.bin_dir = os.path.abspath(a.bin_dir)
    names = {c.name for c in CASES}
    for n in a.case:
        if n not in names:
            print("unknown case %r (see --list)" % n, file=sys.stderr)
            return 2
    failed = 0
    for c in CASES:
        if a.case and c.name not in a.case:
            continue
        problems = run_case(c, a.bin_dir)
        print(("FAIL " if problems else "ok   ") + "item %d: %s" % (c.item, c.name))
        for p in problems:
            print("     " + p.replace("\n", "\n     "))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
