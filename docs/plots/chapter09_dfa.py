"""Chapter 09: the DFA of part 1's regex, drawn from `chapter-09 --csv` (run while the site is built).

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV has
columns series, x, y, label (chapters/09-constrained/automaton.cpp makes the rows):
  dfa_state: x = state, y = 1 when it accepts, label "start" for the start state;
  dfa_edge: x = from, y = to, label = the bytes of the edge ("'0'", "'1'-'9'").
States are drawn left to right in their order (breadth-first from the start), accepting ones
with a double ring; an edge to a state further right is an arc above, a self-loop a loop above,
and every byte not drawn goes to the dead state, which is left out as on most DFA drawings.
"""

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch

from chapter_csv import chapter_csv

rows = chapter_csv("chapter-09", "--samples", "8")
states = [(int(float(r["x"])), float(r["y"]) > 0, r["label"]) for r in rows if r["series"] == "dfa_state"]
edges = [(int(float(r["x"])), int(float(r["y"])), r["label"].replace("' '", "' ' (space)"))
         for r in rows if r["series"] == "dfa_edge"]
if not states or not edges:
    raise RuntimeError("chapter-09 --csv wrote no dfa_state or dfa_edge rows; if its rows "
                       "(chapters/09-constrained/automaton.cpp) changed, update docs/plots/chapter09_dfa.py")

fig, ax = plt.subplots(figsize=(8, 2.6), constrained_layout=True)
spacing, radius = 2.2, 0.35
pos = {s: (s * spacing, 0.0) for s, _, _ in states}
for s, accepts, label in states:
    x, y = pos[s]
    ax.add_patch(Circle((x, y), radius, fill=False, linewidth=1.5))
    if accepts:
        ax.add_patch(Circle((x, y), radius * 0.8, fill=False, linewidth=1.0))
    ax.text(x, y, str(s), ha="center", va="center", fontsize=12)
    if label == "start":
        ax.annotate("", xy=(x - radius, y), xytext=(x - radius - 0.8, y),
                    arrowprops=dict(arrowstyle="->", linewidth=1.5))
        ax.text(x - radius - 0.85, y + 0.12, "start", ha="right", va="bottom", fontsize=9)
for a, b, label in edges:
    (xa, ya), (xb, yb) = pos[a], pos[b]
    if a == b:
        loop = FancyArrowPatch((xa - 0.2, ya + radius), (xa + 0.2, ya + radius), connectionstyle="arc3,rad=-2.2",
                               arrowstyle="->", mutation_scale=12, linewidth=1.2)
        ax.add_patch(loop)
        ax.text(xa, ya + radius + 0.75, label, ha="center", va="bottom", fontsize=9)
        continue
    rad = -0.35 if abs(b - a) > 1 else 0.0
    arrow = FancyArrowPatch((xa, ya), (xb, yb), connectionstyle=f"arc3,rad={rad}", arrowstyle="->",
                            mutation_scale=14, linewidth=1.2, shrinkA=radius * 72 / 2.2, shrinkB=radius * 72 / 2.2)
    ax.add_patch(arrow)
    lift = 0.18 + (0.55 if rad else 0.0)
    ax.text((xa + xb) / 2, ya + lift, label, ha="center", va="bottom", fontsize=9)
ax.set_xlim(-1.6, max(x for x, _ in pos.values()) + 1.0)
ax.set_ylim(-0.8, 1.6)
ax.set_aspect("equal")
ax.axis("off")
ax.set_title("The DFA of ' (0|[1-9][0-9]*)' (double ring: accepting; every byte not drawn goes to dead)", fontsize=10)
