"""Chapter 12's references: prefix caching by chained block hashes, and the free queue, independently.

hashes: hash_full_blocks(tokens, block_size), the chained hashes of a sequence's FULL blocks, with
    hash_block_tokens(parent, tokens) = splitmix64 chained over the parent and the tokens' 32 bits
    (rng.py's splitmix64; the C++ splitmix64(x) is its output, rng.splitmix64(x)[1]).
hits: prefix_hit_tokens(prompt, cached, block_size), how many prompt tokens a prefix cache holding
    every full block of the `cached` sequences hits. Decided by comparing token prefixes, never by
    the hash, so it shares nothing with the hash function (the self-test checks that a hash-based
    lookup agrees on 500 random cases).
queues: free_queue_after(queue, table, counts, cached, order), the free queue after a request
    holding `table` is freed, under vLLM's two orders ("lru", "uncached_first"). The states are
    vLLM's worked example and test_evict, hand-made ones, and states drawn by simulating a small
    pool (Pool) with the project RNG.
The rules are docs/design.md's ("The cache as shared memory (chapter 12)"), re-implemented here.

Writes tests/data/paged.json:
    /usr/bin/python3 tests/reference/paged.py             # regenerate
    /usr/bin/python3 tests/reference/paged.py --check     # exit 1 naming the first case that differs
    /usr/bin/python3 tests/reference/paged.py --selftest  # hand-checked cases
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "paged.json")

import golden_file  # noqa: E402
import rng  # noqa: E402

MASK64 = (1 << 64) - 1
FIRST_BLOCK_PARENT = 0  # kFirstBlockParent, vLLM's NONE_HASH


def splitmix64_out(x):
    """The C++ splitmix64(x): the OUTPUT of one splitmix64 step from state x."""
    return rng.splitmix64(x & MASK64)[1]


def hash_block_tokens(parent, tokens):
    """h = splitmix64(parent); then h = splitmix64(h XOR t) for each token t, t as 32 unsigned bits."""
    h = splitmix64_out(parent)
    for t in tokens:
        h = splitmix64_out(h ^ (t & 0xFFFFFFFF))
    return h


def hash_full_blocks(tokens, block_size):
    """Block i = tokens[i*b:(i+1)*b]; its hash chains on block i-1's (0 for block 0). Full blocks only."""
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    hashes, parent = [], FIRST_BLOCK_PARENT
    for i in range(len(tokens) // block_size):
        parent = hash_block_tokens(parent, tokens[i * block_size:(i + 1) * block_size])
        hashes.append(parent)
    return hashes


def max_hit_blocks(num_tokens, block_size):
    """The last prompt token is always computed: at most (n - 1) // b whole blocks hit (0 for n = 0)."""
    return max(0, (num_tokens - 1) // block_size)


def prefix_hit_tokens(prompt, cached_sequences, block_size):
    """Prompt block i hits iff one cached sequence holds the FULL block i with the prompt's tokens
    [0, (i+1)*b) up to its end (same tokens after the same prefix). The walk stops at the first
    miss and covers at most max_hit_blocks blocks. Returns the tokens hit (whole blocks)."""
    if block_size < 1:
        raise ValueError("block_size must be at least 1")
    hits = 0
    while hits < max_hit_blocks(len(prompt), block_size):
        end = (hits + 1) * block_size
        if not any(len(s) >= end and list(s[:end]) == list(prompt[:end]) for s in cached_sequences):
            break
        hits += 1
    return hits * block_size


def prefix_hit_tokens_by_hash(prompt, cached_sequences, block_size):
    """The same lookup as a cache does it (self-test only): blocks stored under their chained hash
    with their parent hash and tokens; a hit needs hash, parent and tokens to agree."""
    store = {}
    for s in cached_sequences:
        parent = FIRST_BLOCK_PARENT
        for i, h in enumerate(hash_full_blocks(s, block_size)):
            store.setdefault(h, []).append((parent, list(s[i * block_size:(i + 1) * block_size])))
            parent = h
    hits, parent = 0, FIRST_BLOCK_PARENT
    for i, h in enumerate(hash_full_blocks(prompt, block_size)[:max_hit_blocks(len(prompt), block_size)]):
        if (parent, list(prompt[i * block_size:(i + 1) * block_size])) not in store.get(h, []):
            break
        hits, parent = hits + 1, h
    return hits * block_size


def free_queue_after(queue, table, counts, cached, order):
    """Free a request holding `table`: walk it in REVERSE, decrement each count; the blocks reaching 0
    are released in that order. "lru": all released go to the tail in released order.
    "uncached_first": released blocks with no hash go to the HEAD keeping their released order
    (vLLM's prepend_n: the first released ends up first), cached ones to the tail in released order."""
    if order not in ("lru", "uncached_first"):
        raise ValueError("order must be lru or uncached_first")
    counts = list(counts)
    released = []
    for b in reversed(table):
        assert counts[b] >= 1, "block %d is in the table but has count 0" % b
        counts[b] -= 1
        if counts[b] == 0:
            released.append(b)
    if order == "lru":
        return list(queue) + released
    return [b for b in released if not cached[b]] + list(queue) + [b for b in released if cached[b]]


class Pool:
    """A small block pool, only to draw consistent states for the queue cases: counts, the free queue
    (new blocks from the head, a cached block evicted when taken), cached blocks keyed by their whole
    token prefix, lookup as prefix_hit_tokens, hits touched before new blocks are taken."""

    def __init__(self, num_blocks, block_size, order):
        self.b, self.order = block_size, order
        self.counts = [0] * num_blocks
        self.key = [None] * num_blocks  # a cached block's tokens from the sequence start to its end
        self.queue = list(range(num_blocks))
        self.tables = {}

    def allocate(self, rid, tokens):
        b, hits = self.b, []
        for i in range(max_hit_blocks(len(tokens), b)):
            ids = [j for j, k in enumerate(self.key) if k == tuple(tokens[:(i + 1) * b])]
            if not ids:
                break
            hits.append(ids[0])
        new = -(-len(tokens) // b) - len(hits)
        if len(self.queue) < new + sum(self.counts[h] == 0 for h in hits):
            return False
        for h in hits:  # touch first: a hit waiting in the queue is not taken for this request
            if self.counts[h] == 0:
                self.queue.remove(h)
            self.counts[h] += 1
        taken, self.queue = self.queue[:new], self.queue[new:]
        for j in taken:
            self.key[j], self.counts[j] = None, 1
        table = hits + taken
        for i in range(len(hits), len(tokens) // b):  # cache every block the prompt fills
            self.key[table[i]] = tuple(tokens[:(i + 1) * b])
        self.tables[rid] = table
        return True

    def free(self, rid, name):
        table = self.tables.pop(rid)
        case = {"name": name, "queue": list(self.queue), "table": table, "counts": list(self.counts),
                "cached": [k is not None for k in self.key], "order": self.order}
        case["after"] = free_queue_after(case["queue"], table, case["counts"], case["cached"], self.order)
        self.queue = list(case["after"])
        for j in table:
            self.counts[j] -= 1
        return case


def draw(r, n):
    return r.next_u64() % n


def random_hit_case(r, min_sequences):
    """Tokens 0..2 (prefixes collide often), block size 1..4, the prompt extends a cached prefix."""
    b = 1 + draw(r, 4)
    cached = [[draw(r, 3) for _ in range(draw(r, 13))] for _ in range(min_sequences + draw(r, 4))]
    base = cached[draw(r, len(cached))] if cached else []
    return base[:draw(r, len(base) + 1)] + [draw(r, 3) for _ in range(draw(r, 2 * b + 2))], cached, b


def hash_cases():
    long = rng.Rng(12)
    specs = [
        ("no tokens: no hashes", [], 4),
        ("3 tokens, block size 4: no full block, no hash", [5, 6, 7], 4),
        ("exactly 1 block", [0, 1, 2, 3], 4),
        ("exactly 3 blocks", list(range(10, 22)), 4),
        ("7 tokens at block size 3: 2 hashes, the partial last block has none", [1, 2, 3, 4, 5, 6, 7], 3),
        ("block size 1: one hash per token", [7, 7, 8, 9, 7], 1),
        ("block size 16, 40 tokens: 2 full blocks", list(range(100, 140)), 16),
        ("token id 0 (it still changes the hash)", [0, 0, 0, 0, 0, 0, 0, 0], 4),
        ("token id 50256 (GPT-2's EOS)", [50256, 50256, 50256, 1], 2),
        ("token id 2147483647 (the largest int)", [2147483647, 0, 2147483647, 2147483647], 2),
        ("the same block twice: chained, the hashes differ", [1, 2, 1, 2], 2),
        ("100 tokens from Rng(12) mod 50257, block size 16: 6 full blocks",
         [long.next_u64() % 50257 for _ in range(100)], 16),
    ]
    return [{"name": n, "tokens": t, "block_size": b, "hashes": hash_full_blocks(t, b)} for n, t, b in specs]


def hit_cases():
    r0 = list(range(100, 117))  # vLLM's worked example (block size 4): request 0's 17 tokens
    r1 = list(range(100, 110)) + [200, 201, 202, 203]  # request 1: 14 tokens
    specs = [
        ("no cached sequences", list(range(10)), [], 4),
        ("empty prompt hits 0", [], [list(range(8))], 4),
        ("a prompt shorter than a block", [0, 1, 2], [list(range(8))], 4),
        ("prompt equal to a cached sequence of exactly 3 blocks hits 2 (the last token is computed)",
         list(range(12)), [list(range(12))], 4),
        ("a longer prompt hits all 3 cached blocks", list(range(12)) + [99], [list(range(12))], 4),
        ("prompt ending mid-block inside a cached sequence: whole blocks only", list(range(10)), [list(range(12))], 4),
        ("diverges inside the third block (index 2): blocks 0 and 1 hit",
         list(range(10)) + [99] * 6, [list(range(16))], 4),
        ("a block equal to a cached one after another prefix misses (cached [A,B], prompt [C,B,..])",
         [9, 9, 9, 9, 4, 5, 6, 7, 1], [list(range(8))], 4),
        ("the chain stops at the first miss although block 2 has the cached tokens at index 2",
         [0, 1, 2, 3, 7, 7, 7, 7, 8, 9, 10, 11, 5], [list(range(12))], 4),
        ("a cached sequence's partial block never hits (cached 10 tokens = 2 full blocks)",
         list(range(12)) + [5], [list(range(10))], 4),
        ("two cached sequences share block 0; the prompt follows the second for blocks 1 and 2",
         [0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 17, 30],
         [[0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22, 23], [0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 17]], 4),
        ("a hit needs one sequence to hold the whole prefix: block 2 is only cached after another prefix",
         list(range(12)) + [1], [list(range(8)), [9, 9, 9, 9, 4, 5, 6, 7, 8, 9, 10, 11]], 4),
        ("block size 1: at most len(prompt) - 1 tokens", [5, 6, 7, 8], [[5, 6, 7, 8, 9]], 1),
        ("block size 1, diverging at token 2", [5, 6, 1], [[5, 6, 7]], 1),
        ("block size 3, 7-token prompt inside a cached sequence: 2 blocks", list(range(7)), [list(range(9))], 3),
        ("vLLM worked example, time 4: request 1's 14 tokens after request 0's 17 hit 8", r1, [r0], 4),
        ("vLLM worked example, time 7: request 2's 29 tokens hit 12 (blocks 0, 1, 2)",
         list(range(100, 112)) + list(range(300, 317)), [r0, r1], 4),
    ]
    for seed in range(100, 110):
        prompt, cached, b = random_hit_case(rng.Rng(seed), 1)
        specs.append(("random Rng(%d): tokens 0..2, block size %d" % (seed, b), prompt, cached, b))
    return [{"name": n, "prompt": p, "cached": c, "block_size": b, "hit_tokens": prefix_hit_tokens(p, c, b)}
            for n, p, c, b in specs]


def queue_cases():
    cases = []
    for order in ("lru", "uncached_first"):  # vLLM's docs/design/prefix_caching.md, block size 4
        pool = Pool(10, 4, order)
        assert pool.allocate(0, list(range(100, 117))) and pool.allocate(1, list(range(100, 110)) + [200, 201, 202, 203])
        cases.append(pool.free(0, "vLLM worked example, time 5: request 0 freed, blocks 0 and 1 shared (%s)" % order))
        cases.append(pool.free(1, "vLLM worked example, time 6: request 1 freed (%s)" % order))
    for order in ("lru", "uncached_first"):  # vLLM's test_evict, ids one lower (no null block)
        pool = Pool(10, 16, order)
        assert pool.allocate(0, list(range(87))) and pool.allocate(1, list(range(87, 135)))
        cases.append(pool.free(0, "vLLM test_evict: request 0 (5 full blocks + 1 partial) freed (%s)" % order))
        cases.append(pool.free(1, "vLLM test_evict: then request 1 (3 full blocks) freed (%s)" % order))
    T, F = True, False
    hand = [
        ("a block shared by another request (count 2) does not join", [3], [0, 1, 2], [1, 2, 1, 0], [T, T, F, F]),
        ("an empty queue, a table not in id order", [], [2, 0, 1], [1, 1, 1], [T, F, T]),
        ("a table of one block", [0, 2], [1], [0, 1, 0], [F, T, F]),
        ("every block cached: both orders append at the tail", [4, 5], [3, 0, 2], [1, 1, 1, 1, 0, 0], [T] * 6),
        ("no block cached: uncached_first puts all at the head, first released first",
         [5, 6], [0, 1, 2, 3], [1, 1, 1, 1, 1, 0, 0], [F] * 7),
        ("uncached and cached blocks interleaved in the table", [5], [0, 1, 2, 3, 4], [1, 1, 1, 1, 1, 0],
         [T, F, T, F, F, T]),
        ("every block still shared: nothing joins", [2], [0, 1], [2, 3, 0], [T, F, F]),
    ]
    for name, q, t, c, k in hand:
        for order in ("lru", "uncached_first"):
            cases.append({"name": "%s (%s)" % (name, order), "queue": q, "table": t, "counts": c, "cached": k,
                          "order": order, "after": free_queue_after(q, t, c, k, order)})
    for i, seed in enumerate(range(200, 210)):  # random pools: prompts share prefixes, so blocks are shared
        r = rng.Rng(seed)
        order = ("lru", "uncached_first")[i % 2]
        b = 2 + draw(r, 3)
        pool = Pool(6 + draw(r, 6), b, order)
        bases = [[draw(r, 3) for _ in range(4 * b)] for _ in range(2)]
        frees, next_id = [], 0
        for step in range(14):
            prompt = bases[draw(r, 2)][:draw(r, 3 * b + 1)] + [draw(r, 3) for _ in range(1 + draw(r, b))]
            live = sorted(pool.tables)  # free one 2 times in 5 (or when the pool is full), else admit one
            if (live and draw(r, 5) < 2) or not pool.allocate(next_id, prompt):
                rid = live[draw(r, len(live))]
                frees.append(pool.free(rid, "random Rng(%d): %d blocks of %d, step %d frees request %d (%s)"
                                       % (seed, len(pool.counts), b, step, rid, order)))
            next_id += 1
        shared = [c for c in frees if any(c["counts"][j] >= 2 for j in c["table"])]
        cases.append((shared or frees)[-1])
    for c in cases:  # consistency: the counts say who is free and who is held
        assert all(c["counts"][j] >= 1 for j in c["table"]) and len(set(c["table"])) == len(c["table"])
        assert sorted(c["queue"]) == [j for j, n in enumerate(c["counts"]) if n == 0], c["name"]
        assert len(c["cached"]) == len(c["counts"]) and sorted(c["after"]) == sorted(set(c["after"]))
    return cases


def build():
    return {
        "about": "Chapter 12 (tests/reference/paged.py, an independent Python reference). hashes: the chained "
                 "hashes of the full blocks (hash_block_tokens: h = splitmix64(parent), then h = splitmix64(h ^ "
                 "token's 32 bits); parent 0 for block 0), unsigned 64-bit. hits: tokens of prompt a cache holding "
                 "every full block of the cached sequences hits: whole blocks from the start, stop at the first "
                 "miss, at most (len - 1) // block_size blocks. queues: the free queue (head first) after freeing "
                 "the request holding table (counts before the free): counts drop in reverse table order; blocks "
                 "reaching 0 join the tail (lru) or, when uncached, the head in released order (uncached_first). "
                 "Regenerate with /usr/bin/python3 tests/reference/paged.py; check with --check.",
        "hashes": hash_cases(),
        "hits": hit_cases(),
        "queues": queue_cases(),
    }


SECTIONS = ("hashes", "hits", "queues")


def dump(obj):
    """One case per line, so a change shows as a small diff."""
    lines = ["{", '  "about": %s,' % json.dumps(obj["about"])]
    for k in SECTIONS:
        lines.append("  %s: [" % json.dumps(k))
        lines += ["    " + json.dumps(c) + ("," if i + 1 < len(obj[k]) else "") for i, c in enumerate(obj[k])]
        lines.append("  ]" + ("," if k != SECTIONS[-1] else ""))
    return "\n".join(lines + ["}"]) + "\n"


def first_difference(new, path):
    """A line naming the first case of `new` that the file at `path` lacks or holds differently."""
    try:
        old = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        return "the file cannot be read as JSON (%s)" % e
    for k in SECTIONS:
        olds = old.get(k, []) if isinstance(old, dict) else []
        for i, c in enumerate(new[k]):
            if i >= len(olds) or olds[i] != c:
                return "%s[%d] %r" % (k, i, c["name"])
        if len(olds) != len(new[k]):
            return "%s: %d cases on disk, %d here" % (k, len(olds), len(new[k]))
    return "\"about\" or the layout (every case is the same)"


def selftest():
    assert hash_block_tokens(0, []) == splitmix64_out(0) == 0xE220A8397B1DCDAF
    assert hash_block_tokens(hash_block_tokens(0, [1, 2, 3]), [4, 5, 6]) != hash_block_tokens(0, [4, 5, 6])  # chained
    assert hash_block_tokens(0, [0]) != hash_block_tokens(0, [])  # a token 0 still counts
    assert hash_block_tokens(0, [-1]) == hash_block_tokens(0, [0xFFFFFFFF])  # 32 bits, unsigned
    toks = [1, 2, 3, 4, 5, 6, 7]
    hs = hash_full_blocks(toks, 3)
    assert len(hs) == 2 and hs[0] == hash_block_tokens(0, toks[:3]) and hs[1] == hash_block_tokens(hs[0], toks[3:6])
    assert len(hash_full_blocks(toks[:6], 3)) == 2 and hash_full_blocks(toks[:2], 3) == []
    for f, bad in ((hash_full_blocks, 0), (hash_full_blocks, -1), (prefix_hit_tokens, 0)):
        try:
            f(toks, [], bad) if f is prefix_hit_tokens else f(toks, bad)
            raise AssertionError("block size %d accepted" % bad)
        except ValueError:
            pass
    # the exercise page's examples, block size 4, cached A = 0..9
    A = [list(range(10))]
    assert prefix_hit_tokens(list(range(12)), A, 4) == 8
    assert prefix_hit_tokens(list(range(8)), A, 4) == 4
    assert prefix_hit_tokens([0, 1, 2, 3, 9, 9, 9, 9, 4, 5, 6, 7], A, 4) == 4
    assert prefix_hit_tokens([9, 9, 9, 9, 4, 5, 6, 7, 1], A, 4) == 0
    assert prefix_hit_tokens([], A, 4) == 0
    r0, r1 = list(range(100, 117)), list(range(100, 110)) + [200, 201, 202, 203]
    assert prefix_hit_tokens(r1, [r0], 4) == 8
    assert prefix_hit_tokens(list(range(100, 112)) + list(range(300, 317)), [r0, r1], 4) == 12
    T, F = True, False
    counts = [2, 2, 1, 1, 1, 1, 1, 0, 0, 0]
    cached = [T, T, T, T, F, T, F, F, F, F]
    assert free_queue_after([7, 8, 9], [0, 1, 2, 3, 4], counts, cached, "lru") == [7, 8, 9, 4, 3, 2]
    assert free_queue_after([7, 8, 9], [0, 1, 2, 3, 4], counts, cached, "uncached_first") == [4, 7, 8, 9, 3, 2]
    after6 = free_queue_after([7, 8, 9, 4, 3, 2], [0, 1, 5, 6], [1, 1, 0, 0, 0, 1, 1, 0, 0, 0], cached, "lru")
    assert after6 == [7, 8, 9, 4, 3, 2, 6, 5, 1, 0]
    assert free_queue_after([9], [0, 1, 2], [1, 1, 1] + [0] * 7, [F] * 10, "uncached_first") == [2, 1, 0, 9]
    # the pool reproduces the worked example (time 7: hits touched before taking) and test_evict
    pool = Pool(10, 4, "lru")
    assert pool.allocate(0, r0) and pool.allocate(1, r1) and pool.tables == {0: [0, 1, 2, 3, 4], 1: [0, 1, 5, 6]}
    assert pool.free(0, "")["after"] == [7, 8, 9, 4, 3, 2] and pool.free(1, "")["after"] == after6
    assert pool.allocate(2, list(range(100, 112)) + list(range(300, 317)))
    assert pool.tables[2] == [0, 1, 2, 7, 8, 9, 4, 3] and pool.queue == [6, 5]
    pool = Pool(10, 16, "lru")
    assert pool.allocate(0, list(range(87))) and pool.allocate(1, list(range(87, 135))) and pool.queue == [9]
    pool.free(0, ""), pool.free(1, "")
    assert pool.queue == [9, 5, 4, 3, 2, 1, 0, 8, 7, 6]  # vLLM's [10, 6, 5, 4, 3, 2, 1, 9, 8, 7]
    assert pool.allocate(2, list(range(35))) and pool.tables[2] == [0, 1, 9]  # vLLM's hits [1, 2], new [10]
    # the token-prefix lookup agrees with a hash-based one on 500 random cases (tokens 0..2)
    r, hit = rng.Rng(5), 0
    for _ in range(500):
        prompt, cached, b = random_hit_case(r, 0)
        want = prefix_hit_tokens(prompt, cached, b)
        assert prefix_hit_tokens_by_hash(prompt, cached, b) == want, (prompt, cached, b)
        hit += want > 0
    assert hit > 100, hit  # the random cases do hit
    for c in build()["queues"]:  # every case's answer is a permutation of queue + released blocks
        assert set(c["after"]) >= set(c["queue"]) and len(c["after"]) == len(set(c["after"]))
    print("ok")


def summary(obj):
    return "%d hashes, %d hits, %d queues" % (len(obj["hashes"]), len(obj["hits"]), len(obj["queues"]))


if __name__ == "__main__":
    sys.exit(golden_file.main(sys.argv, OUT, ROOT, build, dump, selftest,
                              lambda obj, path: "differs: " + first_difference(obj, path), summary))
