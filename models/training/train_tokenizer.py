"""Train the embedded model's byte-level BPE (GPT-2 file format: vocab.json + merges.txt).

    /usr/bin/python3 models/training/train_tokenizer.py --out models/fortunes-gpt2 --vocab-size 2048

Pre-tokenization is GPT-2's exact regex (python3-regex for \\p{L}/\\p{N}); symbols are GPT-2's
byte-to-unicode characters. Ids 0-255 are the bytes in GPT-2's order, then one id per merge, and the
last id is <|endoftext|>. Merges are chosen by count; ties go to the lexicographically smallest pair,
so the result is fully deterministic. Only the training split of the corpus is used.
"""
import argparse
import collections
import heapq
import json
import os

import regex

import fortunes_corpus

GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable unicode characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def word_counts(docs: list[str]) -> collections.Counter:
    b2u = bytes_to_unicode()
    counts = collections.Counter()
    for doc in docs:
        for piece in GPT2_PATTERN.findall(doc):
            counts[tuple(b2u[b] for b in piece.encode("utf-8"))] += 1
    return counts


def train(docs: list[str], n_merges: int) -> list[tuple[str, str]]:
    counts = word_counts(docs)
    words = [list(w) for w in counts]
    freqs = list(counts.values())
    pair_counts = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for pair in zip(w, w[1:]):
            pair_counts[pair] += freqs[i]
            where[pair].add(i)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg:
            continue  # stale heap entry
        if -neg < 2:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        changed = set()
        for i in list(where[pair]):
            w, f = words[i], freqs[i]
            for p in zip(w, w[1:]):
                pair_counts[p] -= f
                changed.add(p)
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and (w[j], w[j + 1]) == pair:
                    out.append(merged)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += f
                where[p].add(i)
                changed.add(p)
        del where[pair]
        for p in changed:
            c = pair_counts.get(p, 0)
            if c <= 0:
                pair_counts.pop(p, None)
            else:
                heapq.heappush(heap, (-c, p))
    return merges


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="model folder to write vocab.json and merges.txt into")
    ap.add_argument("--vocab-size", type=int, default=2048)
    args = ap.parse_args()
    train_docs, _ = fortunes_corpus.split()
    merges = train(train_docs, args.vocab_size - 256 - 1)
    b2u = bytes_to_unicode()
    vocab = {}
    for sym in b2u.values():  # GPT-2 order: the printable bytes first, then the remapped ones
        vocab[sym] = len(vocab)
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab[fortunes_corpus.EOT] = len(vocab)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(args.out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    print(f"wrote {len(vocab)} tokens ({len(merges)} merges) to {args.out}")


if __name__ == "__main__":
    main()
