"""An independent GPT-2 byte-level BPE tokenizer (reads vocab.json + merges.txt).

encode(data: bytes) -> ids, decode(ids) -> bytes.

Pipeline of encode:
  1. split the input bytes on the literal special token b"<|endoftext|>" (-> its id);
  2. decode each remaining segment with errors="surrogateescape": every byte that is not part
     of valid UTF-8 becomes a lone surrogate U+DC80..U+DCFF, which is neither whitespace, a
     letter nor a number, so the pre-tokenizer treats it as a symbol character;
  3. GPT-2's pre-tokenization regex splits the text into pieces;
  4. each piece goes back to bytes (encode("utf-8", "surrogateescape") restores the original
     bytes), then through GPT-2's byte->unicode table;
  5. rank-based merges: repeatedly merge every occurrence (left to right) of the adjacent pair
     with the lowest merge rank until no pair has a rank.

Self-check: /usr/bin/python3 tests/reference/bpe.py   (hand-made vocab + round trips)

>>> t = Tokenizer.from_tables(*_tiny_tables())
>>> [t.id_to_token[i] for i in t.encode(b"hello hell")]
['hello', '\u0120', 'hell']
"""
import json
import os

import regex

PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
SPECIAL = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's table: printable latin-1 bytes map to themselves, the other 68 bytes to U+0100.."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table = {}
    extra = 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {c: b for b, c in BYTE_ENCODER.items()}


class Tokenizer:
    def __init__(self, vocab, merges, special=SPECIAL):
        """vocab: dict token->id; merges: list of (a, b) pairs in rank order."""
        self.token_to_id = dict(vocab)
        self.id_to_token = {i: t for t, i in vocab.items()}
        if len(self.id_to_token) != len(self.token_to_id):
            raise ValueError("vocab has duplicate ids")
        self.ranks = {tuple(p): r for r, p in enumerate(merges)}
        self.special = special
        self.special_id = vocab.get(special)
        self._cache = {}

    @classmethod
    def from_tables(cls, vocab, merges):
        return cls(vocab, merges)

    @classmethod
    def from_dir(cls, model_dir):
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        merges = []
        with open(os.path.join(model_dir, "merges.txt"), encoding="utf-8") as f:
            for n, line in enumerate(f):
                line = line.rstrip("\n")
                if n == 0 and line.startswith("#version"):
                    continue
                if not line:
                    continue
                a, b = line.split(" ")
                merges.append((a, b))
        return cls(vocab, merges)

    def bpe(self, word):
        """word: str of byte-level symbols. Returns the list of merged symbols."""
        if word in self._cache:
            return self._cache[word]
        parts = list(word)
        while len(parts) > 1:
            best = None
            best_rank = None
            for pair in zip(parts, parts[1:]):
                r = self.ranks.get(pair)
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = pair, r
            if best is None:
                break
            merged = []
            i = 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == best[0] and parts[i + 1] == best[1]:
                    merged.append(best[0] + best[1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        self._cache[word] = parts
        return parts

    def _encode_ordinary(self, data):
        text = data.decode("utf-8", errors="surrogateescape")
        ids = []
        for piece in PAT.findall(text):
            raw = piece.encode("utf-8", errors="surrogateescape")
            word = "".join(BYTE_ENCODER[b] for b in raw)
            for sym in self.bpe(word):
                if sym not in self.token_to_id:
                    raise KeyError("symbol %r not in vocab" % sym)
                ids.append(self.token_to_id[sym])
        return ids

    def encode(self, data):
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("encode takes bytes")
        data = bytes(data)
        if self.special_id is None:
            return self._encode_ordinary(data)
        sp = self.special.encode("utf-8")
        ids = []
        segments = data.split(sp)
        for k, seg in enumerate(segments):
            if k > 0:
                ids.append(self.special_id)
            if seg:
                ids.extend(self._encode_ordinary(seg))
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or i not in self.id_to_token:
                raise KeyError("unknown token id %r" % (i,))
            tok = self.id_to_token[i]
            if i == self.special_id:
                out += tok.encode("utf-8")
            else:
                out += bytes(BYTE_DECODER[c] for c in tok)
        return bytes(out)


_default = {}


def default_tokenizer(model_dir=None):
    if model_dir is None:
        model_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "fortunes-gpt2")
    model_dir = os.path.normpath(model_dir)
    if model_dir not in _default:
        _default[model_dir] = Tokenizer.from_dir(model_dir)
    return _default[model_dir]


def encode(data, model_dir=None):
    return default_tokenizer(model_dir).encode(data)


def decode(ids, model_dir=None):
    return default_tokenizer(model_dir).decode(ids)


def _tiny_tables():
    """A hand-made vocab: the 256 byte symbols, a few merges, and the special token."""
    vocab = {BYTE_ENCODER[b]: b for b in range(256)}
    merges = [("l", "l"), ("h", "e"), ("he", "ll"), ("\u0120", "h"), ("hell", "o"), ("\u0120h", "ell"),
              ("a", "a")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab[SPECIAL] = len(vocab)
    return vocab, merges


def selftest(cases=None):
    t = Tokenizer.from_tables(*_tiny_tables())
    tok = lambda data: [t.id_to_token[i] for i in t.encode(data)]
    # "hello": l+l (rank 0), h+e (1), he+ll (2), hell+o (4)
    assert tok(b"hello") == ["hello"], tok(b"hello")
    # " hello": Ġ h e l l o -> (l,l)=0 -> Ġ h e ll o -> (h,e)=1 beats (Ġ,h)=3 -> Ġ he ll o
    # -> (he,ll)=2 -> Ġ hell o -> (hell,o)=4 -> Ġ hello.  (Ġ+h never applies: h was consumed.)
    assert tok(b" hello") == ["\u0120", "hello"], tok(b" hello")
    # " hell": Ġ h e l l -> Ġ h e ll -> Ġ he ll -> Ġ hell -> (no Ġ+hell merge) ; hell stays
    assert tok(b" hell") == ["\u0120", "hell"], tok(b" hell")
    # all occurrences left to right: "aaaaa" -> aa aa a
    assert tok(b"aaaaa") == ["aa", "aa", "a"], tok(b"aaaaa")
    # pre-tokenizer: contractions, numbers, spaces
    assert PAT.findall("I'm 12 ok  \n x") == ["I", "'m", " 12", " ok", "  \n", " x"], PAT.findall("I'm 12 ok  \n x")
    # ("\t" then "c": a tab is not the optional space of " ?\p{L}+", and "\tc" fails (?!\S).)
    assert PAT.findall("a   b\n\n\tc  ") == ["a", "  ", " b", "\n\n", "\t", "c", "  "]
    # invalid bytes are symbol characters
    assert tok(b" \xff") == ["\u0120", BYTE_ENCODER[0xFF]]
    assert PAT.findall(b"ab\x80cd".decode("utf-8", "surrogateescape")) == ["ab", "\udc80", "cd"]
    # special token
    sid = t.special_id
    assert t.encode(b"<|endoftext|>") == [sid]
    ids = t.encode(b"hello<|endoftext|>hello")
    assert ids == [t.token_to_id["hello"], sid, t.token_to_id["hello"]]
    assert sid not in t.encode(b"<|endoftext|")
    assert t.decode(ids) == b"hello<|endoftext|>hello"
    try:
        t.decode([len(t.id_to_token) + 5])
        raise AssertionError("unknown id accepted")
    except KeyError:
        pass
    for b in range(256):
        assert t.decode(t.encode(bytes([b]))) == bytes([b])
    assert len(set(BYTE_ENCODER.values())) == 256
    # round trips on the real model's tokenizer
    if cases is None:
        from make_goldens import tokenizer_inputs
        cases = [data for _, data in tokenizer_inputs()]
    real = default_tokenizer()
    for data in cases:
        assert real.decode(real.encode(data)) == data, data
    import doctest
    import sys
    failed, _ = doctest.testmod(sys.modules[__name__])
    assert failed == 0
    print("bpe selftest ok (%d round trips)" % len(cases))


if __name__ == "__main__":
    selftest()
