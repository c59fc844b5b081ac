"""Chapter 07: the naive loop against the KV cache, and decode throughput against batch size,
from `chapter-07 --csv` (run while the site is built).

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV has
columns series, x, y (chapters/07-kv-cache/: main.cpp writes it, naive_vs_cached.cpp and batches.cpp
make the rows):
  naive_ms / cached_ms: x = tokens before the step, y = milliseconds of that step (part 1);
  batch_matvec_tokens_per_s / batch_gemm_tokens_per_s: x = batch size, y = decode tokens/s (part 5).
Timings are real, so they wobble on a busy machine.
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

NEW_TOKENS = 200  # the model's context is 256 tokens; the default prompt takes 4


def chapter07_series(new_tokens: int) -> dict:
    series = {}
    for row in chapter_csv("chapter-07", "--max-new-tokens", str(new_tokens)):
        series.setdefault(row["series"], []).append((float(row["x"]), float(row["y"])))
    return series


series = chapter07_series(NEW_TOKENS)
needed = ["naive_ms", "cached_ms", "batch_matvec_tokens_per_s", "batch_gemm_tokens_per_s"]
missing = [name for name in needed if not series.get(name)]
if missing:
    raise RuntimeError(f"chapter-07 --csv wrote no rows for {missing}; if its --csv rows "
                       "(chapters/07-kv-cache/naive_vs_cached.cpp, batches.cpp) changed, "
                       "update docs/plots/chapter07_kv_cache.py")

fig, (left, right) = plt.subplots(1, 2, constrained_layout=True)
for name, label, color in [("naive_ms", "naive loop", "C3"),
                           ("cached_ms", "KV cache", "C0")]:
    xs, ys = zip(*series[name])
    left.scatter(xs, ys, s=7, alpha=0.6, color=color, label=label)
left.set_xlabel("tokens before the step (position)")
left.set_ylabel("milliseconds for the step")
left.set_title(f"Each step of {NEW_TOKENS} new tokens", fontsize=10)
left.set_ylim(bottom=0)
left.legend(loc="upper left", fontsize=8)

for name, label, marker in [("batch_matvec_tokens_per_s", "streaming matvec (Invariant)", "s"),
                            ("batch_gemm_tokens_per_s", "BLAS GEMM", "o")]:
    xs, ys = zip(*series[name])
    right.plot(xs, ys, marker=marker, label=label)
right.set_xscale("log", base=2)
right.set_xticks([1, 2, 4, 8, 16])
right.set_xticklabels(["1", "2", "4", "8", "16"])
right.set_xlabel("batch size")
right.set_ylabel("decode tokens per second")
right.set_title("Decode throughput against batch size", fontsize=10)
right.legend(loc="lower right", fontsize=8)
right.set_ylim(bottom=0)
