"""The report ./grade prints: per chapter, ✓/✗ per exercise with why it failed and its hint
tiers, the chapter's score, then the total with a progress bar and what to do next."""
import re
import textwrap

from . import REPO
from .excerpts import describe_failure, short_path
from .hints import hint_tiers
from .manifest import student_files
from .scoring import BUILD_STATES, FORBIDDEN, no_tests_message


def paint(text, style, colour):
    codes = {"green": "32", "red": "31", "yellow": "33", "dim": "2", "bold": "1"}
    return f"\033[{codes[style]}m{text}\033[0m" if colour else text


def progress_bar(done, total, width=20):
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def hint_lines(tiers, shown, colour):
    """The first `shown` tiers, wrapped: "hint: ..." for a one-tier hint, "hint 1 of 3: ..." otherwise."""
    lines = []
    for n, text in enumerate(tiers[:shown], 1):
        label = "hint" if len(tiers) == 1 else f"hint {n} of {len(tiers)}"
        lines += textwrap.wrap(f"{label}: {text}", 96, initial_indent=" " * 6, subsequent_indent=" " * 12,
                               break_long_words=False, break_on_hyphens=False)
    if 0 < shown < len(tiers):
        lines.append(" " * 12 + f"(hint {shown + 1} comes after another failed try with changed code; "
                                "./grade --hints shows all)")
    return [paint(line, "dim", colour) for line in lines]


def exercise_lines(ex, colour, solutions=False, root=REPO, exercises_dir=None, hints=False):
    """The report's lines for one exercise. Its hint only once it was attempted and failed (a stub
    left as it is gets none: the page and the stub come first), its first ex.tier tiers; with
    hints, every tier of every exercise."""
    lines = own_lines(ex, colour, solutions, root, exercises_dir, hints)
    if hints and ex.state not in ("not-started", "fail"):  # --hints: every tier, whatever the state
        lines += hint_lines(hint_tiers(ex.info), len(hint_tiers(ex.info)), colour)
    return lines


def own_lines(ex, colour, solutions, root, exercises_dir, hints):
    """exercise_lines without --hints' tiers for the states that show none of their own."""
    info, state = ex.info, ex.state
    if state == "pass":
        return [f"  {paint('✓', 'green', colour)} {info['id']} {info['title']}"]
    cross = paint("✗", "red", colour)
    if state == "no-tests":
        return [f"  {cross} {info['id']} {info['title']}  " + paint(no_tests_message(ex), "red", colour)]
    if state == "blocked":
        why = f"not graded: {' and '.join(ex.failure.culprits)} {'does' if len(ex.failure.culprits) == 1 else 'do'} not compile"
        return [f"  {cross} {info['id']} {info['title']} " + paint(f"({why})", "yellow", colour)]
    if state == "forbidden":
        return ([f"  {cross} {info['id']} {info['title']} " + paint(f"({FORBIDDEN}: scores 0)", "red", colour)]
                + ["      " + line for line in textwrap.wrap(ex.violation, 92, break_long_words=False)])
    if state in BUILD_STATES:
        own = ex.failure.culprits.get(info["id"], []) if ex.failure.culprits else []
        return ([f"  {cross} {info['id']} {info['title']} " + paint(f"({BUILD_STATES[state]})", "red", colour)]
                + ["      " + line for line in own])
    files = info.get("solution_files", []) if solutions else student_files(info.get("files", []), exercises_dir, root)
    tiers = hint_tiers(info)
    hint = hint_lines(tiers, len(tiers) if hints else ex.tier, colour)
    if state == "not-started":
        return [f"  {cross} {info['id']} {info['title']} " + paint("(not started)", "yellow", colour),
                f"      start in {', '.join(files)}"] + (hint_lines(tiers, len(tiers), colour) if hints else [])
    failed = [t for t in ex.tests if t.outcome != "pass"]
    count = f"  ({len(failed)} of {len(ex.tests)} tests failed)" if len(ex.tests) > 1 else ""
    lines = [f"  {cross} {info['id']} {info['title']}{count}",
             f"      test: {failed[0].name}"]
    why = describe_failure(failed[0], root)
    if why and not re.match(r"^\S+:\d+: FAILED:", why[0]):   # a sentence of the grader's: wrap it at words
        why = textwrap.wrap(why[0], 88, break_long_words=False, break_on_hyphens=False) + why[1:]
    lines += ["        " + line for line in why]
    return lines + hint


def failure_lines(failure, colour, shown=False):
    """A chapter's build failure, shown once under its exercises: the error (unless `shown` under
    the exercise it belongs to), then the verdict."""
    return ([] if shown else ["      " + line for line in failure.lines]) + ["  " + paint(failure.verdict, "red", colour)]


def render_report(exercises, strays=(), colour=False, solutions=False, root=REPO, exercises_dir=None, hints=False):
    """Everything ./grade prints after the tests ran, as one string. exercises_dir: the copy of
    exercises/ that was built, when not the repository's own. hints: every exercise's hint."""
    what = "the worked solutions" if solutions else "your exercises"
    if exercises_dir and not solutions:
        what = f"the exercises in {short_path(str(exercises_dir), root)}"
    out = [paint(f"decodebook: grading {what}", "bold", colour)]
    chapters = {}
    for ex in exercises:
        chapters.setdefault(ex.info["chapter"], []).append(ex)
    for chapter, items in chapters.items():
        out += ["", paint(f"Chapter {chapter}: {items[0].info.get('chapter_title', '')}", "bold", colour)]
        for ex in items:
            out += exercise_lines(ex, colour, solutions, root, exercises_dir, hints)
        failure = next((ex.failure for ex in items if ex.failure), None)
        if failure:
            out += failure_lines(failure, colour, shown=any(ex.state == "does-not-compile" and failure.culprits
                                                            for ex in items))
        passed = sum(ex.state == "pass" for ex in items)
        out.append(f"  chapter {chapter}: {passed}/{len(items)} exercises, "
                   f"{sum(ex.earned for ex in items):g}/{sum(ex.points for ex in items):g} points")
    if strays:
        out += [""] + [paint(f"test '{t.name}' belongs to no exercise in the manifest — tell your "
                             "instructor", "red", colour) for t in strays]
    passed = sum(ex.state == "pass" for ex in exercises)
    earned, total = sum(ex.earned for ex in exercises), sum(ex.points for ex in exercises)
    out += ["", f"{progress_bar(passed, len(exercises))} {passed}/{len(exercises)} exercises, "
                f"{earned:g}/{total:g} points"]
    todo = [ex for ex in exercises if ex.state in ("fail", "not-started", "forbidden", *BUILD_STATES)]
    if todo and todo[0].state == "not-built":
        out.append("next: run ./grade without --no-build")
    elif todo and todo[0].failure and todo[0].failure.culprits:
        out.append(f"next: make {next(iter(todo[0].failure.culprits))} compile (its first error is shown above)")
    elif todo and todo[0].failure:
        out.append(f"next: make chapter {todo[0].info['chapter']} compile (its first error is shown above)")
    elif todo:
        out.append(f"next: {todo[0].info['id']} {todo[0].info['title']}")
    elif passed == len(exercises):
        out.append(paint("every exercise passes", "green", colour))
    return "\n".join(out) + "\n"
