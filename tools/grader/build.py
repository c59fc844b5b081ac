"""Building: configure the build folder, build one chapter's test program with the build tool's
keep-going flag, and turn a failed build's log into its BuildFailure (which exercise, which error)."""
import re
from pathlib import Path

from . import REPO
from .excerpts import clip, short_path
from .manifest import student_files
from .runner import run
from .scoring import BuildFailure

ERROR_LINES = 40                   # at most this many lines of configure errors
CHAPTER_ERROR_LINES = 20           # at most this many lines of one chapter's compiler errors


def cache_value(cache_text, name):
    """The value of one CMakeCache.txt entry (NAME:TYPE=value), or None."""
    match = re.search(rf"^{re.escape(name)}:\w+=(.*)$", cache_text, re.M)
    return match.group(1).strip() if match else None


def cache_says_solutions(cache_text):
    return (cache_value(cache_text, "DECODEBOOK_SOLUTIONS") or "").upper() in ("ON", "1", "TRUE", "YES", "Y")


def other_exercises_dir(cache_text, root=REPO):
    """DECODEBOOK_EXERCISES_DIR when it is not <root>/exercises (a copy being graded), else None."""
    value = cache_value(cache_text, "DECODEBOOK_EXERCISES_DIR")
    if not value or Path(value).resolve() == (Path(root) / "exercises").resolve():
        return None
    return Path(value)


def configure(build_dir, solutions, root=REPO):
    """Configure a new build dir, or reconfigure one that is in the other mode. -> error or None.
    root: the source tree to configure (the repository)."""
    cache = build_dir / "CMakeCache.txt"
    if cache.exists() and cache_says_solutions(cache.read_text(errors="replace")) == solutions:
        return None
    flag = f"-DDECODEBOOK_SOLUTIONS={'ON' if solutions else 'OFF'}"
    done = run(["cmake", "-S", str(root), "-B", str(build_dir), flag])
    if done.returncode == 0:
        return None
    return "\n".join(clip(done.stdout.splitlines(), ERROR_LINES) + ["", "cmake could not configure the build"])


def keep_going(build_dir):
    """The native build tool's flag to go on after an error, so every broken file of a chapter
    reports its own error (make -k, ninja -k 0)."""
    cache = Path(build_dir) / "CMakeCache.txt"
    generator = cache_value(cache.read_text(errors="replace"), "CMAKE_GENERATOR") if cache.exists() else ""
    return ["--", "-k", "0"] if "Ninja" in (generator or "") else ["--", "-k"]


def build_chapter(build_dir, chapter, jobs, exercises_dir=None, manifest=()):
    """Build one chapter's test program (exercise_tests_NN) -> None, or its BuildFailure."""
    done = run(["cmake", "--build", str(build_dir), "--target", f"exercise_tests_{chapter}", "-j", str(jobs),
                *keep_going(build_dir)])
    if done.returncode == 0:
        return None
    return chapter_failure(chapter, done.stdout, exercises_dir=exercises_dir, manifest=manifest)


def not_built(build_dir, chapters):
    """--no-build: {chapter: BuildFailure} for the chapters without a test program."""
    return {c: BuildFailure(c, [], kind="not-built") for c in chapters
            if not (Path(build_dir) / f"exercise_tests_{c}").exists()}


def compile_errors(build_output, root=REPO, limit=ERROR_LINES, exercises_dir=None, focus=None):
    """A failed build's log -> (the lines worth showing, whether they mention exercises/ or
    solutions/). Starts at the first error in those files, else at the first error at all.
    exercises_dir: where the stubs were built from when not <root>/exercises (its files count
    as the student's too). focus: a pattern; start at the first error line that matches it."""
    noise = re.compile(r"^(\[\s*\d+%\]|g?make(\[\d+\])?: |ninja: |\[\d+/\d+\] |FAILED: |"
                       r"\S*(c\+\+|g\+\+|clang\+\+) |Scanning dependencies|Consolidate compiler)")
    lines = [short_path(l.rstrip(), root) for l in build_output.splitlines() if l.strip() and not noise.match(l)]
    folders = ["exercises/", "solutions/"]
    if exercises_dir:
        folders.append(short_path(str(exercises_dir).rstrip("/") + "/", root))
    mine = re.compile(r"(^|[\s'\"‘`])(" + "|".join(re.escape(f) for f in folders) + ")")
    error = re.compile(r"\b(fatal )?error:|undefined reference|^/\S*ld: ")
    errors = [i for i, l in enumerate(lines) if error.search(l)]
    start = ([i for i in errors if focus and re.search(focus, lines[i])]
             or [i for i in errors if mine.search(lines[i])] or errors or [0])[0]
    while start > 0 and re.search(r": In |^In file included from|^\s+from ", lines[start - 1]):
        start -= 1                            # keep gcc's "In function ..." context
    return clip(lines[start:], limit), any(mine.search(l) for l in lines)


def chapter_failure(chapter, build_output, root=REPO, exercises_dir=None, limit=CHAPTER_ERROR_LINES,
                    manifest=()):
    """The log of a chapter's failed build -> its BuildFailure (the first error, repo-relative).
    With the manifest, the exercises whose files have an error, or whose your_* function is an
    undefined reference (a signature that differs from exercises.hpp), are named as the culprits,
    each with its own first error."""
    lines, mine = compile_errors(build_output, root, limit, exercises_dir)
    culprits = {}
    log = short_path(build_output, root)
    for ex in manifest:
        files = student_files(ex.get("files", []), exercises_dir, root) + ex.get("solution_files", [])
        by_file = "|".join(re.escape(f) + r":\d+:(\d+:)? (fatal )?error:" for f in files)
        function = ex.get("function")
        by_link = rf"undefined reference to [`'‘](\w+::)*{re.escape(function)}\(" if function else None
        for focus in filter(None, (by_file, by_link)):
            if re.search(focus, log, re.M):
                found, _ = compile_errors(build_output, root, limit, exercises_dir, focus)
                if focus is by_link:
                    found = found[:6] + [f"{function} is declared in lib/include/decodebook/exercises.hpp: its "
                                         f"definition in {', '.join(files[:1])} must take exactly the same "
                                         "parameter types (const, & and all) and return the same type"]
                culprits[ex["id"]] = found
                break
    if culprits:
        lines, mine = next(iter(culprits.values())), True
    return BuildFailure(chapter, lines or ["(the build printed no error)"], mine, culprits=culprits or None)
