"""Sampled decoding: logits processors, the processor chain, sampling with an explicit coin.

Everything is float64 on one logits vector (the last row of gpt2.forward). A processor edits a
copy of the logits; "remove" means -inf. Written from the project's documented semantics
(Hugging Face `generate` rules), not from the C++ sources:

  softmax            exp(z - max) / sum; -inf -> 0
  candidate order    tokens with p > 0, by (p descending, id ascending)
  temperature T      z / T (T = 0: greedy, argmax after the penalties, no warpers)
  top_k k            keep = min(max(k, min_keep), V); remove z < the keep-th largest (ties kept)
  top_p p            in exact arithmetic rank r of softmax(z) is kept iff r < max(1, min_keep) or
                     (mass strictly before it) < p; at the boundary each order uses its engine's
                     arithmetic (top_p_keep: HF/vLLM sum up from the least likely token, llama.cpp
                     walks down), which decides exact-sum cases differently
  min_p m            keep p_i >= m * p_max, plus the first min_keep candidates
  repetition θ       each distinct token of the window: z > 0 ? z / θ : z * θ
  presence/frequency each token of the OUTPUT with count c: z -= frequency * c + presence
  no_repeat_ngram n  ban every token that would complete an n-gram already in prompt + output
  sample             first candidate whose running sum > coin * total (fallback: the last)

Chain: penalties (repetition -> presence/frequency -> no_repeat_ngram), then argmax if T == 0,
else the active warpers in the engine's order (ORDERS), then sample.

Margins: every decision that float32 rounding (~1e-5 on the logits) could flip reports how far
it was from flipping; a golden is only trusted if the smallest margin is >= 1e-4.

  coin     distance of the coin from the nearest CDF boundary (running sum / total, with 0, 1)
  rank     logit gap between the sampled token and its neighbours in candidate order (a swap
           of near-equal neighbours changes the token even when the coin is far from a boundary)
  top_k    gap between the keep-th and (keep+1)-th largest logit
  top_p    |mass before - p| at every rank decided by the mass test, and the logit gap between
           the last kept and the first removed candidate
  min_p    |p_i - threshold| / p_max over the candidates (and the cut gap if min_keep forced one)
  greedy   top-2 gap of the processed logits

Self-check: /usr/bin/python3 tests/reference/sampling.py
"""
import math

import numpy
import torch

import decode
import gpt2
import rng

torch.set_num_threads(1)

INF = float("inf")
NEG_INF = float("-inf")

DEFAULT_PARAMS = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "min_tokens_to_keep": 1,
    "repetition_penalty": 1.0,
    "penalty_scope": "prompt_and_output",
    "penalty_last_n": 64,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "no_repeat_ngram_size": 0,
}
INT_PARAMS = ("top_k", "min_tokens_to_keep", "penalty_last_n", "no_repeat_ngram_size")
SCOPES = ("prompt_and_output", "output_only", "last_n")

# Warper order after the penalties, per engine.
ORDERS = {
    "hf": ("temperature", "top_k", "top_p", "min_p"),
    "llama.cpp": ("top_k", "top_p", "min_p", "temperature"),
    "vllm": ("temperature", "min_p", "top_k", "top_p"),
}
# The top-p arithmetic each order uses (see top_p_keep): they differ only where the mass lands on p.
TOP_P_RULES = {"hf": "hf", "llama.cpp": "llama.cpp", "vllm": "vllm"}
ORDER_ALIASES = {"hf": "hf", "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp", "vllm": "vllm"}

# ----------------------------------------------------------------------------- parameters


def make_params(**overrides):
    """A full parameter dict: DEFAULT_PARAMS with overrides (unknown names raise), validated."""
    unknown = sorted(set(overrides) - set(DEFAULT_PARAMS))
    if unknown:
        raise ValueError("unknown sampling parameter(s) %s" % ", ".join(unknown))
    p = dict(DEFAULT_PARAMS)
    p.update(overrides)
    for k in INT_PARAMS:
        p[k] = int(p[k])
    for k in DEFAULT_PARAMS:
        if k not in INT_PARAMS and k != "penalty_scope":
            p[k] = float(p[k])
    validate(p)
    return p


def validate(p):
    def need(ok, name, rng_text):
        if not ok:
            raise ValueError("%s = %r, must be %s" % (name, p[name], rng_text))
    for k in DEFAULT_PARAMS:
        if k not in p:
            raise ValueError("missing sampling parameter %s" % k)
        if k != "penalty_scope" and not math.isfinite(p[k]):
            raise ValueError("%s = %r is not finite" % (k, p[k]))
    need(p["temperature"] >= 0, "temperature", ">= 0")
    need(p["top_k"] >= 0, "top_k", ">= 0")
    need(0 <= p["top_p"] <= 1, "top_p", "in [0, 1]")
    need(0 <= p["min_p"] <= 1, "min_p", "in [0, 1]")
    need(p["min_tokens_to_keep"] >= 1, "min_tokens_to_keep", ">= 1")
    need(p["repetition_penalty"] > 0, "repetition_penalty", "> 0")
    need(p["penalty_scope"] in SCOPES, "penalty_scope", "one of " + ", ".join(SCOPES))
    need(p["penalty_last_n"] >= 1, "penalty_last_n", ">= 1")
    need(-2 <= p["presence_penalty"] <= 2, "presence_penalty", "in [-2, 2]")
    need(-2 <= p["frequency_penalty"] <= 2, "frequency_penalty", "in [-2, 2]")
    need(p["no_repeat_ngram_size"] >= 0, "no_repeat_ngram_size", ">= 0")


def parse_order(name):
    if name not in ORDER_ALIASES:
        raise ValueError("unknown chain order %r (accepted: hf, llama.cpp, llamacpp, vllm)" % (name,))
    return ORDER_ALIASES[name]


def g(x):
    """C's "%g"."""
    return "%g" % x

# ----------------------------------------------------------------------------- distributions


def softmax(z):
    m = float(z.max())
    if m == NEG_INF:
        raise ValueError("softmax: every logit is -inf")
    e = torch.exp(z - m)  # exp(-inf) = 0
    return e / e.sum()


def candidate_order(probs):
    """Ids with p > 0, by probability descending then id ascending (no reliance on sort stability)."""
    p = probs.tolist()
    return sorted((i for i in range(len(p)) if p[i] > 0), key=lambda i: (-p[i], i))


def argmax_lowest(z):
    return decode.argmax_lowest(z)


def top2_gap(z):
    """Largest minus second-largest logit; inf if only one is finite."""
    a, b = torch.topk(z, 2).values.tolist()
    return INF if b == NEG_INF else a - b


def sample_inverse_cdf(probs, coin):
    """First candidate (in candidate order) whose running sum exceeds coin * total; else the last."""
    p = probs.tolist()
    order = candidate_order(probs)
    if not order:
        raise ValueError("sample: no candidate with p > 0")
    total = sum(p[i] for i in order)
    target = coin * total
    run = 0.0
    for i in order:
        run += p[i]
        if run > target:
            return i
    return order[-1]


def cdf_boundaries(probs):
    """[0, s_1/total, s_2/total, ..., 1]: running sums in candidate order over the total."""
    p = probs.tolist()
    order = candidate_order(probs)
    total = sum(p[i] for i in order)
    out, run = [0.0], 0.0
    for i in order:
        run += p[i]
        out.append(run / total)
    out.append(1.0)
    return out


def cdf_margin(probs, coin):
    return min(abs(coin - b) for b in cdf_boundaries(probs))


def rank_margin(z, probs, token):
    """Logit gap between `token` and its neighbours in candidate order (inf without neighbours)."""
    order = candidate_order(probs)
    r = order.index(token)
    gaps = [abs(float(z[token]) - float(z[order[j]])) for j in (r - 1, r + 1) if 0 <= j < len(order)]
    return min(gaps) if gaps else INF


def sample_gumbel_max(z, coins):
    """argmax_i z_i - log(-log u_i): an exact sample from softmax(z), one coin per token."""
    u = torch.tensor(coins, dtype=torch.float64)
    gum = -torch.log(-torch.log(u))
    return argmax_lowest(z + gum)

# ----------------------------------------------------------------------------- warpers
# Each returns (new logits, margin of its decisions).


def apply_temperature(z, t):
    if not t > 0:
        raise ValueError("temperature must be > 0 here (0 = greedy is the chain's job)")
    return z / t, INF


def apply_top_k(z, k, min_keep=1):
    if k <= 0:
        return z.clone(), INF
    V = z.numel()
    keep = min(max(k, min_keep), V)
    desc = torch.sort(z, descending=True).values.tolist()
    kth = desc[keep - 1]
    out = z.clone()
    out[z < kth] = NEG_INF
    if keep >= V or kth == NEG_INF:
        margin = INF  # nothing to decide (or everything finite is kept anyway)
    else:
        nxt = desc[keep]
        margin = INF if nxt == NEG_INF else kth - nxt
    return out, margin


def top_p_keep(probs, p, min_keep=1, rule="hf"):
    """(kept ids in candidate order, margin), by each engine's own arithmetic (TOP_P_RULES).

    hf         TopPLogitsWarper: sort ascending, cumulative sum (torch.cumsum in the probs' dtype),
               remove where cum <= 1 - p (p a Python float; torch compares in the tensor's dtype),
               then keep the last max(1, min_keep) of the ascending order
    vllm       the same, but 1 - p is computed in float32 (vLLM keeps p in a float32 tensor)
    llama.cpp  llama_sampler_top_p: walk down with a running sum in the probs' precision (numpy
               float32 for float32 probs) and keep up to the first token where it is >= p (and at
               least min_keep)
    Ties: ascending order is (p ascending, id descending), the reverse of the candidate order, so the
    lower id of two equal tokens is kept. The margin is |mass before - p| at every rank decided by
    the mass test (|cum - (1 - p)| in the ascending form, which is the same quantity)."""
    if not 0 <= p <= 1:
        raise ValueError("top_p = %r, must be in [0, 1]" % (p,))
    if rule not in TOP_P_RULES:
        raise ValueError("unknown top-p rule %r" % (rule,))
    order = candidate_order(probs)
    forced = max(1, min_keep)
    if rule == "llama.cpp":
        f32 = probs.dtype == torch.float32
        pr = [numpy.float32(x) for x in probs.tolist()] if f32 else probs.tolist()
        pp = numpy.float32(p) if f32 else p
        kept, margin, run = [], INF, (numpy.float32(0) if f32 else 0.0)
        for r, i in enumerate(order):
            kept.append(i)
            run = run + pr[i]
            if r + 1 >= forced and pp < 1:
                margin = min(margin, abs(float(run) - p))
                if run >= pp:
                    break
        return kept, margin
    asc = list(reversed(order))
    cum = torch.cumsum(probs[torch.tensor(asc, dtype=torch.long)], dim=0) if asc else probs[:0]
    if rule == "hf":
        removed = (cum <= (1 - p)).tolist()
    else:
        removed = (cum <= (1 - torch.tensor(p, dtype=torch.float32))).tolist()
    n = len(asc)
    kept, margin = [], INF
    for j in range(n - 1, -1, -1):  # j = position in ascending order; rank = n - 1 - j
        rank = n - 1 - j
        if rank < forced:
            kept.append(asc[j])
            continue
        margin = min(margin, abs(float(cum[j]) - (1 - p)))
        if not removed[j]:
            kept.append(asc[j])
    return kept, margin

def cut_gap(z, order, n_kept):
    """Logit gap between the last kept and the first removed candidate (inf if none removed)."""
    if n_kept >= len(order):
        return INF
    return float(z[order[n_kept - 1]]) - float(z[order[n_kept]])


def _keep_only(z, kept):
    out = torch.full_like(z, NEG_INF)
    idx = torch.tensor(kept, dtype=torch.long)
    out[idx] = z[idx]
    return out


def apply_top_p(z, p, min_keep=1, rule="hf"):
    if p >= 1:
        return z.clone(), INF
    probs = softmax(z)
    kept, margin = top_p_keep(probs, p, min_keep, rule)
    order = candidate_order(probs)
    return _keep_only(z, kept), min(margin, cut_gap(z, order, len(kept)))


def min_p_keep(probs, min_p, min_keep=1):
    """(kept ids in candidate order, margin, number forced in by min_keep)."""
    pr = probs.tolist()
    order = candidate_order(probs)
    pmax = pr[order[0]]
    thr = min_p * pmax
    passing = [i for i in order if pr[i] >= thr]
    forced = max(0, min(min_keep, len(order)) - len(passing))
    kept = order[:len(passing) + forced]  # passing is a prefix of the candidate order
    margin = min(abs(pr[i] - thr) for i in order) / pmax
    return kept, margin, forced


def apply_min_p(z, min_p, min_keep=1):
    if min_p <= 0:
        return z.clone(), INF
    probs = softmax(z)
    kept, margin, forced = min_p_keep(probs, min_p, min_keep)
    if forced:
        margin = min(margin, cut_gap(z, candidate_order(probs), len(kept)))
    return _keep_only(z, kept), margin

# ----------------------------------------------------------------------------- penalties


def penalty_window(prompt, generated, scope, last_n):
    if scope == "prompt_and_output":
        return list(prompt) + list(generated)
    if scope == "output_only":
        return list(generated)
    if scope == "last_n":
        seq = list(prompt) + list(generated)
        return seq[-last_n:]
    raise ValueError("unknown penalty_scope %r" % (scope,))


def apply_repetition_penalty(z, seen, theta):
    out = z.clone()
    for t in sorted(set(seen)):
        v = float(out[t])
        out[t] = v / theta if v > 0 else v * theta
    return out, INF


def apply_presence_frequency(z, output, presence, frequency):
    out = z.clone()
    counts = {}
    for t in output:
        counts[t] = counts.get(t, 0) + 1
    for t, c in sorted(counts.items()):
        out[t] = float(out[t]) - (frequency * c + presence)
    return out, INF


def banned_ngram_tokens(seq, n):
    """Tokens that would complete an n-gram already present in seq (HF no_repeat_ngram)."""
    seq = list(seq)
    if n <= 0 or len(seq) < n - 1:
        return set()
    prefix = seq[len(seq) - (n - 1):]
    return {seq[i + n - 1] for i in range(len(seq)) if i + n - 1 < len(seq) and seq[i:i + n - 1] == prefix}


def apply_no_repeat_ngram(z, seq, n):
    out = z.clone()
    for t in sorted(banned_ngram_tokens(seq, n)):
        out[t] = NEG_INF
    return out, INF

# ----------------------------------------------------------------------------- the chain


class Chain:
    """The processors for `params` in `order`, skipping those that are off."""

    def __init__(self, params, order="hf"):
        self.params = dict(params)
        validate(self.params)
        self.order = parse_order(order)
        p = self.params
        self.greedy = p["temperature"] == 0
        procs = []
        if p["repetition_penalty"] != 1:
            scope = {"prompt_and_output": "", "output_only": ", output_only",
                     "last_n": ", last_n=%d" % p["penalty_last_n"]}[p["penalty_scope"]]
            procs.append(("repetition_penalty(%s%s)" % (g(p["repetition_penalty"]), scope),
                          lambda z, pr, ge: apply_repetition_penalty(
                              z, penalty_window(pr, ge, p["penalty_scope"], p["penalty_last_n"]),
                              p["repetition_penalty"])))
        if p["presence_penalty"] != 0 or p["frequency_penalty"] != 0:
            procs.append(("presence_frequency(%s, %s)" % (g(p["presence_penalty"]), g(p["frequency_penalty"])),
                          lambda z, pr, ge: apply_presence_frequency(z, ge, p["presence_penalty"],
                                                                     p["frequency_penalty"])))
        if p["no_repeat_ngram_size"] > 0:
            procs.append(("no_repeat_ngram(%d)" % p["no_repeat_ngram_size"],
                          lambda z, pr, ge: apply_no_repeat_ngram(z, list(pr) + list(ge), p["no_repeat_ngram_size"])))
        if not self.greedy:
            mk = p["min_tokens_to_keep"]
            warpers = {
                "temperature": (p["temperature"] != 1, "temperature(%s)" % g(p["temperature"]),
                                lambda z, pr, ge: apply_temperature(z, p["temperature"])),
                "top_k": (p["top_k"] > 0, "top_k(%d)" % p["top_k"],
                          lambda z, pr, ge: apply_top_k(z, p["top_k"], mk)),
                "top_p": (p["top_p"] < 1, "top_p(%s)" % g(p["top_p"]),
                          lambda z, pr, ge: apply_top_p(z, p["top_p"], mk, TOP_P_RULES[self.order])),
                "min_p": (p["min_p"] > 0, "min_p(%s)" % g(p["min_p"]),
                          lambda z, pr, ge: apply_min_p(z, p["min_p"], mk)),
            }
            for w in ORDERS[self.order]:
                active, name, fn = warpers[w]
                if active:
                    procs.append((name, fn))
        self.processors = procs

    def describe(self):
        return " -> ".join([n for n, _ in self.processors] + ["argmax" if self.greedy else "sample"])

    def apply(self, logits, prompt, generated):
        """(processed logits, [(processor name, margin)])."""
        z = logits.to(torch.float64).clone()
        margins = []
        for name, fn in self.processors:
            z, m = fn(z, prompt, generated)
            margins.append((name, m))
        return z, margins

    def pick(self, logits, prompt, generated, coin):
        """(token, min margin of the step, name of the check that gave it)."""
        z, margins = self.apply(logits, prompt, generated)
        if self.greedy:
            tok = argmax_lowest(z)
            margins.append(("argmax top-2 gap", top2_gap(z)))
        else:
            probs = softmax(z)
            tok = sample_inverse_cdf(probs, coin)
            margins.append(("coin", cdf_margin(probs, coin)))
            margins.append(("rank", rank_margin(z, probs, tok)))
        name, m = min(margins, key=lambda nm: nm[1])
        return tok, m, name


def generate(model, prompt_ids, params, order, seed, max_new_tokens, eos_id, stop_below=None):
    """The naive loop: step i samples with coin i of Rng(seed) (one coin per step, used or not).
    Stops after max_new_tokens or right after eos_id (kept). If stop_below is given, gives up at the
    first step whose margin is below it (result["aborted"] = True) -- a cheap rejection for searches.
    Returns {"ids", "stopped_by_eos", "margins", "limits", "coins", "aborted"}."""
    prompt_ids = list(prompt_ids)
    decode.check_request(model, prompt_ids, max_new_tokens)
    chain = Chain(params, order)
    r = rng.Rng(seed)
    out, margins, limits, coins = [], [], [], []
    stopped = aborted = False
    for _ in range(max_new_tokens):
        coin = r.coin()
        logits = gpt2.forward(model, prompt_ids + out)[-1]
        tok, m, why = chain.pick(logits, prompt_ids, out, coin)
        coins.append(coin)
        margins.append(m)
        limits.append(why)
        out.append(tok)
        if stop_below is not None and m < stop_below:
            aborted = True
            break
        if tok == eos_id:
            stopped = True
            break
    return {"ids": out, "stopped_by_eos": stopped, "margins": margins, "limits": limits,
            "coins": coins, "aborted": aborted}

# ----------------------------------------------------------------------------- self-test


def _t(xs):
    return torch.tensor(xs, dtype=torch.float64)


def selftest():
    # softmax and candidate order
    assert torch.allclose(softmax(_t([0.0, math.log(3.0), NEG_INF])), _t([0.25, 0.75, 0.0]), rtol=0, atol=1e-15)
    assert candidate_order(_t([0.2, 0.4, 0.0, 0.4])) == [1, 3, 0]
    # top-p on [0.5, 0.3, 0.1, 0.1] at p = 0.8, where the mass lands on p: the rules differ there.
    # float32 (what the engines run): HF removes the two 0.1s (0.1f + 0.1f = 0.2f <= float32(1 - 0.8)
    # = 0.2f), vLLM keeps one (its 1 - 0.8f in float32 is 0.19999999f < 0.2f), llama.cpp stops at
    # 0.5 + 0.3f = 0.8f >= 0.8f.
    p32 = torch.tensor([0.5, 0.3, 0.1, 0.1], dtype=torch.float32)
    assert top_p_keep(p32, 0.8, rule="hf")[0] == [0, 1]
    assert top_p_keep(p32, 0.8, rule="vllm")[0] == [0, 1, 2]
    assert top_p_keep(p32, 0.8, rule="llama.cpp")[0] == [0, 1]
    # float64: 0.1 + 0.1 = 0.2 > 1 - 0.8 = 0.19999999999999996, so HF's formula keeps 3; the top-down
    # walk sees 0.5 + 0.3 == 0.8 exactly and keeps 2
    assert 0.5 + 0.3 == 0.8 and 0.1 + 0.1 > 1 - 0.8
    probs = _t([0.5, 0.3, 0.1, 0.1])
    assert top_p_keep(probs, 0.8, rule="hf")[0] == [0, 1, 2]
    assert top_p_keep(probs, 0.8, rule="llama.cpp")[0] == [0, 1]
    assert top_p_keep(probs, 0.8, rule="llama.cpp")[1] == 0.0  # the decision sat exactly on p: margin 0
    assert top_p_keep(probs, 0.8, rule="hf")[1] < 1e-15
    # HF's own test (test_top_p_dist_warper): logits = log([0.3, 0.1, 0.1, 0.5]) in float32, p = 0.8
    # keeps ids 3 and 0; row 2, log([0.15, 0.3, 0.3, 0.25]), keeps ids 1, 2, 3
    for row, want in (([0.3, 0.1, 0.1, 0.5], [3, 0]), ([0.15, 0.3, 0.3, 0.25], [1, 2, 3])):
        pt = torch.log(torch.tensor(row, dtype=torch.float32)).softmax(-1)
        for rule in TOP_P_RULES.values():
            assert top_p_keep(pt, 0.8, rule=rule)[0] == want, (row, rule)
    # ... and with the 0.3 one float32 step lower (0.29999998, as a softmax may give it), the
    # top-down walk reaches only 0.79999995 < 0.8f after two tokens and keeps a third
    low = torch.tensor([0.29999998, 0.099999994, 0.099999994, 0.5], dtype=torch.float32)
    assert float(low[0]) == 0.29999998211860657
    assert top_p_keep(low, 0.8, rule="hf")[0] == [3, 0] and top_p_keep(low, 0.8, rule="vllm")[0] == [3, 0]
    assert top_p_keep(low, 0.8, rule="llama.cpp")[0] == [3, 0, 1]
    for rule in TOP_P_RULES.values():  # away from the boundary every rule agrees
        for pt in (probs, p32):
            assert top_p_keep(pt, 0.81, rule=rule)[0] == [0, 1, 2]
            assert top_p_keep(pt, 0.79, rule=rule)[0] == [0, 1]
            assert top_p_keep(pt, 0.0, rule=rule)[0] == [0]
            assert top_p_keep(pt, 0.0, min_keep=3, rule=rule)[0] == [0, 1, 2]
            assert top_p_keep(pt, 0.5000001, rule=rule)[0] == [0, 1]
            assert top_p_keep(pt, 1.0, rule=rule)[0] == [0, 1, 2, 3]
    assert top_p_keep(probs, 0.5, rule="llama.cpp")[0] == [0]  # 0.5 >= 0.5
    zp, mp = apply_top_p(torch.log(_t([0.5, 0.3, 0.15, 0.05])), 0.7)
    assert torch.isfinite(zp).tolist() == [True, True, False, False]
    assert abs(mp - 0.1) < 1e-12  # |0.8 - 0.7| at rank 2, |0.5 - 0.7| at rank 1, cut gap log 2
    # top-k keeps ties with the k-th value; min_keep raises k; k >= V keeps all
    zk, mk = apply_top_k(_t([1.0, 3.0, 3.0, 2.0, 3.0]), 2)
    assert torch.isfinite(zk).tolist() == [False, True, True, False, True] and mk == 0.0  # 3rd == 2nd: a tie
    assert torch.isfinite(apply_top_k(_t([1.0, 3.0, 2.5, 2.0]), 1, min_keep=2)[0]).tolist() == [False, True, True, False]
    assert torch.isfinite(apply_top_k(_t([1.0, 2.0]), 5)[0]).all()
    assert apply_top_k(_t([1.0, 2.0, 2.0]), 1)[1] == 0.0  # a tie at the cut is margin 0
    assert apply_top_k(_t([1.0, 4.0, 2.5, 2.0]), 2)[1] == 0.5
    # min-p: threshold on probabilities, min_keep forces the most likely
    pm = _t([0.6, 0.3, 0.05, 0.05])
    assert min_p_keep(pm, 0.1)[0] == [0, 1]  # threshold 0.06
    assert abs(min_p_keep(pm, 0.1)[1] - 0.01 / 0.6) < 1e-12
    assert min_p_keep(pm, 0.1, min_keep=3) == ([0, 1, 2], min_p_keep(pm, 0.1)[1], 1)
    assert min_p_keep(pm, 0.9, min_keep=3)[0] == [0, 1, 2]
    assert abs(min_p_keep(pm, 0.5)[1] - 0.0) < 1e-12  # 0.3 == 0.5 * 0.6
    # repetition penalty: sign-aware, once per distinct token
    zr, _ = apply_repetition_penalty(_t([-2.0, 2.0, 0.0, 5.0]), [0, 1, 1, 1, 2], 1.5)
    assert zr[0] == -3.0 and abs(float(zr[1]) - 4.0 / 3.0) < 1e-15 and zr[2] == 0.0 and zr[3] == 5.0
    # presence / frequency over the output
    zf, _ = apply_presence_frequency(_t([1.0, 1.0, 1.0]), [0, 0, 2], 0.8, 0.5)
    assert torch.allclose(zf, _t([1.0 - 1.8, 1.0, 1.0 - 1.3]), rtol=0, atol=1e-15)
    # no-repeat-ngram on [1, 2, 3, 1, 2]
    s = [1, 2, 3, 1, 2]
    assert banned_ngram_tokens(s, 3) == {3}
    assert banned_ngram_tokens(s, 2) == {3}
    assert banned_ngram_tokens(s, 1) == {1, 2, 3}
    assert banned_ngram_tokens(s, 4) == set() and banned_ngram_tokens(s, 6) == set()
    assert banned_ngram_tokens(s + [3], 3) == {1}  # prefix [2, 3] occurred once, followed by 1
    assert banned_ngram_tokens([1], 3) == set()
    # the classic: top 5 logits [10, 9.9, 9.8, 5, 4], the other 31995 at 0, V = 32000, p = 0.9.
    # Tail token j (0-based) has mass before = (E5 + j) / Z with Z = E5 + 31995, so it is kept iff
    # j < 0.9 Z - E5: the nucleus is 5 + ceil(0.9 Z - E5) tokens, about 22.8k -- a flat tail is huge.
    V = 32000
    top = [10.0, 9.9, 9.8, 5.0, 4.0]
    zc = torch.zeros(V, dtype=torch.float64)
    zc[:5] = _t(top)
    E5 = sum(math.exp(v) for v in top)
    Z = E5 + (V - 5)
    x = 0.9 * Z - E5
    assert abs(x - round(x)) > 1e-3  # not near an integer, so the closed form is unambiguous
    expected = 5 + math.ceil(x)
    kept, _ = top_p_keep(softmax(zc), 0.9)
    assert len(kept) == expected, (len(kept), expected)
    assert kept[:5] == [0, 1, 2, 3, 4] and kept[5:8] == [5, 6, 7]  # ties by id ascending
    assert 22000 < expected < 23500
    # inverse CDF: walks candidate order, strict ">"
    pr = _t([0.2, 0.5, 0.3])  # order 1, 2, 0; boundaries 0, .5, .8, 1
    assert [sample_inverse_cdf(pr, c) for c in (0.0, 0.49, 0.5, 0.79, 0.8, 0.999)] == [1, 1, 2, 2, 0, 0]
    assert abs(cdf_margin(pr, 0.45) - 0.05) < 1e-12
    assert sample_inverse_cdf(_t([0.0, 1.0, 0.0]), 0.999999) == 1
    # Gumbel-max and inverse CDF sample the same distribution
    zs = _t([1.0, 0.0, -0.5, 0.7])
    ps = softmax(zs).tolist()
    r = rng.Rng(7)
    n = 40000
    cg, ci = [0] * 4, [0] * 4
    for _ in range(n):
        cg[sample_gumbel_max(zs, [r.coin() for _ in range(4)])] += 1
        ci[sample_inverse_cdf(softmax(zs), r.coin())] += 1
    for i in range(4):
        sd = math.sqrt(ps[i] * (1 - ps[i]) / n)
        assert abs(cg[i] / n - ps[i]) < 5 * sd and abs(ci[i] / n - ps[i]) < 5 * sd, (i, cg, ci, ps)
    # the chain: order, names, greedy
    par = make_params(temperature=0.7, top_k=40, top_p=0.9, min_p=0.05, repetition_penalty=1.3)
    assert Chain(par, "hf").describe() == \
        "repetition_penalty(1.3) -> temperature(0.7) -> top_k(40) -> top_p(0.9) -> min_p(0.05) -> sample"
    assert Chain(par, "llama.cpp").describe() == \
        "repetition_penalty(1.3) -> top_k(40) -> top_p(0.9) -> min_p(0.05) -> temperature(0.7) -> sample"
    assert Chain(par, "vllm").describe() == \
        "repetition_penalty(1.3) -> temperature(0.7) -> min_p(0.05) -> top_k(40) -> top_p(0.9) -> sample"
    assert Chain(make_params(temperature=0, top_k=5, no_repeat_ngram_size=3), "hf").describe() == \
        "no_repeat_ngram(3) -> argmax"
    assert Chain(make_params(), "vllm").describe() == "sample"
    for bad in ({"temperature": -1}, {"top_p": 1.5}, {"min_tokens_to_keep": 0}, {"penalty_scope": "all"},
                {"presence_penalty": 3}, {"repetition_penalty": 0}, {"nope": 1}):
        try:
            make_params(**bad)
            raise AssertionError("accepted %r" % bad)
        except ValueError:
            pass
    # generation on the tiny random model: greedy == decode.greedy; top_k=1 and top_p=0 too
    m = gpt2._random_model()
    ref = decode.greedy(m, [1, 2, 3], 8)["ids"]
    for pars in (make_params(temperature=0), make_params(top_k=1), make_params(top_p=0.0)):
        got = generate(m, [1, 2, 3], pars, "hf", 5, 8, m.eos_token_id)
        assert got["ids"] == ref, (pars, got["ids"], ref)
        assert len(got["coins"]) == len(got["ids"])
    # coin i belongs to step i; same seed -> same ids; EOS stops (and is kept)
    a = generate(m, [1, 2], make_params(), "hf", 3, 10, m.eos_token_id)
    b = generate(m, [1, 2], make_params(), "hf", 3, 10, m.eos_token_id)
    assert a == b
    r3 = rng.Rng(3)
    assert a["coins"] == [r3.coin() for _ in a["coins"]]
    assert a["stopped_by_eos"] == (a["ids"][-1] == m.eos_token_id)
    # step-by-step equivalence with an explicit chain application
    seq = [1, 2]
    for k, t in enumerate(a["ids"]):
        z = gpt2.forward(m, seq + a["ids"][:k])[-1]
        assert sample_inverse_cdf(softmax(z), a["coins"][k]) == t
    # penalty scopes differ as documented
    assert penalty_window([1, 2, 3], [4, 5], "last_n", 3) == [3, 4, 5]
    assert penalty_window([1, 2, 3], [4, 5], "output_only", 3) == [4, 5]
    assert penalty_window([1, 2, 3], [4, 5], "prompt_and_output", 3) == [1, 2, 3, 4, 5]
    print("sampling selftest ok")


if __name__ == "__main__":
    selftest()
