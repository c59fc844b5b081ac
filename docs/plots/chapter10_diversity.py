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
fig, ax = plt.subplots(figsize=(8, 4.6), constrained_layout=True)
for chapter, label in names.items():
    mine = [r for r in rows if r["chapter"] == chapter]
    if mine:
        ax.scatter([float(r["loss"]) for r in mine], [float(r["distinct_2"]) for r in mine], s=28,
                   color=colours[chapter], label=label, zorder=3)
for r in rows:
    ax.annotate(r["sampler"], (float(r["loss"]), float(r["distinct_2"])), xytext=(4, -3),
                textcoords="offset points", fontsize=6.5, color="0.25")
ax.set_xlabel("model loss of what was written (nats/token, lower: the model finds it likelier)")
ax.set_ylabel("distinct-2 (higher: more varied)")
ax.set_title("Diversity against the model's own judgement, every sampler at its recommended setting", fontsize=10)
ax.grid(color="0.9", linewidth=0.8, zorder=0)
ax.legend(fontsize=8, loc="lower right")
