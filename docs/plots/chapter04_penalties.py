"""Chapter 04: what each penalty does to the logit of a token that already appeared.

Drawn from the formulas of lib/src/sampling/sampling.cpp (apply_repetition_penalty and
apply_presence_frequency, documented in lib/include/decodebook/sampling/sampling.hpp): theta = 1.5 as in
chapter-04's part 1 and sign trap, presence 0.8 and frequency 0.5 as in its check of exercise 04.2.
"""
import matplotlib.pyplot as plt

THETA, PRESENCE, FREQUENCY = 1.5, 0.8, 0.5
z = [i / 20 for i in range(-80, 81)]  # logits from -4 to 4


def minus(text: str) -> str:
    return text.replace("-", "\u2212")  # a typographic minus, as in the other labels


def ctrl(v: float) -> float:
    return v / THETA if v > 0 else v * THETA  # the sign-aware rule


fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), constrained_layout=True)
left.plot(z, z, color="0.6", linewidth=1, linestyle="--", label="no penalty")
left.plot(z, [ctrl(v) for v in z], color="C0", linewidth=2, label=f"sign-aware: z / {THETA:g} or z · {THETA:g}")
left.plot(z, [v / THETA for v in z], color="C3", linewidth=1.5, linestyle=":", label=f"naive z / {THETA:g} (the bug)")
negative = [v for v in z if v <= 0]
left.fill_between(negative, negative, [v / THETA for v in negative], color="C3", alpha=0.15,
                  label="naive: the repeat gets MORE likely")
left.plot([-2, -2], [-2 * THETA, -2 / THETA], "o", color="black", markersize=4)
left.annotate(minus(f"z = -2 → {-2 * THETA:g}"), (-2, -2 * THETA), xytext=(-1.2, -5.2), fontsize=8,
              arrowprops={"arrowstyle": "->", "linewidth": 0.8})
left.annotate(minus(f"naive: -2 → {-2 / THETA:.2f}"), (-2, -2 / THETA), xytext=(-3.9, 1.2), fontsize=8,
              arrowprops={"arrowstyle": "->", "linewidth": 0.8})
left.axhline(0, color="0.85", linewidth=0.8, zorder=0)
left.axvline(0, color="0.85", linewidth=0.8, zorder=0)
left.set_xlabel("logit z of a token already seen")
left.set_ylabel("logit after the penalty")
left.set_title(f"Repetition penalty θ = {THETA:g} (multiplicative)", fontsize=10)
left.legend(fontsize=7.5, loc="upper left")

counts = list(range(0, 7))
right.plot(counts, [0] + [-(FREQUENCY * c + PRESENCE) for c in counts[1:]], marker="o", color="C2", linewidth=2,
           label=f"presence {PRESENCE:g} + frequency {FREQUENCY:g}")
right.plot(counts, [0] + [-PRESENCE for _ in counts[1:]], marker="s", markersize=4, color="C1", linewidth=1.2,
           linestyle="--", label=f"presence {PRESENCE:g} only (a flat fee)")
right.plot(counts, [-FREQUENCY * c for c in counts], marker="^", markersize=4, color="C4", linewidth=1.2,
           linestyle=":", label=f"frequency {FREQUENCY:g} only (per occurrence)")
right.set_xlabel("times the token already appeared in the output")
right.set_ylabel("change of its logit")
right.set_title("Presence and frequency penalties (additive)", fontsize=10)
right.legend(fontsize=7.5, loc="lower left")
