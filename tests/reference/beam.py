"""Beam search in float64, from the documented semantics (not from the C++ sources).

Hugging Face `generate(num_beams=n)` (the vectorised `_beam_search`):

  * scores are log_softmax of the last position's logits (no processors in these goldens);
  * beam 0 starts at 0, beams 1..n-1 at -1e9 (so step 1 does not pick the same token n times);
  * each step: every (beam, token) gets running sum + log-prob; the best max(2, 1 + n_eos) * n are
    ranked (sum descending, ties by flat index beam * V + token); walking them in rank order, an
    EOS candidate of rank < n is a finished hypothesis (rank >= n: dropped), every other candidate
    goes on until n run;
  * at the step that reaches max_new_tokens, every candidate of rank < n is finished instead;
  * finished score = sum / generated_len ** length_penalty, generated_len counts the EOS and not the
    prompt; the n best finished hypotheses are kept;
  * after each step (with L = tokens generated so far), stop when n hypotheses are finished and
      early_stopping True:     always;
      early_stopping False:    best running sum / L ** lp <= worst finished;
      early_stopping "never":  the same with L = max_new_tokens when lp > 0 (the best a running beam
                               could ever reach).

vLLM's `LLM.beam_search` (beam_scoring "vllm"): one start beam; each beam's 2W best tokens; EOS ones
complete, the W best others go on; no early stop; after max_tokens the running beams join the
completed; score = cum / (len(prompt + generated) - [last is EOS]) ** lp.

Margins: a golden is only trusted if every decision is at least MIN_MARGIN from flipping: adjacent
gaps among the ranked candidates (one past the cut), among the kept finished scores, and between the
stopping bound and the worst finished score.

Self-check (exhaustive search on a toy table): /usr/bin/python3 tests/reference/beam.py
"""
import itertools
import math

import torch

import gpt2

DUMMY = -1e9


def log_softmax(z):
    return torch.log_softmax(z.to(torch.float64), dim=-1)


class ModelSource:
    """log-prob rows of the model, one forward per distinct sequence (memoised)."""

    def __init__(self, model, prompt_ids):
        self.model, self.prompt, self.memo = model, list(prompt_ids), {}

    def __call__(self, generated):
        key = tuple(generated)
        if key not in self.memo:
            self.memo[key] = log_softmax(gpt2.forward(self.model, self.prompt + list(generated))[-1]).tolist()
        return self.memo[key]


def _gaps(values):
    s = sorted(values, reverse=True)
    return [s[i] - s[i + 1] for i in range(len(s) - 1) if s[i + 1] > DUMMY / 2]


def hf_beam_search(source, eos_ids, num_beams, max_new, length_penalty, early_stopping, num_return):
    """Returns (hypotheses best first, min_margin, steps). A hypothesis: dict ids/score/sum/reason."""
    n = num_beams
    beams = [((), 0.0)] + [((), DUMMY)] * (n - 1)
    done = []  # (score, sum, ids), at most n
    margins = []
    keep = max(2, 1 + len(eos_ids)) * n
    steps = 0
    for step in range(max_new):
        steps = step + 1
        last = step + 1 == max_new
        cands = []
        for b, (ids, s) in enumerate(beams):
            row = source(ids)
            for t, lp in enumerate(row):
                cands.append((s + lp, b * len(row) + t, ids + (t,)))
        cands.sort(key=lambda c: (-c[0], c[1]))
        margins += _gaps([c[0] for c in cands[:keep + 1]])
        nxt = []
        for rank, (s, _, ids) in enumerate(cands[:keep]):
            if last or ids[-1] in eos_ids:
                if rank < n:
                    done.append((s / (len(ids) ** length_penalty), s, ids))
            elif len(nxt) < n:
                nxt.append((ids, s))
        done.sort(key=lambda d: -d[0])
        margins += _gaps([d[0] for d in done[:n + 1]])
        done = done[:n]
        if last:
            break
        beams = nxt
        if len(done) >= n:
            if early_stopping == "true":
                break
            length = max_new if (early_stopping == "never" and length_penalty > 0) else step + 1
            bound = beams[0][1] / (length ** length_penalty)
            margins.append(abs(bound - done[-1][0]))
            if not bound > done[-1][0]:
                break
    hyps = [{"ids": list(ids), "score": sc, "sum_logprobs": s,
             "finish_reason": "eos" if ids[-1] in eos_ids else "length"} for sc, s, ids in done[:num_return]]
    return hyps, min(margins) if margins else math.inf, steps


def vllm_beam_search(source, eos_ids, prompt_len, width, max_new, length_penalty, num_return):
    def score(ids, s):
        length = prompt_len + len(ids) - (1 if ids and ids[-1] in eos_ids else 0)
        return s / (length ** length_penalty)

    beams = [((), 0.0)]
    completed, margins, steps = [], [], 0
    for step in range(max_new):
        if not beams:
            break
        steps = step + 1
        pool = []
        for b, (ids, s) in enumerate(beams):
            row = source(ids)
            order = sorted(range(len(row)), key=lambda t: (-row[t], t))
            margins += _gaps([row[t] for t in order[:2 * width + 1]])
            for t in order[:2 * width]:
                if t in eos_ids:
                    completed.append((ids + (t,), s + row[t]))
                else:
                    pool.append((s + row[t], b, t, ids + (t,)))
        pool.sort(key=lambda c: (-c[0], c[1], c[2]))
        margins += _gaps([c[0] for c in pool[:width + 1]])
        beams = [(ids, s) for s, _, _, ids in pool[:width]]
    completed += beams
    ranked = sorted(((score(ids, s), s, ids) for ids, s in completed), key=lambda d: -d[0])
    margins += _gaps([d[0] for d in ranked[:num_return + 1]])
    hyps = [{"ids": list(ids), "score": sc, "sum_logprobs": s,
             "finish_reason": "eos" if ids[-1] in eos_ids else "length"} for sc, s, ids in ranked[:num_return]]
    return hyps, min(margins) if margins else math.inf, steps


def exhaustive(source, eos_ids, vocab, max_new, length_penalty):
    """Every sequence that ends in EOS or at max_new, scored as HF does, best first."""
    out = []

    def walk(ids, s):
        if ids and (ids[-1] in eos_ids or len(ids) == max_new):
            out.append((s / (len(ids) ** length_penalty), ids))
            return
        row = source(ids)
        for t in range(vocab):
            walk(ids + (t,), s + row[t])

    walk((), 0.0)
    return sorted(out, key=lambda d: -d[0])


def selftest():
    g = torch.Generator().manual_seed(5)
    vocab, eos, max_new = 3, [2], 4
    table = {}

    def toy(ids):
        if ids not in table:
            table[ids] = log_softmax(torch.randn(vocab, generator=g, dtype=torch.float64) * 2).tolist()
        return table[ids]

    for lp in (1.0, 0.0, 2.0, -1.0):
        # 24 beams hold every prefix of this toy: "never" must find the exhaustive best
        hyps, _, _ = hf_beam_search(toy, eos, 24, max_new, lp, "never", 1)
        best = exhaustive(toy, eos, vocab, max_new, lp)[0]
        assert tuple(hyps[0]["ids"]) == best[1] and abs(hyps[0]["score"] - best[0]) < 1e-12, (lp, hyps, best)
    # one beam is greedy
    hyps, _, _ = hf_beam_search(toy, eos, 1, max_new, 1.0, "false", 1)
    ids = ()
    while not ids or (ids[-1] not in eos and len(ids) < max_new):
        row = toy(ids)
        ids += (max(range(vocab), key=lambda t: (row[t], -t)),)
    assert tuple(hyps[0]["ids"]) == ids, (hyps, ids)
    # the hand-traced two-step case of chapter 05: greedy takes A (0.6) then 0.4; beam 2 finds B, 0.9
    rows = {(): [math.log(0.6), math.log(0.4), -1e30], (0,): [math.log(0.4), math.log(0.3), math.log(0.3)],
            (1,): [math.log(0.9), math.log(0.05), math.log(0.05)]}
    src = lambda ids: rows.get(ids, [math.log(0.2), math.log(0.2), math.log(0.6)])
    hyps, _, _ = hf_beam_search(src, [2], 2, 2, 0.0, "never", 1)
    assert hyps[0]["ids"] == [1, 0], hyps
    print("beam selftest ok")


if __name__ == "__main__":
    selftest()
