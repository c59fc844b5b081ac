"""Chapter 03: what top-k, top-p and min-p keep on a peaked and on a flat step, from `chapter-03 --csv`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first); its CSV has the
40 most likely tokens of the peaked and the flat step of part 2, each with a 1/0 flag per filter
(columns: step, rank, id, token, probability, top_k, top_p, min_p, entropy; see write_truncation_csv in
chapters/03-truncation/steps.cpp, which uses top_k 10, top_p 0.9 and min_p 0.1).
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

TOP_K, TOP_P, MIN_P = 10, 0.9, 0.1  # the settings write_truncation_csv uses, for the legend


def chapter03_rows() -> list:
    return chapter_csv("chapter-03", "--max-new-tokens", "4")


rows = chapter03_rows()
steps = {name: [r for r in rows if r["step"] == name] for name in ("peaked", "flat")}
if not all(steps.values()):
    raise RuntimeError("chapter-03 --csv wrote no 'peaked' or no 'flat' rows; if write_truncation_csv "
                       "(chapters/03-truncation/steps.cpp) changed, update docs/plots/chapter03_truncation.py")


def last_kept(step_rows: list, column: str) -> int:
    """The last rank a filter keeps (the filters keep a prefix of the ranks)."""
    return max((int(r["rank"]) for r in step_rows if r[column] == "1"), default=0)


fig, axes = plt.subplots(1, 2, figsize=(8, 3.8), constrained_layout=True, sharey=True)
for ax, (name, step_rows) in zip(axes, steps.items()):
    ranks = [int(r["rank"]) for r in step_rows]
    probs = [float(r["probability"]) for r in step_rows]
    shown = len(ranks)
    ax.bar(ranks, probs, width=0.8, color="0.7")
    k, p = last_kept(step_rows, "top_k"), last_kept(step_rows, "top_p")
    ax.axvline(k + 0.5, color="C0", linewidth=2, label=f"top-k {TOP_K}: keeps ranks 1-{k}")
    kept = "rank 1 only" if p == 1 else f"ranks 1-{p}"
    p_label = f"top-p {TOP_P:g}: keeps {kept}" if p < shown else f"top-p {TOP_P:g}: keeps all {shown} shown, and more"
    ax.axvline(p + 0.5 - (0.25 if p >= shown else 0), color="C3", linewidth=2, linestyle="--", label=p_label)
    threshold = MIN_P * max(probs)
    m = last_kept(step_rows, "min_p")
    m_count = (f"{m} token" if m == 1 else f"{m} tokens") if m < shown else f"all {shown} shown, and more"
    ax.axhline(threshold, color="C2", linewidth=2, linestyle=":",
               label=f"min-p {MIN_P:g}: keeps p ≥ {MIN_P:g}·p_max ({m_count})")
    ax.set_yscale("log")
    ax.set_xlim(0, shown + 1)
    ax.set_xlabel(f"rank of the token (the {shown} most likely)")
    top = step_rows[0]["token"]
    ax.set_title(f"{name} step: top token {top}, p = {probs[0]:.3f}, entropy {float(step_rows[0]['entropy']):.2f} nats",
                 fontsize=9)
    ax.legend(fontsize=7.5, loc="upper right")
axes[0].set_ylabel("probability before truncation (log scale)")
axes[0].set_ylim(top=2.5)  # room for the legends above the bars (probabilities are <= 1)
