"""Chapter 10: mirostat 2.0's mu over a run, and the surprise of each token it drew, from `chapter-10 --csv`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV (columns
series, x, y, label; see mirostat.cpp in chapters/10-other-samplers/) has, for each target tau of
part 3, a series "tau T mu" (mu before each step) and "tau T surprise" (the chosen token's
-log2 p under the distribution mirostat drew from), x the step.
"""
import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

rows = chapter_csv("chapter-10")
taus = sorted({r["series"].rsplit(" ", 1)[0] for r in rows if r["series"].startswith("tau ")}, reverse=True)
if not taus:
    raise RuntimeError("chapter-10 --csv wrote no 'tau ...' rows; if mirostat.cpp (chapters/10-other-samplers/) "
                       "changed its series, update docs/plots/chapter10_mirostat.py")


def series(name: str) -> tuple:
    points = [(float(r["x"]), float(r["y"])) for r in rows if r["series"] == name]
    return [x for x, _ in points], [y for _, y in points]


fig, axes = plt.subplots(1, len(taus), figsize=(8, 3.6), constrained_layout=True, sharey=True)
for ax, tau in zip(axes if len(taus) > 1 else [axes], taus):
    target = float(tau.split()[1])
    steps, mu = series(f"{tau} mu")
    _, surprise = series(f"{tau} surprise")
    running = [sum(surprise[: i + 1]) / (i + 1) for i in range(len(surprise))]
    ax.plot(steps, mu, color="C0", linewidth=2, label="μ (the cut-off, bits)")
    ax.plot(steps, surprise, "o", color="C1", markersize=3, label="surprise of the token drawn")
    ax.plot(steps, running, color="C1", linewidth=1.2, label="its running mean")
    ax.axhline(target, color="0.4", linestyle="--", linewidth=1, label="τ, the target")
    ax.set_xlabel("step")
    ax.set_title(f"mirostat 2.0, τ = {target:g} bits, η = 0.1", fontsize=10)
axes[0].set_ylabel("bits")
# one legend for both panels, under them: inside a panel it covered mu's line
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=4, frameon=False)
fig.set_constrained_layout_pads(h_pad=0.35)
