"""Train the embedded model: a small GPT-2 on the classroom-safe fortunes corpus.

One command, from the repository root, reproducible from the seed (same machine, same thread count):

    /usr/bin/python3 models/training/train_model.py --out models/fortunes-gpt2

It (1) trains the byte-level BPE (models/training/train_tokenizer.py) unless vocab.json/merges.txt exist,
(2) trains GPT-2 (learned positions, pre-LayerNorm, GELU tanh, tied lm_head) with AdamW,
(3) writes model.safetensors (fp16, HF GPT-2 tensor names) and config.json (HF GPT-2 keys), and
(4) measures held-out loss beside a token-bigram baseline and writes training-report.json, which the
model card quotes. Uses Debian's python3-torch; select OpenBLAS for libblas.so.3 (it is ~13x faster
than reference BLAS).
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fortunes_corpus  # noqa: E402
import train_tokenizer  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Tokenizing the corpus (a straightforward BPE encoder; the independent one lives in tests/reference/)

class Encoder:
    def __init__(self, folder: str):
        with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if not l.startswith("#version")]
        self.ranks = {tuple(l.split(" ")): i for i, l in enumerate(lines) if l}
        self.b2u = train_tokenizer.bytes_to_unicode()
        self.cache = {}
        self.eot = self.vocab[fortunes_corpus.EOT]

    def _bpe(self, piece: str) -> list[int]:
        if piece in self.cache:
            return self.cache[piece]
        word = [self.b2u[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            pairs = [(self.ranks.get(p, math.inf), i) for i, p in enumerate(zip(word, word[1:]))]
            rank, i = min(pairs)
            if rank == math.inf:
                break
            word = word[:i] + [word[i] + word[i + 1]] + word[i + 2:]
        ids = [self.vocab[s] for s in word]
        self.cache[piece] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        out = []
        for piece in train_tokenizer.GPT2_PATTERN.findall(text):
            out.extend(self._bpe(piece))
        return out

    def stream(self, docs: list[str]) -> np.ndarray:
        """<|endoftext|> doc <|endoftext|> doc ... <|endoftext|>"""
        ids = [self.eot]
        for d in docs:
            ids.extend(self.encode(d))
            ids.append(self.eot)
        return np.array(ids, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# The model, with Hugging Face GPT-2 parameter names so the file loads as GPT2LMHeadModel would.

class Conv1D(nn.Module):
    """HF's Conv1D: y = x @ W + b with W stored as (in, out)."""

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class Block(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        d = c["n_embd"]
        self.n_head = c["n_head"]
        self.ln_1 = nn.LayerNorm(d, eps=c["layer_norm_epsilon"])
        self.attn = nn.Module()
        self.attn.c_attn = Conv1D(d, 3 * d)
        self.attn.c_proj = Conv1D(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=c["layer_norm_epsilon"])
        self.mlp = nn.Module()
        self.mlp.c_fc = Conv1D(d, 4 * d)
        self.mlp.c_proj = Conv1D(4 * d, d)
        # GPT-2's scaled init of the residual projections
        for proj in (self.attn.c_proj, self.mlp.c_proj):
            nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * c["n_layer"]))
        self.drop = nn.Dropout(c["dropout"])

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.n_head, D // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // self.n_head)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (self.drop(att) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.drop(self.attn.c_proj(y))
        h = F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.drop(self.mlp.c_proj(h))


class GPT2(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.drop = nn.Dropout(c["dropout"])
        self.h = nn.ModuleList(Block(c) for _ in range(c["n_layer"]))
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])

    def forward(self, idx):
        T = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(T)))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T  # tied lm_head


# ---------------------------------------------------------------------------------------------

def write_safetensors(path: str, tensors: dict[str, torch.Tensor]) -> None:
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        blob = tensors[name].detach().to(torch.float16).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F16", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt", "producer": "decodebook models/training/train_model.py"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"  # readers (the reference, the chapters) never see a half-written file
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


@torch.no_grad()
def mean_loss(model, data: np.ndarray, n_ctx: int) -> float:
    """Mean next-token loss (nats) over the whole stream, in non-overlapping windows."""
    model.eval()
    total, count = 0.0, 0
    for s in range(0, len(data) - 1, n_ctx):
        x = torch.from_numpy(data[s:s + n_ctx][None])
        y = torch.from_numpy(data[s + 1:s + n_ctx + 1][None])
        x = x[:, :y.shape[1]]
        logits = model(x)
        total += F.cross_entropy(logits[0], y[0], reduction="sum").item()
        count += y.shape[1]
    model.train()
    return total / count


def bigram_loss(train: np.ndarray, val: np.ndarray, vocab: int) -> tuple[float, float]:
    """Best add-k smoothed token-bigram baseline on the validation stream: (nats/token, k)."""
    counts = np.zeros((vocab, vocab))
    np.add.at(counts, (train[:-1], train[1:]), 1)
    best = (math.inf, 0.0)
    for k in (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0):
        p = (counts + k) / (counts.sum(1, keepdims=True) + k * vocab)
        nll = -np.log(p[val[:-1], val[1:]]).mean()
        best = min(best, (float(nll), k))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=192)
    ap.add_argument("--n-ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--benchmark", action="store_true", help="time 20 steps and stop")
    ap.add_argument("--tokenizer", metavar="DIR",
                    help="copy vocab.json and merges.txt from DIR instead of training them (a draft model "
                         "must share its target's tokenizer)")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.out, exist_ok=True)
    if args.tokenizer:
        for name in ("vocab.json", "merges.txt"):
            shutil.copyfile(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    if not os.path.exists(os.path.join(args.out, "merges.txt")):
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "train_tokenizer.py"),
                        "--out", args.out, "--vocab-size", str(args.vocab_size)], check=True)
    enc = Encoder(args.out)
    train_docs, val_docs = fortunes_corpus.split()
    train_ids, val_ids = enc.stream(train_docs), enc.stream(val_docs)
    val_bytes = sum(len(d.encode("utf-8")) + 1 for d in val_docs)  # +1: the separator
    print(f"tokens: {len(train_ids)} train, {len(val_ids)} validation", flush=True)

    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": len(enc.vocab), "n_positions": args.n_ctx, "n_ctx": args.n_ctx,
        "n_embd": args.n_embd, "n_layer": args.n_layer, "n_head": args.n_head, "n_inner": None,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
        "bos_token_id": enc.eot, "eos_token_id": enc.eot, "tie_word_embeddings": True,
        "resid_pdrop": args.dropout, "embd_pdrop": args.dropout, "attn_pdrop": args.dropout,
        "torch_dtype": "float16",
    }
    if not args.benchmark:  # written first, so a checkpoint is usable while training goes on
        with open(os.path.join(args.out, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
    model = GPT2({**config, "dropout": args.dropout})
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    doc_starts = np.flatnonzero(train_ids[:-1] == enc.eot)
    T, warmup = args.n_ctx, 200
    steps = 20 if args.benchmark else args.steps
    t0, best_val, history = time.time(), math.inf, []
    for step in range(1, steps + 1):
        lr = args.lr * min(step / warmup, 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for g in opt.param_groups:
            g["lr"] = lr
        # half the windows start at a document boundary, so generation from position 0 feels natural
        starts = np.where(rng.random(args.batch) < 0.5,
                          rng.choice(doc_starts, args.batch) + 1,
                          rng.integers(0, len(train_ids) - T - 1, args.batch))
        starts = np.minimum(starts, len(train_ids) - T - 1)
        x = torch.from_numpy(np.stack([train_ids[s:s + T] for s in starts]))
        y = torch.from_numpy(np.stack([train_ids[s + 1:s + T + 1] for s in starts]))
        loss = F.cross_entropy(model(x).view(-1, config["vocab_size"]), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or args.benchmark:
            el = time.time() - t0
            print(f"step {step}/{steps} loss {loss.item():.3f} lr {lr:.2e} "
                  f"{el:.0f}s ({step * args.batch * T / el:.0f} tok/s)", flush=True)
        if step % args.eval_every == 0 or step == steps:
            vl = mean_loss(model, val_ids, T)
            history.append({"step": step, "val_nats_per_token": vl})
            print(f"== step {step}: validation {vl:.4f} nats/token", flush=True)
            if vl < best_val:
                best_val = vl
                write_safetensors(os.path.join(args.out, "model.safetensors"),
                                  {k: v for k, v in model.state_dict().items()})
    if args.benchmark:
        return
    # the shipped file is fp16: measure exactly what ships
    shipped = GPT2({**config, "dropout": 0.0})
    shipped.load_state_dict(load_safetensors_f16(os.path.join(args.out, "model.safetensors")))
    val_nats = mean_loss(shipped, val_ids, T)
    bigram_nats, bigram_k = bigram_loss(train_ids, val_ids, config["vocab_size"])
    n_pred = len(val_ids) - 1
    report = {
        "command": " ".join(["/usr/bin/python3", "models/training/train_model.py", *sys.argv[1:]]),
        "args": vars(args), "parameters": n_params,
        "train_tokens": int(len(train_ids)), "validation_tokens": int(len(val_ids)),
        "validation_bytes": val_bytes,
        "model_nats_per_token": val_nats,
        "model_bits_per_byte": val_nats * n_pred / math.log(2) / val_bytes,
        "bigram_nats_per_token": bigram_nats, "bigram_add_k": bigram_k,
        "bigram_bits_per_byte": bigram_nats * n_pred / math.log(2) / val_bytes,
        "training_seconds": round(time.time() - t0), "history": history,
        "torch": torch.__version__, "threads": args.threads,
    }
    with open(os.path.join(args.out, "training-report.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps({k: v for k, v in report.items() if k != "history"}, indent=2))


def load_safetensors_f16(path: str) -> dict[str, torch.Tensor]:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=np.float16).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float32))
    return out


if __name__ == "__main__":
    main()
