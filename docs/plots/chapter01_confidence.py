"""Chapter 01: how sure the model is of each greedy pick, from `chapter-01 --show-steps`.

Runs the chapter binary found on PATH (docs/conf.py puts the build folder first) with the same
settings as the run shown on the page (part 2's long greedy run, at the chapter's default
--max-new-tokens) and reads the first --show-steps table it prints (columns: step, id, token,
logit, prob, ms; see print_steps in lib/src/course/terminal.cpp), and the "Repetition loop" line, to
shade the stretch the cycle covers.

What it shows on the embedded model: the loop does not make greedy more confident. The picks
in the loop are about as unsure as those before it, and the same pattern of probabilities comes
back with every cycle, none of them near 1. The picks get close to 1 only after a shift in the
logits has ended the loop, on the attribution line of a fortune. Greedy repeats because the
argmax repeats, not because the model is sure of it.
"""
import re
import subprocess

import matplotlib.pyplot as plt

ROW = re.compile(r'^\s*(\d+)\s+(\d+)\s+(".*")\s+(-?[\d.]+|-?inf)\s+([\d.]+)\s+([\d.]+)\s*$')

LOOP = re.compile(r"Repetition loop: from new token (\d+) on, a cycle of (\d+) tokens repeats ([\d.]+) times")

# No --max-new-tokens: the plot follows the chapter's default, as the output on the page does.
output = subprocess.run(["chapter-01", "--show-steps"], check=True,
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
                       "(lib/src/course/terminal.cpp) changed its columns, update docs/plots/chapter01_confidence.py")

fig, ax = plt.subplots(constrained_layout=True)
loop = LOOP.search(output)
if loop:  # the stretch the cycle covers: start + repeats * period (repeats is printed rounded)
    start, period, repeats = int(loop.group(1)), int(loop.group(2)), float(loop.group(3))
    ax.axvspan(start - 0.5, start + round(repeats * period) - 0.5, color="tab:orange", alpha=0.15,
               label=f"repetition loop ({period}-token cycle)")
ax.plot(steps, probs, marker=".", markersize=4, linewidth=1)
if loop:
    ax.legend(loc="upper left")
ax.set_xlabel("step (new token number)")
ax.set_ylabel("probability of the greedy pick")
ax.set_ylim(0, 1.02)
ax.set_title(f"One greedy run of {len(steps)} tokens: how sure the model was of each argmax")
