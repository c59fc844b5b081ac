"""exercises/manifest.json, the list of exercises: load it, select what a command line names, and
map its files to the copy of exercises/ a build uses (like rustlings' info_file.rs)."""
import json
from pathlib import Path

from . import REPO
from .excerpts import short_path


HINTS_FILE = Path("tools") / "grader" / "hints.json"


def load(root=REPO):
    """The manifest's exercises, in course order, each with its `hint` tiers from the grader's own
    file (tools/grader/hints.json: a hint is earned, so it is not where a student reads contracts)."""
    exercises = json.loads((Path(root) / "exercises" / "manifest.json").read_text(encoding="utf-8"))["exercises"]
    hints = load_hints(root)
    for e in exercises:
        e.setdefault("hint", hints.get(e["id"], []))
    return exercises


def load_hints(root=REPO):
    """{exercise id: its hint tiers}, or {} where the file is missing."""
    try:
        return json.loads((Path(root) / HINTS_FILE).read_text(encoding="utf-8"))["hints"]
    except (OSError, ValueError, KeyError):
        return {}


def select_exercises(exercises, which):
    """'01', '1', '01-greedy' or '01.2', or a list of them ('08 09 10') -> the matching manifest
    entries in course order (all for None or an empty list); [] when any one matches nothing."""
    if not which:
        return list(exercises)
    picked = set()
    for one in [which] if isinstance(which, str) else which:
        one = one.rstrip("/").split("/")[-1]
        one = one.zfill(2) if one.isdigit() else one
        matched = {e["id"] for e in exercises if one in (e["chapter"], e["chapter_dir"], e["id"])}
        if not matched:
            return []
        picked |= matched
    return [e for e in exercises if e["id"] in picked]


def unknown_selections(exercises, which):
    """The words of a command line's selection that match no chapter or exercise."""
    return [one for one in ([which] if isinstance(which, str) else which or [])
            if not select_exercises(exercises, one)]


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
