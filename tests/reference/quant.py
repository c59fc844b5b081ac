"""Chapter 13's reference: ggml's q8_0 and q4_0 blocks, quantized independently in numpy.

The rules are ggml's reference quantizers and generic dot products (llama.cpp at 36491e4:
ggml/src/ggml-quants.c `quantize_row_q8_0_ref`, `quantize_row_q4_0_ref`, `dequantize_row_*`;
ggml/src/ggml-cpu/quants.c `ggml_vec_dot_q8_0_q8_0_generic`, `ggml_vec_dot_q4_0_q8_0_generic`),
re-implemented here in numpy float32, one rounding per operation as C does it:

    q8_0: amax = max |x|; d = amax / 127; id = 1 / d (0 if d == 0); q = roundf(x * id) (halves
          away from zero); d stored as binary16 (numpy's float16 conversion: nearest, ties even).
    q4_0: max = the first x of largest |x|; d = max / -8; id as above; q = min(15, trunc(x * id
          + 8.5)); byte j = q[j] | q[j + 16] << 4.

Cases: tests/test-quantize-fns.cpp's data (0.1 + amplitude * cosf(i + offset), the float32 values
made with libm's own cosf through ctypes, as the C test makes them), its error metric
(sqrtf(sum of squared float32 differences, summed in double) / n) and its dot-product error; hand
cases at the rounding boundaries; and every held matrix of both embedded models (wte, and each
block's four matrices turned to (out, in), quantized row by row). Blocks are compared by FNV-1a
64 of their bytes (little-endian d, then the quants), and the first blocks are kept in hex.

Writes tests/data/quant.json:
    /usr/bin/python3 tests/reference/quant.py             # regenerate
    /usr/bin/python3 tests/reference/quant.py --check     # exit 1 naming the first case that differs
    /usr/bin/python3 tests/reference/quant.py --selftest  # hand-checked cases
"""
import ctypes
import ctypes.util
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_file  # noqa: E402
import gpt2  # noqa: E402  (its own safetensors parser)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "quant.json")
QK = 32
F32 = np.float32

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.cosf.restype = ctypes.c_float
_libm.cosf.argtypes = [ctypes.c_float]


def ggml_test_data(offset, n, amplitude=2.0):
    """test-quantize-fns.cpp's generate_data: dst[i] = 0.1 + amplitude * cosf(i + offset), the
    product in float32, the sum in double, stored as float32."""
    out = np.empty(n, dtype=F32)
    for i in range(n):
        arg = F32(F32(i) + F32(offset))
        prod = F32(F32(amplitude) * F32(_libm.cosf(float(arg))))
        out[i] = F32(0.1 + float(prod))
    return out


def _round_half_away(v32):
    """C's roundf on float32 values, exactly (the + 0.5 in float64 cannot round)."""
    v = v32.astype(np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


def _half_bits(d32):
    return np.array(d32, dtype=F32).astype(np.float16).view(np.uint16)


def quantize_q8_0(x):
    """x: float32 (n,), n % 32 == 0 -> (d bits (nb,), q int8 (nb, 32))."""
    blocks = x.reshape(-1, QK).astype(F32)
    amax = np.max(np.abs(blocks), axis=1).astype(F32)
    d = (amax / F32(127)).astype(F32)
    with np.errstate(divide="ignore"):
        id_ = np.where(d != 0, (F32(1) / d).astype(F32), F32(0)).astype(F32)
    q = _round_half_away((blocks * id_[:, None]).astype(F32))
    assert np.all(np.abs(q) <= 127)
    return _half_bits(d), q.astype(np.int8)


def quantize_q4_0(x):
    """x: float32 (n,), n % 32 == 0 -> (d bits (nb,), packed uint8 (nb, 16))."""
    blocks = x.reshape(-1, QK).astype(F32)
    first = np.argmax(np.abs(blocks), axis=1)  # the first of the largest magnitudes
    mx = blocks[np.arange(len(blocks)), first].astype(F32)
    mx = np.where(np.abs(mx) == 0, F32(0), mx).astype(F32)  # C keeps max = +0 when no |x| exceeds 0
    d = (mx / F32(-8)).astype(F32)
    with np.errstate(divide="ignore"):
        id_ = np.where(d != 0, (F32(1) / d).astype(F32), F32(0)).astype(F32)
    shifted = ((blocks * id_[:, None]).astype(F32) + F32(8.5)).astype(F32)
    q = np.minimum(15, np.trunc(shifted.astype(np.float64)).astype(np.int64))
    assert np.all(q >= 0)
    packed = (q[:, :QK // 2] | (q[:, QK // 2:] << 4)).astype(np.uint8)
    return _half_bits(d), packed


def block_bytes(d_bits, payload):
    """The blocks as ggml lays them out: per block d (2 bytes, little-endian), then the quants."""
    out = bytearray()
    for d, p in zip(d_bits, payload):
        out += int(d).to_bytes(2, "little") + p.astype(np.uint8).tobytes()
    return bytes(out)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def dequantize(kind, d_bits, payload):
    d = d_bits.view(np.float16).astype(F32)
    if kind == "q8_0":
        q = payload.astype(np.int64)
    else:
        q = np.concatenate([(payload & 0x0f).astype(np.int64) - 8, (payload >> 4).astype(np.int64) - 8], axis=1)
    return (q.astype(F32) * d[:, None]).astype(F32).reshape(-1)


def ggml_total_error(x, y):
    """test-quantize-fns.cpp's array_rmse: float32 differences, squared and summed in double,
    sqrtf of the sum as a float, over n in float32."""
    diff = (x.astype(F32) - y.astype(F32)).astype(F32).astype(np.float64)
    total = 0.0
    for v in diff:  # in order, as the C loop
        total += v * v
    return float(F32(np.sqrt(F32(total))) / F32(len(x)))


def vec_dot(kind, xd, xq, yd, yq):
    """ggml's generic vec_dot: integer sums per block, then the float32 sum in block order."""
    total = F32(0)
    for b in range(len(xd)):
        dx = np.array([xd[b]], dtype=np.uint16).view(np.float16).astype(F32)[0]
        dy = np.array([yd[b]], dtype=np.uint16).view(np.float16).astype(F32)[0]
        if kind == "q8_0":
            sumi = int(np.sum(xq[b].astype(np.int64) * yq[b].astype(np.int64)))
            total = F32(total + F32(F32(sumi) * F32(dx * dy)))
        else:
            low = (xq[b] & 0x0f).astype(np.int64) - 8
            high = (xq[b] >> 4).astype(np.int64) - 8
            sumi = int(np.sum(low * yq[b][:QK // 2]) + np.sum(high * yq[b][QK // 2:]))
            total = F32(total + F32(F32(F32(sumi) * dx) * dy))
    return total


def ggml_dot_error(kind, x, y):
    """test-quantize-fns.cpp's dot_product_error: x quantized to `kind`, y to q8_0 (the vec_dot
    type), |vec_dot - dot_product| / n, dot_product summing float32 products in double."""
    xd, xq = quantize_q8_0(x) if kind == "q8_0" else quantize_q4_0(x)
    yd, yq = quantize_q8_0(y)
    result = vec_dot(kind, xd, xq, yd, yq)
    ref = 0.0
    for a, b in zip(x, y):
        ref += float(F32(a * b))
    return float(F32(np.abs(F32(result - F32(ref)))) / F32(len(x)))


def quantize(kind, x):
    return quantize_q8_0(x) if kind == "q8_0" else quantize_q4_0(x)


def ggml_cases():
    cases = []
    for offset, amplitude in ((0.0, 2.0), (1.0, 2.0), (3.0, 1.0), (4.0, 1.5)):
        x = ggml_test_data(offset, QK * 128, amplitude)
        case = {"offset": offset, "amplitude": amplitude, "n": len(x)}
        for kind in ("q8_0", "q4_0"):
            d, p = quantize(kind, x)
            data = block_bytes(d, p)
            case[kind] = {"fnv1a64": fnv1a64(data), "first_blocks": data[:4 * (2 + p.shape[1])].hex(),
                          "total_error": ggml_total_error(x, dequantize(kind, d, p))}
            if offset == 0.0:
                case[kind]["dot_error"] = ggml_dot_error(kind, x, ggml_test_data(1.0, QK * 128))
        cases.append(case)
    return cases


def hand_blocks():
    """Blocks at the rules' edges, each 32 float32 values."""
    zeros = [0.0] * QK
    ties = [1.0, -1.0] + [0.25] * 30          # q4_0 keeps the first of equal magnitudes: +1
    ties_neg = [-1.0, 1.0] + [0.25] * 30      # ... here -1
    halves = [127.0, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5] + [3.49999976158142, -3.5] + [0.0] * 22  # q8_0: d = 1
    q4 = [-8.0, 0.5, -0.5, 7.0, 7.6, -7.9, 1.5, -1.5, 0.49999997, 3.0] + [0.0] * 22  # q4_0: d = 1
    tiny = [1e-6 * (j - 16) for j in range(QK)]  # the scale is a binary16 subnormal
    big = [65504.0 * 8 * (1 if j % 3 else -1) * (j + 1) / QK for j in range(QK)]  # the largest scales that fit
    negzero = [-0.0] * QK
    return [("zeros", zeros), ("negative zeros", negzero), ("ties, + first", ties), ("ties, - first", ties_neg),
            ("q8_0 halves", halves), ("q4_0 boundaries", q4), ("subnormal scale", tiny), ("large", big)]


def hand_cases():
    out = []
    for name, values in hand_blocks():
        x = np.array(values, dtype=F32)
        case = {"name": name, "values": [float(v) for v in x]}
        for kind in ("q8_0", "q4_0"):
            d, p = quantize(kind, x)
            case[kind] = block_bytes(d, p).hex()
        out.append(case)
    return out


HELD = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def model_cases():
    out = {}
    for model in ("fortunes-gpt2", "fortunes-draft"):
        path = os.path.join(ROOT, "models", model, "model.safetensors")
        with open(path, "rb") as f:
            tensors = gpt2.parse_safetensors(f.read())
        with open(os.path.join(ROOT, "models", model, "config.json"), encoding="utf-8") as f:
            n_layer = int(json.load(f)["n_layer"])
        names = ["wte.weight"] + ["h.%d.%s" % (i, n) for i in range(n_layer) for n in HELD]
        entries = []
        for name in names:
            w = tensors[name].numpy().astype(F32)  # F16 or F32 checkpoints: exact
            if name != "wte.weight":
                w = np.ascontiguousarray(w.T)  # Conv1D's (in, out) -> (out, in)
            entry = {"name": name, "rows": int(w.shape[0]), "cols": int(w.shape[1])}
            for kind in ("q8_0", "q4_0"):
                d, p = quantize(kind, w.reshape(-1))
                entry[kind] = fnv1a64(block_bytes(d, p))
            entries.append(entry)
        out[model] = entries
    return out


def build():
    return {
        "about": "Chapter 13 (tests/reference/quant.py, an independent numpy reference of ggml's q8_0 and q4_0 "
                 "reference quantizers and generic dot products, llama.cpp at 36491e4). ggml: test-quantize-fns.cpp's "
                 "data (0.1 + amplitude * cosf(i + offset), 4096 values), each kind's blocks (FNV-1a 64 of their bytes; "
                 "the first four blocks in hex), ggml's total error (sqrtf(sum of squares) / n) and, at offset 0, its "
                 "dot-product error against offset 1 quantized to q8_0. hand: blocks at the rules' edges, in hex. "
                 "models: every held matrix of both embedded models, (out, in), quantized row by row: FNV-1a 64 of the "
                 "blocks. Regenerate with /usr/bin/python3 tests/reference/quant.py; check with --check.",
        "ggml": ggml_cases(),
        "hand": hand_cases(),
        "models": model_cases(),
    }


def dump(obj):
    return json.dumps(obj, indent=1) + "\n"


def first_difference(obj, path):
    old = json.load(open(path, encoding="utf-8"))
    for key in obj:
        if old.get(key) != obj[key]:
            return "section %s" % key
    return "formatting"


def selftest():
    # q8_0 by hand: amax 127 gives d = 1 exactly; halves round away from zero
    d, q = quantize_q8_0(np.array([127.0, 2.5, -2.5, 0.5, -0.5] + [0.0] * 27, dtype=F32))
    assert d[0] == 0x3c00 and list(q[0][:5]) == [127, 3, -3, 1, -1], (hex(d[0]), q[0][:5])
    # q4_0 by hand: max -8 gives d = 1; x -> trunc(x + 8.5), capped at 15; max itself -> 0
    d, p = quantize_q4_0(np.array([-8.0, 0.5, -0.5, 7.0, 7.6] + [0.0] * 27, dtype=F32))
    q = np.concatenate([p[0] & 0x0f, p[0] >> 4])
    assert d[0] == 0x3c00 and list(q[:5]) == [0, 9, 8, 15, 15] and q[16] == 8, (hex(d[0]), q[:5])
    # zeros: q8_0 d = +0, q = 0; q4_0 d = -0 (0 / -8), q = 8
    d8, q8 = quantize_q8_0(np.zeros(QK, dtype=F32))
    d4, p4 = quantize_q4_0(np.zeros(QK, dtype=F32))
    assert d8[0] == 0 and not q8.any() and d4[0] == 0x8000 and np.all(p4 == 0x88)
    # the dequantized block is within d / 2 (q8_0) and d (q4_0: the value -max is capped at 7 d) of
    # every value, plus what rounding d to binary16 moves the largest quants (127 or 8 times 2^-11 d)
    x = ggml_test_data(0.0, QK * 8)
    for kind, slack in (("q8_0", 0.5 + 127 / 2048), ("q4_0", 1.0 + 8 / 2048)):
        dd, pp = quantize(kind, x)
        scale = np.repeat(np.abs(dd.view(np.float16).astype(np.float64)), QK)
        err = np.abs(dequantize(kind, dd, pp).astype(np.float64) - x)
        assert np.all(err <= slack * scale * (1 + 1e-6)), (kind, np.max(err / scale))
    # FNV-1a 64's published test vectors
    assert fnv1a64(b"") == "cbf29ce484222325" and fnv1a64(b"a") == "af63dc4c8601ec8c"
    # libm's cosf agrees with float64 cos rounded, to one ulp, on the test's arguments
    for i in range(0, 4096, 97):
        c = F32(_libm.cosf(float(i)))
        assert abs(float(c) - np.cos(float(i))) <= 2 * np.spacing(F32(1.0)), i
    print("ok")


def summary(obj):
    return "%d ggml cases, %d hand blocks, %d models" % (len(obj["ggml"]), len(obj["hand"]), len(obj["models"]))


if __name__ == "__main__":
    sys.exit(golden_file.main(sys.argv, OUT, ROOT, build, dump, selftest,
                              lambda obj, path: "differs: " + first_difference(obj, path), summary))
