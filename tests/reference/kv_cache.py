"""Chapter 07's references: attention over a KV cache, and the KV cache's size, computed independently.

attention: for every case, the outputs of causal self-attention for positions 0..T-1 computed in one
go, in float64 and in matrix form (Q K^T / sqrt(D), the future masked, softmax per row, times V, head
by head), from the sequence's fused [q | k | v] rows. The C++ exercise computes the same outputs one
position at a time from a cache, so the two formulations share nothing but the definition.
  - "random" cases: [q | k | v] rows drawn from the project's RNG (rng.py), rounded to multiples of
    1/64 so that float32 holds them exactly;
  - a "model" case: layer 0 of the embedded model (tests/reference/gpt2.py's weights and bpe.py's
    tokenizer) on a prompt: qkv = ln_1(wte + wpe) W_attn + b, rounded to float32 before the
    attention is computed, so the C++ reads exactly the numbers the expected outputs come from.
sizes: bytes of a KV cache, 2 (K and V) x layers x positions x width x bytes per value x rows, as a
Python integer (no overflow possible here); "overflow": true when it does not fit in 64 bits.

Writes tests/data/kv_cache.json:
    /usr/bin/python3 tests/reference/kv_cache.py           # regenerate
    /usr/bin/python3 tests/reference/kv_cache.py --check   # exit 1 if the file differs
Self-test (hand-computed cases, a loop formulation against the matrix one):
    /usr/bin/python3 tests/reference/kv_cache.py --selftest
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "kv_cache.json")

import golden_file  # noqa: E402
from rng import Rng  # noqa: E402


def causal_attention(qkv, n_head):
    """qkv: (T, 3C) float64. Returns (T, C): row t attends over rows 0..t, heads side by side."""
    T, three_c = qkv.shape
    C = three_c // 3
    D = C // n_head
    q, k, v = qkv[:, :C], qkv[:, C:2 * C], qkv[:, 2 * C:]
    out = np.zeros((T, C))
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    for h in range(n_head):
        cols = slice(h * D, (h + 1) * D)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(D)  # (T, T)
        scores[future] = -np.inf
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        out[:, cols] = p @ v[:, cols]
    return out


def attention_by_loops(qkv, n_head):
    """The same outputs written as plain loops (for the self-test only)."""
    T, three_c = qkv.shape
    C = three_c // 3
    D = C // n_head
    out = np.zeros((T, C))
    for t in range(T):
        for h in range(n_head):
            s = [sum(qkv[t, h * D + d] * qkv[j, C + h * D + d] for d in range(D)) / math.sqrt(D) for j in range(t + 1)]
            m = max(s)
            e = [math.exp(x - m) for x in s]
            z = sum(e)
            for d in range(D):
                out[t, h * D + d] = sum(e[j] / z * qkv[j, 2 * C + h * D + d] for j in range(t + 1))
    return out


def random_case(seed, C, n_head, T):
    rng = Rng(seed)
    qkv = np.array([[round((4.0 * rng.coin() - 2.0) * 64) / 64 for _ in range(3 * C)] for _ in range(T)])
    return {"name": "random seed %d, C %d, %d head%s, %d positions" % (seed, C, n_head, "s" * (n_head > 1), T), "n_head": n_head,
            "qkv": qkv.tolist(), "out": causal_attention(qkv, n_head).tolist()}


def model_case(prompt):
    import torch  # only here: the random cases and the sizes need numpy alone
    import bpe
    import gpt2
    model = gpt2.load_model()
    ids = bpe.encode(prompt.encode("utf-8"))
    w = model.w
    x = w["wte.weight"][torch.tensor(ids)] + w["wpe.weight"][:len(ids)]
    a = gpt2.layer_norm(x, w["h.0.ln_1.weight"], w["h.0.ln_1.bias"], model.eps)
    qkv = (a @ w["h.0.attn.c_attn.weight"] + w["h.0.attn.c_attn.bias"]).numpy()
    qkv = qkv.astype(np.float32).astype(np.float64)  # what a float32 program can be given exactly
    return {"name": "the embedded model, layer 0, prompt %r" % prompt, "n_head": model.n_head, "prompt": prompt,
            "ids": ids, "model_sha256": model.sha256["model.safetensors"], "qkv": qkv.tolist(),
            "out": causal_attention(qkv, model.n_head).tolist()}


# (name, layers, positions, width of K or V per layer, bytes per value, rows); width is n_embd for
# GPT-2, n_kv_heads x head_dim with grouped-query attention. Shapes from the models' config.json.
SIZES = [
    ("fortunes-gpt2 (the embedded model), float32", 4, 256, 192, 4, 1),
    ("GPT-2 124M, 1024 positions, float32", 12, 1024, 768, 4, 1),
    ("GPT-2 1.5B (48 layers, 1600 wide), 1024 positions, float32", 48, 1024, 1600, 4, 1),
    ("a 7B model (32 layers, 4096 wide), 8192 tokens, bf16", 32, 8192, 4096, 2, 1),
    ("the same 7B model, a batch of 16 sequences", 32, 8192, 4096, 2, 16),
    ("Llama-2-70B (80 layers, 8 KV heads x 128), 4096 tokens, bf16", 80, 4096, 1024, 2, 1),
    ("one position of one layer, float32", 1, 1, 8, 4, 1),
    ("no positions yet", 12, 0, 768, 4, 1),
    ("2^63 bytes: fits in 64 unsigned bits, not in 63", 1 << 20, 1 << 20, 1 << 20, 4, 1),
    ("2^64 bytes: one more factor 2 overflows 64 bits", 1 << 20, 1 << 20, 1 << 20, 4, 2),
    ("3 x 2^62 bytes: fits in 64 unsigned bits", 3, 1 << 20, 1 << 20, 1 << 21, 1),
    ("3 x 2^64 bytes: overflows 64 bits", 3, 1 << 21, 1 << 21, 1 << 21, 1),
]


def size_case(name, layers, positions, width, bytes_per_value, rows):
    total = 2 * layers * positions * width * bytes_per_value * rows
    case = {"name": name, "n_layer": layers, "positions": positions, "width": width,
            "bytes_per_value": bytes_per_value, "rows": rows, "overflow": total >= 1 << 64}
    if total < 1 << 64:
        case["bytes"] = total
    return case


def build():
    cases = [random_case(7, 4, 1, 4), random_case(8, 8, 2, 6), random_case(9, 12, 3, 5), random_case(10, 16, 4, 9)]
    cases.append(model_case("A computer is a"))
    return {
        "about": "Chapter 07 (tests/reference/kv_cache.py, float64). attention: causal self-attention outputs "
                 "(T, C) of T fused [q | k | v] rows (T, 3C), computed in matrix form; row t attends over rows "
                 "0..t. sizes: 2 x n_layer x positions x width x bytes_per_value x rows as an exact integer, "
                 "or overflow true when it needs more than 64 bits.",
        "regenerate": "/usr/bin/python3 tests/reference/kv_cache.py",
        "check": "/usr/bin/python3 tests/reference/kv_cache.py --check",
        "attention": cases,
        "sizes": [size_case(*s) for s in SIZES],
    }


def dump(obj):
    """One case per line, so a change shows as a small diff."""
    json.dumps(obj, allow_nan=False)
    lines = ["{"]
    for k in ("about", "regenerate", "check"):
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(obj[k])))
    for k in ("attention", "sizes"):
        lines.append("  %s: [" % json.dumps(k))
        for i, c in enumerate(obj[k]):
            lines.append("    " + json.dumps(c) + ("," if i + 1 < len(obj[k]) else ""))
        lines.append("  ]" + ("," if k == "attention" else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def selftest():
    # one position: the softmax over one score is 1, the output is v
    qkv = np.array([[5.0, -1.0, 2.0, 3.0, 7.0, -4.0]])
    assert np.allclose(causal_attention(qkv, 1), [[7.0, -4.0]])
    # two heads of width 1 (scale 1): q (ln 3, 0); keys (0, 5), (1, 7); values (10, 2), (20, 4)
    qkv = np.array([[0.0, 0.0, 0.0, 5.0, 10.0, 2.0], [math.log(3), 0.0, 1.0, 7.0, 20.0, 4.0]])
    out = causal_attention(qkv, 2)
    assert np.allclose(out[1], [0.25 * 10 + 0.75 * 20, 3.0]), out
    # the scale: D = 4 divides the scores by 2
    q = [2.0, 0, 0, 0]
    qkv = np.array([[0.0] * 4 + [0.0] * 4 + [1.0] * 4, q + [math.log(5), 0, 0, 0] + [2.0] * 4])
    p1 = 5 / 6  # exp(2 ln 5 / 2) = 5 against exp(0) = 1
    assert np.allclose(causal_attention(qkv, 1)[1], [(1 - p1) * 1 + p1 * 2] * 4)
    for seed in (1, 2):
        c = random_case(seed, 8, 2, 5)
        assert np.allclose(attention_by_loops(np.array(c["qkv"]), 2), c["out"], atol=1e-12)
    assert size_case(*SIZES[1])["bytes"] == 75_497_472
    assert size_case(*SIZES[3])["bytes"] == 4 * 1024 ** 3
    assert size_case(*SIZES[8])["bytes"] == 1 << 63 and size_case(*SIZES[9])["overflow"]
    assert size_case(*SIZES[10])["bytes"] == 3 << 62 and size_case(*SIZES[11])["overflow"]
    print("kv_cache.py self-test passed")


if __name__ == "__main__":
    sys.exit(golden_file.main(sys.argv, OUT, ROOT, build, dump, selftest))
