"""Chapter 01: how sure the model is of each greedy pick, from `chapter-01 --show-steps`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first) and reads the
first --show-steps table it prints (columns: step, id, token, logit, prob, ms; see
lib/src/report.cpp). A greedy run that falls into a loop usually gets more and more confident.
"""
import re
import subprocess

import matplotlib.pyplot as plt

NEW_TOKENS = 160  # chapter-01's default
ROW = re.compile(r'^\s*(\d+)\s+(\d+)\s+(".*")\s+(-?[\d.]+|-?inf)\s+([\d.]+)\s+([\d.]+)\s*$')

output = subprocess.run(["chapter-01", "--max-new-tokens", str(NEW_TOKENS), "--show-steps"], check=True,
                        capture_output=True, text=True, errors="replace").stdout
steps, probs = [], []
for line in output.splitlines():
    m = ROW.match(line)
    if m:
        step = int(m.group(1))
        if steps and step <= steps[-1]:
            break  # only the first table
        steps.append(step)
        probs.append(float(m.group(5)))
    elif steps:
        break
if not steps:
    raise RuntimeError("no --show-steps table found in chapter-01's output; if print_steps "
                       "(lib/src/report.cpp) changed its columns, update docs/plots/chapter01_confidence.py")

fig, ax = plt.subplots(constrained_layout=True)
ax.plot(steps, probs, marker=".", markersize=4, linewidth=1)
ax.set_xlabel("step (new token number)")
ax.set_ylabel("probability of the greedy pick")
ax.set_ylim(0, 1.02)
ax.set_title(f"One greedy run of {len(steps)} tokens: how sure the model was of each argmax")
