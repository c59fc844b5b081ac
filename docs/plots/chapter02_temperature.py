"""Chapter 02: the same next-token distribution at several temperatures, from `chapter-02 --csv`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first); its CSV has the
20 most likely tokens after the default prompt at each temperature (columns: temperature, rank,
id, token, probability; see write_temperature_csv in chapters/02-temperature/distribution.cpp).
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

PROMPT = "The best way to"  # chapter-02's default, passed explicitly because the title names it


def chapter02_rows() -> list:
    return chapter_csv("chapter-02", "--prompt", PROMPT, "--max-new-tokens", "4")


rows = chapter02_rows()
temperatures = sorted({float(r["temperature"]) for r in rows})
if len(temperatures) < 2:
    raise RuntimeError("chapter-02 --csv wrote fewer than two temperatures; if write_temperature_csv "
                       "(chapters/02-temperature/distribution.cpp) changed, update docs/plots/chapter02_temperature.py")
tokens = {int(r["rank"]): r["token"] for r in rows}
ranks = sorted(tokens)

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 4), constrained_layout=True, width_ratios=[2.3, 1])
cold, hot = [t for t in temperatures if t < 1], [t for t in temperatures if t > 1]
# T < 1 in blues (darker: colder), T = 1 black, T > 1 in reds (darker: hotter)
colors = [plt.cm.Blues(0.95 - 0.45 * i / max(1, len(cold) - 1)) for i in range(len(cold))] + \
    (["black"] if 1.0 in temperatures else []) + \
    [plt.cm.Reds(0.5 + 0.45 * i / max(1, len(hot) - 1)) for i in range(len(hot))]
mass = []
for t, color in zip(temperatures, colors):
    p = {int(r["rank"]): float(r["probability"]) for r in rows if float(r["temperature"]) == t}
    left.plot(ranks, [p[k] for k in ranks], marker="o", markersize=3.5, linewidth=1.3, color=color,
              label=f"T = {t:g}" + ("  (the model's own)" if t == 1 else ""))
    mass.append(sum(p.values()))
left.set_xticks(ranks, [tokens[k] for k in ranks], rotation=70, fontsize=8, family="monospace")
left.set_ylabel("probability of the token")
left.set_ylim(bottom=0)
left.set_title(f"The 20 most likely next tokens after \"{PROMPT}\"")
left.legend(fontsize=8)

right.bar([f"{t:g}" for t in temperatures], mass, color=colors)
for i, m in enumerate(mass):
    right.text(i, m + 0.01, f"{m:.2f}", ha="center", fontsize=8)
right.set_xlabel("temperature T")
right.set_ylabel("probability mass of these 20 tokens")
right.set_ylim(0, 1.05)
right.set_title("The rest goes to the tail")
