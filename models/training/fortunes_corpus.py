"""The training corpus of the embedded model: Debian's `fortunes` package, made classroom-safe.

Used by train_tokenizer.py and train_model.py beside it (and by the model card's numbers).
Each fortune is one document; documents are shuffled with a fixed seed and ~5 % are held out.

Run `/usr/bin/python3 models/training/fortunes_corpus.py` to print corpus statistics.
"""
import os
import random
import re

FORTUNE_DIR = "/usr/share/games/fortunes"

# Files a teacher is happy to show on a projector. Left out on purpose: drugs, ethnic, men-women,
# politics, love (adult themes), knghtbrd (IRC logs), ascii-art and translate-me (not prose).
FILES = [
    "art", "computers", "cookie", "debian", "definitions", "disclaimer", "education", "food",
    "fortunes", "goedel", "humorists", "kids", "law", "linux", "linuxcookie", "literature",
    "magic", "medicine", "miscellaneous", "news", "paradoxum", "people", "perl", "pets",
    "platitudes", "pratchett", "riddles", "science", "songs-poems", "sports", "startrek", "tao",
    "wisdom", "work", "zippy",
]

# A document containing any of these word stems is dropped as well.
BLOCKED = re.compile(
    r"\b(fuck|shit|bitch|bastard|cunt|dick|cock|penis|vagina|orgasm|sex|sexual|porn|rape|"
    r"nigg|fag|whore|slut|tits|boob|nude|naked|screw|ass|asshole|damn|hell|drunk|beer|whisky|"
    r"whiskey|suicide|kill|murder|dead|death|gun)",
    re.IGNORECASE)

SEED = 1234
VALIDATION_FRACTION = 0.05
EOT = "<|endoftext|>"


def _clean(doc: str) -> str:
    doc = re.sub(r".\x08", "", doc)  # overstriking: "x\bx" prints as x
    lines = [line.rstrip() for line in doc.split("\n")]
    return "\n".join(lines).strip("\n")


def documents(fortune_dir: str = FORTUNE_DIR) -> list[str]:
    """Every kept fortune, in file order."""
    docs = []
    for name in FILES:
        path = os.path.join(fortune_dir, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for raw in re.split(r"^%$", text, flags=re.MULTILINE):
            doc = _clean(raw)
            if doc and EOT not in doc and not BLOCKED.search(doc):
                docs.append(doc)
    return docs


def split(fortune_dir: str = FORTUNE_DIR) -> tuple[list[str], list[str]]:
    """(train, validation) documents: a seeded shuffle, the last 5 % held out."""
    docs = documents(fortune_dir)
    random.Random(SEED).shuffle(docs)
    n_val = max(1, round(len(docs) * VALIDATION_FRACTION))
    return docs[:-n_val], docs[-n_val:]


if __name__ == "__main__":
    train, val = split()
    print(f"documents: {len(train)} train, {len(val)} validation")
    print(f"characters: {sum(map(len, train))} train, {sum(map(len, val))} validation")
    print("sample:", repr(train[0][:200]))
