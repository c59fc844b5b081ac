"""An independent, functional GPT-2 forward pass in float64 torch ops.

load_model(model_dir) -> Model (config dict, float64 weights, sha256 of the files read).
forward(model, ids) -> logits (T, V) float64 for every position of the sequence.

The safetensors parser is written here from the format definition: 8-byte little-endian
header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end)}} with
offsets relative to the first byte after the header, optional "__metadata__".
F32 / F16 / BF16 (and F64) are converted to float64. A leading "transformer." in names is
stripped; keys the forward does not use (h.*.attn.bias, lm_head.weight, ...) are ignored.
lm_head is tied to wte.

Self-check: /usr/bin/python3 tests/reference/gpt2.py
"""
import hashlib
import json
import math
import os
import struct
import time

import numpy as np
import torch

torch.set_num_threads(1)

DEFAULT_MODEL_DIR = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "fortunes-gpt2"))


def parse_safetensors(blob):
    """bytes -> dict name -> float64 torch tensor. Raises ValueError on a malformed/partial file."""
    if len(blob) < 8:
        raise ValueError("safetensors: file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError("safetensors: header runs past end of file")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = memoryview(blob)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        shape = [int(s) for s in info["shape"]]
        count = 1
        for s in shape:
            count *= s
        if not 0 <= begin <= end <= len(data):
            raise ValueError("safetensors: %s data out of range (partial file?)" % name)
        raw = bytes(data[begin:end])
        dt = info["dtype"]
        if dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif dt == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dt == "F64":
            arr = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        elif dt == "BF16":
            u16 = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
            arr = (u16 << 16).view(np.float32).astype(np.float64)
        else:
            raise ValueError("safetensors: unsupported dtype %s for %s" % (dt, name))
        if arr.size != count:
            raise ValueError("safetensors: %s has %d values, shape %s" % (name, arr.size, shape))
        if name.startswith("transformer."):
            name = name[len("transformer."):]
        out[name] = torch.from_numpy(arr.reshape(shape).copy())
    return out


def _read_stable(path, tries=20, wait=3.0):
    """Read a file that another process may be rewriting: require a parseable, same-twice read."""
    last_err = None
    for _ in range(tries):
        a = open(path, "rb").read()
        try:
            tensors = parse_safetensors(a)
            b = open(path, "rb").read()
            if a == b:
                return a, tensors
        except ValueError as e:  # partial write in progress
            last_err = e
        time.sleep(wait)
    raise RuntimeError("could not read a stable %s: %s" % (path, last_err))


class Model:
    def __init__(self, config, weights, sha256):
        self.config = config
        self.w = weights
        self.sha256 = sha256
        self.n_layer = int(config["n_layer"])
        self.n_head = int(config["n_head"])
        self.n_embd = int(config["n_embd"])
        self.n_positions = int(config["n_positions"])
        self.vocab_size = int(config["vocab_size"])
        self.eps = float(config["layer_norm_epsilon"])
        self.eos_token_id = int(config["eos_token_id"])
        V, C = self.w["wte.weight"].shape
        assert V == self.vocab_size and C == self.n_embd, (V, C)
        assert self.w["wpe.weight"].shape[0] >= self.n_positions


def load_model(model_dir=DEFAULT_MODEL_DIR):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    blob, weights = _read_stable(os.path.join(model_dir, "model.safetensors"))
    sha = {"model.safetensors": hashlib.sha256(blob).hexdigest()}
    for name in ("vocab.json", "merges.txt"):
        with open(os.path.join(model_dir, name), "rb") as f:
            sha[name] = hashlib.sha256(f.read()).hexdigest()
    return Model(config, weights, sha)


def layer_norm(x, g, b, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased variance, as nn.LayerNorm
    return (x - mean) / torch.sqrt(var + eps) * g + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(model, ids):
    """ids: list of ints (1 <= len <= n_positions). Returns logits (T, V) float64."""
    ids = [int(i) for i in ids]
    T = len(ids)
    if T == 0 or T > model.n_positions:
        raise ValueError("sequence length %d outside [1, %d]" % (T, model.n_positions))
    if any(not 0 <= i < model.vocab_size for i in ids):
        raise ValueError("token id out of range")
    w = model.w
    C, H = model.n_embd, model.n_head
    hd = C // H
    idx = torch.tensor(ids, dtype=torch.long)
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(model.n_layer):
        p = "h.%d." % l
        a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], model.eps)
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # (T, 3C)
        q, k, v = qkv[:, :C], qkv[:, C:2 * C], qkv[:, 2 * C:]
        q = q.reshape(T, H, hd).transpose(0, 1)  # (H, T, hd)
        k = k.reshape(T, H, hd).transpose(0, 1)
        v = v.reshape(T, H, hd).transpose(0, 1)
        att = (q @ k.transpose(1, 2)) / math.sqrt(hd)  # (H, T, T)
        att = att.masked_fill(~causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        y = y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        x = x + y
        m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], model.eps)
        m = gelu_tanh(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        m = m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        x = x + m
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], model.eps)
    return x @ w["wte.weight"].T


def _random_model(seed=0, V=11, C=8, H=2, L=2, P=16):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64) * 0.5
    w = {"wte.weight": r(V, C), "wpe.weight": r(P, C), "ln_f.weight": 1 + r(C), "ln_f.bias": r(C)}
    for l in range(L):
        p = "h.%d." % l
        w.update({p + "ln_1.weight": 1 + r(C), p + "ln_1.bias": r(C),
                  p + "attn.c_attn.weight": r(C, 3 * C), p + "attn.c_attn.bias": r(3 * C),
                  p + "attn.c_proj.weight": r(C, C), p + "attn.c_proj.bias": r(C),
                  p + "ln_2.weight": 1 + r(C), p + "ln_2.bias": r(C),
                  p + "mlp.c_fc.weight": r(C, 4 * C), p + "mlp.c_fc.bias": r(4 * C),
                  p + "mlp.c_proj.weight": r(4 * C, C), p + "mlp.c_proj.bias": r(C)})
    cfg = {"vocab_size": V, "n_positions": P, "n_embd": C, "n_layer": L, "n_head": H,
           "layer_norm_epsilon": 1e-5, "eos_token_id": V - 1, "bos_token_id": V - 1}
    return Model(cfg, w, {})


def _loop_forward_last(model, ids):
    """A second, deliberately different formulation (per-position, per-head loops) for the self-test."""
    w = model.w
    C, H = model.n_embd, model.n_head
    hd = C // H
    xs = [w["wte.weight"][t] + w["wpe.weight"][i] for i, t in enumerate(ids)]
    for l in range(model.n_layer):
        p = "h.%d." % l
        qkv = [layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], model.eps) @ w[p + "attn.c_attn.weight"]
               + w[p + "attn.c_attn.bias"] for x in xs]
        new = []
        for i in range(len(xs)):
            heads = []
            for h in range(H):
                q = qkv[i][h * hd:(h + 1) * hd]
                scores = [float(q @ qkv[j][C + h * hd:C + (h + 1) * hd]) / math.sqrt(hd) for j in range(i + 1)]
                mx = max(scores)
                e = [math.exp(s - mx) for s in scores]
                z = sum(e)
                heads.append(sum((e[j] / z) * qkv[j][2 * C + h * hd:2 * C + (h + 1) * hd] for j in range(i + 1)))
            y = torch.cat(heads) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            x = xs[i] + y
            m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], model.eps)
            m = gelu_tanh(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
            new.append(x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"])
        xs = new
    x = layer_norm(xs[-1], w["ln_f.weight"], w["ln_f.bias"], model.eps)
    return x @ w["wte.weight"].T


def selftest(model_dir=DEFAULT_MODEL_DIR):
    # safetensors round trip through a hand-written file (F32, F16, BF16, prefixed names, extras)
    vals = np.array([[1.0, -2.5, 0.375], [3.0, 1024.0, -0.0009765625]])
    f32 = vals.astype("<f4").tobytes()
    f16 = vals.astype("<f2").tobytes()
    bf16 = (vals.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
    hdr = {"transformer.a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
           "b": {"dtype": "F16", "shape": [2, 3], "data_offsets": [24, 36]},
           "c": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [36, 48]},
           "__metadata__": {"format": "pt"}}
    h = json.dumps(hdr).encode()
    t = parse_safetensors(struct.pack("<Q", len(h)) + h + f32 + f16 + bf16)
    assert sorted(t) == ["a", "b", "c"]
    for k in "abc":
        assert t[k].dtype == torch.float64 and t[k].tolist() == vals.tolist(), (k, t[k])
    # random tiny model: batched forward == loop formulation; causality; shape
    m = _random_model()
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    logits = forward(m, ids)
    assert logits.shape == (8, 11) and logits.dtype == torch.float64
    assert torch.allclose(logits[-1], _loop_forward_last(m, ids), rtol=0, atol=1e-12)
    assert torch.allclose(forward(m, ids[:5])[-1], logits[4], rtol=0, atol=1e-12)  # causal
    assert abs(float(gelu_tanh(torch.tensor(1.0, dtype=torch.float64))) - 0.8411919906082768) < 1e-15
    z = torch.randn(5, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 3
    assert torch.allclose(gelu_tanh(z), torch.nn.functional.gelu(z, approximate="tanh"), rtol=0, atol=1e-14)
    gg, bb = m.w["ln_f.weight"], m.w["ln_f.bias"]
    assert torch.allclose(layer_norm(z, gg, bb, 1e-5), torch.nn.functional.layer_norm(z, (8,), gg, bb, 1e-5),
                          rtol=0, atol=1e-13)
    # the real model, if a checkpoint is there
    if os.path.exists(os.path.join(model_dir, "model.safetensors")):
        real = load_model(model_dir)
        lg = forward(real, [0, 1, 2])
        assert lg.shape == (3, real.vocab_size) and torch.isfinite(lg).all()
        assert torch.allclose(lg[-1], _loop_forward_last(real, [0, 1, 2]), rtol=0, atol=1e-9)
        print("gpt2 selftest ok (real model: %s)" % real.sha256["model.safetensors"][:12])
    else:
        print("gpt2 selftest ok (no model.safetensors yet)")


if __name__ == "__main__":
    selftest()
