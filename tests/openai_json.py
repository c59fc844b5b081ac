#!/usr/bin/python3
"""decodebook-generate --json writes OpenAI's completions response (chapter 11, issue 36).

Run by ctest: `openai_json.py GENERATE`. Three runs, each parsed and checked against the shape of
the completions API's `logprobs` object as vLLM's server fills it
(vllm/entrypoints/openai/serving_completion.py, `_create_completion_logprobs`, at 3e342658):
lists of one length, the echoed prompt's first token null, `text_offset` the running sum of the
tokens' lengths, each `top_logprobs` object holding the chosen token with its own value and at most
K + 1 entries, -inf written as -9999.0, and `usage` adding up.
"""
import json
import os
import subprocess
import sys
import tempfile


def run(gen, args, path):
    subprocess.run([gen, *args, "--json", path], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_choice(choice, k, echoed_prompt_tokens):
    lp = choice["logprobs"]
    assert list(lp) == ["tokens", "token_logprobs", "top_logprobs", "text_offset"], list(lp)
    n = len(lp["tokens"])
    assert n == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"]), "lists of one length"
    assert "".join(lp["tokens"]) == choice["text"], "the tokens spell the text"
    offset = 0
    for i, (token, value, top, at) in enumerate(zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"],
                                                    lp["text_offset"])):
        assert at == offset, "text_offset[%d] = %d, expected %d" % (i, at, offset)
        offset += len(token)
        if i == 0 and echoed_prompt_tokens:
            assert value is None and top is None, "the first prompt token has no logprob"
            continue
        assert isinstance(value, float) and -9999.0 <= value, value
        assert token in top and top[token] == value, "the chosen token is in its top_logprobs with its value"
        assert len(top) <= k + 1, "at most K + 1 entries"
    assert choice["finish_reason"] in ("stop", "length")


def main():
    gen = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.json")
        # 1. greedy, 3 alternatives, the prompt echoed with 2
        r = run(gen, ["-p", "The best way to", "-n", "8", "--logprobs", "3", "--prompt-logprobs", "2"], path)
        assert r["object"] == "text_completion" and len(r["choices"]) == 1
        c = r["choices"][0]
        check_choice(c, 3, True)
        assert c["text"].startswith("The best way to"), "echo: the text starts with the prompt"
        u = r["usage"]
        assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] == len(c["logprobs"]["tokens"])
        assert u["completion_tokens"] == 8 or c["finish_reason"] == "stop"
        # greedy chose the largest raw logprob: every generated token's value is its top entry's
        for value, top in list(zip(c["logprobs"]["token_logprobs"], c["logprobs"]["top_logprobs"]))[u["prompt_tokens"]:]:
            assert value == max(top.values()), "greedy picks the top raw logprob"
        # 2. top-k 1 in processed_logprobs: the chain removed every alternative, written -9999.0
        r = run(gen, ["-n", "6", "--top-k", "1", "--logprobs", "2", "--logprobs-mode", "processed_logprobs"], path)
        c = r["choices"][0]
        check_choice(c, 2, False)
        for value, top in zip(c["logprobs"]["token_logprobs"], c["logprobs"]["top_logprobs"]):
            assert value == 0.0, "the one kept token has probability 1"
            assert sorted(top.values()) == [-9999.0, 0.0], top  # K = 2 entries: the token and one removed
        # 3. beam search: a choice per returned sequence, no logprobs object when none was asked for
        r = run(gen, ["-n", "5", "--num-beams", "3", "--num-return-sequences", "2"], path)
        assert [c["index"] for c in r["choices"]] == [0, 1]
        assert all(c["logprobs"] is None for c in r["choices"])
    print("ok: --json writes OpenAI's completions logprobs object (3 runs)")


if __name__ == "__main__":
    main()
