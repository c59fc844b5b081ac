"""Writes the golden JSON files in tests/data/ from the independent Python reference.

    /usr/bin/python3 tests/reference/make_goldens.py           # (re)write tests/data/*.json
    /usr/bin/python3 tests/reference/make_goldens.py --check   # regenerate in memory, compare
    /usr/bin/python3 tests/reference/make_goldens.py [--check] speculative.json   # only the files named

--check exits 1 (naming the file and case that differ) if any file on disk differs, else 0; floats
(margins, log-probabilities) may differ by float64 rounding (FLOAT_REL), nothing else may.
Never imports the C++ sources or the training code (models/training/).
"""
import hashlib
import json
import math
import os
import sys

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import beam  # noqa: E402
import bpe  # noqa: E402
import decode  # noqa: E402
import gpt2  # noqa: E402
import rng  # noqa: E402
import sampling  # noqa: E402
import other_samplers  # noqa: E402
import logprobs  # noqa: E402
import choices  # noqa: E402
import speculative  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MODEL_REL = "models/fortunes-gpt2"
MODEL_DIR = os.path.join(ROOT, MODEL_REL)
DATA_DIR = os.path.join(ROOT, "tests", "data")
REGENERATE = "/usr/bin/python3 tests/reference/make_goldens.py"
CHECK = "/usr/bin/python3 tests/reference/make_goldens.py --check"

MIN_GAP = 1e-3
MAX_NEW = 64
MIN_GREEDY_CASES = 12
MIN_MARGIN = 1e-4       # sampled goldens: smallest decision margin over all steps (see sampling.py)
SAMPLED_LENGTHS = (32, 16, 8)  # max_new_tokens tried in turn when no (prompt, seed) passes at 32
SEARCH_BUDGET = 240     # (prompt, seed) attempts per case and length
MIN_SAMPLED_TOKENS = 8  # runs that hit EOS sooner are skipped (too little to test)

# ----------------------------------------------------------------------------- inputs

LONG_FORTUNE = (
    "A programmer once spent three days looking for a bug that was not there. On the fourth day "
    "he found it, in the comments, where he had written \"this cannot happen\". He laughed, fixed "
    "the comment, and went home early.  Moral: the code is never wrong -- only the programmer's "
    "idea of what it says.\n\t\t-- An old saying, 1987"
)


def tokenizer_inputs():
    """(name, bytes) pairs for tests/data/tokenizer.json."""
    u = lambda s: s.encode("utf-8")
    return [
        ("empty", b""),
        ("plain_sentence", u("The quick brown fox jumps over the lazy dog.")),
        ("plain_two_sentences", u("You will be happy. Then again, you may not.")),
        ("contractions_lower", u("it's don't they're we've I'm you'll he'd")),
        ("contractions_upper", u("IT'S DON'T THEY'RE WE'VE I'M YOU'LL HE'D")),
        ("contraction_glued", u("'s't're've'm'll'd 'x")),
        ("numbers", u("In 1987, 42 people paid $3.50 for 1,000,000 ideas; call 555-0100 x12345678.")),
        ("punctuation", u("Hello, world!!! (Really?) -- yes: [ok]; {no} <tag/> @#%&*...")),
        ("leading_trailing_spaces", u("  leading and trailing  ")),
        ("space_runs_tabs_newlines", u("a   b\n\n\tc  ")),
        ("only_whitespace", u(" \t\n \r\n  ")),
        ("latin_accents", u("Café déjà vu, naïve façade; Straße größer.")),
        ("cyrillic_greek", u("Привет, мир! Γειά σου κόσμε.")),
        ("cjk", u("東京は日本の首都です。中文测试")),
        ("emoji", u("I love pizza 🍕 and cats 😺!")),
        ("emoji_zwj_family_and_flag", u("family: 👨\u200d👩\u200d👧\u200d👦 flag: 🇫🇷 ok")),
        ("combining_marks", u("e\u0301 a\u0308 n\u0303o Zalgo: Z\u0351\u0360a\u0337")),
        ("invalid_lone_ff", b"\xff"),
        ("invalid_truncated_3byte", b"abc\xe2\x82 def"),
        ("invalid_continuation_mid_word", b"wo\x80rd"),
        ("invalid_after_space", b"hi \xff there"),
        ("special_alone", u("<|endoftext|>")),
        ("special_embedded", u("Hello<|endoftext|>World")),
        ("special_twice_with_spaces", u(" a <|endoftext|><|endoftext|> b")),
        ("special_near_miss", u("<|endoftext|")),
        ("long_fortune", u(LONG_FORTUNE)),
    ]


LOGITS_PROMPTS = [
    ("one_token", "The"),
    ("short", "A computer is"),
    ("medium", "Q: What do you call a programmer who never sleeps?\nA:"),
    ("long", "You will meet a tall, dark stranger who will teach you the art of patience. "
             "Be kind to him, for he has waited a long time to meet someone like you."),
]

# Candidates in order; the first ones that pass the near-tie filter are kept.
GREEDY_PROMPTS = [
    ("best_way", "The best way to"),
    ("computer", "A computer is"),
    ("what_do_you_call", "Q: What do you call"),
    ("life_is", "Life is"),
    ("you_will", "You will"),
    ("never_trust", "Never trust"),
    ("one_token", "The"),
    ("linux_style", "Linux is"),
    ("riddle_style", "Q: Why did the chicken cross the road?\nA:"),
    ("quote_attribution", "Always do right.\n\t\t-- "),
    ("definition_style", "Bureaucracy, n.:"),
    ("law_style", "Murphy's Law:"),
    ("proverb", "A wise man"),
    ("if_you", "If you"),
    ("there_is_no", "There is no"),
    ("in_the_beginning", "In the beginning"),
    ("do_not", "Do not"),
    ("the_only", "The only thing"),
    ("work_style", "Work is"),
    ("science_style", "Science is"),
]

# Openings that are nearly complete short fortunes: searched, in order, for an EOS case.
EOS_PROMPTS = [
    ("eos_nearly_done", "Today is the first day of the rest of your life.\n"),
    ("eos_you_will", "You will be successful in your work.\n"),
    ("eos_lucky_number", "Your lucky number is 7.\n"),
    ("eos_good_news", "Good news will come to you by mail.\n"),
    ("eos_attribution", "Be yourself; everyone else is already taken.\n\t\t-- Oscar Wilde"),
    ("eos_short_q", "Q: What is black and white and red all over?\nA: A newspaper.\n"),
    ("eos_never", "Never put off till tomorrow what you can do today.\n"),
    ("eos_fortune", "You have a deep interest in all that is artistic.\n"),
    ("eos_single", "Beware of low-flying butterflies.\n"),
    ("eos_will", "You will"),
]

# ----------------------------------------------------------------------------- builders


def header(about, model):
    return {
        "about": about,
        "regenerate": REGENERATE,
        "check": CHECK,
        "model": MODEL_REL,
        "model_sha256": model.sha256,
    }


def build_rng(model, log):
    cases = []
    for seed in (0, 1, 42, 2 ** 64 - 1):
        r = rng.Rng(seed)
        u64 = [str(r.next_u64()) for _ in range(8)]
        coins = [r.coin() for _ in range(8)]
        cases.append({"seed": seed, "u64": u64, "coins": coins})
    return dict(header("Project RNG (splitmix64 seeding, xorshift64* draws): first 8 next_u64 values "
                       "as decimal strings, then the next 8 coin() doubles, per seed.", model), cases=cases)


def build_tokenizer(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    cases = []
    for name, data in tokenizer_inputs():
        ids = tok.encode(data)
        back = tok.decode(ids)
        # Required for valid UTF-8; byte-level BPE in fact round-trips every byte string.
        assert back == data, name
        cases.append({"name": name, "text_hex": data.hex(), "ids": ids, "decoded_hex": back.hex()})
    return dict(header("GPT-2 byte-level BPE: input bytes (hex) -> token ids -> decoded bytes (hex); "
                       "invalid UTF-8 bytes are pre-tokenized as symbol characters.", model), cases=cases)


def round_sig(x, digits=7):
    return float("%.*g" % (digits, x))


def build_logits(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    cases = []
    for name, prompt in LOGITS_PROMPTS:
        ids = tok.encode(prompt.encode("utf-8"))
        logits = gpt2.forward(model, ids)
        T = len(ids)
        positions = sorted({0, T // 2, T - 1})
        cases.append({"name": name, "prompt_ids": ids, "positions": positions,
                      "logits": [[round_sig(v) for v in logits[p].tolist()] for p in positions],
                      "tolerance": 1e-4})
        log("logits: %s has %d tokens" % (name, T))
    return dict(header("Float64 reference GPT-2 logits (rounded to 7 significant digits) of the whole "
                       "prompt at selected positions; compare with absolute tolerance.", model), cases=cases)


def greedy_case(model, tok, name, prompt, max_new):
    ids = tok.encode(prompt.encode("utf-8"))
    r = decode.greedy(model, ids, max_new)
    return {"name": name, "prompt": prompt, "prompt_ids": ids, "max_new_tokens": max_new,
            "ids": r["ids"], "text": tok.decode(r["ids"]).decode("utf-8", errors="replace"),
            "stopped_by_eos": r["stopped_by_eos"], "min_top2_gap": min(r["gaps"])}


def build_greedy(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    assert len(tok.encode(b"The")) == 1
    cases, dropped = [], []
    for name, prompt in GREEDY_PROMPTS:
        c = greedy_case(model, tok, name, prompt, MAX_NEW)
        if c["min_top2_gap"] >= MIN_GAP:
            cases.append(c)
        else:
            dropped.append("%s (min_top2_gap %.3g)" % (name, c["min_top2_gap"]))
        if len(cases) >= MIN_GREEDY_CASES and any(x["name"] == "one_token" for x in cases):
            break
    if not any(c["stopped_by_eos"] for c in cases):
        found = None
        for name, prompt in EOS_PROMPTS:
            c = greedy_case(model, tok, name, prompt, MAX_NEW)
            if c["min_top2_gap"] < MIN_GAP:
                dropped.append("%s (min_top2_gap %.3g)" % (name, c["min_top2_gap"]))
                continue
            if c["stopped_by_eos"]:
                found = c
                break
        if found:
            cases.append(found)
        else:
            log("WARNING: no greedy case generates EOS within %d tokens with this checkpoint "
                "(it may appear with the final model)" % MAX_NEW)
    if dropped:
        log("greedy: dropped near-tie prompts: " + ", ".join(dropped))
    if len(cases) < MIN_GREEDY_CASES:
        log("WARNING: only %d greedy cases survived the near-tie filter" % len(cases))
    return dict(header("Greedy decoding (HF generate semantics, float64 reference forward): generated "
                       "ids only; every step's top-2 logit gap is at least min_top2_gap.", model),
                cases=cases)


# ----------------------------------------------------------------------------- sampled decoding

# Fortune-like openings; searches cycle through them (a new seed per attempt).
SAMPLING_PROMPTS = [
    "The best way to",
    "A computer is",
    "You will",
    "Life is",
    "Never trust",
    "Q: What do you call",
    "Always do right.\n\t\t-- ",
    "A wise man",
    "If you",
    "There is no",
    "Your lucky number is",
    "Murphy's Law:",
]

# (name, parameter overrides, orders). Several orders = one search for a (prompt, seed) that passes
# in every order, so the cases differ only by the order (falls back to separate searches).
COMBINED = dict(temperature=0.8, top_k=40, top_p=0.95)
SAMPLING_CASES = [
    ("plain_t1_a", {}, ["hf"]),
    ("plain_t1_b", {}, ["hf"]),
    ("plain_t1_c", {}, ["hf"]),
    ("temperature_0.7", dict(temperature=0.7), ["hf"]),
    ("temperature_1.5", dict(temperature=1.5), ["hf"]),
    ("top_k_5", dict(top_k=5), ["hf"]),
    ("top_k_40", dict(top_k=40), ["hf"]),
    ("top_p_0.9", dict(top_p=0.9), ["hf"]),
    ("top_p_0.5", dict(top_p=0.5), ["hf"]),
    ("min_p_0.1", dict(min_p=0.1), ["hf"]),
    ("min_p_0.1_t1.5", dict(temperature=1.5, min_p=0.1), ["hf", "llama.cpp"]),
    ("combined", COMBINED, ["hf", "llama.cpp", "vllm"]),
    ("greedy_t0", dict(temperature=0.0), ["hf"]),
    ("top_p_0_is_greedy", dict(top_p=0.0), ["hf"]),
    ("top_k_1_is_greedy", dict(top_k=1), ["hf"]),
    ("top_p_0_min_keep_3", dict(top_p=0.0, min_tokens_to_keep=3), ["hf"]),
    ("repetition_1.3_greedy_prompt_and_output", dict(temperature=0.0, repetition_penalty=1.3), ["hf"]),
    ("repetition_1.3_greedy_output_only", dict(temperature=0.0, repetition_penalty=1.3,
                                               penalty_scope="output_only"), ["hf"]),
    ("repetition_1.3_greedy_last_n_8", dict(temperature=0.0, repetition_penalty=1.3, penalty_scope="last_n",
                                            penalty_last_n=8), ["hf"]),
    ("repetition_1.3_t0.7", dict(temperature=0.7, repetition_penalty=1.3), ["hf"]),
    ("presence_0.8_frequency_0.5_greedy", dict(temperature=0.0, presence_penalty=0.8, frequency_penalty=0.5),
     ["hf"]),
    ("presence_0.8_frequency_0.5_t0.7", dict(temperature=0.7, presence_penalty=0.8, frequency_penalty=0.5),
     ["hf"]),
    ("no_repeat_ngram_3_greedy", dict(temperature=0.0, no_repeat_ngram_size=3), ["hf"]),
]
# Cases that must reproduce greedy decoding (T = 0, no penalties) of the same prompt.
MUST_EQUAL_GREEDY = ("top_p_0_is_greedy", "top_k_1_is_greedy")


def case_name(name, order, orders):
    return name if len(orders) == 1 else name + "_" + order


def sampled_case(model, tok, name, prompt, params, order, seed, max_new, stop_below):
    ids = tok.encode(prompt.encode("utf-8"))
    r = sampling.generate(model, ids, params, order, seed, max_new, model.eos_token_id, stop_below=stop_below)
    case = {"name": name, "prompt": prompt, "prompt_ids": ids, "params": params, "order": order,
            "chain": sampling.Chain(params, order).describe(), "seed": seed, "max_new_tokens": max_new,
            "ids": r["ids"], "text": tok.decode(r["ids"]).decode("utf-8", errors="replace"),
            "stopped_by_eos": r["stopped_by_eos"], "min_margin": min(r["margins"]) if r["margins"] else 1.0}
    return case, r


def search_sampled(model, tok, name, params, orders, skip_seeds=(), want_eos=False, want_distinct=False):
    """The first (length, prompt, seed) whose run passes MIN_MARGIN in every order and has at least
    MIN_SAMPLED_TOKENS tokens: attempt j uses prompt j mod len(SAMPLING_PROMPTS) and seed j (greedy:
    seed 0, one attempt per prompt). want_distinct: the orders must not all give the same ids.
    Returns (cases or None, {reason: rejected attempts})."""
    rejected = {}
    greedy = params["temperature"] == 0
    for max_new in SAMPLED_LENGTHS:
        for j in range(len(SAMPLING_PROMPTS) if greedy else SEARCH_BUDGET):
            prompt, seed = SAMPLING_PROMPTS[j % len(SAMPLING_PROMPTS)], (0 if greedy else j)
            if seed in skip_seeds and not greedy:
                continue
            cases = []
            for order in orders:
                c, r = sampled_case(model, tok, case_name(name, order, orders), prompt, params, order, seed,
                                    max_new, MIN_MARGIN)
                why = (r["limits"][-1] if r["aborted"] else
                       "short" if len(r["ids"]) < min(MIN_SAMPLED_TOKENS, max_new) else None)
                if why:
                    rejected[why] = rejected.get(why, 0) + 1
                    break
                cases.append(c)
            else:
                why = ("no EOS" if want_eos and not cases[0]["stopped_by_eos"] else
                       "orders agree" if want_distinct and len({tuple(c["ids"]) for c in cases}) == 1 else None)
                if why:
                    rejected[why] = rejected.get(why, 0) + 1
                    continue
                return cases, rejected
    return None, rejected


def merge_counts(a, b):
    for k, v in b.items():
        a[k] = a.get(k, 0) + v


def build_sampling(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    cases = []
    dropped = []

    def add(name, found, rejected):
        rej = ", ".join("%s %d" % kv for kv in sorted(rejected.items())) or "none"
        if not found:
            dropped.append(name)
            log("WARNING: sampling: dropped %s (nothing passed; rejected: %s)" % (name, rej))
            return
        for c in found:
            if name in MUST_EQUAL_GREEDY:
                g, _ = sampled_case(model, tok, "", c["prompt"], sampling.make_params(temperature=0.0), "hf", 0,
                                    c["max_new_tokens"], None)
                assert g["ids"] == c["ids"], (name, g["ids"], c["ids"])
            if c["params"]["temperature"] == 0 and c["chain"] == "argmax":
                assert decode.greedy(model, c["prompt_ids"], c["max_new_tokens"])["ids"] == c["ids"]
            cases.append(c)
        log("sampling: %-40s %-24r seed %3d, %2d tokens, margin %.3g; rejected: %s"
            % (name, found[0]["prompt"], found[0]["seed"], found[0]["max_new_tokens"],
               min(c["min_margin"] for c in found), rej))

    for name, overrides, orders in SAMPLING_CASES:
        params = sampling.make_params(**overrides)
        used = {c["seed"] for c in cases if c["name"].startswith("plain_t1_")} if name.startswith("plain_t1_") else ()
        found, rejected = search_sampled(model, tok, name, params, orders, used, want_distinct=len(orders) > 1)
        if found is None and len(orders) > 1:
            log("sampling: %s: no run where the orders disagree; accepting agreeing ones" % name)
            found, rej = search_sampled(model, tok, name, params, orders)
            merge_counts(rejected, rej)
        if found is None and len(orders) > 1:
            log("sampling: %s: nothing passes in all orders at once; searching each order alone" % name)
            found = []
            for order in orders:
                f, rej = search_sampled(model, tok, case_name(name, order, orders), params, [order])
                merge_counts(rejected, rej)
                found += f or []
        add(name, found, rejected)
    if not any(c["stopped_by_eos"] for c in cases):
        found, rejected = search_sampled(model, tok, "eos_t0.7", sampling.make_params(temperature=0.7), ["hf"],
                                         want_eos=True)
        add("eos_t0.7", found, rejected)
    return dict(header("Sampled decoding (HF generate semantics, float64 reference; see tests/reference/"
                       "sampling.py): step i draws coin i of Rng(seed), one coin per step, used or not; "
                       "the chain (penalties, then argmax if temperature is 0, else the warpers in the "
                       "order's sequence, then inverse-CDF sampling) picks the token. Every decision of "
                       "every step is at least min_margin (>= %g) from flipping." % MIN_MARGIN, model),
                cases=cases)

# ----------------------------------------------------------------------------- single-step processors


def processors_case(model, name, prompt_ids, generated, params, order):
    """The chain's surviving candidates on the step after prompt_ids + generated."""
    chain = sampling.Chain(params, order)
    logits = gpt2.forward(model, list(prompt_ids) + list(generated))[-1]
    z, margins = chain.apply(logits, prompt_ids, generated)
    probs = sampling.softmax(z)
    cand = [i for i in range(z.numel()) if z[i] != float("-inf")]
    margin = min([m for _, m in margins] + [float("inf")])
    return {"name": name, "prompt_ids": list(prompt_ids), "generated": list(generated), "params": params,
            "order": order, "chain": chain.describe(), "candidates": cand,
            "probs": [round_sig(float(probs[i]), 9) for i in cand], "margin": margin, "tolerance": 1e-5}


def processor_contexts(model, tok):
    """(prompt_ids, generated) pairs: each sampling prompt followed by 0..3 tokens of its greedy run."""
    out = []
    for prompt in SAMPLING_PROMPTS:
        ids = tok.encode(prompt.encode("utf-8"))
        gen = decode.greedy(model, ids, 3)["ids"]
        for k in range(len(gen) + 1):
            if k == 0 or gen[k - 1] != model.eos_token_id:
                out.append((ids, gen[:k]))
    return out


def first_passing(model, name, contexts, params, orders, accept=lambda cases: True):
    for prompt_ids, gen in contexts:
        cs = [processors_case(model, case_name(name, o, orders), prompt_ids, gen, params, o) for o in orders]
        if all(c["margin"] >= MIN_MARGIN for c in cs) and accept(cs):
            return cs
    return None


def build_processors(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    ctxs = processor_contexts(model, tok)
    cases = []

    def add(name, found):
        if found:
            cases.extend(found)
            log("processors: %-30s %s, %d candidates, margin %.3g" % (
                name, found[0]["chain"], len(found[0]["candidates"]), min(c["margin"] for c in found)))
        else:
            log("WARNING: processors: dropped %s (no context passes margin %g)" % (name, MIN_MARGIN))

    # top-p on a peaked and on a flat distribution: same p, very different nucleus sizes
    top_p = sampling.make_params(top_p=0.9)
    pmax = lambda c: float(sampling.softmax(gpt2.forward(model, c[0] + c[1])[-1]).max())
    by_peak = sorted(ctxs, key=lambda c: (-pmax(c), len(c[0]) + len(c[1])))
    add("top_p_0.9_peaked", first_passing(model, "top_p_0.9_peaked", by_peak, top_p, ["hf"],
                                          lambda cs: len(cs[0]["candidates"]) >= 2))
    add("top_p_0.9_flat", first_passing(model, "top_p_0.9_flat", by_peak[::-1], top_p, ["hf"],
                                        lambda cs: len(cs[0]["candidates"]) >= 20))
    add("top_k_10", first_passing(model, "top_k_10", ctxs, sampling.make_params(temperature=0.7, top_k=10),
                                  ["hf"]))
    add("min_p_0.1", first_passing(model, "min_p_0.1", ctxs, sampling.make_params(min_p=0.1), ["hf"]))
    add("top_p_0_min_keep_3", first_passing(model, "top_p_0_min_keep_3", ctxs,
                                            sampling.make_params(top_p=0.0, min_tokens_to_keep=3), ["hf"]))
    combined = sampling.make_params(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05)
    add("combined", first_passing(model, "combined", ctxs, combined, ["hf", "llama.cpp", "vllm"]))

    # repetition penalty where a window token with a NEGATIVE logit survives (and is multiplied)
    def negative_survives(cs):
        c = cs[0]
        logits = gpt2.forward(model, c["prompt_ids"] + c["generated"])[-1]
        window = set(c["prompt_ids"] + c["generated"])
        return any(float(logits[t]) < 0 for t in window if t in set(c["candidates"]))
    rep = None
    for k in (500, 1000, 1500):
        rep = first_passing(model, "repetition_1.5_negative_logit", ctxs,
                            sampling.make_params(temperature=0.7, top_k=k, repetition_penalty=1.5), ["hf"],
                            negative_survives)
        if rep:
            break
    add("repetition_1.5_negative_logit", rep)

    # presence/frequency over the output + no-repeat-ngram: " to" completes "best way to" again
    prompt = tok.encode(b"The best way to")
    gen = tok.encode(b" be the best way")
    pf = sampling.make_params(top_k=20, presence_penalty=0.8, frequency_penalty=0.5, no_repeat_ngram_size=3)
    def penalties_matter(cs):  # some raw top-20 token is gone (penalised out or banned)
        c = cs[0]
        raw = gpt2.forward(model, c["prompt_ids"] + c["generated"])[-1]
        top = torch.topk(raw, 20).indices.tolist()
        return any(t not in c["candidates"] for t in top)
    add("presence_frequency_no_repeat_ngram", first_passing(model, "presence_frequency_no_repeat_ngram",
                                                            [(prompt, gen)] + ctxs, pf, ["hf"], penalties_matter))
    return dict(header("One step of the logits-processor chain on the logits of the last position of "
                       "forward(prompt_ids + generated), with context prompt = prompt_ids and output = "
                       "generated: the surviving candidate ids (ascending) and their probabilities after "
                       "the final softmax (absolute tolerance). Every truncation decision is at least "
                       "margin (>= %g) from flipping." % MIN_MARGIN, model), cases=cases)



# ----------------------------------------------------------------------------- beams

BEAM_PROMPTS = [  # openings, and fortunes that end with their attribution (EOS comes early there,
    # so the stopping rules decide when the search ends)
    ("best_way", "The best way to"),
    ("wilde", "Be yourself; everyone else is already taken.\n\t\t-- Oscar Wilde"),
    ("life_is", "Life is"),
    ("twain", "The reports of my death are greatly exaggerated.\n\t\t-- Mark Twain"),
    ("computer", "A computer is"),
    ("bierce", "Bore, n.: A person who talks when you wish him to listen.\n\t\t-- Ambrose Bierce"),
    ("lucky_number", "Your lucky number is 7.\n"),
    ("spock", "Vulcans never bluff.\n\t\t-- Spock, \"The Doomsday Machine\", stardate 4202.1"),
    ("never_trust", "Never trust"),
    ("franklin", "Early to bed and early to rise.\n\t\t-- Benjamin Franklin"),
    ("if_you", "If you"),
    ("einstein", "God does not play dice.\n\t\t-- Albert Einstein"),
    ("proverb", "A wise man"),
    ("murphy", "Anything that can go wrong will go wrong.\n\t\t-- Murphy's Law"),
    ("there_is_no", "There is no"),
    ("you_will", "You will"),
    ("what_do_you_call", "Q: What do you call"),
    ("never_put_off", "Never put off till tomorrow what you can do today.\n"),
]
BEAM_WIDTHS = (2, 4)
BEAM_STOPPING = ("false", "true", "never")
BEAM_PENALTIES = (1.0, 0.0)
BEAM_MAX_NEW = 16
MIN_BEAM_PROMPTS = 8


def build_beams(model, log):
    """HF beam search for every width x early_stopping x length_penalty on a prompt, plus vLLM's
    variant at length_penalty 1; a prompt is kept only if every one of its cases has margin >= MIN_MARGIN."""
    tok = bpe.default_tokenizer(MODEL_DIR)
    eos = [model.eos_token_id]
    cases, dropped, kept = [], [], 0
    for name, prompt in BEAM_PROMPTS:
        ids = tok.encode(prompt.encode("utf-8"))
        source = beam.ModelSource(model, ids)
        mine, worst = [], math.inf
        for width in BEAM_WIDTHS:
            runs = [(stop, lp, "hf") for stop in BEAM_STOPPING for lp in BEAM_PENALTIES] + [("false", 1.0, "vllm")]
            for stop, lp, scoring in runs:
                if scoring == "hf":
                    hyps, margin, steps = beam.hf_beam_search(source, eos, width, BEAM_MAX_NEW, lp, stop, width)
                else:
                    hyps, margin, steps = beam.vllm_beam_search(source, eos, len(ids), width, BEAM_MAX_NEW, lp, width)
                worst = min(worst, margin)
                for h in hyps:
                    h["text"] = tok.decode(h["ids"]).decode("utf-8", errors="replace")
                mine.append({"name": "%s_b%d_%s_lp%g_%s" % (name, width, stop, lp, scoring), "prompt": prompt,
                             "prompt_ids": ids, "max_new_tokens": BEAM_MAX_NEW,
                             "params": {"num_beams": width, "length_penalty": lp, "early_stopping": stop,
                                        "num_return_sequences": width, "beam_scoring": scoring},
                             "hypotheses": hyps, "steps": steps, "min_margin": margin})
        if worst >= MIN_MARGIN:
            cases += mine
            kept += 1
        else:
            dropped.append("%s (min_margin %.3g)" % (name, worst))
        if kept >= MIN_BEAM_PROMPTS:
            break
    if dropped:
        log("beams: dropped near-tie prompts: " + ", ".join(dropped))
    assert kept >= MIN_BEAM_PROMPTS, "only %d beam prompts pass the margin" % kept
    return dict(header("Beam search (tests/reference/beam.py, float64): for each prompt, num_beams 2 and 4 x "
                       "early_stopping false/true/never x length_penalty 1 and 0 with Hugging Face's scoring, and "
                       "vLLM's variant at length_penalty 1; num_return_sequences = num_beams, best first. A prompt "
                       "is kept only if every ranking, pool and stopping decision of all its cases is at least "
                       "%g from flipping (min_margin). Compare ids exactly, scores with a tolerance." % MIN_MARGIN,
                       model), cases=cases)


def build_top_p_rules(model, log):
    """Top-p at the boundary, on float32 probability vectors given exactly: each rule's kept ids.
    Not margin-filtered on purpose: these are the cases where the mass lands on p (or within a
    float32 step of it), so the C++ must do each engine's arithmetic bit for bit."""
    f32 = lambda xs: torch.tensor(xs, dtype=torch.float32)
    vectors = [
        ("hf_test_row1", torch.log(f32([0.3, 0.1, 0.1, 0.5])).softmax(-1), (0.8,)),
        ("hf_test_row1_low", f32([0.29999998, 0.099999994, 0.099999994, 0.5]), (0.8,)),
        ("hf_test_row2", torch.log(f32([0.15, 0.3, 0.3, 0.25])).softmax(-1), (0.8,)),
        ("exact_sums", f32([0.5, 0.3, 0.1, 0.1]), (0.0, 0.5, 0.79, 0.8, 0.81, 0.9, 1.0)),
        ("ties", f32([0.25, 0.25, 0.25, 0.25]), (0.25, 0.5, 0.6, 0.75)),
        ("with_zeros", f32([0.0, 0.6, 0.0, 0.4]), (0.6, 0.61)),
    ]
    # random distributions, with p set to the float32 partial sums of their own top tokens (summed
    # down, as llama.cpp does, and as decimals): the boundary hits where summation order matters
    gen = torch.Generator().manual_seed(2024)
    for n in (5, 12, 40):
        for v in range(3):
            probs = torch.rand(n, generator=gen, dtype=torch.float64).pow(3)
            probs = (probs / probs.sum()).to(torch.float32)
            desc = sorted(probs.tolist(), reverse=True)
            ps, run = set(), numpy.float32(0)
            for x in desc[:4]:
                run = numpy.float32(run + numpy.float32(x))
                ps.add(float(run))
                ps.add(float("%.6g" % float(run)))
            vectors.append(("random_%d_%d" % (n, v), probs, tuple(sorted(p for p in ps if p <= 1))))
    cases = []
    for name, probs, ps in vectors:
        for p in ps:
            for mk in (1, 3):
                if mk == 3 and name.startswith("random"):
                    continue
                kept = {rule: sampling.top_p_keep(probs, p, mk, rule)[0] for rule in ("hf", "vllm", "llama.cpp")}
                cases.append({"name": name, "probs": [float(x) for x in probs], "top_p": p,
                              "min_tokens_to_keep": mk, "kept": kept})
    differ = sum(1 for c in cases if len({tuple(v) for v in c["kept"].values()}) > 1)
    log("top_p_rules: %d cases, %d where the rules disagree" % (len(cases), differ))
    assert differ >= 3, "the boundary cases no longer separate the rules"
    return dict(header("Top-p at the boundary (tests/reference/sampling.py top_p_keep): float32 probabilities "
                       "(exact float32 values), p as a double, and the ids each rule keeps, in candidate order: "
                       "hf (ascending float32 cumsum <= 1 - p), vllm (the same with 1 - p in float32), llama.cpp "
                       "(descending float sum, stop at >= p). Not margin-filtered: compare exactly.", model),
                cases=cases)


# ----------------------------------------------------------------------------- speculative decoding

DRAFT_REL = "models/fortunes-draft"
DRAFT_DIR = os.path.join(ROOT, DRAFT_REL)

# Openings for the speculative searches: some repeat themselves (prompt lookup finds its drafts
# in them), some are the sampling prompts. Attempt j of the i-th case uses prompt (i + j) mod len
# and seed j (greedy: seed 0).
SPECULATIVE_PROMPTS = [
    "The best way to predict the future is to invent it. The best way to",
    "A computer is",
    "Q: What do you call a fish with no eyes?\nA: A fsh.\n\nQ: What do you call",
    "Life is",
    "You will be happy. You will be rich. You will",
    "A wise man once said that a wise man",
    "Never trust a computer you can't throw out a window. Never trust",
    "If you",
    "There is no place like home. There is no",
    "You will",
]
SPECULATIVE_LENGTHS = (32, 16)  # max_new_tokens tried in turn
SPECULATIVE_BUDGET = 40         # (prompt, seed) attempts per case and length (greedy: one per prompt)
SPECULATIVE_MIN_KEPT = 2        # a case keeps at least this many drafts (and rejects at least one)

# (name, knobs): knobs are decodebook's (HF's) names, as golden::config sets them. do_sample false =
# greedy. Prompt lookup: q = none (a deterministic draft).
GREEDY = {"do_sample": False}
SPECULATIVE_LOOKUP_CASES = [
    ("lookup_hf_greedy_k3", dict(GREEDY, prompt_lookup_num_tokens=3)),
    ("lookup_hf_greedy_k10", dict(GREEDY, prompt_lookup_num_tokens=10)),
    ("lookup_vllm_greedy_min1_max3_k5", dict(GREEDY, prompt_lookup_num_tokens=5, prompt_lookup_min=1,
                                             max_matching_ngram_size=3)),
    ("lookup_hf_greedy_repetition_1.1_k4", dict(GREEDY, repetition_penalty=1.1, prompt_lookup_num_tokens=4)),
    ("lookup_hf_greedy_min_new_tokens_k4", dict(GREEDY, min_new_tokens=6, prompt_lookup_num_tokens=4)),
    ("lookup_hf_t0.7_top_k_40_k4", dict(do_sample=True, temperature=0.7, top_k=40, prompt_lookup_num_tokens=4)),
    ("lookup_hf_t1_k2", dict(do_sample=True, prompt_lookup_num_tokens=2)),
    ("lookup_vllm_t1_top_k_40_min2_max3_k3", dict(do_sample=True, top_k=40, order="vllm", prompt_lookup_num_tokens=3,
                                                  prompt_lookup_min=2, max_matching_ngram_size=3)),
    ("lookup_vllm_t0.7_top_p_0.9_min1_max2_k6", dict(do_sample=True, temperature=0.7, top_p=0.9,
                                                     prompt_lookup_num_tokens=6, prompt_lookup_min=1)),
]
SPECULATIVE_DRAFT_CASES = [
    ("draft_greedy_k4", dict(GREEDY, num_assistant_tokens=4)),
    ("draft_greedy_heuristic_k2", dict(GREEDY, num_assistant_tokens=2, num_assistant_tokens_schedule="heuristic")),
    ("draft_t0.7_top_k_40_k3", dict(do_sample=True, temperature=0.7, top_k=40, num_assistant_tokens=3)),
    ("draft_t0.7_top_p_0.9_heuristic_k4", dict(do_sample=True, temperature=0.7, top_p=0.9, num_assistant_tokens=4,
                                               num_assistant_tokens_schedule="heuristic")),
    ("draft_t1_k5", dict(do_sample=True, num_assistant_tokens=5)),
]


def load_draft(model, log):
    """The draft model when models/fortunes-draft is there (same tokenizer files), else None."""
    if not os.path.exists(os.path.join(DRAFT_DIR, "model.safetensors")):
        log("speculative: %s/model.safetensors is missing: no draft-model cases" % DRAFT_REL)
        return None
    draft = gpt2.load_model(DRAFT_DIR)
    for name in ("vocab.json", "merges.txt"):
        assert draft.sha256[name] == model.sha256[name], "%s: %s differs from the target's" % (DRAFT_REL, name)
    assert draft.vocab_size == model.vocab_size and draft.eos_token_id == model.eos_token_id
    return draft


def speculative_case(model, tok, draft, name, prompt, knobs, seed, max_new, stop_below):
    ids = tok.encode(prompt.encode("utf-8"))
    order = knobs.get("order", "hf")
    params = {k: v for k, v in knobs.items() if k != "order"}
    cfg = speculative.make_config(seed=seed, max_new_tokens=max_new, order=order, **params)
    r = speculative.generate(model, ids, cfg, draft_model=draft, stop_below=stop_below)
    kind = ("draft_model" if cfg["prompt_lookup_num_tokens"] == 0 else
            "prompt_lookup_vllm" if cfg["prompt_lookup_min"] > 0 else "prompt_lookup_hf")
    case = {"name": name, "drafter": kind}
    if kind == "draft_model":
        case["assistant"] = DRAFT_REL
    case.update({"prompt": prompt, "prompt_ids": ids, "params": params, "order": order,
                 "chain": speculative.describe(cfg), "seed": seed, "max_new_tokens": max_new, "ids": r["ids"],
                 "text": tok.decode(r["ids"]).decode("utf-8", errors="replace"),
                 "stopped_by_eos": r["stopped_by_eos"], "stats": r["stats"],
                 "rounds": [[rd["k"], rd["drafts"], rd["accepted"], rd["next"]] for rd in r["rounds"]],
                 "min_margin": r["min_margin"]})
    return case, r


def search_speculative(model, tok, draft, name, knobs, first):
    """The first (length, prompt, seed) whose run passes MIN_MARGIN, has at least MIN_SAMPLED_TOKENS
    tokens (with min_new_tokens: ends with EOS), keeps at least SPECULATIVE_MIN_KEPT drafts and
    rejects one."""
    rejected = {}
    greedy = not knobs.get("do_sample", False)
    for max_new in SPECULATIVE_LENGTHS:
        for j in range(len(SPECULATIVE_PROMPTS) if greedy else SPECULATIVE_BUDGET):
            prompt, seed = SPECULATIVE_PROMPTS[(first + j) % len(SPECULATIVE_PROMPTS)], (0 if greedy else j)
            c, r = speculative_case(model, tok, draft, name, prompt, knobs, seed, max_new, MIN_MARGIN)
            st = r["stats"]
            why = (r["limit"] if r["aborted"] else
                   "short" if len(r["ids"]) < min(MIN_SAMPLED_TOKENS, max_new) else
                   "few drafts kept" if st["accepted"] < SPECULATIVE_MIN_KEPT else
                   "no draft rejected" if st["accepted"] == st["drafted"] else
                   "no EOS" if knobs.get("min_new_tokens", 0) > 0 and not r["stopped_by_eos"] else None)
            if why:
                rejected[why] = rejected.get(why, 0) + 1
                continue
            return c, rejected
    return None, rejected


def build_speculative(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    draft = load_draft(model, log)
    cases = []
    todo = SPECULATIVE_LOOKUP_CASES + (SPECULATIVE_DRAFT_CASES if draft is not None else [])
    for i, (name, knobs) in enumerate(todo):
        c, rejected = search_speculative(model, tok, draft, name, knobs, i)
        rej = ", ".join("%s %d" % kv for kv in sorted(rejected.items())) or "none"
        if c is None:
            log("WARNING: speculative: dropped %s (nothing passed; rejected: %s)" % (name, rej))
            continue
        if c["chain"].endswith("argmax") and c["params"].get("repetition_penalty", 1) == 1 \
                and c["params"].get("min_new_tokens", 0) == 0:
            # speculative greedy is greedy decoding, token for token
            assert decode.greedy(model, c["prompt_ids"], c["max_new_tokens"])["ids"] == c["ids"], name
        cases.append(c)
        st = c["stats"]
        log("speculative: %-40s %-24r seed %2d, %2d tokens, %2d rounds, %2d/%2d kept, margin %.3g; rejected: %s"
            % (name, c["prompt"][:24], c["seed"], len(c["ids"]), st["rounds"], st["accepted"], st["drafted"],
               c["min_margin"], rej))
    out = header("Speculative decoding (tests/reference/speculative.py, float64): whole runs of the target "
                 "with a prompt-lookup drafter (HF's rule: prompt_lookup_min 0; vLLM's: prompt_lookup_min >= 1; "
                 "q = none) or the draft model `assistant` (q = its processed distribution, its own coins from "
                 "Rng(seed + 1)). Each round asks for min(k, left - 1) drafts, draws k' + 1 coins of Rng(seed) "
                 "for the k' it got, keeps a prefix and draws the next token. rounds: [k asked (0: no "
                 "drafter call), drafts, accepted, next] per round; stats: rounds, drafted, accepted, emitted. "
                 "Every decision of every round is at least min_margin (>= %g) from flipping." % MIN_MARGIN, model)
    if draft is not None:
        out["assistant"] = DRAFT_REL
        out["assistant_sha256"] = draft.sha256
    return dict(out, cases=cases)

# ----------------------------------------------------------------------------- chapter 10: other samplers

DRY_LONG_BREAKERS = ["\n\t\t--", "Q:", " R."]  # several bytes: tokens ending in a prefix get a tail
DRY_LOOP_PROMPT = "The best way to"  # chapter 01's prompt: greedy decoding loops on " R. R. R."
EOS_IDS = None  # the model's, set by build_other_samplers


def knob_params(knobs):
    """The knobs a case sets, as golden::config passes them to set_knob (do_sample always)."""
    out = {"do_sample": bool(knobs.get("do_sample", False))}
    for k, v in knobs.items():
        if k != "do_sample" and v != other_samplers.KNOB_DEFAULTS[k]:
            out[k] = v
    return out


def other_run(model, tok, breakers, name, prompt, knobs, order, seed, max_new, stop_below):
    ids = tok.encode(prompt.encode("utf-8"))
    r = other_samplers.generate(model, ids, knobs, order, seed, max_new, [model.eos_token_id], breakers,
                                stop_below=stop_below)
    case = {"name": name, "prompt": prompt, "prompt_ids": ids, "params": knob_params(knobs), "order": order,
            "chain": r["chain"], "seed": seed, "max_new_tokens": max_new, "ids": r["ids"],
            "text": tok.decode(r["ids"]).decode("utf-8", errors="replace"), "stopped_by_eos": r["stopped_by_eos"],
            "min_margin": min(r["margins"] + [1e6])}
    if int(knobs.get("mirostat", 0)):
        case["mu"] = [round_sig(m, 9) for m in r["mus"]]
    return case, r


def search_other(model, tok, breakers, name, make_knobs, order, greedy=False, prompts=None, differs_from=None):
    """The first (length, prompt, seed) whose run passes MIN_MARGIN with at least MIN_SAMPLED_TOKENS tokens:
    attempt j uses prompt j mod len(prompts) and seed j (greedy: seed 0, one attempt per prompt).
    make_knobs(prompt_ids) gives the knobs (a bias or a bad word may be chosen from the prompt's greedy
    run). differs_from(prompt_ids): knobs without the feature; the run must differ from that run (so the
    feature decided something). Returns (case or None, {reason: rejected attempts})."""
    prompts = prompts or SAMPLING_PROMPTS
    rejected = {}
    for max_new in SAMPLED_LENGTHS:
        for j in range(len(prompts) if greedy else SEARCH_BUDGET // 2):
            prompt, seed = prompts[j % len(prompts)], (0 if greedy else j)
            pids = tok.encode(prompt.encode("utf-8"))
            knobs = make_knobs(pids)
            if knobs is None:
                rejected["no knobs"] = rejected.get("no knobs", 0) + 1
                continue
            c, r = other_run(model, tok, breakers, name, prompt, knobs, order, seed, max_new, MIN_MARGIN)
            why = (r["limits"][-1] if r["aborted"] else
                   "short" if len(r["ids"]) < min(MIN_SAMPLED_TOKENS, max_new) else None)
            if why is None and differs_from is not None:
                base = other_samplers.generate(model, pids, differs_from(pids), order, seed, max_new,
                                               [model.eos_token_id], breakers)
                if base["ids"] == r["ids"]:
                    why = "no effect"
            if why:
                rejected[why] = rejected.get(why, 0) + 1
                continue
            return c, rejected
    return None, rejected


def without(*names):
    return lambda knobs: (lambda pids: {k: v for k, v in knobs(pids).items() if k not in names})


def const(knobs):
    return lambda pids: dict(knobs)


def greedy_ids(model, pids, n=8):
    return decode.greedy(model, pids, n)["ids"]


def other_cases(model):
    """(name, make_knobs, order, greedy, prompts, differs_from) for the runs of other_samplers.json, at the
    settings each engine recommends (HF's docs and the papers it cites; llama.cpp's common.h defaults)."""
    T = dict(do_sample=True)
    ll_default = dict(T, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05)  # llama.cpp's default chain
    loop = [DRY_LOOP_PROMPT] + SAMPLING_PROMPTS

    def seq_bias(pids):  # push the greedy run's 2nd token down whenever its 1st precedes it, and " the" up
        g = greedy_ids(model, pids, 4)
        if len(g) < 2 or model.eos_token_id in g[:2]:
            return None
        return dict(T, temperature=0.7, sequence_bias=[[[g[0], g[1]], -4.0], [[263], 1.5]])

    def bad_words(pids):  # ban the greedy run's 3rd token and its (4th, 5th) pair
        g = greedy_ids(model, pids, 6)
        if len(g) < 5 or model.eos_token_id in g[:5]:
            return None
        return dict(bad_words_ids=[[g[2]], [g[3], g[4]], [model.eos_token_id]])

    def begin_suppress(pids):  # the greedy run may not start with its first token, nor with a newline
        g = greedy_ids(model, pids, 1)
        return dict(begin_suppress_tokens=[g[0], 198], suppress_tokens=[13])

    def hf_combo(pids):
        g = greedy_ids(model, pids, 6)
        if len(g) < 5 or model.eos_token_id in g[:5]:
            return None
        return dict(T, temperature=0.8, typical_p=0.9, eta_cutoff=0.002, sequence_bias=[[[g[0], g[1]], -3.0]],
                    bad_words_ids=[[g[3], g[4]]], suppress_tokens=[198])

    def vllm_bias(pids):
        g = greedy_ids(model, pids, 6)
        if len(g) < 5 or model.eos_token_id in g[:5]:
            return None
        return dict(T, temperature=0.8, top_p=0.95, bad_words_ids=[[g[1]], [g[3], g[4]]], logit_bias=[[263, 2.0]])

    return [
        # Hugging Face's warpers (after temperature, top-k, top-p, min-p)
        ("typical_p_0.9", const(dict(T, typical_p=0.9)), "hf", False, None, None),
        ("typical_p_0.2", const(dict(T, typical_p=0.2)), "hf", False, None, None),
        ("epsilon_cutoff_3e-4", const(dict(T, epsilon_cutoff=3e-4)), "hf", False, None, None),
        ("epsilon_cutoff_0.02", const(dict(T, epsilon_cutoff=0.02)), "hf", False, None, None),
        ("eta_cutoff_2e-3", const(dict(T, eta_cutoff=2e-3)), "hf", False, None, None),
        ("eta_cutoff_0.05", const(dict(T, eta_cutoff=0.05)), "hf", False, None, None),
        # Hugging Face's processors (greedy too: they edit the logits before the argmax)
        ("sequence_bias_t0.7", seq_bias, "hf", False, None, without("sequence_bias")(seq_bias)),
        ("bad_words_greedy", bad_words, "hf", True, None, without("bad_words_ids")(bad_words)),
        ("suppress_begin_suppress_greedy", begin_suppress, "hf", True, None,
         without("begin_suppress_tokens", "suppress_tokens")(begin_suppress)),
        ("logit_bias_hf", const(dict(T, logit_bias=[[263, 3.0], [297, -2.0]])), "hf", False, None,
         without("logit_bias")(const(dict(T, logit_bias=[[263, 3.0], [297, -2.0]])))),
        ("min_new_tokens_12", const(dict(T, temperature=0.7, min_new_tokens=12)), "hf", False,
         [p for _, p in EOS_PROMPTS], None),
        ("hf_combined", hf_combo, "hf", False, None, None),
        # llama.cpp's samplers
        ("top_n_sigma_1", const(dict(T, top_n_sigma=1.0)), "llama.cpp", False, None, None),
        ("typical_p_0.9_llama.cpp", const(dict(T, typical_p=0.9)), "llama.cpp", False, None, None),
        ("xtc_0.5_0.1", const(dict(T, xtc_probability=0.5, xtc_threshold=0.1)), "llama.cpp", False, None,
         const(T)),
        ("dry_0.8_greedy", const(dict(dry_multiplier=0.8)), "llama.cpp", True, loop, const({})),
        ("dry_0.8_t0.8", const(dict(T, temperature=0.8, dry_multiplier=0.8)), "llama.cpp", False, loop,
         const(dict(T, temperature=0.8))),
        ("dry_2_allowed_1_last_32_no_breakers", const(dict(dry_multiplier=2.0, dry_base=1.5, dry_allowed_length=1,
                                                           dry_penalty_last_n=32, dry_sequence_breakers=[])),
         "llama.cpp", True, loop, const({})),
        ("dynatemp_0.8_0.5", const(dict(T, temperature=0.8, dynatemp_range=0.5)), "llama.cpp", False, None, None),
        ("dynatemp_1_0.5_exponent_2", const(dict(T, dynatemp_range=0.5, dynatemp_exponent=2.0)), "llama.cpp",
         False, None, None),
        ("logit_bias_llama.cpp", const(dict(ll_default, logit_bias=[[263, 3.0], [297, -2.0]])), "llama.cpp",
         False, None, None),
        ("mirostat_v2_5_0.1", const(dict(T, temperature=0.8, mirostat=2)), "llama.cpp", False, None, None),
        ("mirostat_v2_3_0.2_t1", const(dict(T, mirostat=2, mirostat_tau=3.0, mirostat_eta=0.2)), "llama.cpp",
         False, None, None),
        ("mirostat_v1_5_0.1", const(dict(T, temperature=0.8, mirostat=1)), "llama.cpp", False, None, None),
        ("llama.cpp_default_dry_xtc_top_n_sigma_typical",
         const(dict(ll_default, dry_multiplier=0.8, xtc_probability=0.5, xtc_threshold=0.1, top_n_sigma=2.0,
                    typical_p=0.95, repetition_penalty=1.1, penalty_scope="last_n")), "llama.cpp", False, loop, None),
        # vLLM
        ("vllm_bad_words_logit_bias", vllm_bias, "vllm", False, None, None),
    ]


def other_step_contexts(model, tok):
    """(prompt_ids, generated): processor_contexts, then the looping prompt after 8, 16 and 24 greedy tokens."""
    out = processor_contexts(model, tok)
    ids = tok.encode(DRY_LOOP_PROMPT.encode("utf-8"))
    g = decode.greedy(model, ids, 24)["ids"]
    return out + [(ids, g[:n]) for n in (8, 16, 24)]


def other_step(model, breakers, name, prompt_ids, generated, knobs, order, seed=0):
    chain = other_samplers.Chain10(knobs, order, model.vocab_size, model.n_positions, [model.eos_token_id],
                                   breakers)
    logits = gpt2.forward(model, list(prompt_ids) + list(generated))[-1]
    z, margins = chain.apply(logits, list(prompt_ids), list(generated), seed)
    probs = sampling.softmax(z)
    cand = other_samplers.candidates(z)
    return {"name": name, "prompt_ids": list(prompt_ids), "generated": list(generated), "params": knob_params(knobs),
            "order": order, "seed": seed, "chain": chain.describe(), "candidates": cand,
            "probs": [round_sig(float(probs[i]), 9) for i in cand],
            "margin": min([m for _, m in margins] + [1e6]), "tolerance": 1e-5}


def other_steps(model, tok, breakers, log):
    ctxs = other_step_contexts(model, tok)
    loops = ctxs[-3:]
    T = dict(do_sample=True)
    raw = lambda c: sampling.softmax(gpt2.forward(model, c[0] + c[1])[-1])
    flat = sorted(ctxs, key=lambda c: -other_samplers.entropy_of(raw(c)))
    out = []

    def first(name, contexts, knobs, order, accept=lambda c: True, seed=0):
        for pids, gen in contexts:
            c = other_step(model, breakers, name, pids, gen, knobs(pids, gen) if callable(knobs) else knobs,
                           order, seed)
            if c["margin"] >= MIN_MARGIN and accept(c):
                out.append(c)
                log("other_samplers step: %-34s %s, %d candidates, margin %.3g" % (
                    name, c["chain"], len(c["candidates"]), c["margin"]))
                return
        log("WARNING: other_samplers step: dropped %s (no context passes)" % name)

    some = lambda c: 2 <= len(c["candidates"]) < model.vocab_size
    first("typical_p_0.9_hf", flat, dict(T, typical_p=0.9), "hf", some)
    first("typical_p_0.9_llama.cpp", flat, dict(T, typical_p=0.9), "llama.cpp", some)
    first("typical_p_0.5_min_keep_3_hf", ctxs, dict(T, typical_p=0.5, min_tokens_to_keep=3), "hf", some)
    first("epsilon_cutoff_3e-4", flat, dict(T, epsilon_cutoff=3e-4), "hf", some)
    first("epsilon_cutoff_0.3_min_keep_2", ctxs, dict(T, epsilon_cutoff=0.3, min_tokens_to_keep=2), "hf",
          lambda c: len(c["candidates"]) == 2)
    first("eta_cutoff_2e-3", flat, dict(T, eta_cutoff=2e-3), "hf", some)
    first("top_n_sigma_1", ctxs, dict(T, top_n_sigma=1.0), "llama.cpp", some)
    first("top_n_sigma_3", flat, dict(T, top_n_sigma=3.0), "llama.cpp", some)
    # XTC with probability 1 (every coin applies it) on a peaked step: the top choices go
    top_id = lambda c: int(torch.argmax(raw((c["prompt_ids"], c["generated"]))))
    first("xtc_1_0.1", ctxs, dict(T, xtc_probability=1.0, xtc_threshold=0.1), "llama.cpp",
          lambda c: top_id(c) not in c["candidates"])
    first("xtc_0.5_0.05_seed_3", ctxs, dict(T, xtc_probability=0.5, xtc_threshold=0.05), "llama.cpp", some, seed=3)
    def changes(knobs, **base):  # the step's probabilities differ from those of `base`'s knobs
        def accept(c):
            b = other_step(model, breakers, "", c["prompt_ids"], c["generated"], dict(knobs, **base), c["order"])
            return (b["candidates"], b["probs"]) != (c["candidates"], c["probs"])
        return accept
    dry = dict(T, dry_multiplier=0.8, top_k=30)
    first("dry_0.8", loops, dry, "llama.cpp", changes(dry, dry_multiplier=0.0))
    dry8 = dict(dry, dry_penalty_last_n=8)
    first("dry_0.8_last_n_8", loops, dry8, "llama.cpp", lambda c: changes(dry8, dry_multiplier=0.0)(c)
          and changes(dry8, dry_penalty_last_n=-1)(c))
    # a line repeated: only "\n" would extend the repeat (L = 4), and a single-token breaker is never
    # penalised, so DRY changes nothing here (llama.cpp's is_single_token_breaker)
    line = tok.encode(b"Be happy.\nBe happy.\nBe happy.")
    first("dry_single_token_breaker_exempt", [(line, [])], dry, "llama.cpp",
          lambda c: 198 in c["candidates"] and not changes(dry, dry_multiplier=0.0)(c))
    first("dynatemp_0.8_0.5", ctxs, dict(T, temperature=0.8, dynatemp_range=0.5, top_k=20), "llama.cpp", some)
    first("logit_bias_llama.cpp", ctxs, dict(T, top_k=20, logit_bias=[[263, 3.0], [13, -100.0]]), "llama.cpp", some)

    def pair_bias(pids, gen):  # a 2-token sequence whose first token ends the context
        last = (list(pids) + list(gen))[-1]
        return dict(T, top_k=30, sequence_bias=[[[last, 263], 4.0], [[last, 297], -4.0], [[263], -1.0],
                                                [[999, 263], 50.0]])
    first("sequence_bias", ctxs, pair_bias, "hf", some)

    def pair_bad(pids, gen):
        seq = list(pids) + list(gen)
        return dict(T, top_k=30, bad_words_ids=[[seq[-1], 263], [seq[-1], 297], [seq[0], 13],
                                                [model.eos_token_id], [5]])
    first("bad_words_hf", ctxs, pair_bad, "hf", some)
    # vLLM matches a bad word's prefix against the output only: the prompt's last token does not count
    first("bad_words_vllm", [c for c in ctxs if len(c[1]) >= 1], pair_bad, "vllm", some)
    first("bad_words_vllm_prompt_only", [c for c in ctxs if len(c[1]) == 0], pair_bad, "vllm", some)
    first("suppress_begin_suppress_step_0", [c for c in ctxs if len(c[1]) == 0],
          dict(T, top_k=20, suppress_tokens=[13], begin_suppress_tokens=[263, 198]), "hf", some)
    first("suppress_begin_suppress_step_2", [c for c in ctxs if len(c[1]) == 2],
          dict(T, top_k=20, suppress_tokens=[13], begin_suppress_tokens=[263, 198]), "hf", some)
    # begin_suppress_tokens holds at the first new token only: at step 1 the step's own argmax survives
    first("begin_suppress_argmax_step_1", [c for c in ctxs if len(c[1]) == 1],
          lambda pids, gen: dict(T, top_k=20, begin_suppress_tokens=[top_id({"prompt_ids": pids, "generated": gen})]),
          "hf", lambda c: top_id(c) in c["candidates"])
    first("llama.cpp_default_dry_xtc_top_n_sigma_typical", loops,
          dict(T, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, dry_multiplier=0.8, xtc_probability=1.0,
               xtc_threshold=0.1, top_n_sigma=2.0, typical_p=0.95), "llama.cpp", some)
    return out


def build_other_samplers(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    default_breakers = other_samplers.KNOB_DEFAULTS["dry_sequence_breakers"]
    bound = other_samplers.dry_breaker_sequences(tok, default_breakers)

    def breakers_for(knobs):
        b = knobs.get("dry_sequence_breakers", default_breakers)
        return bound if b == default_breakers else other_samplers.dry_breaker_sequences(tok, b)

    runs, dropped = [], []
    for name, make, order, greedy, prompts, differs in other_cases(model):
        brk = breakers_for(make(tok.encode(b"The")) or {})
        found, rejected = search_other(model, tok, brk, name, make, order, greedy, prompts, differs)
        rej = ", ".join("%s %d" % kv for kv in sorted(rejected.items())) or "none"
        if not found:
            dropped.append(name)
            log("WARNING: other_samplers: dropped %s (nothing passed; rejected: %s)" % (name, rej))
            continue
        runs.append(found)
        log("other_samplers: %-44s %-22r seed %3d, %2d tokens, margin %.3g; rejected: %s"
            % (name, found["prompt"], found["seed"], len(found["ids"]), found["min_margin"], rej))
    steps = other_steps(model, tok, bound, log)
    cases = [dict(c, kind="run") for c in runs] + [dict(c, kind="step") for c in steps]
    return dict(header(
        "Chapter 10's samplers (tests/reference/other_samplers.py, float64, from the engines' code). kind run: a "
        "whole seeded run on the embedded model (step i draws coin i of Rng(seed), one per step, used or not; "
        "mirostat draws with it and mu starts at 2 tau, mu after each step recorded; XTC's coin is "
        "xtc_coin(seed, step)); the chain is the order's (docs/design.md), DRY's breakers bound as "
        "dry_breakers says; every decision of every step is at least min_margin (>= %g) from flipping. kind "
        "step: one chain step on forward(prompt_ids + generated)[-1] (step = len(generated), XTC's coin from "
        "seed): the surviving ids (ascending) and their probabilities after the final softmax (absolute "
        "tolerance), every decision at least margin from flipping. dry_breakers: breaker strings bound to the "
        "vocabulary by llama.cpp's get_overlapping_token_sequences, as sorted [head, tail...]. params: the knobs as set_knob takes them "
        "(the others at GenerationConfig's defaults); the model's EOS is the only EOS id." % MIN_MARGIN, model),
        dry_breakers=[{"strings": default_breakers, "sequences": bound},
                      {"strings": DRY_LONG_BREAKERS,
                       "sequences": other_samplers.dry_breaker_sequences(tok, DRY_LONG_BREAKERS)}],
        cases=cases)


LOGPROBS_K = 5
PERPLEXITY_FORTUNES = 50  # the first held-out fortunes of the model's validation split


def value_margins(lp, k, t):
    """How far the step's values are from changing what is compared: the order of the top k + 1
    (so the top k and their ranks), and any value crossing token t's (so its rank)."""
    vals = sorted(lp.tolist(), reverse=True)[:k + 1]
    top = min((a - b for a, b in zip(vals, vals[1:])), default=math.inf)
    v = float(lp[t])
    others = [abs(x - v) for i, x in enumerate(lp.tolist()) if i != t]
    return top, min(others)


def held_out_ids(tok, count):
    """<|endoftext|> doc <|endoftext|> doc ... as the model was trained (models/training/train_model.py),
    for the first `count` fortunes of the validation split."""
    sys.path.insert(0, os.path.join(ROOT, "models", "training"))
    import fortunes_corpus
    _, val = fortunes_corpus.split()
    eot = tok.encode(fortunes_corpus.EOT.encode("utf-8"))
    assert len(eot) == 1, "the tokenizer must spell <|endoftext|> as one token"
    ids = list(eot)
    for doc in val[:count]:
        ids += tok.encode(doc.encode("utf-8")) + eot
    return ids


def build_logprobs(model, log):
    tok = bpe.default_tokenizer(MODEL_DIR)
    cases = []
    for name, prompt in LOGITS_PROMPTS:
        ids = tok.encode(prompt.encode("utf-8"))
        logits = gpt2.forward(model, ids)
        entries = [None]
        for i in range(1, len(ids)):
            lp = logprobs.log_softmax(logits[i - 1])
            t = ids[i]
            top_margin, rank_margin = value_margins(lp, LOGPROBS_K, t)
            entries.append({"token": t, "logprob": float(lp[t]), "rank": logprobs.rank(lp, t),
                            "top": [list(e) for e in logprobs.top_logprobs(lp, LOGPROBS_K, t)],
                            "top_margin": top_margin, "rank_margin": rank_margin})
        cases.append({"kind": "prompt", "name": name, "prompt_ids": ids, "k": LOGPROBS_K, "entries": entries})
        log("logprobs: prompt %s, %d tokens" % (name, len(ids)))
    for name, prompt in LOGITS_PROMPTS[:4]:
        ids = tok.encode(prompt.encode("utf-8"))
        greedy = decode.greedy(model, ids, 6)["ids"]
        z = gpt2.forward(model, ids)[-1]
        second = int(torch.topk(z, 2).indices[1])
        for what, cont in (("greedy", greedy), ("second_first", [second] + greedy[1:])):
            r = logprobs.score_continuation(model, ids, cont)
            cases.append({"kind": "continuation", "name": name + "_" + what, "context_ids": ids,
                          "continuation_ids": cont, "logprob": r["logprob"], "tokens": r["tokens"],
                          "greedy": r["greedy"], "min_gap": r["min_gap"]})
    text = held_out_ids(tok, PERPLEXITY_FORTUNES)
    n_ctx = model.n_positions
    for stride in (n_ctx, n_ctx // 2):
        r = logprobs.sliding_window_perplexity(model, text, n_ctx, stride)
        cases.append({"kind": "perplexity", "name": "held_out_%d_fortunes_stride_%d" % (PERPLEXITY_FORTUNES, stride),
                      "ids": text, "max_length": n_ctx, "stride": stride, **r})
        log("logprobs: perplexity of %d tokens, window %d, stride %d: %.6f over %d windows"
            % (len(text), n_ctx, stride, r["perplexity"], r["windows"]))
    return dict(header("Chapter 11 in float64 (tests/reference/logprobs.py). kind prompt: every prompt token's raw "
                       "log-probability given its prefix (entry 0 is null), its rank (how many values are >= its own) "
                       "and the top k entries [id, logprob, rank] with it appended from outside them; top_margin and "
                       "rank_margin say how far the values are from reordering those. kind continuation: the sum of a "
                       "continuation's log-probabilities given its context, and whether each token is the argmax "
                       "(min_gap: the closest logit gap deciding it). kind perplexity: Hugging Face's sliding window "
                       "over the first %d held-out fortunes (<|endoftext|>-separated, as trained)." % PERPLEXITY_FORTUNES,
                       model), cases=cases)


TASK_REL = "models/tasks/author_choice.json"  # written by tests/reference/author_task.py
PICK_RULES = choices.RULES


def build_choices(model, log):
    """Chapter 11's author-choice task scored in float64 as lm-eval scores a multiple-choice task
    (tests/reference/choices.py): reads the shipped task file only, so it needs no fortunes package."""
    tok = bpe.default_tokenizer(MODEL_DIR)
    with open(os.path.join(ROOT, TASK_REL), "rb") as f:
        raw = f.read()
    task = json.loads(raw.decode("utf-8"))
    cases, hits = [], {r: [] for r in PICK_RULES}
    for index, item in enumerate(task["items"]):
        scores = choices.score_choices(model, tok, item["context"], item["choices"])
        context_ids = scores[0]["context_ids"]
        assert all(s["context_ids"] == context_ids for s in scores)
        case = {"item": index, "answer": item["answer"], "context_tokens": len(context_ids),
                "choices": [{k: s[k] for k in ("continuation_ids", "logprob", "tokens", "greedy", "min_gap", "chars", "bytes")}
                            for s in scores]}
        for rule in PICK_RULES:
            values = choices.rule_values(scores, rule)
            case[rule] = choices.pick(values)
            case[rule + "_margin"] = choices.margin(values)
            hits[rule].append(1.0 if case[rule] == item["answer"] else 0.0)
        cases.append(case)
    accuracy = {}
    for rule in PICK_RULES:
        accuracy[rule] = {"correct": int(sum(hits[rule])), "value": choices.mean(hits[rule]),
                          "stderr": choices.mean_stderr(hits[rule])}
        log("choices: %s %.4f +- %.4f (%d of %d)" % (rule, accuracy[rule]["value"], accuracy[rule]["stderr"],
                                                    accuracy[rule]["correct"], len(cases)))
    chance = choices.mean([1.0 / len(item["choices"]) for item in task["items"]])
    return dict(header("Chapter 11's author-choice task (%s, written by tests/reference/author_task.py) scored in "
                       "float64 by lm-eval's multiple-choice rules (tests/reference/choices.py, lm-evaluation-harness "
                       "at 4e7e0d47f33b). Per item: the answer's index; the context's token count; per choice the "
                       "continuation's ids as lm-eval's _encode_pair splits (context, choice) (the context's trailing "
                       "space moved to the choice), the sum of their log-probabilities, their count, is_greedy (min_gap: "
                       "the closest logit gap deciding it), and the choice's length in characters (Python len) and "
                       "UTF-8 bytes; the pick of each rule (acc: the highest sum; acc_norm: sum / characters; acc_bytes: "
                       "sum / bytes; ties to the first) and its margin (best minus second best value). accuracy: per "
                       "rule, the mean of the hits and lm-eval's mean_stderr (sample standard deviation / sqrt(n)); "
                       "chance: the mean of 1 / choices. task_sha256: the task file scored." % TASK_REL, model),
                task=TASK_REL, task_sha256=hashlib.sha256(raw).hexdigest(), chance=chance, accuracy=accuracy,
                cases=cases)


BUILDERS = [("rng.json", build_rng), ("tokenizer.json", build_tokenizer),
            ("logits.json", build_logits), ("greedy.json", build_greedy),
            ("sampling.json", build_sampling), ("processors.json", build_processors),
            ("beams.json", build_beams), ("top_p_rules.json", build_top_p_rules),
            ("speculative.json", build_speculative), ("other_samplers.json", build_other_samplers),
            ("logprobs.json", build_logprobs), ("choices.json", build_choices)]

# ----------------------------------------------------------------------------- output


def dump(obj):
    """Pretty but compact: header keys one per line, one case per line; floats via repr."""
    json.dumps(obj, allow_nan=False)  # no inf/nan margins in a golden
    lines = ["{"]
    keys = [k for k in obj if k != "cases"]
    for k in keys:
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(obj[k], ensure_ascii=False)))
    lines.append('  "cases": [')
    cs = obj["cases"]
    for i, c in enumerate(cs):
        lines.append("    " + json.dumps(c, ensure_ascii=False) + ("," if i + 1 < len(cs) else ""))
    lines.append("  ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == obj
    return text


# Floats in a golden (margins, log-probabilities) are float64 sums whose last bits follow the order
# numpy and torch add in on the machine at hand (about 1e-15 apart between processors); ids, texts
# and every decision are compared exactly.
FLOAT_REL = 1e-9


def same(a, b):
    """Whether two parsed goldens agree: exactly, except floats within FLOAT_REL of each other."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return math.isclose(a, b, rel_tol=FLOAT_REL, abs_tol=1e-300) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def describe_difference(fname, new_text, old_text):
    try:
        old = json.loads(old_text)
    except ValueError:
        return "%s: not valid JSON on disk" % fname
    new = json.loads(new_text)
    msgs = []
    for k in new:
        if k != "cases" and not same(old.get(k), new[k]):
            msgs.append("%s: key %r differs (disk %r, now %r)" % (fname, k, old.get(k), new[k]))
    oc, nc = old.get("cases", []), new["cases"]
    if len(oc) != len(nc):
        msgs.append("%s: %d cases on disk, %d now" % (fname, len(oc), len(nc)))
    for i in range(max(len(oc), len(nc))):
        a = oc[i] if i < len(oc) else None
        b = nc[i] if i < len(nc) else None
        if not same(a, b):
            label = (b or a or {}).get("name", (b or a or {}).get("seed", i))
            keys = sorted(k for k in set(a or {}) | set(b or {}) if not same((a or {}).get(k), (b or {}).get(k)))
            msgs.append("%s: case %d (%s) differs in %s" % (fname, i, label, ", ".join(keys)))
    if not msgs:
        msgs.append("%s: formatting differs" % fname)
    return "\n".join(msgs)


def main(argv):
    check = "--check" in argv[1:]
    names = [a for a in argv[1:] if a != "--check"]
    known = [f for f, _ in BUILDERS]
    unknown = [a for a in names if a not in known]
    if unknown:
        print("usage: %s [--check] [FILE.json ...]   (files: %s)" % (argv[0], " ".join(known)), file=sys.stderr)
        return 2
    log = lambda msg: print(msg, file=sys.stderr)
    model = gpt2.load_model(MODEL_DIR)
    bad = False
    for fname, build in BUILDERS:
        if names and fname not in names:
            continue
        text = dump(build(model, log))
        path = os.path.join(DATA_DIR, fname)
        if check:
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if old is None:
                print("%s: missing" % path)
                bad = True
            elif old != text and not same(json.loads(old), json.loads(text)):
                print(describe_difference(os.path.join("tests", "data", fname), text, old))
                bad = True
        else:
            os.makedirs(DATA_DIR, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            n = len(json.loads(text)["cases"])
            print("wrote %s (%d cases)" % (os.path.relpath(path, ROOT), n))
    if check:
        print("goldens differ" if bad else "goldens match")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
