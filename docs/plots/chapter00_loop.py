"""Chapter 00: the decode loop as a diagram, with its stop conditions.

Drawn with matplotlib from this file (no image is pasted into the site), so it changes with the
text below. Each box is one step of generate_naive (lib/src/decoding/naive_loop.cpp); the two diamonds are
the stop rules of decodebook::StopRule.
"""
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Polygon

fig, ax = plt.subplots(figsize=(8.4, 4.4))
ax.set_xlim(0, 100)
ax.set_ylim(0, 56)
ax.axis("off")


def box(x, y, text, w=22, h=8, color="#e8f0fb"):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.4,rounding_size=1.5",
                                facecolor=color, edgecolor="0.3", linewidth=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=8.5)


def diamond(x, y, text, w=22, h=11):
    ax.add_patch(Polygon([(x - w / 2, y), (x, y + h / 2), (x + w / 2, y), (x, y - h / 2)], closed=True,
                         facecolor="#fdf1dc", edgecolor="0.3", linewidth=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=8)


def arrow(a, b, text="", rad=0.0, dx=0.0, dy=1.2):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=11, linewidth=1, color="0.25",
                                 connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((a[0] + b[0]) / 2 + dx, (a[1] + b[1]) / 2 + dy, text, ha="center", fontsize=7.5, color="0.2")


box(12, 46, "prompt ids\n(checked: not empty,\nfits the context)", w=20, h=10, color="#eeeeee")
box(40, 46, "1. forward(sequence)\nlogits (T, V)")
box(68, 46, "2. last row\nnext logits (V)")
box(88, 30, "3. pick\n(argmax, a sample ...)", w=20)
box(68, 14, "4. append the token\nto sequence and output")
diamond(40, 14, "5. token ==\nend-of-text?")
diamond(12, 28, "max_new_tokens\nreached?", w=20)
box(12, 6, "return the new tokens\n(EOS included)", w=20, h=7, color="#e4f4e4")

arrow((22.5, 46), (28.5, 46))
arrow((51.5, 46), (56.5, 46))
arrow((79.5, 46), (88, 35), rad=-0.3)
arrow((88, 25), (79.5, 14), rad=-0.3)
arrow((56.5, 14), (51.5, 14))
arrow((29, 14), (14.5, 24.5), "no", rad=-0.2, dx=-2, dy=-3)
arrow((40, 8.5), (22.5, 6), "yes: stop", rad=-0.2, dx=2, dy=-4)
arrow((12, 33.5), (28.5, 44), "no: next step", rad=-0.3, dx=9, dy=-3)
arrow((12, 22.5), (12, 10), "yes: stop", dx=-5.5, dy=0)
ax.set_title("The decode loop: one token per step, two ways to stop", fontsize=10)
