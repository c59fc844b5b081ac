#!/usr/bin/python3
"""Print a command exactly as README.md prints it: the first fenced code block after the README
line that contains TEXT (the rule the site's `.. readme-code::` directive uses).

    /usr/bin/python3 tools/readme_command.py "## Course site"

tools/run-tests.sh runs the site command it prints, so the README and CI cannot drift apart.
Exits 2, naming the problem, when no line contains TEXT or no fenced block follows it.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_block(text: str, needle: str) -> str:
    """The lines of the first ``` block after the first line containing needle."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if needle in line), None)
    if start is None:
        raise ValueError(f"README.md has no line containing {needle!r}")
    fence = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), None)
    end = next((i for i in range(fence + 1, len(lines)) if lines[i].startswith("```")), None) if fence else None
    if fence is None or end is None:
        raise ValueError(f"README.md has no fenced code block after the line containing {needle!r}")
    return "\n".join(lines[fence + 1:end])


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    try:
        print(readme_block(text, sys.argv[1]))
    except ValueError as e:
        print(f"readme_command: {e}: give a line of README.md that comes right before the block", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
