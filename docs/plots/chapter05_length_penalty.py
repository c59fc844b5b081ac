"""Chapter 05: which finished hypothesis wins under each length_penalty, from `chapter-05 --csv`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first); its CSV has the
four hypotheses that beam search (num_beams 4, early_stopping never) returns for each
length_penalty of part 4 (columns: length_penalty, rank, length, sum_logprobs, score,
finish_reason; see write_length_penalty_csv in chapters/05-beam-search/length_penalty.cpp).
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv


def chapter05_rows() -> list:
    return chapter_csv("chapter-05")


rows = chapter05_rows()
penalties = sorted({float(r["length_penalty"]) for r in rows})
if len(penalties) < 2:
    raise RuntimeError("chapter-05 --csv wrote fewer than two length penalties; if write_length_penalty_csv "
                       "(chapters/05-beam-search/length_penalty.cpp) changed, update docs/plots/chapter05_length_penalty.py")

fig, axes = plt.subplots(1, len(penalties), figsize=(9, 3.2), constrained_layout=True, sharex=True, sharey=True)
for ax, lp in zip(axes, penalties):
    mine = [r for r in rows if float(r["length_penalty"]) == lp]
    for r in mine:
        eos = r["finish_reason"] == "eos"
        winner = r["rank"] == "1"
        ax.scatter(int(r["length"]), float(r["sum_logprobs"]), s=90 if winner else 40,
                   marker="*" if winner else "o", color="C0" if eos else "0.5", edgecolor="C3" if winner else "none",
                   zorder=3 if winner else 2)
    ax.set_title(f"length_penalty {lp:g}", fontsize=10)
    ax.set_xlabel("tokens generated")
    ax.grid(alpha=0.3)
axes[0].set_ylabel("sum of log-probabilities")
fig.suptitle("The four returned hypotheses (red-edged star: the winner; blue: ended by EOS, grey: cut by the length limit)", fontsize=10)
