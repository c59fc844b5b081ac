"""Greedy decoding with Hugging Face `generate` semantics, the naive way.

Every step re-runs the full float64 forward over prompt + generated tokens and takes the
last position's logits; the next token is the argmax (ties -> lowest id, as torch.argmax).
Stops after max_new_tokens tokens, or right after EOS is generated (EOS is kept).
Each step also records the gap between the largest and second-largest logit, so goldens
can show that no step was a near-tie (where float32 C++ could legitimately disagree).

Self-check: /usr/bin/python3 tests/reference/decode.py
"""
import torch

import gpt2


def check_request(model, prompt_ids, max_new_tokens):
    if len(prompt_ids) == 0:
        raise ValueError("empty prompt")
    for i in prompt_ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < model.vocab_size:
            raise ValueError("token id %r out of range [0, %d)" % (i, model.vocab_size))
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError("max_new_tokens must be a non-negative int")
    if len(prompt_ids) + max_new_tokens > model.n_positions:
        raise ValueError("prompt (%d) + max_new_tokens (%d) > n_positions (%d)"
                         % (len(prompt_ids), max_new_tokens, model.n_positions))


def argmax_lowest(logits):
    """Index of the maximum; ties go to the lowest index (explicit, not relying on torch)."""
    m = logits.max()
    return int(torch.nonzero(logits == m)[0, 0])


def top2_gap(logits):
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


def greedy(model, prompt_ids, max_new_tokens):
    """Returns {"ids": generated ids, "stopped_by_eos": bool, "gaps": [per-step top-2 gap]}."""
    prompt_ids = list(prompt_ids)
    check_request(model, prompt_ids, max_new_tokens)
    seq = list(prompt_ids)
    out, gaps = [], []
    stopped = False
    for _ in range(max_new_tokens):
        last = gpt2.forward(model, seq)[-1]
        nxt = argmax_lowest(last)
        assert nxt == int(torch.argmax(last))
        gaps.append(top2_gap(last))
        out.append(nxt)
        seq.append(nxt)
        if nxt == model.eos_token_id:
            stopped = True
            break
    return {"ids": out, "stopped_by_eos": stopped, "gaps": gaps}


def selftest():
    m = gpt2._random_model()
    assert argmax_lowest(torch.tensor([1.0, 3.0, 3.0, 2.0], dtype=torch.float64)) == 1
    r = greedy(m, [1, 2, 3], 10)
    assert len(r["gaps"]) == len(r["ids"]) and all(g >= 0 for g in r["gaps"])
    assert r["stopped_by_eos"] == (r["ids"][-1] == m.eos_token_id)
    assert m.eos_token_id not in r["ids"][:-1]
    # greedy step k must equal argmax of a fresh forward of the prefix
    seq = [1, 2, 3] + r["ids"]
    for k, t in enumerate(r["ids"]):
        assert t == int(torch.argmax(gpt2.forward(m, seq[:3 + k])[-1]))
    # force an EOS: ln_f output is the constant b, and wte[eos] = 10 b dominates every logit
    m2 = gpt2._random_model()
    m2.w["ln_f.weight"] = m2.w["ln_f.weight"] * 0
    m2.w["ln_f.bias"] = torch.ones_like(m2.w["ln_f.bias"])
    m2.w["wte.weight"] = m2.w["wte.weight"].clone()
    m2.w["wte.weight"][m2.eos_token_id] = 10 * m2.w["ln_f.bias"]
    r2 = greedy(m2, [1, 2], 10)
    assert r2["ids"] == [m2.eos_token_id] and r2["stopped_by_eos"], r2
    for bad in ([], [99], [-1]):
        try:
            greedy(m, bad, 1)
            raise AssertionError("accepted bad prompt %r" % bad)
        except ValueError:
            pass
    try:
        greedy(m, [1] * 10, m.n_positions - 9)
        raise AssertionError("accepted too-long request")
    except ValueError:
        pass
    assert greedy(m, [1] * 10, m.n_positions - 10) is not None
    assert greedy(m, [1], 0)["ids"] == []
    print("decode selftest ok")


if __name__ == "__main__":
    selftest()
