#!/usr/bin/python3
"""Write models/tasks/held_out_fortunes.json: the first 50 fortunes of the embedded model's held-out
split, for chapter 11 (the surprise along a text, and perplexity by a sliding window).

The split is models/training/fortunes_corpus.py's (a seeded shuffle of Debian's `fortunes`, the last
5 % held out); the model never trained on these. The chapter joins them as the model was trained,
<|endoftext|> before and after each, so its perplexity equals tests/data/logprobs.json's
(make_goldens.py, `held_out_ids`). Regenerate (needs Debian's `fortunes` package):

    /usr/bin/python3 tests/reference/held_out_fortunes.py
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COUNT = 50  # make_goldens.py's PERPLEXITY_FORTUNES

sys.path.insert(0, os.path.join(ROOT, "models", "training"))
import fortunes_corpus  # noqa: E402


def main():
    _, val = fortunes_corpus.split()
    out = {
        "about": "The first %d held-out fortunes of models/fortunes-gpt2's training split (models/training/"
                 "fortunes_corpus.py), in order. Written by tests/reference/held_out_fortunes.py; chapter 11 joins "
                 "them with %s before and after each, as the model was trained." % (COUNT, fortunes_corpus.EOT),
        "separator": fortunes_corpus.EOT,
        "documents": val[:COUNT],
    }
    path = os.path.join(ROOT, "models", "tasks", "held_out_fortunes.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %s: %d fortunes" % (path, COUNT))


if __name__ == "__main__":
    main()
