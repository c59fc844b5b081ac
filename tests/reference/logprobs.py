"""Chapter 11 in float64: the numbers behind a token, and scoring text instead of writing it.

  log_softmax(z)                    log p = z - (max + log sum exp(z - max)); -inf stays -inf
  rank(values, t)                   how many values are >= values[t] (vLLM's batched_count_greater_than,
                                    vllm/v1/sample/ops/logprobs.py at 3e342658)
  top_logprobs(values, k, sampled)  the top k (value descending, id ascending) ranked 1..k, then the
                                    sampled token ranked by rank() when it is not among them (vLLM's
                                    gather_logprobs: k or k + 1 entries)
  prompt_logprobs(model, ids, k)    entry i from the forward's row i - 1; entry 0 is None (vLLM)
  score_continuation(model, ctx, cont)  sum of log p of cont's tokens, and whether each is the argmax
                                    (lm-eval's loglikelihood and is_greedy)
  sliding_window_perplexity(model, ids, max_length, stride)
                                    Hugging Face's guide, docs/source/en/perplexity.md at 052b1dcd: windows
                                    [begin, min(begin + max_length, n)) for begin = 0, stride, ...;
                                    trg_len = end - prev_end; the window's mean NLL over its last
                                    trg_len tokens but its first (labels shift by one), weighted by
                                    trg_len - 1 (num_valid_tokens - batch_size); stop at the window
                                    that reaches the end; PPL = exp(sum / sum of weights)
The forward is gpt2.forward (float64). Self-test: /usr/bin/python3 tests/reference/logprobs.py
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402

NEG_INF = float("-inf")


def log_softmax(z):
    z = z.to(torch.float64)
    m = float(torch.max(z))
    if m == NEG_INF:
        raise ValueError("every logit is -inf")
    total = float(torch.sum(torch.exp(z - m)))
    return z - (m + math.log(total))


def rank(values, t):
    v = float(values[t])
    return int(sum(1 for x in values.tolist() if x >= v))


def top_logprobs(values, k, sampled):
    vals = values.tolist()
    order = sorted(range(len(vals)), key=lambda i: (-vals[i], i))[:k]
    entries = [(i, vals[i], r + 1) for r, i in enumerate(order)]
    if sampled not in order:
        entries.append((sampled, vals[sampled], rank(values, sampled)))
    return entries


def prompt_logprobs(model, ids, k):
    logits = gpt2.forward(model, ids)
    out = [None]
    for i in range(1, len(ids)):
        lp = log_softmax(logits[i - 1])
        t = ids[i]
        out.append({"token": t, "logprob": float(lp[t]), "rank": rank(lp, t), "top": top_logprobs(lp, k, t)})
    return out


def score_continuation(model, context, continuation):
    logits = gpt2.forward(model, list(context) + list(continuation[:-1]))
    total, greedy, gap = 0.0, True, math.inf
    for j, t in enumerate(continuation):
        z = logits[len(context) - 1 + j]
        total += float(log_softmax(z)[t])
        best = int(torch.argmax(z))  # torch.argmax: the first maximum, the lowest id
        greedy = greedy and best == t
        top2 = torch.topk(z, 2).values.tolist()
        gap = min(gap, top2[0] - top2[1], abs(float(z[best]) - float(z[t])) if best != t else math.inf)
    return {"logprob": total, "tokens": len(continuation), "greedy": greedy, "min_gap": gap}


def sliding_window_perplexity(model, ids, max_length, stride):
    n = len(ids)
    assert n >= 2 and 2 <= max_length and 1 <= stride <= max_length
    nll_sum, tokens, windows, prev_end = 0.0, 0, 0, 0
    for begin in range(0, n, stride):
        end = min(begin + max_length, n)
        trg_len = end - prev_end
        window = ids[begin:end]
        logits = gpt2.forward(model, window)
        nll, scored = 0.0, 0
        for j in range(max(len(window) - trg_len, 1), len(window)):
            nll -= float(log_softmax(logits[j - 1])[window[j]])
            scored += 1
        if scored:
            nll_sum += nll / scored * (trg_len - 1)
            tokens += trg_len - 1
        windows += 1
        prev_end = end
        if end == n:
            break
    return {"nll_sum": nll_sum, "tokens": tokens, "windows": windows, "perplexity": math.exp(nll_sum / tokens)}


def selftest():
    # log_softmax by hand; -inf stays; rank and the K + 1 rule on the C++ test's vector
    lp = log_softmax(torch.tensor([math.log(3.0), 0.0, NEG_INF], dtype=torch.float64))
    assert abs(float(lp[0]) - math.log(0.75)) < 1e-12 and abs(float(lp[1]) - math.log(0.25)) < 1e-12
    assert float(lp[2]) == NEG_INF
    assert rank(torch.tensor([1.0, 2.0, 3.0]), 1) == 2 and rank(torch.tensor([4.0, 5.0, 6.0]), 1) == 2  # vLLM's test
    v = torch.tensor([-2.0, -0.5, -1.0, -0.5, -3.0])
    assert top_logprobs(v, 2, 2) == [(1, -0.5, 1), (3, -0.5, 2), (2, -1.0, 3)]
    assert top_logprobs(v, 2, 3) == [(1, -0.5, 1), (3, -0.5, 2)]
    assert top_logprobs(v, 0, 4) == [(4, -3.0, 5)]
    m = gpt2._random_model()
    ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3, 4]
    # prompt logprobs: entry 0 None; entry i is log_softmax of forward(ids[:i])'s last row
    pl = prompt_logprobs(m, ids, 3)
    assert pl[0] is None and len(pl) == len(ids)
    for i in (1, 5, 11):
        want = float(log_softmax(gpt2.forward(m, ids[:i])[-1])[ids[i]])
        assert abs(pl[i]["logprob"] - want) < 1e-12
    # a continuation's score is the sum of the prompt logprobs of its tokens
    s = score_continuation(m, ids[:4], ids[4:])
    assert abs(s["logprob"] - sum(pl[i]["logprob"] for i in range(4, len(ids)))) < 1e-9
    # one window that holds the text: exp(mean NLL of tokens 1..n-1), both strides alike
    whole = sliding_window_perplexity(m, ids, 16, 16)
    mean = -sum(pl[i]["logprob"] for i in range(1, len(ids))) / (len(ids) - 1)
    assert whole["windows"] == 1 and whole["tokens"] == len(ids) - 1 and abs(whole["perplexity"] - math.exp(mean)) < 1e-9
    # disjoint windows of 4: each scores its last 3 tokens given the window only, weight 3
    parts = sliding_window_perplexity(m, ids, 4, 4)
    nll = 0.0
    for b in range(0, len(ids), 4):
        w = ids[b:b + 4]
        nll -= sum(prompt_logprobs(m, w, 0)[j]["logprob"] for j in range(1, len(w)))
    assert parts["windows"] == 3 and parts["tokens"] == 9 and abs(parts["nll_sum"] - nll) < 1e-9
    # overlapping windows (4, stride 2): [0, 4) scores 3 tokens (weight 3); then [2, 6), [4, 8),
    # [6, 10), [8, 12) each score their 2 new tokens, mean weighted by 2 - 1 = 1 (the guide's
    # num_valid_tokens - batch_size); the last reaches the end
    over = sliding_window_perplexity(m, ids, 4, 2)
    want = -sum(prompt_logprobs(m, ids[0:4], 0)[j]["logprob"] for j in range(1, 4))
    for b in (2, 4, 6, 8):
        w = prompt_logprobs(m, ids[b:b + 4], 0)
        want += -(w[2]["logprob"] + w[3]["logprob"]) / 2
    assert over["windows"] == 5 and over["tokens"] == 7 and abs(over["nll_sum"] - want) < 1e-9, over
    print("logprobs selftest ok")


if __name__ == "__main__":
    selftest()
