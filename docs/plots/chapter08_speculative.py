"""Chapter 08: Leviathan's predicted speed-up against the measured one for k = 1..8 drafts (greedy,
T = 0.7, T = 1.0), and the cost of one call verifying k drafts, from `chapter-08 --csv` (run while
the site is built).

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV has
columns series, x, y (chapters/08-speculative/speedup.cpp makes the rows):
  predicted_TAG / predicted_verify_TAG / measured_TAG: x = k, y = speed-up over plain cached
  decoding (TAG = greedy, t0.7, t1): Leviathan's formula, the same with the measured verify cost,
  and the wall-clock ratio;
  verify_cost: x = k, y = one call verifying k drafts, in target decode steps;
  acceptance_leviathan / acceptance_sample_and_compare: x = temperature, y = expected acceptance.
Timings are real, so they wobble on a busy machine.
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

series = {}
for row in chapter_csv("chapter-08"):
    series.setdefault(row["series"], []).append((float(row["x"]), float(row["y"])))
needed = [f"{kind}_{tag}" for kind in ("predicted", "predicted_verify", "measured") for tag in ("greedy", "t0.7", "t1")]
needed += ["verify_cost", "acceptance_leviathan", "acceptance_sample_and_compare"]
missing = [name for name in needed if not series.get(name)]
if missing:
    raise RuntimeError(f"chapter-08 --csv wrote no rows for {missing}; if its --csv rows "
                       "(chapters/08-speculative/speedup.cpp) changed, update docs/plots/chapter08_speculative.py")

fig, (left, middle, right) = plt.subplots(1, 3, figsize=(12, 3.8), constrained_layout=True)
for tag, label, color in [("greedy", "greedy", "C0"), ("t0.7", "T = 0.7", "C1"), ("t1", "T = 1.0", "C2")]:
    xs, ys = zip(*series[f"measured_{tag}"])
    left.plot(xs, ys, marker="o", color=color, label=f"{label}: measured")
    xs, ys = zip(*series[f"predicted_{tag}"])
    left.plot(xs, ys, linestyle=":", color=color, label=f"{label}: Leviathan")
    xs, ys = zip(*series[f"predicted_verify_{tag}"])
    left.plot(xs, ys, linestyle="--", color=color, label=f"{label}: + verify cost")
left.axhline(1.0, color="grey", linewidth=0.8)
left.set_xlabel("drafts per round k")
left.set_ylabel("speed-up over plain cached decoding")
left.set_title("Predicted before running, then measured", fontsize=10)
left.legend(fontsize=6, ncol=1)

xs, ys = zip(*series["verify_cost"])
middle.plot(xs, ys, marker="s", color="C3", label="measured")
middle.plot([1, max(xs)], [1, 1], color="grey", linestyle=":", label="free (Leviathan's assumption)")
middle.set_xlabel("drafts verified in one call k")
middle.set_ylabel("cost, in target decode steps")
middle.set_title("One call verifying k drafts", fontsize=10)
middle.set_ylim(bottom=0)
middle.legend(fontsize=8)

for name, label, marker in [("acceptance_leviathan", "Leviathan: sum min(p, q)", "o"),
                            ("acceptance_sample_and_compare", "sample-and-compare: sum p q", "^")]:
    xs, ys = zip(*series[name])
    right.plot(xs, ys, marker=marker, label=label)
right.set_xlabel("temperature (0 = greedy)")
right.set_ylabel("expected acceptance")
right.set_title("Acceptance against temperature", fontsize=10)
right.set_ylim(0, 1)
right.legend(fontsize=8)
