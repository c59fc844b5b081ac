"""Serving over HTTP: decodebook-serve under open-loop Poisson load, from the recorded run's rows
(docs/plots/data/serve_load.csv, written by `tools/serve_load.py BUILD_DIR --csv FILE`; the page
prints the same run's table). Not measured while the site is built: a load test takes minutes and
its figures depend on the machine, so the page shows one recorded run, as its table says.

Columns: setting ("HTTP, prefix cache on", "in-process, prefix cache off", ...), rate (requests per
second), done, failed, ttft_p50, ttft_p99 (ms), tpot_p50, tpot_p99 (ms), tokens_per_s, goodput
(requests per second within the SLO), hit_rate.
"""
import csv
import os

import matplotlib.pyplot as plt

# The plot directive runs this file without __file__, in the file's own folder (docs/plots).
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else os.getcwd(),
                    "data", "serve_load.csv")

with open(PATH, newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
if not rows:
    raise RuntimeError(f"{PATH} has no rows: write it with tools/serve_load.py BUILD_DIR --csv {PATH}")

settings = list(dict.fromkeys(r["setting"] for r in rows))
fig, (left, right) = plt.subplots(1, 2, sharex=True, constrained_layout=True)
for setting in settings:
    mine = sorted((r for r in rows if r["setting"] == setting), key=lambda r: float(r["rate"]))
    rate = [float(r["rate"]) for r in mine]
    style = {"color": "C0" if setting.endswith("on") else "C3",
             "linestyle": "-" if setting.startswith("HTTP") else "--", "marker": "o", "markersize": 4}
    left.plot(rate, [float(r["tokens_per_s"]) for r in mine], label=setting, **style)
    right.plot(rate, [float(r["ttft_p50"]) for r in mine], label=setting, **style)
left.set_title("throughput", fontsize=10)
left.set_ylabel("tokens per second")
right.set_title("time to first token, median", fontsize=10)
right.set_ylabel("milliseconds")
right.set_yscale("log")
for panel in (left, right):
    panel.set_xscale("log", base=2)
    panel.set_xticks(sorted({float(r["rate"]) for r in rows}))
    panel.get_xaxis().set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    panel.set_xlabel("arrival rate (requests per second)")
left.legend(fontsize=7, loc="upper left")
