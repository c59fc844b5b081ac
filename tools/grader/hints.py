"""Hint tiers: an exercise's hint as tiers, and how many a failure shows, counted from the distinct
failing versions of its files (source_hash) kept in the build folder's attempts file."""
import contextlib
import hashlib
import json
from pathlib import Path

from . import REPO


ATTEMPTS_FILE = ".grade-attempts.json"


def hint_tiers(info):
    """An exercise's hint as a list of tiers, nudge first. A plain string (older manifests) is one tier."""
    hint = info.get("hint")
    if not hint:
        return []
    return [hint] if isinstance(hint, str) else [h for h in hint if h]


def source_hash(files, root=REPO):
    """A hash of an exercise's files (their names and bytes; a missing file counts as missing)."""
    digest = hashlib.sha256()
    for f in files:
        path = Path(root) / f
        digest.update(f.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\0missing")
        digest.update(b"\0")
    return digest.hexdigest()


def read_attempts(build_dir):
    """{exercise id: {"failed": [hashes of the versions that failed]}} from the build directory."""
    try:
        doc = json.loads((Path(build_dir) / ATTEMPTS_FILE).read_text(encoding="utf-8"))
        return {k: v for k, v in doc.get("exercises", {}).items() if isinstance(v, dict)}
    except (OSError, ValueError, AttributeError):
        return {}


def write_attempts(build_dir, attempts):
    """Save the attempts (best effort: a read-only build directory only loses the tiers)."""
    path = Path(build_dir) / ATTEMPTS_FILE
    with contextlib.suppress(OSError):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"about": "./grade's count of the failing versions of each exercise "
                                            "(hash of its files), for its hint tiers",
                                   "exercises": attempts}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)


def hint_tier(attempts, exercise_id, state, digest, record=True):
    """How many hint tiers a result shows, updating `attempts` (a dict, changed in place): a
    failing version not seen before counts as one more failed try. Tier = the number of distinct
    failing versions (at least 1 for a failure), capped by render time at the number of tiers.
    Only a failure ("fail") counts or shows a hint; record=False (--no-build: the binaries may
    not be of these files) reads the count without adding to it."""
    if state != "fail":
        return 0
    seen = attempts.setdefault(exercise_id, {}).setdefault("failed", [])
    if record and digest not in seen:
        seen.append(digest)
    return max(1, len(seen))
