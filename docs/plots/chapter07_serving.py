"""Chapter 07, part 7: the same twelve requests served with static and with continuous batching,
one line per request, from `chapter-07 --csv` (run while the site is built).

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first). Its CSV has
columns series, x, y (chapters/07-kv-cache/serving.cpp makes these rows): for SCHED in static,
continuous, the series serve_SCHED_arrival, _admitted, _first_token and _finished, each with
x = the request's index and y = that moment in milliseconds from the first arrival.
Timings are real, so they wobble on a busy machine.
"""

import matplotlib.pyplot as plt

from chapter_csv import chapter_csv

MOMENTS = ["arrival", "admitted", "first_token", "finished"]
SCHEDULES = ["static", "continuous"]


def serving_series() -> dict:
    series = {}
    for row in chapter_csv("chapter-07"):
        if row["series"].startswith("serve_"):
            series.setdefault(row["series"], {})[int(float(row["x"]))] = float(row["y"])
    return series


series = serving_series()
missing = [f"serve_{s}_{m}" for s in SCHEDULES for m in MOMENTS if not series.get(f"serve_{s}_{m}")]
if missing:
    raise RuntimeError(f"chapter-07 --csv wrote no rows for {missing}; if its --csv rows "
                       "(chapters/07-kv-cache/serving.cpp) changed, update docs/plots/chapter07_serving.py")

fig, panels = plt.subplots(1, 2, sharex=True, sharey=True, constrained_layout=True)
end = max(max(series[f"serve_{s}_finished"].values()) for s in SCHEDULES)
for panel, schedule in zip(panels, SCHEDULES):
    moment = {m: series[f"serve_{schedule}_{m}"] for m in MOMENTS}
    for i in sorted(moment["arrival"]):
        panel.plot([moment["arrival"][i], moment["admitted"][i]], [i, i], color="0.6", linewidth=1.5,
                   label="queued" if i == 0 else None)
        panel.plot([moment["admitted"][i], moment["first_token"][i]], [i, i], color="C1", linewidth=5,
                   solid_capstyle="butt", label="prefill" if i == 0 else None)
        panel.plot([moment["first_token"][i], moment["finished"][i]], [i, i], color="C0", linewidth=5,
                   solid_capstyle="butt", label="decoding" if i == 0 else None)
        panel.scatter([moment["arrival"][i]], [i], marker="|", color="black", s=40,
                      label="arrival" if i == 0 else None)
    last = max(moment["finished"].values())
    panel.axvline(last, color="0.3", linestyle=":", linewidth=1, label="the last token")
    panel.set_title(f"{schedule} batching", fontsize=10)
    panel.set_xlabel("milliseconds from the first arrival")
    panel.set_xlim(0, end * 1.02)
panels[0].set_ylabel("request")
panels[0].invert_yaxis()
panels[1].legend(loc="upper right", fontsize=8)  # early requests end early: that corner stays empty
