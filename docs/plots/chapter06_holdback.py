"""Chapter 06: what the stream held back after each token of part 5, from `chapter-06 --csv`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first); its CSV has one
row per generated token of part 5 (the fortune cut by the stop "\\n\\t\\t--"), with the text the
stream showed and the text it held back after that token (columns: step, token, shown, held,
held_chars; see write_hold_csv in chapters/06-stop-sequences/fortune.cpp).
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv


def chapter06_rows() -> list:
    return chapter_csv("chapter-06", "--max-new-tokens", "4")


rows = chapter06_rows()
if not rows:
    raise RuntimeError("chapter-06 --csv wrote no rows; if write_hold_csv (chapters/06-stop-sequences/fortune.cpp) "
                       "changed, update docs/plots/chapter06_holdback.py")

steps = [int(r["step"]) for r in rows]
held = [int(r["held_chars"]) for r in rows]
fig, ax = plt.subplots(figsize=(8, 3.6), constrained_layout=True)
ax.bar(steps, held, width=0.8, color="C1")
ax.set_xticks(steps)
ax.set_xticklabels([f'{r["step"]}  {r["token"]}' for r in rows], rotation=90, fontsize=7, family="monospace")
ax.annotate("the stop completes:\nthe held text is dropped", (steps[-1], held[-1]), xytext=(-150, 10),
            textcoords="offset points", fontsize=8, arrowprops={"arrowstyle": "->"})
ax.set_ylim(0, max(max(held), 5) + 2)
ax.set_xlim(min(steps) - 1, max(steps) + 1)
ax.set_ylabel("characters held back")
ax.set_xlabel("step and its token")
ax.set_title("Stop \"\\n\\t\\t--\": the stream holds back only what may still become the stop", fontsize=10)
