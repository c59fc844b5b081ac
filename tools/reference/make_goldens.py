"""Writes the golden JSON files in tests/data/ from the independent Python reference.

    /usr/bin/python3 tools/reference/make_goldens.py           # (re)write tests/data/*.json
    /usr/bin/python3 tools/reference/make_goldens.py --check   # regenerate in memory, compare

--check exits 1 (naming the file and case that differ) if any file on disk differs, else 0.
Never imports the C++ sources or the training code (tools/train_*.py).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import decode  # noqa: E402
import gpt2  # noqa: E402
import rng  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MODEL_REL = "models/fortunes-gpt2"
MODEL_DIR = os.path.join(ROOT, MODEL_REL)
DATA_DIR = os.path.join(ROOT, "tests", "data")
REGENERATE = "/usr/bin/python3 tools/reference/make_goldens.py"
CHECK = "/usr/bin/python3 tools/reference/make_goldens.py --check"

MIN_GAP = 1e-3
MAX_NEW = 64
MIN_GREEDY_CASES = 12

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


BUILDERS = [("rng.json", build_rng), ("tokenizer.json", build_tokenizer),
            ("logits.json", build_logits), ("greedy.json", build_greedy)]

# ----------------------------------------------------------------------------- output


def dump(obj):
    """Pretty but compact: header keys one per line, one case per line; floats via repr."""
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


def describe_difference(fname, new_text, old_text):
    try:
        old = json.loads(old_text)
    except ValueError:
        return "%s: not valid JSON on disk" % fname
    new = json.loads(new_text)
    msgs = []
    for k in new:
        if k != "cases" and old.get(k) != new[k]:
            msgs.append("%s: key %r differs (disk %r, now %r)" % (fname, k, old.get(k), new[k]))
    oc, nc = old.get("cases", []), new["cases"]
    if len(oc) != len(nc):
        msgs.append("%s: %d cases on disk, %d now" % (fname, len(oc), len(nc)))
    for i in range(max(len(oc), len(nc))):
        a = oc[i] if i < len(oc) else None
        b = nc[i] if i < len(nc) else None
        if a != b:
            label = (b or a or {}).get("name", (b or a or {}).get("seed", i))
            keys = sorted(k for k in set(a or {}) | set(b or {}) if (a or {}).get(k) != (b or {}).get(k))
            msgs.append("%s: case %d (%s) differs in %s" % (fname, i, label, ", ".join(keys)))
    if not msgs:
        msgs.append("%s: formatting differs" % fname)
    return "\n".join(msgs)


def main(argv):
    check = "--check" in argv[1:]
    unknown = [a for a in argv[1:] if a != "--check"]
    if unknown:
        print("usage: %s [--check]" % argv[0], file=sys.stderr)
        return 2
    log = lambda msg: print(msg, file=sys.stderr)
    model = gpt2.load_model(MODEL_DIR)
    bad = False
    for fname, build in BUILDERS:
        text = dump(build(model, log))
        path = os.path.join(DATA_DIR, fname)
        if check:
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if old is None:
                print("%s: missing" % path)
                bad = True
            elif old != text:
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
