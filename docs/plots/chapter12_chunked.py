"""Chapter 12, part 5: when each request makes each token, without a token budget and with a
budget of 16, from `chapter-12 --csv` (run while the site is built).

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV has
columns series, x, y (chapters/12-paged-cache/pressure.cpp makes these rows): series
budget_B_request_R for B in off, 16, 64 and R in 0..3 (3 is the long prompt), x = the time on the
chapter's cost clock (a model call costs 4 units plus 1 per token), y = the token's index. The
cost clock makes the plot the same on every machine.
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

BUDGETS = ["off", "16"]
REQUESTS = 4  # three short requests, then the long prompt


def token_times() -> dict:
    series = {}
    for row in chapter_csv("chapter-12"):
        series.setdefault(row["series"], []).append(float(row["x"]))
    return series


series = token_times()
missing = [f"budget_{b}_request_{r}" for b in BUDGETS for r in range(REQUESTS) if not series.get(f"budget_{b}_request_{r}")]
if missing:
    raise RuntimeError(f"chapter-12 --csv wrote no rows for {missing}; if its --csv rows "
                       "(chapters/12-paged-cache/pressure.cpp) changed, update docs/plots/chapter12_chunked.py")

fig, panels = plt.subplots(2, 1, sharex=True, constrained_layout=True, figsize=(7, 4.4))
for panel, budget in zip(panels, BUDGETS):
    for r in range(REQUESTS):
        times = series[f"budget_{budget}_request_{r}"]
        long_prompt = r == REQUESTS - 1
        panel.scatter(times, [r] * len(times), marker="|", s=80, color="C1" if long_prompt else "C0",
                      label=("the long prompt's tokens" if long_prompt else "a running request's tokens")
                      if r >= REQUESTS - 2 else None)
        gaps = [(b - a, a, b) for a, b in zip(times, times[1:])]
        if gaps and not long_prompt:
            width, start, end = max(gaps)
            panel.plot([start, end], [r, r], color="C3", linewidth=2, label="its longest wait" if r == 0 else None)
    title = "no token budget: the prompt's prefill in one call" if budget == "off" else \
        f"a budget of {budget} tokens per step: the prefill in chunks between decodes"
    panel.set_title(title, fontsize=10)
    panel.set_yticks(range(REQUESTS), ["short 1", "short 2", "short 3", "long"])
    panel.invert_yaxis()
panels[-1].set_xlabel("time on the cost clock (4 units per model call, 1 per token computed)")
panels[-1].legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, fontsize=8)  # below: no row is covered
