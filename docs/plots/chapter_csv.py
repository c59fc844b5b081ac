"""The rows a chapter binary writes with `--csv FILE`, for the plots beside this file.

The matplotlib plot directive runs each plot script from this folder, with it on sys.path, so
`from chapter_csv import chapter_csv` works; the binaries are on PATH (docs/conf.py puts the
build folder first).
"""
import csv
import os
import subprocess
import tempfile


def chapter_csv(program: str, *args: str) -> list:
    """Run `program ARGS... --csv FILE` (its text output is discarded) and return FILE's rows as dicts."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.csv")
        subprocess.run([program, *args, "--csv", path], check=True, stdout=subprocess.DEVNULL)
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
