#!/usr/bin/python3
"""End-to-end check that a stub which does not compile breaks only its own chapter.

    /usr/bin/python3 tests/course/broken_stub.py --build-dir build-tests [--jobs 2]

Copies exercises/ to a temporary folder, puts a syntax error into the copy's
04-penalties/repetition.cpp, points the (configured) build folder at the copy with
-DDECODEBOOK_EXERCISES_DIR, and checks that
  (a) `cmake --build BUILD --target chapter-00` succeeds and `BUILD/chapter-00 --max-new-tokens 4`
      exits 0;
  (b) `./grade --build-dir BUILD --json FILE` exits 0, reports every other exercise as usual (the
      untouched stubs: "not started"), the exercise whose file is broken (04.1) as not compiling
      with its first error under it, the other exercises of chapter 04 as not graded, and its
      results.json has those as "error" entries scoring 0;
  (c) in the same copy, a 01.1 stub that calls std::exit(0) scores nothing, and a 02.1 stub that
      allocates 50 GB fails alone, within seconds, as out of memory;
  (d) in the same copy, the hostile stubs of tests/course/hostile_stubs.py: every other exercise
      calls the library's answer (directly, through `using`, a macro, a function pointer, an asm
      label, the answer's parts), or is a worked solution that forges the verdict (Catch2's report
      by its path, every open descriptor, a static constructor, killing the test program) or
      reads what it may not (the reference's data, a solution module, a system call through the
      i386 ABI), or answers only the written cases; each scores 0 with a message that says why,
      and grade's check of the compiled objects names the answer of every exercise of the manifest.
Whatever happens, the build folder is reconfigured back to the exercises folder it had (the
repository's exercises/ by default), so it is left configured as it was; its next build relinks
the exercise libraries from there. Only the exercise libraries, chapter-00 and the exercise test
programs are rebuilt (a minute or two on two cores). Exit status 0 when every check passed, 1 when
one failed, 2 when the build folder is not configured.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import hostile_stubs

REPO = Path(__file__).resolve().parents[2]
BROKEN_CHAPTER = "04"
BROKEN_FILE = "04-penalties/repetition.cpp"
INJECTED = "int broken_stub_injected_error = ;  // injected by tests/course/broken_stub.py"
# A second trick in the same copy: a stub that ends the test process with exit code 0 before any
# check ran. Catch2 never reports the case passed, so it must score nothing.
EXITING_ID = "01.1"
EXITING_FILE = "01-greedy/argmax.cpp"
EXITING_LINE = "    std::exit(0);  // injected by tests/course/broken_stub.py"
# A third: a stub that allocates 50 GB. The grader's memory limit turns it into std::bad_alloc at
# once: that exercise fails as out of memory, fast, and nothing else is affected.
HOGGING_ID = "02.1"
HOGGING_FILE = "02-temperature/softmax.cpp"
HOGGING_FUNCTION = "your_softmax("
HOGGING_LINE = "    std::vector<char> huge(50ull << 30); huge[1] = 1;  // injected by tests/course/broken_stub.py"


def run(cmd, **kwargs):
    """Run a command, its stderr folded into its stdout."""
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", **kwargs)


def cache_value(build_dir, name):
    match = re.search(rf"^{re.escape(name)}:\w+=(.*)$", (build_dir / "CMakeCache.txt").read_text(errors="replace"),
                      re.M)
    return match.group(1).strip() if match else None


def reconfigure(build_dir, exercises_dir):
    return run(["cmake", "-S", REPO, "-B", build_dir, f"-DDECODEBOOK_EXERCISES_DIR={exercises_dir}"])


def tail(text, lines=30):
    return "\n".join("    | " + line for line in text.rstrip().splitlines()[-lines:])


class Checks:
    def __init__(self):
        self.passed, self.failed = [], []

    def check(self, ok, what, detail=""):
        (self.passed if ok else self.failed).append(what)
        print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)
        if not ok and detail:
            print(detail, flush=True)
        return ok


def break_stub(copy):
    """Append a line that cannot compile to the copy's stub; -> its line number."""
    path = copy / BROKEN_FILE
    text = path.read_text(encoding="utf-8")
    text = text if text.endswith("\n") else text + "\n"
    path.write_text(text + INJECTED + "\n", encoding="utf-8")
    return len(text.splitlines()) + 1


def exit_in_stub(copy):
    """Make the copy's 01.1 stub call std::exit(0) as its first statement."""
    path = copy / EXITING_FILE
    text = path.read_text(encoding="utf-8")
    body = text.index("{", text.index("your_argmax(")) + 1
    path.write_text("#include <cstdlib>\n" + text[:body] + "\n" + EXITING_LINE + text[body:], encoding="utf-8")


def allocate_in_stub(copy):
    """Make the copy's 02.1 stub allocate 50 GB as its first statement."""
    path = copy / HOGGING_FILE
    text = path.read_text(encoding="utf-8")
    body = text.index("{", text.index(HOGGING_FUNCTION)) + 1
    path.write_text("#include <vector>\n" + text[:body] + "\n" + HOGGING_LINE + text[body:], encoding="utf-8")


def check_chapter_00(checks, build_dir, jobs):
    done = run(["cmake", "--build", build_dir, "--target", "chapter-00", "-j", jobs])
    if not checks.check(done.returncode == 0, "chapter-00 builds while a chapter 04 stub does not compile",
                        tail(done.stdout)):
        return
    ran = run([build_dir / "chapter-00", "--max-new-tokens", "4"], env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    checks.check(ran.returncode == 0, "chapter-00 --max-new-tokens 4 exits 0",
                 f"    exit status {ran.returncode}\n" + tail(ran.stdout))


def section(report, ex_id):
    """The report's lines of one exercise, whitespace folded (Catch2 wraps long messages)."""
    text = report.split(f"  ✗ {ex_id} ", 1)[-1].split("\n  ✗ ", 1)[0].split("\n  chapter ", 1)[0]
    return " ".join(text.split())


def check_object_twins(checks, build_dir, manifest):
    """grade's check of the compiled objects names every exercise's answer (hostile_stubs.OBJECT_TWINS)."""
    found = hostile_stubs.object_twin_findings(load_symbols(), build_dir, manifest)
    for ex in manifest:
        expected = hostile_stubs.OBJECT_TWINS[ex["id"]][1]
        message = found.get(ex["id"], "")
        checks.check(f"calls {expected}" in message and "which is the answer" in message,
                     f"an object calling {ex['id']}'s answer is refused, naming {expected}", f"    found: {message!r}")


def load_symbols():
    """The grader's check of the compiled objects (tools/grader/symbols.py)."""
    sys.path.insert(0, str(REPO / "tools"))
    import grader.symbols
    return grader.symbols


def check_grade(checks, build_dir, jobs, results, line, forged_file):
    manifest = json.loads((REPO / "exercises" / "manifest.json").read_text(encoding="utf-8"))["exercises"]
    done = run([sys.executable, REPO / "grade", "--build-dir", build_dir, "--jobs", jobs, "--json", results])
    report = done.stdout
    lines = report.splitlines()
    failed_before = len(checks.failed)
    checks.check(done.returncode == 0, "./grade exits 0", f"    exit status {done.returncode}")
    broken_id = next(ex["id"] for ex in manifest if f"exercises/{BROKEN_FILE}" in ex["files"])
    for ex in manifest:
        if ex["id"] == broken_id:
            want = f"  ✗ {ex['id']} {ex['title']} (does not compile)"
        elif ex["chapter"] == BROKEN_CHAPTER:
            want = f"  ✗ {ex['id']} {ex['title']} (not graded: {broken_id} does not compile)"
        elif ex["id"] in (EXITING_ID, HOGGING_ID, *hostile_stubs.FORGERIES):
            want = f"  ✗ {ex['id']} {ex['title']}"
            what = {EXITING_ID: "calls exit(0)", HOGGING_ID: "allocates 50 GB"}.get(ex["id"], "forges the verdict")
            checks.check(any(l.startswith(want) and "not started" not in l for l in lines),
                         f"the report says: {want.strip()} (its stub {what})")
            continue
        elif ex["id"] in hostile_stubs.HARD_CODED:
            want = f"  ✗ {ex['id']} {ex['title']}"
            checks.check(any(l.startswith(want) and "not started" not in l for l in lines),
                         f"the report says: {want.strip()} (its stub answers only the written cases)")
            continue
        elif ex["id"] in hostile_stubs.TWIN_CALLS:
            want = f"  ✗ {ex['id']} {ex['title']} (calls a library function it may not: scores 0)"
        else:
            want = f"  ✗ {ex['id']} {ex['title']} (not started)"
        checks.check(want in lines, f"the report says: {want.strip()}")
    greedy = section(report, HOGGING_ID)
    checks.check("ran out of memory (std::bad_alloc)" in greedy,
                 f"{HOGGING_ID}'s failure says it ran out of memory", "    " + greedy[:600])
    exiting = section(report, EXITING_ID)
    checks.check("ended its process with exit() before returning" in exiting,
                 f"{EXITING_ID}'s failure says its code called exit()", "    " + exiting[:600])
    for ex_id, (*_, twin) in hostile_stubs.TWIN_CALLS.items():
        said = section(report, ex_id)
        checks.check(f"calls {twin}, which is the answer: write it yourself" in said,
                     f"{ex_id}'s report names the answer it calls ({twin})", "    " + said[:600])
    for ex_id, (*_, message) in hostile_stubs.FORGERIES.items():
        said = section(report, ex_id)
        checks.check(message in said, f"{ex_id}'s forgery fails, and the report says it {message}",
                     "    " + said[:600])
    checks.check(not forged_file.exists(), "the static constructor of 06.2's forgery wrote nothing",
                 f"    {forged_file} exists")
    chapter = report.split(f"\nChapter {BROKEN_CHAPTER}:", 1)[-1]
    where = re.compile(rf"{re.escape(BROKEN_FILE)}:{line}:\d+: error: ")
    checks.check(any(where.search(l) for l in chapter.splitlines()),
                 f"chapter {BROKEN_CHAPTER} shows the injected error ({BROKEN_FILE}:{line})")
    verdict = (f"  {broken_id} does not compile: fix the first error above (chapter {BROKEN_CHAPTER}'s tests run "
               "once every file they use compiles)")
    checks.check(verdict in lines, f"chapter {BROKEN_CHAPTER} ends with: {verdict.strip()}")
    checks.check(report.count(INJECTED.split(";")[0]) == 1, "the error is shown once")
    if len(checks.failed) > failed_before:
        print("./grade printed:\n" + tail(report, 150), flush=True)
    try:
        doc = json.loads(Path(results).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        checks.check(False, "results.json was written", f"    {error}")
        return
    by_exercise = {}
    for entry in doc.get("tests", []):
        by_exercise.setdefault(entry["exercise"], []).append(entry)
    for ex in manifest:
        entries = by_exercise.get(ex["id"], [])
        if ex["id"] == broken_id:
            ok = ([(e["name"], e["status"], e["score"]) for e in entries] ==
                  [(f"ex{ex['id']} (does not compile)", "error", 0)]
                  and BROKEN_FILE in entries[0].get("message", ""))
            checks.check(ok, f"results.json: ex{ex['id']} is an 'error' entry with the compile error",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
        elif ex["chapter"] == BROKEN_CHAPTER:
            ok = ([(e["name"], e["status"], e["score"]) for e in entries] ==
                  [(f"ex{ex['id']} (not graded)", "error", 0)]
                  and entries[0].get("message", "").startswith(f"not graded: {broken_id} does not compile"))
            checks.check(ok, f"results.json: ex{ex['id']} is a 'not graded' error entry naming {broken_id}",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
        elif ex["id"] == HOGGING_ID:
            ok = bool(entries) and all(e["status"] == "error" and e["score"] == 0 for e in entries)
            checks.check(ok, f"results.json: ex{ex['id']} scores nothing, as errors (out of memory)",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
        elif ex["id"] in (EXITING_ID, *hostile_stubs.FORGERIES):
            ok = (bool(entries) and all(e["score"] == 0 for e in entries)
                  and any(e["status"] != "pass" for e in entries))
            what = "its stub exits with code 0" if ex["id"] == EXITING_ID else "it forges the verdict"
            checks.check(ok, f"results.json: ex{ex['id']} scores nothing although {what}",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
        elif ex["id"] in hostile_stubs.HARD_CODED:
            failed = [e["name"] for e in entries if e["status"] != "pass"]
            ok = (bool(failed) and all("drawn when the test runs" in name for name in failed)
                  and len(failed) < len(entries))
            checks.check(ok, f"results.json: ex{ex['id']} passes its written cases and fails only its drawn ones",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
        elif ex["id"] in hostile_stubs.TWIN_CALLS:
            ok = ([(e["name"], e["status"], e["score"]) for e in entries] ==
                  [(f"ex{ex['id']} (calls a library function it may not)", "error", 0)]
                  and "which is the answer" in entries[0].get("message", ""))
            checks.check(ok, f"results.json: ex{ex['id']} is an 'error' entry scoring 0 that names the answer",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
        else:
            ok = bool(entries) and all(e["name"].startswith(f"ex{ex['id']} ") and "compile" not in e["name"]
                                       for e in entries)
            checks.check(ok, f"results.json: ex{ex['id']} has its tests as usual ({len(entries)})",
                         "    " + json.dumps(entries, ensure_ascii=False)[:600])
    checks.check(doc.get("status") == "fail" and doc.get("score") == 0,
                 "results.json: top-level status 'fail', score 0",
                 f"    status {doc.get('status')!r}, score {doc.get('score')!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", required=True, help="a configured build folder (e.g. build-tests)")
    parser.add_argument("--jobs", type=int, default=2, choices=range(1, 65), metavar="N",
                        help="parallel build jobs (default 2)")
    args = parser.parse_args(argv)
    build_dir = Path(args.build_dir).resolve()
    if not (build_dir / "CMakeCache.txt").exists():
        print(f"broken_stub: {build_dir} is not a configured build folder (run cmake -S . -B {args.build_dir})",
              file=sys.stderr)
        return 2
    original = cache_value(build_dir, "DECODEBOOK_EXERCISES_DIR") or str(REPO / "exercises")
    checks, start, steps = Checks(), time.monotonic(), []
    # a SIGTERM (a CI timeout, kill) still reconfigures the build folder back (the finally below)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    with tempfile.TemporaryDirectory(prefix="decodebook-broken-stub-") as tmp:
        copy = Path(tmp) / "exercises"
        shutil.copytree(REPO / "exercises", copy)
        line = break_stub(copy)
        exit_in_stub(copy)
        allocate_in_stub(copy)
        manifest = json.loads((REPO / "exercises" / "manifest.json").read_text(encoding="utf-8"))["exercises"]
        forged_file = Path(tmp) / "forged-at-load.txt"
        hostile_stubs.write_twin_calls(copy, manifest, build_dir)
        hostile_stubs.write_forgeries(copy, manifest, REPO, forged_file)
        hostile_stubs.write_hard_coded(copy, manifest, REPO)
        hostile_stubs.write_object_twins(copy)
        print(f"broken_stub: {BROKEN_FILE}:{line} of a copy in {copy} does not compile; "
              f"building {build_dir.name} against it", flush=True)
        try:
            step = time.monotonic()
            done = reconfigure(build_dir, copy)
            steps.append(("configure", time.monotonic() - step))
            if checks.check(done.returncode == 0, "the build folder configures with the copy", tail(done.stdout)):
                step = time.monotonic()
                check_chapter_00(checks, build_dir, args.jobs)
                steps.append(("chapter-00", time.monotonic() - step))
                step = time.monotonic()
                check_grade(checks, build_dir, args.jobs, Path(tmp) / "results.json", line, forged_file)
                steps.append(("./grade", time.monotonic() - step))
                check_object_twins(checks, build_dir, manifest)
        finally:
            restored = reconfigure(build_dir, original)
            checks.check(restored.returncode == 0 and cache_value(build_dir, "DECODEBOOK_EXERCISES_DIR") == original,
                         f"the build folder is configured back to {original}", tail(restored.stdout))
    times = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in steps)
    print(f"broken_stub: {time.monotonic() - start:.0f} s ({times})")
    if checks.failed:
        print("FAIL: broken_stub: " + "; ".join(checks.failed))
    else:
        print("PASS: broken_stub: a stub of chapter 04 that does not compile breaks only chapter 04 and is "
              "named, a stub that exits with code 0 scores nothing, one that allocates 50 GB fails alone, and "
              "every stub that calls the library's answer or forges the verdict scores 0")
    print(f"broken_stub: {len(checks.passed)} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
