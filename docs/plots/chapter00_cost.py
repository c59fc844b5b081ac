"""Chapter 00's per-step cost, drawn from `chapter-00 --csv` (run while the site is built).

The chapter binary comes from PATH (docs/conf.py puts the build folder first), so the picture
always shows the code you just built. Timings are real, so they wobble on a busy machine.
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

NEW_TOKENS = 200  # the model's context is 256 tokens; the default prompt takes 4


def chapter00_steps(new_tokens: int) -> list:
    rows = chapter_csv("chapter-00", "--max-new-tokens", str(new_tokens))
    return [{k: float(v) for k, v in row.items()} for row in rows]


rows = chapter00_steps(NEW_TOKENS)
context = [r["context_length"] for r in rows]
ms = [r["milliseconds"] for r in rows]
total, cumulative = 0.0, []
for m in ms:
    total += m
    cumulative.append(total / 1000.0)

# Least-squares line through (context, ms): the cost per extra token of context.
n = len(rows)
mean_x, mean_y = sum(context) / n, sum(ms) / n
sxx = sum((x - mean_x) ** 2 for x in context)
slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(context, ms)) / sxx if sxx else 0.0
intercept = mean_y - slope * mean_x

fig, (left, right) = plt.subplots(1, 2, constrained_layout=True)
left.scatter(context, ms, s=9, alpha=0.6, label="one step")
left.plot([context[0], context[-1]], [intercept + slope * context[0], intercept + slope * context[-1]],
          color="C3", label=f"fit: {slope * 100:.2f} ms per 100 tokens of context")
left.set_xlabel("tokens fed to the forward pass (context length)")
left.set_ylabel("milliseconds for the step")
left.set_title("Each step re-reads the whole prefix")
left.set_ylim(bottom=0)
left.legend(loc="upper left", fontsize=8)

right.plot(range(1, n + 1), cumulative, color="C2")
right.set_xlabel("new tokens generated")
right.set_ylabel("total seconds so far")
right.set_title("So the total grows like n²")
right.set_ylim(bottom=0)
