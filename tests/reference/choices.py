"""Chapter 11's multiple choice in float64: scoring each choice instead of sampling an answer, by the
rules of EleutherAI's lm-evaluation-harness (lm-eval), read at commit 4e7e0d47f33b:

  encode_pair(tok, context, continuation)
      lm_eval/api/model.py, TemplateLM._encode_pair: the context's trailing whitespace (the
      characters str.rstrip() removes) moves to the front of the continuation; then, for a causal
      model, context + continuation is encoded whole and the continuation's ids are what follows
      the context's own encoding (whole[len(encode(context)):]), never encode(continuation).
      GPT-2's tokenizer adds no BOS, so nothing is prepended to a non-empty context.
  score_choices(model, tok, context, choices)
      one loglikelihood request per choice, (context, choice), as ConfigurableTask.construct_requests
      makes (ctx, target_delimiter + choice): the task's contexts end in their own separator ("-- "),
      so the delimiter is "" here, which asks exactly what lm-eval's default " " asks after a context
      ending in "--". Each is scored by logprobs.score_continuation (the sum of the continuation's
      log-probabilities, and is_greedy) on the pair's ids; each choice's length is taken on the
      choice itself, without the moved whitespace: `chars` = Python's len (code points) and `bytes` =
      len(choice.encode("utf-8")).
  pick(values)
      np.argmax: the first of equal maxima.
  the three rules (lm_eval/api/task.py, ConfigurableTask.process_results, OUTPUT_TYPE multiple_choice):
      acc       = argmax of the sums (lls)
      acc_norm  = argmax of lls / completion_len, completion_len = len(choice): characters, not bytes
      acc_bytes = argmax of lls / byte_length, byte_length = len(choice.encode("utf-8"))
  margin(values)
      the best value minus the second best (0 for a tie): how far a pick is from changing.
  mean_stderr(xs)
      lm_eval/api/metrics.py: sample_stddev(xs) / sqrt(n), the sample standard deviation dividing
      by n - 1; lm_eval/evaluator_utils.py reports "N/A" for one item or none (None here).

Self-test: /usr/bin/python3 tests/reference/choices.py
"""
import math
import os
import sys

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logprobs  # noqa: E402

RULES = ("acc", "acc_norm", "acc_bytes")


def encode_pair(tok, context, continuation):
    """(context ids, continuation ids) of one request, as lm-eval's causal _encode_pair."""
    assert context, "Context cannot be empty!"  # lm-eval's own assertion
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok.encode((context + continuation).encode("utf-8"))
    context_enc = tok.encode(context.encode("utf-8"))
    return context_enc, whole[len(context_enc):]


def score_choices(model, tok, context, choices):
    """Per choice: its pair's ids, the reference's score_continuation and its two lengths."""
    out = []
    for choice in choices:
        ctx, cont = encode_pair(tok, context, choice)
        r = logprobs.score_continuation(model, ctx, cont)
        out.append({"context_ids": ctx, "continuation_ids": cont, "logprob": r["logprob"], "tokens": r["tokens"],
                    "greedy": r["greedy"], "min_gap": r["min_gap"],
                    "chars": len(choice), "bytes": len(choice.encode("utf-8"))})
    return out


def rule_values(scores, rule):
    lls = numpy.array([s["logprob"] for s in scores], dtype=numpy.float64)
    if rule == "acc":
        return lls
    if rule == "acc_norm":
        return lls / numpy.array([float(s["chars"]) for s in scores])
    if rule == "acc_bytes":
        return lls / numpy.array([float(s["bytes"]) for s in scores])
    raise ValueError(rule)


def pick(values):
    return int(numpy.argmax(values))


def margin(values):
    v = sorted((float(x) for x in values), reverse=True)
    return v[0] - v[1] if len(v) > 1 else math.inf


def mean(xs):
    return sum(xs) / len(xs)


def mean_stderr(xs):
    if len(xs) <= 1:
        return None
    mu = mean(xs)
    return math.sqrt(sum((x - mu) ** 2 for x in xs) / (len(xs) - 1)) / math.sqrt(len(xs))


def selftest():
    import bpe
    import gpt2
    # encode_pair: the trailing space moves to the continuation, the rest of the whitespace too
    # (str.rstrip), and the continuation's ids come from the whole text
    t = bpe.Tokenizer.from_tables(*bpe._tiny_tables())
    ctx, cont = encode_pair(t, "hello ", "hell")
    assert ctx == t.encode(b"hello") and ctx + cont == t.encode(b"hello hell"), (ctx, cont)
    ctx, cont = encode_pair(t, "hello\n\t ", "x")
    assert ctx == t.encode(b"hello") and t.decode(cont) == b"\n\t x"
    # a pair that BPE merges across the cut: "hel" + "lo" is one token whole, "hel" two ("he", "l"),
    # so the continuation is what follows two ids of a one-id text: nothing (lm-eval does not check;
    # the C++ refuses a choice with no ids)
    ctx, cont = encode_pair(t, "hel", "lo")
    assert t.encode(b"hello") == [t.token_to_id["hello"]] and len(ctx) == 2 and cont == []
    # the rules: np.argmax takes the first maximum; acc_norm divides by characters, acc_bytes by bytes
    scores = [{"logprob": -6.0, "chars": 3, "bytes": 3}, {"logprob": -6.0, "chars": 2, "bytes": 6},
              {"logprob": -8.0, "chars": 4, "bytes": 4}]
    assert pick(rule_values(scores, "acc")) == 0                 # -6 = -6: the first
    assert pick(rule_values(scores, "acc_norm")) == 0            # -2, -3, -2: the first
    assert pick(rule_values(scores, "acc_bytes")) == 1           # -2, -1, -2
    assert margin(rule_values(scores, "acc")) == 0.0 and margin(rule_values(scores, "acc_bytes")) == 1.0
    # "é" is one character and two bytes
    assert len("é") == 1 and len("é".encode("utf-8")) == 2
    # mean_stderr: the sample standard deviation over sqrt(n); 1 of 4 right: p = 1/4,
    # var = (1 * (3/4)^2 + 3 * (1/4)^2) / 3 = 1/4, stderr = sqrt(1/4) / 2 = 1/4
    assert abs(mean_stderr([1, 0, 0, 0]) - 0.25) < 1e-15 and mean_stderr([1]) is None
    # scoring on the tiny random model: each choice's sum is score_continuation's on its pair
    m = gpt2._random_model()

    class Ids:  # a tokenizer of single characters a..k -> 0..10
        def encode(self, data):
            return [b - ord("a") for b in data if b != ord(" ")]

    s = score_choices(m, Ids(), "abc ", ["de", "f"])
    assert s[0]["continuation_ids"] == [3, 4] and s[1]["chars"] == 1
    assert abs(s[0]["logprob"] - logprobs.score_continuation(m, [0, 1, 2], [3, 4])["logprob"]) < 1e-12
    print("choices selftest ok")


if __name__ == "__main__":
    selftest()
