"""Builds chapter 11's author-choice task, models/tasks/author_choice.json: which of four authors
signed a held-out fortune?

    /usr/bin/python3 tests/reference/author_task.py           # (re)write models/tasks/author_choice.json
    /usr/bin/python3 tests/reference/author_task.py --check   # rebuild in memory, exit 1 if the file differs

Needs Debian's `fortunes` package (/usr/share/games/fortunes; `tools/install-deps.sh --reference`),
which CI does not install: the task is built here once and shipped in the repository, and the C++
side (decoding/choices.hpp, read_choice_task) and the golden builder (make_goldens.py choices.json)
only read the shipped file.

The rules, all seeded (SEED) and in a fixed order, so the same corpus gives the same file:
  * fortunes: models/training/fortunes_corpus.py's split() (the model's own training / validation
    split); an attribution is a fortune's last line when it reads "-- AUTHOR" after optional spaces
    or tabs (the fortune files' "\\t\\t-- Woody Allen"), with at least one line before it; a
    multi-line attribution (its last line is a continuation) is not one.
  * an item: the validation fortunes with an attribution, in split order; the context is the
    fortune cut right before AUTHOR (so it ends in "-- "), the answer AUTHOR as written.
  * distractors: 3 drawn one at a time with random.Random(SEED).choice from the distinct
    attributions of the TRAINING split (sorted), a draw naming a source already among the four
    drawn again: no two of the four share their text before the first "," (case-folded), so
    "Mark Twain" never competes with 'Mark Twain, "Pudd'nhead Wilson's Calendar"'.
  * the answer's position: before anything is drawn, the same Random shuffles ITEMS / 4 copies of
    each position 0..3, and item k puts its answer at the k-th (the distractors in their drawn
    order around it), so every position holds the answer exactly ITEMS / 4 times and a rule that
    always picks one position scores exactly chance, 1/4.
  * fit: lm-eval's encoding of every (context, choice) pair (tests/reference/choices.py,
    encode_pair) must fit the model's context, context ids + choice ids <= n_positions (256);
    a fortune whose pairs do not is skipped (its draws are spent all the same).
  * the first ITEMS such fortunes are the task.
Never imports the C++ sources.
"""
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "models", "training"))

import bpe  # noqa: E402
import choices  # noqa: E402

TASK_REL = "models/tasks/author_choice.json"
TASK_PATH = os.path.join(ROOT, TASK_REL)
MODEL_DIR = os.path.join(ROOT, "models", "fortunes-gpt2")
REGENERATE = "/usr/bin/python3 tests/reference/author_task.py"
SEED = 11
ITEMS = 200
CHOICES = 4
ATTRIBUTION = re.compile(r"\n[ \t]*-- (?=\S)([^\n]*)\Z")


def attribution(doc):
    """(context, author) when the fortune ends in an attribution line, else None."""
    m = ATTRIBUTION.search(doc)
    if not m:
        return None
    return doc[:m.start(1)], m.group(1)


def source_key(author):
    return author.split(",", 1)[0].strip().casefold()


def build():
    import fortunes_corpus
    train, val = fortunes_corpus.split()
    tok = bpe.default_tokenizer(MODEL_DIR)
    with open(os.path.join(MODEL_DIR, "config.json"), encoding="utf-8") as f:
        n_positions = int(json.load(f)["n_positions"])
    pool = sorted({a[1] for a in map(attribution, train) if a})
    assert ITEMS % CHOICES == 0
    rng = random.Random(SEED)
    positions = [k % CHOICES for k in range(ITEMS)]
    rng.shuffle(positions)
    attributed = sum(1 for doc in val if attribution(doc))
    items, too_long = [], 0
    for index, doc in enumerate(val):
        found = attribution(doc)
        if not found or len(items) == ITEMS:
            continue
        context, answer = found
        taken = {source_key(answer)}
        distractors = []
        while len(distractors) < CHOICES - 1:
            candidate = rng.choice(pool)
            if source_key(candidate) not in taken:
                taken.add(source_key(candidate))
                distractors.append(candidate)
        four = distractors[:]
        four.insert(positions[len(items)], answer)
        fits = all(len(c) + len(k) <= n_positions
                   for c, k in (choices.encode_pair(tok, context, x) for x in four))
        if not fits:
            too_long += 1
            continue
        items.append({"fortune": index, "context": context, "choices": four, "answer": four.index(answer)})
    assert len(items) == ITEMS, "only %d items" % len(items)
    about = ("Chapter 11's author-choice task: %d held-out fortunes (the validation split of "
             "models/training/fortunes_corpus.py, the embedded model's own) cut before the author of their "
             "'-- AUTHOR' line; choices: the author and %d distractors drawn from the training split's "
             "attributions, none naming the same source (text before the first comma); answer: the index of "
             "the true one, each of the %d positions holding it %d times (a seeded shuffle). Score each choice as lm-eval does: the loglikelihood of (context, choice), the "
             "context's trailing space moving to the choice. %d of the %d validation fortunes have an "
             "attribution line; %d of those before the last item were skipped as too long for the model's %d-token context; "
             "fortune: the item's index in the validation split."
             % (ITEMS, CHOICES - 1, CHOICES, ITEMS // CHOICES, attributed, len(val), too_long, n_positions))
    return {"about": about, "regenerate": REGENERATE, "check": REGENERATE + " --check", "seed": SEED,
            "items": items}


def dump(obj):
    """Header keys one per line, one item per line."""
    lines = ["{"]
    for k in obj:
        if k != "items":
            lines.append("  %s: %s," % (json.dumps(k), json.dumps(obj[k], ensure_ascii=False)))
    lines.append('  "items": [')
    for i, item in enumerate(obj["items"]):
        lines.append("    " + json.dumps(item, ensure_ascii=False) + ("," if i + 1 < len(obj["items"]) else ""))
    lines.append("  ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == obj
    return text


def main(argv):
    check = "--check" in argv[1:]
    text = dump(build())
    if check:
        old = open(TASK_PATH, encoding="utf-8").read() if os.path.exists(TASK_PATH) else None
        ok = old == text
        print("%s %s" % (TASK_REL, "matches" if ok else "differs" if old is not None else "is missing"))
        return 0 if ok else 1
    os.makedirs(os.path.dirname(TASK_PATH), exist_ok=True)
    with open(TASK_PATH, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %s (%d items)" % (TASK_REL, len(json.loads(text)["items"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
