"""Chapter 00's cost of a naive step, drawn from `chapter-00 --csv` (run while the site is built).

The CSV holds every timed forward pass of the chapter's cost measurement (columns: context_length,
run, milliseconds; see write_cost_csv in chapters/00-naive-loop/cost.cpp): five passes at each
context length 16, 32, ..., up to the model's limit. The chapter binary comes from PATH
(docs/conf.py puts the build folder first), so the picture always shows the code you just built.
Timings are real, so single runs wobble on a busy machine; the line goes through the medians.
"""

import statistics

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

PROMPT_TOKENS = 4  # the default prompt, "The best way to"


rows = [{k: float(v) for k, v in r.items()} for r in chapter_csv("chapter-00", "--max-new-tokens", "4")]
lengths = sorted({int(r["context_length"]) for r in rows})
median = {n: statistics.median(r["milliseconds"] for r in rows if int(r["context_length"]) == n) for n in lengths}

# Least-squares line through the medians: the cost per position.
mx, my = statistics.fmean(lengths), statistics.fmean(median.values())
slope = sum((x - mx) * (median[x] - my) for x in lengths) / sum((x - mx) ** 2 for x in lengths)
intercept = my - slope * mx

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
left.scatter([r["context_length"] for r in rows], [r["milliseconds"] for r in rows], s=8, alpha=0.4, label="one forward pass")
left.plot(lengths, [median[n] for n in lengths], "o-", color="C1", markersize=3, label="median of 5")
left.plot([0, lengths[-1]], [intercept, intercept + slope * lengths[-1]], color="C3", linewidth=1,
          label=f"fit: {slope * 1000:.1f} µs per position")
left.set_xlabel("positions computed (context length)")
left.set_ylabel("milliseconds for one step")
left.set_title("A step's cost grows with its context")
left.set_xlim(left=0)
left.set_ylim(bottom=0)
left.legend(loc="upper left", fontsize=8)

# What the whole loop costs: step t computes P + t positions; a step that computed only the new
# position would cost what one position costs at the same context.
n_max = lengths[-1] - PROMPT_TOKENS
ns = list(range(1, n_max + 1))
naive, total = [], 0.0
for t in range(n_max):
    total += intercept + slope * (PROMPT_TOKENS + t)
    naive.append(total / 1000.0)
right.plot(ns, naive, color="C2", label="naive loop: sum of (P + t) positions")
right.set_xlabel("new tokens generated (n)")
right.set_ylabel("seconds in all (from the fit)")
right.set_title("So the whole loop grows like n²")
right.set_ylim(bottom=0)
right.legend(loc="upper left", fontsize=8)
