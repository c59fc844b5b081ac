"""exercises/manifest.json, the list of exercises: load it, select what a command line names, and
map its files to the copy of exercises/ a build uses (like rustlings' info_file.rs)."""
import json
from pathlib import Path

from . import REPO
from .excerpts import short_path


def load(root=REPO):
    """The manifest's exercises, in course order."""
    return json.loads((Path(root) / "exercises" / "manifest.json").read_text(encoding="utf-8"))["exercises"]


def select_exercises(exercises, which):
    """'01', '1', '01-greedy' or '01.2' -> the matching manifest entries (all for None)."""
    if not which:
        return list(exercises)
    which = which.rstrip("/").split("/")[-1]
    which = which.zfill(2) if which.isdigit() else which
    return [e for e in exercises if which in (e["chapter"], e["chapter_dir"], e["id"])]


def selected_chapters(selected):
    """The chapters of these manifest entries, in course order, each once."""
    return list(dict.fromkeys(e["chapter"] for e in selected))


def student_files(files, exercises_dir=None, root=REPO):
    """The manifest's exercises/... paths, as found in exercises_dir when the build uses another
    copy of exercises/ (DECODEBOOK_EXERCISES_DIR)."""
    if not exercises_dir:
        return list(files)
    return [short_path(str(Path(exercises_dir) / f.split("/", 1)[1]), root) if f.startswith("exercises/") else f
            for f in files]
