"""Chapter 11: the surprise of each token of a held-out fortune and the entropy the model had
there, from `chapter-11 --csv`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV (columns
series, x, y, label; see surprise.cpp in chapters/11-logprobs/) has, per token of part 2's fortune,
a row of series "surprise" (-log2 p of the token, bits) and one of series "entropy" (the entropy of
the model's distribution at that position, bits), x the token's position and label its text.
"""
import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

rows = chapter_csv("chapter-11")


def series(name: str) -> tuple:
    points = [(float(r["x"]), float(r["y"]), r["label"]) for r in rows if r["series"] == name]
    if not points:
        raise RuntimeError(f"chapter-11 --csv wrote no '{name}' rows; if surprise.cpp (chapters/11-logprobs/) changed "
                           "its series, update docs/plots/chapter11_surprise.py")
    return [x for x, _, _ in points], [y for _, y, _ in points], [t for _, _, t in points]


x, surprise, tokens = series("surprise")
_, entropy, _ = series("entropy")
fig, ax = plt.subplots(figsize=(9, 3.6), constrained_layout=True)
ax.bar(x, surprise, color="C1", alpha=0.75, label="surprise of the token that came, −log₂ p (bits)")
ax.plot(x, entropy, color="C0", marker="o", markersize=3, linewidth=1.5,
        label="entropy of the model's distribution there (bits): its expected surprise")
ax.set_xticks(x)
ax.set_xticklabels([t.strip('"') for t in tokens], rotation=90, fontsize=7, family="monospace")
ax.set_ylabel("bits")
ax.set_title("A held-out fortune, token by token (the embedded model)", fontsize=10)
ax.set_ylim(0, max(surprise) * 1.3)  # room above the bars for the legend
ax.legend(fontsize=8, loc="upper left", ncol=2)
