#!/usr/bin/python3
"""Check the course itself, not only the code (run by tools/run-tests.sh and so by CI).

    /usr/bin/python3 tests/course/check_course.py --build-dir build-tests

1. exercises/manifest.json and the tree agree: every file under exercises/ and solutions/ is
   listed, every listed file exists, each stub has a solution at the mirrored path, ids are
   unique and in course order, each chapter folder exists.
2. Every stub carries a `// TODO` that tells the student what to do.
3. Every exercise has tests (Catch2 cases named "exID ...") and every test belongs to an exercise.
4. Every solution passes its exercise's tests (CTest label "course").
5. Every test fails against the untouched stubs (CTest label "student"): a stub that passes is a
   broken exercise. Skipped, with a note, when exercises/ has local changes (a student's work).
Prints "course checks: N passed, M failed" and exits 1 if anything failed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def check(self, ok: bool, what: str, detail: str = "") -> None:
        if ok:
            self.passed += 1
            print(f"  ok    {what}")
        else:
            self.failed += 1
            print(f"  FAIL  {what}" + (f"\n        {detail}" if detail else ""))


def files_under(folder: str) -> set[str]:
    out = set()
    for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
        for n in names:
            out.add(os.path.relpath(os.path.join(dirpath, n), ROOT))
    return out


def check_manifest(c: Checks, manifest: dict) -> None:
    print("manifest and tree:")
    exercises = manifest["exercises"]
    ids = [e["id"] for e in exercises]
    c.check(len(ids) == len(set(ids)), "exercise ids are unique", f"ids: {ids}")
    c.check(ids == sorted(ids, key=lambda i: tuple(map(int, i.split(".")))), "exercises are in course order")
    listed = {f for e in exercises for f in e["files"]}
    listed_solutions = {f for e in exercises for f in e["solution_files"]}
    on_disk = files_under("exercises") - {"exercises/manifest.json", "exercises/README.md"}
    c.check(on_disk <= listed, "every file in exercises/ is in the manifest", f"unlisted: {sorted(on_disk - listed)}")
    c.check(listed <= on_disk, "every manifest file exists in exercises/", f"missing: {sorted(listed - on_disk)}")
    sol_disk = files_under("solutions") - {"solutions/README.md"}
    c.check(sol_disk == listed_solutions, "solutions/ holds exactly the manifest's solution files",
            f"unlisted: {sorted(sol_disk - listed_solutions)}, missing: {sorted(listed_solutions - sol_disk)}")
    for e in exercises:
        mirrored = sorted(f.replace("exercises/", "solutions/", 1) for f in e["files"])
        c.check(mirrored == sorted(e["solution_files"]), f"{e['id']}: each stub has a solution at the same path")
        c.check(os.path.isdir(os.path.join(ROOT, "chapters", e["chapter_dir"])),
                f"{e['id']}: chapter folder chapters/{e['chapter_dir']} exists")
        c.check(bool(e.get("hint")) and e.get("points", 0) > 0, f"{e['id']}: has a hint and points")


def check_todos(c: Checks, manifest: dict) -> None:
    print("stubs:")
    for e in manifest["exercises"]:
        for f in e["files"]:
            path = os.path.join(ROOT, f)
            text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            c.check(re.search(r"//\s*TODO\b", text) is not None, f"{f} has a // TODO")


def test_names(build_dir: str, binary: str) -> list[str]:
    exe = os.path.join(build_dir, binary)  # every binary lands in the build folder itself
    out = subprocess.run([exe, "--list-test-names-only"], capture_output=True, text=True, check=False).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def check_test_names(c: Checks, manifest: dict, build_dir: str) -> None:
    print("tests:")
    ids = {e["id"] for e in manifest["exercises"]}
    names = test_names(build_dir, "exercise_tests")
    c.check(len(names) > 0, "exercise_tests lists its test cases", f"built in {build_dir}?")
    owners = {}
    for n in names:
        m = re.match(r"ex(\d+\.\d+) ", n)
        c.check(m is not None and m.group(1) in ids, f"test '{n}' belongs to a manifest exercise")
        if m:
            owners.setdefault(m.group(1), []).append(n)
    for e in manifest["exercises"]:
        c.check(len(owners.get(e["id"], [])) > 0, f"{e['id']} has tests", "add Catch2 cases named 'ex%s ...'" % e["id"])


def run_ctest(build_dir: str, label: str) -> dict[str, bool]:
    """Run the tests with this label, each in its own process; {test name: passed}."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = os.path.join(tmp, "junit.xml")
        subprocess.run(["ctest", "--test-dir", build_dir, "-L", f"^{label}$", "-j2", "--timeout", "120",
                        "--output-junit", junit], capture_output=True, text=True, check=False)
        if not os.path.exists(junit):
            return {}
        results = {}
        for case in ET.parse(junit).getroot().iter("testcase"):
            results[case.get("name")] = case.get("status") == "run" and case.find("failure") is None
        return results


def exercises_pristine() -> bool:
    out = subprocess.run(["git", "status", "--porcelain", "--", "exercises"], cwd=ROOT, capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.strip() == ""


def check_solutions_and_stubs(c: Checks, build_dir: str) -> None:
    print("solutions (every test must pass):")
    solutions = run_ctest(build_dir, "course")
    c.check(len(solutions) > 0, "solution tests ran")
    for name, ok in sorted(solutions.items()):
        c.check(ok, f"{name} passes", f"see: ctest --test-dir {build_dir} -R '{re.escape(name)}' --output-on-failure")
    print("stubs (every test must fail):")
    if not exercises_pristine():
        print("  skip  exercises/ has local changes (your work?): the stub check runs on a clean checkout")
        return
    stubs = run_ctest(build_dir, "student")
    c.check(len(stubs) == len(solutions), "the stubs are tested by the same tests as the solutions")
    for name, ok in sorted(stubs.items()):
        c.check(not ok, f"{name} fails against the untouched stub",
                "a stub that passes its test is a broken exercise: make the test demand the real answer")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build-tests", help="a build of the default configuration (stubs)")
    args = ap.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    with open(os.path.join(ROOT, "exercises", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    c = Checks()
    check_manifest(c, manifest)
    check_todos(c, manifest)
    check_test_names(c, manifest, build_dir)
    check_solutions_and_stubs(c, build_dir)
    print(f"course checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
