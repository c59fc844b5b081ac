"""Speculative decoding (chapter 08) in float64: prompt-lookup and draft-model drafters, the
round's verdict (Leviathan et al. 2023, as Hugging Face and vLLM implement it), the schedule of
drafts per round, and whole runs on a coin schedule fixed in advance, each decision with its margin.

Written from the documented semantics (chapter 08, HF's `_speculative_sampling` and
`PromptLookupCandidateGenerator`, vLLM's rejection sampler and n-gram proposer), not from the
C++ sources. p is the target's distribution, q the draft's; both are the *processed*
distributions of sampling.Chain (greedy: all the mass on the argmax after the penalties).

  prompt lookup, HF     for n from min(max_ngram, len - 1) down to 1: the leftmost i with
                        seq[i:i+n] == the last n tokens and i + n < len; its continuation
                        seq[i+n : i+n+k], cut before the first EOS; the first match decides
                        (even when the cut leaves nothing)
  prompt lookup, vLLM   n from min(max_n, len - 1) down to max(min_n, 1), the earliest occurrence,
                        up to k tokens after it, no EOS cut
  draft model           up to k tokens, each drawn from q = the draft's processed distribution
                        (context: prompt, generated + drafts so far) with one coin of its own
                        Rng(seed + 1) per drafted token (greedy: the argmax, the coin still drawn);
                        it stops after drafting an EOS; its stream continues across rounds
  a round               left = max_new_tokens - generated; k' = min(k, left - 1) drafts asked for
                        (none when left <= 1); kk returned; p_i (i = 0..kk) = the target's
                        distribution after the context and drafts[:i]; then exactly kk + 1 coins
                        of Rng(seed), used or not: coin i keeps draft i iff p(x) > 0, q(x) > 0
                        and coin < p(x) / q(x) (q(x) = 1 for prompt lookup); coin kk draws the next
                        token: at the first rejection from the residual max(0, p - q) (prompt
                        lookup: p with x set to 0), unnormalised, by inverse CDF in candidate
                        order; when every draft was kept, the bonus token from p_kk
  appending             the kept drafts then the next token, one by one; EOS (kept) or
                        max_new_tokens ends the run mid-round; min_new_tokens masks EOS (-inf)
                        in the chain while fewer tokens were generated
  schedule              prompt lookup: k = prompt_lookup_num_tokens always; draft model:
                        num_assistant_tokens, and with "heuristic" k + 2 (at most 64) after a round
                        that kept all its drafts, else max(1, k - 1); no change when nothing was
                        drafted

Margins (what float32 rounding could flip; a golden keeps only runs whose smallest is >= 1e-4):

  chain          every processor's own margin (sampling.Chain: top-k/top-p/min-p cuts) of every
                 target row the verdict reads (rows 0..first rejection) and of every draft row
  greedy         top-2 gap of the processed logits of those rows (a greedy draft is kept iff it
                 is the argmax; the next token is the argmax); greedy coins decide nothing
  accept coin    |coin - p(x) / q(x)| where p(x) > 0 and q(x) > 0 (sampling only)
  residual coin  the coin's distance to the residual's CDF boundaries (0, running sums / total,
                 1) times min(1, total): the residual's mass can be small and its boundaries
                 then move more
  residual rank  prompt lookup: the logit gap between the drawn token and its neighbours in the
                 residual's candidate order; draft model: |r_a - r_b| / max(p_a, q_a, p_b, q_b)
                 for those neighbours (p - q cancels: the absolute error scales with p and q)
  bonus / draft  coin vs the CDF boundaries and the rank margin, as sampling.py for one step

Self-check: /usr/bin/python3 tests/reference/speculative.py
"""
import math

import torch

import decode
import gpt2
import rng
import sampling

torch.set_num_threads(1)

INF = float("inf")
MAX_DRAFTS_PER_ROUND = 64

# The knobs a run reads, with HF's names and decodebook's defaults.
DEFAULT_CONFIG = {
    "max_new_tokens": 32,
    "min_new_tokens": 0,
    "do_sample": False,
    "seed": 42,
    "order": "hf",
    "num_assistant_tokens": 20,
    "num_assistant_tokens_schedule": "constant",
    "prompt_lookup_num_tokens": 0,
    "max_matching_ngram_size": 2,
    "prompt_lookup_min": 0,
}

# ----------------------------------------------------------------------------- prompt lookup


def prompt_lookup_hf(seq, max_ngram, num_tokens, eos_ids=()):
    seq = list(seq)
    L = len(seq)
    for n in range(min(max_ngram, L - 1), 0, -1):
        tail = seq[L - n:]
        for i in range(0, L - n):  # i + n < L: the suffix itself has no continuation
            if seq[i:i + n] != tail:
                continue
            out = []
            for t in seq[i + n:min(i + n + num_tokens, L)]:
                if t in eos_ids:
                    break
                out.append(t)
            return out  # the first match decides, even when the cut leaves nothing
    return []


def prompt_lookup_vllm(seq, min_n, max_n, k):
    seq = list(seq)
    L = len(seq)
    for n in range(min(max_n, L - 1), max(min_n, 1) - 1, -1):
        tail = seq[L - n:]
        for i in range(0, L - n):
            if seq[i:i + n] == tail:
                return seq[i + n:min(i + n + k, L)]
    return []

# ----------------------------------------------------------------------------- schedule


def first_k(cfg):
    return cfg["prompt_lookup_num_tokens"] if cfg["prompt_lookup_num_tokens"] > 0 else cfg["num_assistant_tokens"]


def next_k(cfg, k, drafted, accepted):
    if cfg["prompt_lookup_num_tokens"] > 0 or cfg["num_assistant_tokens_schedule"] == "constant" or drafted == 0:
        return k
    return min(k + 2, MAX_DRAFTS_PER_ROUND) if accepted == drafted else max(1, k - 1)

# ----------------------------------------------------------------------------- one row


class Row:
    """One position's processed distribution: z (processed logits), probs, the chain's margins."""

    def __init__(self, z, probs, margins, greedy):
        self.z, self.probs, self.margins, self.greedy = z, probs, margins, greedy


def one_hot(V, i):
    p = torch.zeros(V, dtype=torch.float64)
    p[i] = 1.0
    return p


def row(chain, logits, prompt, generated, eos_ids, min_new_tokens):
    """The chain's distribution of `logits` in the context (prompt, generated): min_new_tokens masks
    the EOS ids first, then the processors; greedy gives all the mass to the argmax."""
    z = logits.to(torch.float64).clone()
    if len(generated) < min_new_tokens:
        for e in eos_ids:
            z[e] = -INF
    z, margins = chain.apply(z, prompt, generated)
    if chain.greedy:
        margins.append(("argmax top-2 gap", sampling.top2_gap(z)))
        return Row(z, one_hot(z.numel(), sampling.argmax_lowest(z)), margins, True)
    return Row(z, sampling.softmax(z), margins, False)

# ----------------------------------------------------------------------------- the verdict


def accept(p, q, x, coin):
    px = float(p[x])
    qx = 1.0 if q is None else float(q[x])
    return px > 0 and qx > 0 and coin < px / qx


def residual(p, q, x):
    if q is None:
        r = p.clone()
        r[x] = 0.0
    else:
        r = torch.clamp(p - q, min=0.0)
    if not bool((r > 0).any()):
        raise ValueError("empty residual: p equals q, yet token %d was rejected" % x)
    return r


def residual_rank_margin(r, p, q, z, token):
    order = sampling.candidate_order(r)
    i = order.index(token)
    gaps = []
    for j in (i - 1, i + 1):
        if 0 <= j < len(order):
            o = order[j]
            if q is None:
                gaps.append(abs(float(z[token]) - float(z[o])))
            else:
                scale = max(float(p[token]), float(q[token]), float(p[o]), float(q[o]))
                gaps.append(abs(float(r[token]) - float(r[o])) / scale)
    return min(gaps) if gaps else INF


def verify(p, drafts, q, coins, z=None, greedy=False):
    """The verdict of one round: p has k + 1 rows (probabilities), q k rows or None (a
    deterministic draft), coins k + 1. With z (the processed logits of p's rows) the decisions'
    margins are recorded too. Returns {"accepted", "next", "margins": [(name, margin)], "used"}
    where used is the number of p rows the verdict read."""
    k = len(drafts)
    if len(p) != k + 1 or (q is not None and len(q) != k) or len(coins) != k + 1:
        raise ValueError("verify: %d drafts, %d p rows, %s q rows, %d coins" % (
            k, len(p), "no" if q is None else len(q), len(coins)))
    margins = []
    for i, x in enumerate(drafts):
        qi = None if q is None else q[i]
        px, qx = float(p[i][x]), (1.0 if qi is None else float(qi[x]))
        if not greedy and px > 0 and qx > 0:
            margins.append(("accept coin", abs(coins[i] - px / qx)))
        if accept(p[i], qi, x, coins[i]):
            continue
        r = residual(p[i], qi, x)
        tok = sampling.sample_inverse_cdf(r, coins[k])
        if not greedy and z is not None:
            total = float(r.sum())
            margins.append(("residual coin", sampling.cdf_margin(r, coins[k]) * min(1.0, total)))
            margins.append(("residual rank", residual_rank_margin(r, p[i], qi, z[i], tok)))
        return {"accepted": i, "next": tok, "margins": margins, "used": i + 1}
    tok = sampling.sample_inverse_cdf(p[k], coins[k])
    if not greedy and z is not None:
        margins.append(("bonus coin", sampling.cdf_margin(p[k], coins[k])))
        margins.append(("bonus rank", sampling.rank_margin(z[k], p[k], tok)))
    return {"accepted": k, "next": tok, "margins": margins, "used": k + 1}

# ----------------------------------------------------------------------------- drafters


class PromptLookup:
    """Prompt lookup by HF's rule (min_n = 0) or vLLM's (min_n >= 1): deterministic, q = None."""

    def __init__(self, min_n, max_n, eos_ids):
        self.min_n, self.max_n, self.eos_ids = min_n, max_n, list(eos_ids)

    def __call__(self, prompt, generated, k):
        seq = list(prompt) + list(generated)
        if self.min_n > 0:
            ids = prompt_lookup_vllm(seq, self.min_n, self.max_n, k)
        else:
            ids = prompt_lookup_hf(seq, self.max_n, k, self.eos_ids)
        return {"ids": ids, "q": None, "margins": []}


class DraftModel:
    """A smaller model drafting through the same chain, with its own coins (Rng(seed + 1))."""

    def __init__(self, model, chain, eos_ids, min_new_tokens, seed):
        self.model, self.chain, self.eos_ids, self.min_new_tokens = model, chain, list(eos_ids), min_new_tokens
        self.rng = rng.Rng((seed + 1) % 2 ** 64)

    def __call__(self, prompt, generated, k):
        ids, q, margins = [], [], []
        for _ in range(k):
            ctx = list(generated) + ids
            logits = gpt2.forward(self.model, list(prompt) + ctx)[-1]
            rw = row(self.chain, logits, prompt, ctx, self.eos_ids, self.min_new_tokens)
            coin = self.rng.coin()  # one coin per drafted token, used or not
            if rw.greedy:
                tok = sampling.argmax_lowest(rw.z)
            else:
                tok = sampling.sample_inverse_cdf(rw.probs, coin)
                margins.append(("draft coin", sampling.cdf_margin(rw.probs, coin)))
                margins.append(("draft rank", sampling.rank_margin(rw.z, rw.probs, tok)))
            margins += [("draft " + n, m) for n, m in rw.margins]
            ids.append(tok)
            q.append(rw.probs)
            if tok in self.eos_ids:
                break  # no draft crosses EOS
        return {"ids": ids, "q": q, "margins": margins}

# ----------------------------------------------------------------------------- a whole run


def make_config(**overrides):
    unknown = sorted(set(overrides) - set(DEFAULT_CONFIG) - set(sampling.DEFAULT_PARAMS))
    if unknown:
        raise ValueError("unknown knob(s) %s" % ", ".join(unknown))
    cfg = dict(DEFAULT_CONFIG)
    cfg.update({k: v for k, v in sampling.DEFAULT_PARAMS.items()})
    cfg.update(overrides)
    if cfg["num_assistant_tokens_schedule"] not in ("constant", "heuristic"):
        raise ValueError("num_assistant_tokens_schedule must be constant or heuristic")
    if not 1 <= cfg["num_assistant_tokens"] <= MAX_DRAFTS_PER_ROUND:
        raise ValueError("num_assistant_tokens must be in [1, 64]")
    if not 0 <= cfg["prompt_lookup_num_tokens"] <= MAX_DRAFTS_PER_ROUND:
        raise ValueError("prompt_lookup_num_tokens must be in [0, 64]")
    if cfg["prompt_lookup_min"] > cfg["max_matching_ngram_size"]:
        raise ValueError("prompt_lookup_min exceeds max_matching_ngram_size")
    return cfg


def chain_of(cfg):
    """sampling.Chain for the config: do_sample false (or temperature 0) is greedy."""
    params = {k: cfg[k] for k in sampling.DEFAULT_PARAMS}
    if not cfg["do_sample"]:
        params["temperature"] = 0.0
    return sampling.Chain(sampling.make_params(**params), cfg["order"])


def describe(cfg):
    """The chain as the C++ prints it: min_new_tokens(n) first when it is on."""
    d = chain_of(cfg).describe()
    return ("min_new_tokens(%d) -> " % cfg["min_new_tokens"] + d) if cfg["min_new_tokens"] > 0 else d


def make_drafter(cfg, eos_ids, draft_model=None):
    if cfg["prompt_lookup_num_tokens"] > 0:
        return PromptLookup(cfg["prompt_lookup_min"], cfg["max_matching_ngram_size"], eos_ids)
    if draft_model is None:
        raise ValueError("no drafter: neither prompt lookup nor a draft model")
    return DraftModel(draft_model, chain_of(cfg), eos_ids, cfg["min_new_tokens"], cfg["seed"])


def generate(model, prompt_ids, cfg, draft_model=None, stop_below=None):
    """A speculative run. Returns {"ids", "stopped_by_eos", "rounds": [{"k", "drafts", "accepted",
    "next"}], "stats": {"rounds", "drafted", "accepted", "emitted"}, "min_margin", "limit",
    "aborted"}. stop_below: give up at the first round whose margin is below it."""
    prompt = list(prompt_ids)
    decode.check_request(model, prompt, cfg["max_new_tokens"])
    eos_ids = [model.eos_token_id]
    chain = chain_of(cfg)
    drafter = make_drafter(cfg, eos_ids, draft_model)
    coins_rng = rng.Rng(cfg["seed"])
    k = first_k(cfg)
    out, rounds = [], []
    stats = {"rounds": 0, "drafted": 0, "accepted": 0, "emitted": 0}
    worst = ("none", INF)
    stopped = aborted = False
    while True:
        left = cfg["max_new_tokens"] - len(out)
        asked = min(k, left - 1) if left > 1 else 0
        d = drafter(prompt, out, asked) if asked > 0 else {"ids": [], "q": None, "margins": []}
        drafts = d["ids"]
        assert len(drafts) <= asked
        kk = len(drafts)
        logits = gpt2.forward(model, prompt + out + drafts)[len(prompt) + len(out) - 1:]
        rows = [row(chain, logits[i], prompt, out + drafts[:i], eos_ids, cfg["min_new_tokens"]) for i in range(kk + 1)]
        coins = [coins_rng.coin() for _ in range(kk + 1)]
        v = verify([r.probs for r in rows], drafts, d["q"], coins, [r.z for r in rows], chain.greedy)
        margins = list(d["margins"]) + v["margins"]
        for r in rows[:v["used"]]:
            margins += r.margins
        if margins:
            worst = min([worst] + margins, key=lambda nm: nm[1])
        rounds.append({"k": asked, "drafts": drafts, "accepted": v["accepted"], "next": v["next"]})
        stats["rounds"] += 1
        stats["drafted"] += kk
        stats["accepted"] += v["accepted"]
        k = next_k(cfg, k, kk, v["accepted"])
        if stop_below is not None and worst[1] < stop_below:
            aborted = True
            break
        done = False
        for i in range(v["accepted"] + 1):
            tok = drafts[i] if i < v["accepted"] else v["next"]
            out.append(tok)
            stats["emitted"] += 1
            if tok in eos_ids:
                stopped = done = True
                break
            if len(out) >= cfg["max_new_tokens"]:
                done = True
                break
        if done:
            break
    return {"ids": out, "stopped_by_eos": stopped, "rounds": rounds, "stats": stats,
            "min_margin": worst[1], "limit": worst[0], "aborted": aborted}

# ----------------------------------------------------------------------------- self-test


def _t(xs):
    return torch.tensor(xs, dtype=torch.float64)


def _row10(at, rest):
    z = torch.full((10,), rest, dtype=torch.float64)
    for i, v in at.items():
        z[i] = v
    return z


def selftest():
    # Leviathan's rule on p = [0.6, 0.3, 0.1], q = [0.2, 0.3, 0.5]: keep with min(1, p/q) = [1, 1, 0.2];
    # the rejected mass 1 - sum q min(1, p/q) = 0.4 goes to max(0, p - q) = [0.4, 0, 0]
    p, q = _t([0.6, 0.3, 0.1]), _t([0.2, 0.3, 0.5])
    assert accept(p, q, 0, 0.999) and accept(p, q, 1, 0.999)
    assert accept(p, q, 2, 0.19) and not accept(p, q, 2, 0.21)
    assert torch.allclose(residual(p, q, 2), _t([0.4, 0.0, 0.0]), rtol=0, atol=1e-15)
    # a deterministic draft: kept with probability p(x); the residual is p without x
    p3 = _t([0.5, 0.3, 0.2])
    assert accept(p3, None, 0, 0.49) and not accept(p3, None, 0, 0.51)
    assert residual(p3, None, 0).tolist() == [0.0, 0.3, 0.2]
    assert not accept(_t([0.0, 1.0, 0.0]), None, 0, 0.0) and not accept(p3, _t([0.0, 0.5, 0.5]), 0, 0.0)
    # the residual draws by inverse CDF in candidate order, unnormalised: [0, 0.3, 0.2] -> 1 below 0.6
    assert sampling.sample_inverse_cdf(residual(p3, None, 0), 0.59) == 1
    assert sampling.sample_inverse_cdf(residual(p3, None, 0), 0.61) == 2

    # HF test_speculative_sampling (tests/generation/test_utils.py): vocab 10, drafts [1, 4, 5] with
    # candidate logits 10 at the drafted id and -10 elsewhere; target rows 10 at 1, 10 at 4, -inf
    # except 10 at 8, then all -10: tokens [1, 4, 8] with 2 matches, whatever the coins
    drafts = [1, 4, 5]
    qs = [sampling.softmax(_row10({i: 10.0}, -10.0)) for i in drafts]
    ps = [sampling.softmax(_row10({1: 10.0}, -10.0)), sampling.softmax(_row10({4: 10.0}, -10.0)),
          sampling.softmax(_row10({8: 10.0}, -INF)), sampling.softmax(_row10({}, -10.0))]
    r = rng.Rng(1)
    for _ in range(100):
        v = verify(ps, drafts, qs, [r.coin() for _ in range(4)])
        assert (v["accepted"], v["next"]) == (2, 8), v
        assert drafts[:v["accepted"]] + [v["next"]] == [1, 4, 8] and v["used"] == 3

    # HF test_speculative_sampling_target_distribution: third row logits 2 at 1 and 8, 1 at 3,
    # -0.01 at 7, -inf elsewhere: the third token follows softmax of that row (chi-squared)
    ps2 = [sampling.softmax(_row10({1: 10.0}, -INF)), sampling.softmax(_row10({4: 10.0}, -INF)),
           sampling.softmax(_row10({1: 2.0, 8: 2.0, 3: 1.0, 7: -0.01}, -INF)), sampling.softmax(_row10({}, -10.0))]
    law = ps2[2].tolist()
    counts = [0] * 10
    n = 10000
    for _ in range(n):
        v = verify(ps2, drafts, qs, [r.coin() for _ in range(4)])
        assert v["accepted"] == 2
        counts[v["next"]] += 1
    chi2 = sum((counts[i] - n * law[i]) ** 2 / (n * law[i]) for i in (1, 3, 7, 8))
    assert counts[1] > counts[3] > counts[7] > 0 and counts[8] > counts[3] and chi2 < 16.27, (counts, chi2)

    # a greedy round (vLLM's test_rejection_sampler cases): one-hot targets, keep while the draft
    # is the argmax, then the target's own token; the coins do not matter
    for spec, target, want in (([1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4]), ([1, 2, 3], [1, 5, 3, 4], [1, 5]),
                               ([], [5], [5]), ([1], [2, 3], [2]), ([4, 5, 6], [4, 8, 6, 9], [4, 8])):
        for coin in (0.0, 0.5, 0.999):
            v = verify([one_hot(10, t) for t in target], spec, None, [coin] * (len(spec) + 1), greedy=True)
            assert spec[:v["accepted"]] + [v["next"]] == want, (spec, target, v)
        # with a greedy draft model q is one-hot at the draft: the same verdict
        v = verify([one_hot(10, t) for t in target], spec, [one_hot(10, x) for x in spec], [0.5] * (len(spec) + 1),
                   greedy=True)
        assert spec[:v["accepted"]] + [v["next"]] == want

    # the verdict's law on a toy vocabulary: first token ~ p, acceptance rate sum min(p, q)
    r = rng.Rng(7)
    zp = _t([3 * r.coin() for _ in range(6)])
    zq = _t([3 * r.coin() for _ in range(6)])
    p6, q6 = sampling.softmax(zp), sampling.softmax(zq)
    counts, kept, n = [0] * 6, 0, 20000
    for _ in range(n):
        x = sampling.sample_inverse_cdf(q6, r.coin())
        v = verify([p6, p6], [x], [q6], [r.coin(), r.coin()])
        kept += v["accepted"]
        counts[x if v["accepted"] else v["next"]] += 1
    chi2 = sum((counts[i] - n * float(p6[i])) ** 2 / (n * float(p6[i])) for i in range(6))
    assert chi2 < 20.52, (counts, chi2)  # 5 degrees of freedom, p = 0.001
    assert abs(kept / n - float(torch.minimum(p6, q6).sum())) < 0.015

    # the heuristic schedule (HF's update_candidate_strategy); constant and prompt lookup never move
    c = make_config(num_assistant_tokens=5, num_assistant_tokens_schedule="heuristic")
    assert first_k(c) == 5
    assert [next_k(c, 5, 5, 5), next_k(c, 5, 5, 4), next_k(c, 1, 1, 0), next_k(c, 5, 3, 3), next_k(c, 5, 0, 0),
            next_k(c, 64, 9, 9), next_k(c, 63, 2, 2)] == [7, 4, 1, 7, 5, 64, 64]
    ks, k = [], 2
    for drafted, acc in ((2, 2), (4, 4), (6, 3), (5, 0), (4, 4)):
        k = next_k(c, k, drafted, acc)
        ks.append(k)
    assert ks == [4, 6, 5, 4, 6]
    assert next_k(make_config(num_assistant_tokens=5), 5, 5, 5) == 5
    pl = make_config(prompt_lookup_num_tokens=3, num_assistant_tokens_schedule="heuristic")
    assert first_k(pl) == 3 and next_k(pl, 3, 3, 3) == 3

    # prompt lookup: vLLM's test_ngram cases and HF's rule
    for toks, mn, mx, kk, want in (([1, 2, 3, 4, 1, 2, 3, 5, 6], 2, 2, 2, []), ([1, 2, 3, 4, 1, 2, 3], 2, 2, 3, [4, 1, 2]),
                                   ([1, 3, 6, 2, 3, 4, 1, 2, 3], 1, 1, 2, [6, 2]), ([1, 2, 3, 4, 1, 2, 3], 4, 4, 2, []),
                                   ([2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3, 4], 3, 4, 2, [1, 2]),
                                   ([1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3, 300, 1, 2, 3], 3, 3, 2, [100, 1])):
        assert prompt_lookup_vllm(toks, mn, mx, kk) == want, (toks, mn, mx, kk)
    ids = [17, 5, 33, 51, 0, 12, 44, 8, 29, 51]
    assert prompt_lookup_hf(ids, 1, 4, [0]) == [] and prompt_lookup_hf(ids, 1, 4) == [0, 12, 44, 8]
    assert prompt_lookup_hf([1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3], 2, 2) == [100, 1]
    assert prompt_lookup_hf([5, 1, 9, 2, 7, 1], 2, 2) == [9, 2] and prompt_lookup_vllm([5, 1, 9, 2, 7, 1], 2, 2, 2) == []
    assert prompt_lookup_hf([4], 2, 3) == []

    # whole runs on the tiny random model: greedy speculative == greedy, by either lookup rule and
    # with the target as its own draft; EOS ends a round mid-way
    m = gpt2._random_model()
    want = decode.greedy(m, [1, 2, 3], 12)
    for over in (dict(prompt_lookup_num_tokens=3), dict(prompt_lookup_num_tokens=4, prompt_lookup_min=1),
                 dict(num_assistant_tokens=3), dict(num_assistant_tokens=2, num_assistant_tokens_schedule="heuristic")):
        cfg = make_config(max_new_tokens=12, **over)
        got = generate(m, [1, 2, 3], cfg, draft_model=m)
        assert got["ids"] == want["ids"] and got["stopped_by_eos"] == want["stopped_by_eos"], (over, got, want)
        assert got["stats"]["emitted"] == len(got["ids"])
        assert sum(len(rd["drafts"]) for rd in got["rounds"]) == got["stats"]["drafted"]
        if "num_assistant_tokens" in over:
            assert got["stats"]["accepted"] == got["stats"]["drafted"]  # the draft is the target
    # sampling with the target as its own draft keeps every draft (q == p exactly)
    cfg = make_config(max_new_tokens=12, do_sample=True, temperature=0.8, num_assistant_tokens=3, seed=5)
    got = generate(m, [1, 2], cfg, draft_model=m)
    assert got["stats"]["drafted"] > 0 and got["stats"]["accepted"] == got["stats"]["drafted"]
    # the coin schedule: k + 1 coins per round, and the draft's own stream Rng(seed + 1)
    cfg = make_config(max_new_tokens=10, do_sample=True, prompt_lookup_num_tokens=2, seed=3)
    got = generate(m, [1, 2, 1, 2, 1], cfg)
    assert got == generate(m, [1, 2, 1, 2, 1], cfg)  # seeded: repeats draw for draw
    assert sum(len(rd["drafts"]) + 1 for rd in got["rounds"]) >= len(got["ids"])
    # max_new_tokens: never more drafts than tokens left - 1
    for rd_k in (rd["k"] for rd in generate(m, [1, 2, 3], make_config(max_new_tokens=5, num_assistant_tokens=4),
                                             draft_model=m)["rounds"]):
        assert rd_k <= 4
    # min_new_tokens masks EOS in both chains
    m2 = gpt2._random_model()
    m2.w["ln_f.weight"] = m2.w["ln_f.weight"] * 0
    m2.w["ln_f.bias"] = torch.ones_like(m2.w["ln_f.bias"])
    m2.w["wte.weight"] = m2.w["wte.weight"].clone()
    m2.w["wte.weight"][m2.eos_token_id] = 10 * m2.w["ln_f.bias"]
    got = generate(m2, [1, 2], make_config(max_new_tokens=6, min_new_tokens=3, num_assistant_tokens=4), draft_model=m2)
    assert len(got["ids"]) == 4 and got["ids"][-1] == m2.eos_token_id and got["stopped_by_eos"], got
    assert m2.eos_token_id not in got["ids"][:3]
    assert describe(make_config(min_new_tokens=3)) == "min_new_tokens(3) -> argmax"
    assert describe(make_config(do_sample=True, temperature=0.7, top_k=40)) == "temperature(0.7) -> top_k(40) -> sample"
    print("speculative selftest ok")


if __name__ == "__main__":
    selftest()
