"""Chapter 10's lab: diversity against quality for every sampler, from `decodebook-diversity --lab true --csv`.

Runs the tool found on PATH (docs/conf.py puts the build folder first). Its CSV (columns sampler,
chapter, distinct_1, distinct_2, rep_4, loss, loops, eos, source; see apps/decodebook_diversity.cpp)
has one row per sampler of the lab, each measured on the same prompts and seeds.
"""
import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

rows = chapter_csv("decodebook-diversity", "--lab", "true")
if not rows:
    raise RuntimeError("decodebook-diversity --lab true --csv wrote no rows; see apps/decodebook_diversity.cpp")

colours = {"01": "0.3", "02": "C3", "03": "C0", "04": "C2", "10": "C1"}
names = {"01": "greedy (ch. 01)", "02": "temperature (ch. 02)", "03": "truncation (ch. 03)",
         "04": "penalties (ch. 04)", "10": "this chapter"}
points = [(float(r["loss"]), float(r["distinct_2"])) for r in rows]

# Left: every sampler; right: the crowded corner of the sampling rows, enlarged. Each point carries
# its row number in the table; the key below names them.
fig = plt.figure(figsize=(8, 6.2), constrained_layout=True)
grid = fig.add_gridspec(2, 2, height_ratios=[3, 1.35])
full, zoom, key = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])
crowd = [i for i, (x, y) in enumerate(points) if y >= 0.95 and x < 4.5]
for ax in (full, zoom):
    for chapter, label in names.items():
        mine = [i for i, r in enumerate(rows) if r["chapter"] == chapter]
        ax.scatter([points[i][0] for i in mine], [points[i][1] for i in mine], s=24, color=colours[chapter],
                   label=label, zorder=3)
    ax.grid(color="0.9", linewidth=0.8, zorder=0)
    ax.set_xlabel("model loss (nats/token; left: likelier)")
for i, (x, y) in enumerate(points):
    if i not in crowd:
        full.annotate(str(i + 1), (x, y), xytext=(4, 2), textcoords="offset points", fontsize=7)
    else:
        zoom.annotate(str(i + 1), (x, y), xytext=(3, 2), textcoords="offset points", fontsize=7)
xs, ys = [points[i][0] for i in crowd], [points[i][1] for i in crowd]
if crowd:
    pad_x, pad_y = 0.08, 0.004
    box = (min(xs) - pad_x, max(xs) + pad_x, min(ys) - pad_y, max(ys) + pad_y)
    zoom.set_xlim(box[0], box[1])
    zoom.set_ylim(box[2], box[3])
    full.add_patch(plt.Rectangle((box[0], box[2]), box[1] - box[0], box[3] - box[2], fill=False,
                                 edgecolor="0.5", linestyle="--", linewidth=0.8))
full.set_ylabel("distinct-2 (up: more varied)")
full.set_title("every sampler of the lab", fontsize=10)
zoom.set_title("the dashed box, enlarged", fontsize=10)
full.legend(fontsize=7, loc="lower right")
key.axis("off")
columns = 3
per_column = -(-len(rows) // columns)
for i, r in enumerate(rows):
    key.text((i // per_column) / columns, 1 - (i % per_column) / per_column, f"{i + 1:2d}  {r['sampler']}",
             fontsize=7.5, color=colours.get(r["chapter"], "black"), va="top", transform=key.transAxes)
