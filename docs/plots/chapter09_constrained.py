"""Chapter 09: how many of the model's tokens each step allows under the JSON schema (part 2), and
the lengths of sampled outputs with bounded and unbounded JSON whitespace (part 4), from
`chapter-09 --csv` (run while the site is built).

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV has
columns series, x, y, label (chapters/09-constrained/ makes the rows):
  allowed_greedy: x = step of the greedy run under the person schema, y = tokens allowed;
  ws_bounded / ws_unbounded: x = sample, y = tokens it generated (the run's budget is -n, 40: the
  largest length, drawn as a dashed line above the bars).
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

series = {}
for row in chapter_csv("chapter-09"):
    series.setdefault(row["series"], []).append((float(row["x"]), float(row["y"])))
missing = [name for name in ("allowed_greedy", "ws_bounded", "ws_unbounded") if not series.get(name)]
if missing:
    raise RuntimeError(f"chapter-09 --csv wrote no rows for {missing}; if its --csv rows "
                       "(chapters/09-constrained/) changed, update docs/plots/chapter09_constrained.py")

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True)
xs, ys = zip(*series["allowed_greedy"])
left.bar(xs, ys, color="C0")
left.set_yscale("log")
left.axhline(2048, color="grey", linestyle=":", linewidth=0.8)
left.text(16, 2048 * 1.25, "the whole vocabulary (2,048)", fontsize=8, color="grey")
left.set_ylim(top=2048 * 3)
left.set_xlabel("step of the greedy run under the person schema")
left.set_ylabel("tokens allowed (log scale)")
left.set_title("Inside the JSON's syntax one to a few tokens; inside the name almost all", fontsize=10)

budget = max(y for _, y in series["ws_unbounded"] + series["ws_bounded"])
bins = [n - 0.5 for n in range(0, int(budget) + 2)]  # one bar per length, centred on it: a run of the budget is on the line
right.hist([y for _, y in series["ws_bounded"]], bins=bins, alpha=0.7, label="bounded [ \\t\\n\\r]?")
right.hist([y for _, y in series["ws_unbounded"]], bins=bins, alpha=0.7, label="unbounded [ \\t\\n\\r]*")
# drawn above the bars (zorder), so the runs that stopped on the budget show as a bar the line runs through
right.axvline(budget, color="black", linestyle="--", linewidth=1.0, zorder=3)
right.set_xlabel("tokens generated (the budget is the dashed line)")
right.set_ylabel("samples")
right.set_title("JSON whitespace at T = 1.5: bounded ends, unbounded runs away", fontsize=10)
right.legend(fontsize=8)
