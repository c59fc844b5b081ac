"""The command line: parse ./grade's arguments, then build, check, run, score and report (main)."""
import argparse
import os
import sys
import time
from pathlib import Path

from . import REPO
from .build import build_chapter, cache_says_solutions, configure, not_built, other_exercises_dir
from .formats import error_junit, gradescope_json, junit_xml, results_json, write_json
from .hints import hint_tier, read_attempts, source_hash, write_attempts
from .manifest import load, select_exercises, selected_chapters, student_files, unknown_selections
from .report import paint, render_report
from .runner import list_tests, run_tests, tests_regex
from .scoring import ExerciseResult, group_by_exercise
from .symbols import check_calls


def positive_int(text):
    """argparse type for --jobs: a whole number of at least 1 (0 would reach cmake as -j 0)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def output_file(text):
    """A report file to write: its folder must exist and be writable (checked before any build,
    so a typo costs nothing and ends with exit status 2, not a traceback after the report)."""
    folder = Path(text).expanduser().resolve().parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"the folder {folder} does not exist: create it or pick another path")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"the folder {folder} is not writable: pick another path")
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file name")
    return text


class Parser(argparse.ArgumentParser):
    """argparse, with the chapters' error style: "error: PROBLEM" and "  fix: ..." on stderr, exit 2."""

    def error(self, message):
        self.exit(2, f"error: {message}\n  fix: see ./grade --help\n")


def parse_args(argv):
    parser = Parser(prog="grade", description="Build and grade the decodebook exercises.")
    parser.add_argument("chapter", nargs="*", help="chapters (01 or 01-greedy) or exercises (01.2), any number: "
                                                   "./grade 08 09 10 (all when none is given)")
    parser.add_argument("--solutions", action="store_true", help="grade the worked solutions")
    parser.add_argument("--build-dir", help="build directory (default: build, or build-solutions)")
    parser.add_argument("--no-build", action="store_true", help="use the existing build as it is")
    parser.add_argument("--jobs", type=positive_int, default=2, help="parallel build and test jobs (default 2)")
    parser.add_argument("--json", metavar="FILE", type=output_file,
                        help="write results.json (exercism v2 statuses, Gradescope scores)")
    parser.add_argument("--gradescope", metavar="FILE", type=output_file, help="write Gradescope's results.json")
    parser.add_argument("--junit", metavar="FILE", type=output_file, help="write JUnit XML")
    parser.add_argument("--hints", action="store_true",
                        help="show every tier of every exercise's hint (by default a failing exercise shows one more "
                             "tier each time a changed version of it fails)")
    return parser.parse_args(argv)


def write_reports(args, doc, junit):
    """Write the files the command line asks for: doc as results.json and in Gradescope's shape,
    junit() as JUnit XML."""
    if args.json:
        write_json(args.json, doc)
    if args.gradescope:
        write_json(args.gradescope, gradescope_json(doc))
    if args.junit:
        Path(args.junit).write_text(junit(), encoding="utf-8")


def give_up(message, args, selected, start):
    """Nothing could be built or run: print why, write it as the result of every selected exercise -> 1."""
    print(message)
    doc = results_json([ExerciseResult(e, []) for e in selected], time.monotonic() - start, message)
    write_reports(args, doc, lambda: error_junit(message))
    return 1


def build_chapters(build_dir, chapters, jobs, exercises_dir, manifest, colour):
    """Build each chapter on its own -> {chapter: BuildFailure} of those that did not build."""
    failures = {}
    for chapter in chapters:             # one at a time: a broken chapter stops only itself
        if colour:
            print(paint(f"building chapter {chapter}...", "dim", colour), end="\r", flush=True)
        failure = build_chapter(build_dir, chapter, jobs, exercises_dir, manifest)
        if failure:
            failures[chapter] = failure
    if colour:
        print(" " * 40, end="\r")
    return failures


def build_or_find(args, build_dir, chapters, manifest, colour):
    """Build the selected chapters, or with --no-build find which are built -> (the copy of
    exercises/ the build uses or None, {chapter: BuildFailure}, None), or (None, None, why not)."""
    cache = build_dir / "CMakeCache.txt"
    if args.no_build:
        return other_exercises_dir(cache.read_text(errors="replace")), not_built(build_dir, chapters), None
    error = configure(build_dir, args.solutions, REPO)
    if error:
        return None, None, error
    exercises_dir = other_exercises_dir(cache.read_text(errors="replace"))
    if exercises_dir and not exercises_dir.is_dir() and not args.solutions:
        return None, None, (f"{build_dir} builds the exercises in {exercises_dir}, which does not exist: run\n"
                            f"  cmake -S {REPO} -B {build_dir} -DDECODEBOOK_EXERCISES_DIR={REPO / 'exercises'}")
    return exercises_dir, build_chapters(build_dir, chapters, args.jobs, exercises_dir, manifest, colour), None


def checked_calls(build_dir, chapters, failures, manifest):
    """{exercise id: message} for the exercises of the built chapters that call what they may not."""
    built_solutions = cache_says_solutions((build_dir / "CMakeCache.txt").read_text(errors="replace"))
    violations = {}
    for chapter in chapters:
        if chapter not in failures:
            violations.update(check_calls(build_dir, chapter, manifest, built_solutions))
    return violations


def count_attempts(build_dir, exercises, exercises_dir, record):
    """The hint tiers: set each exercise's tier, counting this version if it failed (record: keep it)."""
    attempts = read_attempts(build_dir)
    for ex in exercises:
        files = student_files(ex.info.get("files", []), exercises_dir, REPO)
        ex.tier = hint_tier(attempts, ex.info["id"], ex.state, source_hash(files, REPO), record=record)
    if record:
        write_attempts(build_dir, attempts)


def main(argv=None):
    args = parse_args(argv)
    start = time.monotonic()
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    manifest = load(REPO)
    selected = select_exercises(manifest, args.chapter)
    if not selected:
        chapters = sorted({f"{e['chapter']} ({e['chapter_dir']})" for e in manifest})
        unknown = " ".join(f"'{w}'" for w in unknown_selections(manifest, args.chapter))
        print(f"error: no chapter or exercise {unknown}\n  fix: pass chapters ({', '.join(chapters)}) "
              "or exercises such as 01.2", file=sys.stderr)
        return 2
    default = REPO / ("build-solutions" if args.solutions else "build")
    build_dir = Path(args.build_dir).resolve() if args.build_dir else default
    cache = build_dir / "CMakeCache.txt"
    if args.no_build and not cache.exists():
        return give_up(f"--no-build: {build_dir} is not a configured build directory", args, selected, start)
    if args.no_build and cache_says_solutions(cache.read_text(errors="replace")) != args.solutions:
        print(f"note: {build_dir} was built {'without' if args.solutions else 'with'} "
              "DECODEBOOK_SOLUTIONS; grading it as it is")
    chapters = selected_chapters(selected)
    exercises_dir, failures, error = build_or_find(args, build_dir, chapters, manifest, colour)
    if error:
        return give_up(error, args, selected, start)
    if args.solutions:
        exercises_dir = None
    violations = checked_calls(build_dir, chapters, failures, manifest)
    regex = tests_regex(manifest, selected, failures)
    tests = []
    if regex:                                # only the chapters that built: never a stale binary
        specs, listing = list_tests(build_dir, regex)
        tests = run_tests(specs, args.jobs) if specs else []
        if not tests:
            ids = ", ".join(e["id"] for e in selected if e["chapter"] not in failures)
            return give_up(listing.strip() + f"\nno tests ran for {ids}: run ./grade without --no-build;"
                           " if that does not help, tell your instructor", args, selected, start)
    exercises, strays = group_by_exercise(selected, tests, failures, violations)
    if not args.solutions:                   # the hint tiers: count this version if it failed
        count_attempts(build_dir, exercises, exercises_dir, record=not args.no_build)
    print(render_report(exercises, strays, colour, args.solutions, exercises_dir=exercises_dir, hints=args.hints),
          end="")
    doc = results_json(exercises, time.monotonic() - start)
    write_reports(args, doc, lambda: junit_xml(exercises))
    return 0 if regex else 1
