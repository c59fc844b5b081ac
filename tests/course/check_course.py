#!/usr/bin/python3
"""Check the course itself, not only the code (run by tools/run-tests.sh and so by CI).

    /usr/bin/python3 tests/course/check_course.py --build-dir build-tests
    /usr/bin/python3 tests/course/check_course.py --no-build     # checks 1-3, 7-10 and 12 only, no build needed

1. exercises/manifest.json and the tree agree: every file under exercises/ and solutions/ is
   listed, every listed file exists, each stub has a solution at the mirrored path, ids are
   unique and in course order, each chapter folder exists.
2. Every stub carries a `// TODO` that tells the student what to do.
3. Site markers: the course site shows library code through `.. literalinclude::` with
   `:start-after: // [chNN:name]` and `:end-before: // [/chNN:name]`. Every included file exists
   and holds each marker it is cut at exactly once; every `// [chNN:name]` in the code (lib/,
   chapters/, apps/, exercises/, solutions/) has its `// [/chNN:name]` after it, and some page
   uses the pair. Problems are named by file:line.
4. Every exercise has tests (Catch2 cases named "exID ...", listed by the exercise_tests_NN
   binaries in the build folder) and every test belongs to an exercise.
5. Every solution passes its exercise's tests (CTest label "course"), run as ./grade runs them
   (its runner, under its limits) while two other CPU-bound jobs run, each with at least 5 times headroom under the CPU-time limit
   ./grade gives it (the floor, or 10 times the time recorded in tests/course/test_seconds.json,
   which --record-seconds writes from the run), and every solution's compiled objects call only
   the library functions its manifest entry may use (./grade's check_calls, tools/grader/symbols.py: the rule that scores
   a stub calling the library's answer 0 must never catch a worked answer).
6. Every test fails against the untouched stubs (CTest label "student"): a stub that passes is a
   broken exercise. Skipped, with a note, when exercises/ has local changes (a student's work).
7. Every stub, filled in with its worked answer, compiles (no build needed, only a compiler): the
   stub's #include lines plus the solution's code, compiled without the build's precompiled
   header, which would hide a missing #include that a student following the hint then needs.
8. The library's layering (docs/design.md, "The library in wings"): every header and source of
   lib/ lives in a wing (lib/include/decodebook/<wing>/, lib/src/<wing>/; only exercises.hpp sits
   above them), and each wing includes only what it may: base/ nothing above it; model/,
   sampling/ and constrain/ only base/ and themselves; decoding/ everything but course/ and
   exercises.hpp. `--layering` runs this check alone (the build runs it: target check_layering).
9. No page shows an exercise's answer before the exercise: a literalinclude of library code that
   overlaps a function the manifest's `answer` names (a twin, not a `Class::*` guard) and comes
   before that exercise's `.. exercise::` (above it on its page, or on any earlier chapter's page:
   every page is checked against every exercise) must be folded under `.. details::`.
10. The `docs` target (docs/CMakeLists.txt) depends on every program a page's command-output or
   a plot's chapter_csv runs, so the README's site command works in a fresh build folder.
11. Every number of 10 or more, or with a decimal point, in the prose of a re-read chapter page
   (NUMBER_PAGES: every chapter page; its paragraphs, lists and quiz, not its code, output or math) is printed by a
   program the page runs (run here from the build folder), or is a fact listed with its reason in
   NUMBER_FACTS: a page cannot state a figure its binary does not print (issue 25).
12. A quiz cannot be passed by picking the longest answer (issue 41 item 5): on each chapter page,
   the longest option (strictly) is the right one in at most half of its questions, and in at most
   a quarter of them is any option more than twice as long as the shortest. Options are measured
   in characters of their text as written (inline markup included).
13. Every flag a program offers changes what it prints, or is refused (issue 41 item 1): each
   chapter-NN, and decodebook-generate and decodebook-score for their options beyond the knob table
   (they take every knob for their one run), is run with each flag of its `--help` at a value
   that is not its default (FLAG_VALUES, with the companions a flag needs to act) and fails when
   it exits 0 and prints what the run without the flag prints, timings masked and the lines that
   differ between two runs without it (measured speeds) dropped. A flag refused with exit 2 and a
   message passes. `--threads`, `--blas` and `--verbose` are exempt: they change speed or notes
   on standard error, never the text. `--flags` runs this check alone.
Prints "course checks: N passed, M failed" and exits 1 if anything failed.
The site-marker rules have their own tests: /usr/bin/python3 tests/course/test_check_course.py
"""
import argparse
import contextlib
import glob
import json
import math
import os
import posixpath
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

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
    with open(os.path.join(ROOT, "tools", "grader", "hints.json"), encoding="utf-8") as f:
        hints = json.load(f)["hints"]
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
        c.check(e.get("points", 0) > 0, f"{e['id']}: has points")
        c.check("hint" not in e, f"{e['id']}: its hint is not in the manifest (a hint is earned: tools/grader/hints.json)")
        check_hint_tiers(c, dict(e, hint=hints.get(e["id"])))
    c.check(set(hints) == set(ids), "tools/grader/hints.json has a hint for every exercise and no other",
            f"without: {sorted(set(ids) - set(hints))}, unknown: {sorted(set(hints) - set(ids))}")


# What C++ looks like in a sentence: a nudge (a hint's first tier) says what to look at, never the code.
CODE_MARKS = ("::", ");", "{", "}", "==", "!=", "+=", "->", "[i]", "your_")


def check_hint_tiers(c: Checks, e: dict) -> None:
    """An exercise's hint is 2 or 3 tiers (./grade shows one more after each changed failing try),
    each a sentence; the first, a nudge, holds no code: no C++ syntax and no line of the solution."""
    tiers = e.get("hint")
    c.check(isinstance(tiers, list) and 2 <= len(tiers) <= 3 and all(isinstance(t, str) and t.strip() for t in tiers),
            f"{e['id']}: its hint is 2 or 3 tiers of text", f"hint: {tiers!r}")
    if not isinstance(tiers, list) or not tiers or not isinstance(tiers[0], str):
        return
    marks = [m for m in CODE_MARKS if m in tiers[0]]
    lines = set()
    for f in e.get("solution_files", []):
        with open(os.path.join(ROOT, f), encoding="utf-8") as source:
            lines |= {l.strip() for l in source if len(l.strip()) >= 8 and not l.strip().startswith("//")}
    quoted = sorted(l for l in lines if l in tiers[0])
    c.check(not marks and not quoted, f"{e['id']}: the hint's first tier is a nudge, without code",
            f"code marks {marks}, solution lines {quoted}")


def check_todos(c: Checks, manifest: dict) -> None:
    print("stubs:")
    for e in manifest["exercises"]:
        for f in e["files"]:
            path = os.path.join(ROOT, f)
            text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
            c.check(re.search(r"//\s*TODO\b", text) is not None, f"{f} has a // TODO")


# ---------------------------------------------------------------------- stub includes (a compiler)

INCLUDE_LINE = re.compile(r"^\s*#\s*include\b.*$", re.M)


def answer_in_stub(stub: str, solution: str) -> str:
    """The worked answer as the student would write it: the stub's #include lines (and nothing
    else of the stub), then the solution's code without its own #include lines."""
    return "\n".join(INCLUDE_LINE.findall(stub)) + "\n#line 1 \"answer\"\n" + INCLUDE_LINE.sub("", solution)


def compile_answer(source: str, compiler: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "answer.cpp")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        done = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", "-I", os.path.join(ROOT, "lib", "include"),
                               path], capture_output=True, text=True)
    return done.returncode == 0, done.stderr


def check_stub_includes(c: Checks, manifest: dict, compiler: str = "c++") -> None:
    """7. Every stub, filled in with its worked answer, compiles: the stub includes what the answer
    (and so the hint) needs. Compiled without the build's precompiled header, which would hide a
    missing #include: a student who follows the hint ('use xt::view') must not need to guess one."""
    print("stubs filled in with their worked answer compile (no precompiled header):")
    pairs = [(e["id"], stub, sol) for e in manifest["exercises"]
             for stub, sol in zip(sorted(e["files"]), sorted(e["solution_files"]))
             if os.path.exists(os.path.join(ROOT, stub)) and os.path.exists(os.path.join(ROOT, sol))]

    def one(pair):
        _, stub, sol = pair
        read = lambda rel: open(os.path.join(ROOT, rel), encoding="utf-8").read()
        return compile_answer(answer_in_stub(read(stub), read(sol)), compiler)

    with ThreadPoolExecutor(2) as pool:
        for (ex_id, stub, sol), (ok, errors) in zip(pairs, pool.map(one, pairs)):
            first = next((l for l in errors.splitlines() if "error:" in l), errors.strip()[:300])
            c.check(ok, f"{ex_id}: {sol} compiles with the #includes of {stub}",
                    f"{first}\n        add the #include it needs to {stub}")


# --------------------------------------------------------------------------------------- layering

# Which wings each wing's files may include (itself always). Anything else is a layering error.
WINGS = {
    "base": set(),
    "model": {"base"},
    "sampling": {"base"},
    "constrain": {"base"},
    "decoding": {"base", "model", "sampling", "constrain"},
    "course": {"base", "model", "sampling", "constrain", "decoding", "exercises.hpp"},
}
LIB_INCLUDE = re.compile(r'^\s*#\s*include\s*"decodebook/([^"]+)"', re.M)


def layering_problems(files: dict[str, str]) -> list[str]:
    """8. Layering problems in `files` (repo-relative path -> text, the files under lib/), each as
    "path:line: ..." naming the rule and the fix."""
    problems = []
    for path, text in sorted(files.items()):
        parts = path.split("/")
        if parts[:3] == ["lib", "include", "decodebook"]:
            rest = parts[3:]
        elif parts[:2] == ["lib", "src"]:
            rest = parts[2:]
        else:
            continue
        if not path.endswith((".hpp", ".cpp")):
            continue
        if rest == ["exercises.hpp"]:
            wing = "exercises.hpp"
        elif len(rest) < 2 or rest[0] not in WINGS:
            problems.append(f"{path}: is in no wing: move it into one of "
                            f"{', '.join(w + '/' for w in WINGS)} (docs/design.md, \"The library in wings\")")
            continue
        else:
            wing = rest[0]
        allowed = {wing} | WINGS.get(wing, set(WINGS) | {"exercises.hpp"})
        for m in LIB_INCLUDE.finditer(text):
            target = m.group(1)
            to = target.split("/")[0] if "/" in target else target
            if to not in allowed:
                line = text.count("\n", 0, m.start()) + 1
                may = ", ".join(sorted(w + ("/" if w in WINGS else "") for w in allowed - {wing})) or "nothing"
                problems.append(f"{path}:{line}: {wing}/ includes decodebook/{target}, but {wing}/ may include "
                                f"only itself and {may}: move the code it needs down a layer, or this code up")
    return problems


def check_layering(c: Checks) -> None:
    print("the library's layering:")
    files = {}
    for dirpath, _, names in os.walk(os.path.join(ROOT, "lib")):
        for n in names:
            rel = os.path.relpath(os.path.join(dirpath, n), ROOT).replace(os.sep, "/")
            if rel.endswith((".hpp", ".cpp")):
                with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
                    files[rel] = f.read()
    problems = layering_problems(files)
    if not problems:
        c.check(True, f"{len(files)} files of lib/ in wings, each including only what its wing may")
    for p in problems:
        c.check(False, p)


# ------------------------------------------------------------------------------------ site markers

CODE_DIRS = ("lib", "chapters", "apps", "exercises", "solutions")
CODE_EXTS = (".cpp", ".hpp")
DOCS = "docs"
MARKER = re.compile(r"//\s*\[(/?)(ch\d\d:[^\]\s]+)\]")
INCLUDE = re.compile(r"^(\s*)\.\.\s+literalinclude::\s*(\S.*?)\s*$")
OPTION = re.compile(r"^(\s+):([\w-]+):\s*(.*?)\s*$")
START_OPTIONS, END_OPTIONS = ("start-after", "start-at"), ("end-before", "end-at")


def literalincludes(page: str, text: str) -> list[tuple[int, str, dict[str, tuple[int, str]]]]:
    """(line, target, {option: (line, value)}) for each `.. literalinclude::` of an rst page. The target
    is resolved as Sphinx does ("/x" from docs/, "x" from the page's folder), relative to the root."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = INCLUDE.match(line)
        if not m:
            continue
        arg = m.group(2)
        base = DOCS if arg.startswith("/") else posixpath.dirname(page)
        target = posixpath.normpath(posixpath.join(base, arg.lstrip("/")))
        options = {}
        for j in range(i + 1, len(lines)):  # the option list: more indented lines right below
            o = OPTION.match(lines[j])
            if not o or len(o.group(1)) <= len(m.group(1)):
                break
            options[o.group(2)] = (j + 1, o.group(3))
        out.append((i + 1, target, options))
    return out


def code_markers(text: str) -> dict[str, dict[str, list[int]]]:
    """{name: {"begin": [lines], "end": [lines]}} for the `// [chNN:name]` / `// [/chNN:name]` in a file."""
    found = {}
    for n, line in enumerate(text.splitlines(), 1):
        for m in MARKER.finditer(line):
            found.setdefault(m.group(2), {"begin": [], "end": []})["end" if m.group(1) else "begin"].append(n)
    return found


def marker_problems(pages: dict[str, str], code: dict[str, str]) -> list[str]:
    """What is wrong between the rst pages and the code, one "file:line: ..." string per problem.
    pages: {path: text} of docs/**/*.rst; code: {path: text} of the files to scan for marker pairs plus
    every existing file a page includes (a page including a path not in code is an error). Paths are
    relative to the repository root, with "/"."""
    problems, used = [], set()  # used: (file, marker name)
    for page in sorted(pages):
        for line, target, options in literalincludes(page, pages[page]):
            if target not in code:
                problems.append(f"{page}:{line}: literalinclude of {target}, which does not exist")
                continue
            lines = code[target].splitlines()
            cut = {}
            for kind, names in (("start", START_OPTIONS), ("end", END_OPTIONS)):
                for opt in names:
                    if opt not in options:
                        continue
                    opt_line, value = options[opt]
                    cut[kind] = (opt_line, value)
                    hits = [n for n, text in enumerate(lines, 1) if value and value in text]
                    if len(hits) != 1:
                        at = f" (lines {', '.join(map(str, hits))})" if hits else ""
                        problems.append(f"{page}:{opt_line}: :{opt}: {value!r} is in {target} {len(hits)} "
                                        f"times{at}, not exactly once")
            start = MARKER.fullmatch(cut["start"][1]) if "start" in cut else None
            end = MARKER.fullmatch(cut["end"][1]) if "end" in cut else None
            if start and not start.group(1):
                used.add((target, start.group(2)))
            if end and end.group(1):
                used.add((target, end.group(2)))
            if (start or end) and not (start and end and not start.group(1) and end.group(1)
                                       and start.group(2) == end.group(2)):
                want = (start or end).group(2)
                problems.append(f"{page}:{(cut.get('start') or cut['end'])[0]}: cuts {target} from "
                                f"{cut['start'][1] if 'start' in cut else 'the top'!r} to "
                                f"{cut['end'][1] if 'end' in cut else 'the bottom'!r}; a marker pair is "
                                f"'// [{want}]' ... '// [/{want}]'")
    for path in sorted(code):
        for name, at in sorted(code_markers(code[path]).items()):
            begin, end = at["begin"], at["end"]
            for kind, found, mark in (("begin", begin, f"// [{name}]"), ("end", end, f"// [/{name}]")):
                for n in found[1:]:
                    problems.append(f"{path}:{n}: {mark} again (first at line {found[0]}); a marker must be "
                                    f"unique in its file")
            if begin and not end:
                problems.append(f"{path}:{begin[0]}: // [{name}] has no matching // [/{name}]")
            elif end and not begin:
                problems.append(f"{path}:{end[0]}: // [/{name}] has no matching // [{name}] before it")
            elif end[0] < begin[0]:
                problems.append(f"{path}:{end[0]}: // [/{name}] comes before // [{name}] (line {begin[0]})")
            elif (path, name) not in used:
                problems.append(f"{path}:{begin[0]}: marker pair // [{name}] ... // [/{name}] is used by no "
                                f"page (no literalinclude in {DOCS}/ cuts {path} at it)")
    return problems


def read_site_files() -> tuple[dict[str, str], dict[str, str]]:
    """The rst pages under docs/ and the code files marker_problems needs, from the working tree."""
    def read(rel: str) -> str:
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            return f.read()

    def rel(path: str) -> str:
        return os.path.relpath(path, ROOT).replace(os.sep, "/")

    pages = {}
    for path in glob.glob(os.path.join(ROOT, DOCS, "**", "*.rst"), recursive=True):
        pages[rel(path)] = read(rel(path))
    wanted = {rel(os.path.join(dirpath, n)) for folder in CODE_DIRS
              for dirpath, _, names in os.walk(os.path.join(ROOT, folder)) for n in names if n.endswith(CODE_EXTS)}
    wanted |= {target for page, text in pages.items() for _, target, _ in literalincludes(page, text)
               if os.path.isfile(os.path.join(ROOT, target))}
    return pages, {path: read(path) for path in sorted(wanted)}


def check_site_markers(c: Checks) -> None:
    print("site markers:")
    pages, code = read_site_files()
    problems = marker_problems(pages, code)
    includes = sum(len(literalincludes(p, t)) for p, t in pages.items())
    pairs = sum(len(code_markers(t)) for t in code.values())
    if not problems:
        c.check(True, f"{includes} literalincludes in {DOCS}/ and {pairs} marker pairs in the code agree")
    for p in problems:
        c.check(False, p)


# ------------------------------------------------------------------------- answers before exercises

def top_level_functions(text: str) -> list[tuple[str, int, int]]:
    """(name as written, first line, last line) of each function defined at namespace scope in a
    C++ source, e.g. ("find_stop", 11, 30), ("LogitsChain::LogitsChain", 140, 160). Namespaces are
    transparent; a braced initializer (`= {`), a class body or an enum is not a function (and what
    it holds is not looked at). Braces in
    comments, strings and character literals are skipped (raw strings are not: lib/src has none
    at namespace scope)."""
    out, stack = [], []  # stack: for each open brace, a function (name, first line) or None
    statement, first = "", 0
    in_block_comment = False
    for n, line in enumerate(text.splitlines(), 1):
        i = 0
        if not in_block_comment and line.lstrip().startswith("#"):  # the preprocessor
            continue
        while i < len(line):
            ch = line[i]
            if in_block_comment:
                end = line.find("*/", i)
                if end < 0:
                    break
                in_block_comment, i = False, end + 2
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block_comment, i = True, i + 2
                continue
            if ch in "\"'":  # a literal: skip to its closing quote
                j = i + 1
                while j < len(line) and line[j] != ch:
                    j += 2 if line[j] == "\\" else 1
                statement += " "
                i = j + 1
                continue
            at_scope = all(frame == "namespace" for frame in stack)  # only namespaces are open
            if ch == "{":
                if at_scope:
                    head = statement.strip()
                    if re.match(r"(inline\s+)?namespace\b", head):
                        stack.append("namespace")
                    else:
                        m = re.search(r"(~?[A-Za-z_][\w]*(?:::~?[A-Za-z_]\w*)*)\s*\(", head)
                        is_function = (m is not None and "=" not in head[:m.start()]
                                       and not re.match(r"(struct|class|union|enum)\b", head))
                        stack.append((m.group(1), first) if is_function else None)
                else:
                    stack.append(None)
                statement = ""
            elif ch == "}":
                frame = stack.pop() if stack else None
                if isinstance(frame, tuple) and not any(isinstance(f, tuple) for f in stack):
                    out.append((frame[0], frame[1], n))
                statement = ""
            elif ch == ";" and at_scope:
                statement = ""
            else:
                if not statement.strip() and not ch.isspace():
                    first = n
                statement += ch
            i += 1
        statement += " "
    return out


def answer_matches(answer: str, function: str) -> bool:
    """Whether a manifest `answer` entry (decodebook::find_stop, decodebook::Dfa::walk,
    decodebook::KvCache::*) names a function as a source file writes its definition."""
    name = answer.removeprefix("decodebook::")
    if name.endswith("::*"):
        return function.startswith(name[:-1])
    return function == name


def folded(lines: list[str], index: int) -> bool:
    """Whether the rst line lines[index] sits inside a `.. details::` block (folded on the site):
    some enclosing block, found by walking out to each less indented line, is a details directive."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for j in range(index - 1, -1, -1):
        text = lines[j]
        if not text.strip():
            continue
        outer = len(text) - len(text.lstrip())
        if outer < indent:
            if re.match(r"\s*\.\.\s+details::", text):
                return True
            indent = outer
            if indent == 0:
                return False
    return False


def included_lines(code: str, options: dict) -> tuple[int, int]:
    """The first and last line of a file a literalinclude shows, from its start/end options."""
    lines = code.splitlines()
    first, last = 1, len(lines)
    for opt in START_OPTIONS:
        if opt in options:
            hits = [n for n, t in enumerate(lines, 1) if options[opt][1] in t]
            if hits:
                first = hits[0] + (1 if opt == "start-after" else 0)
    for opt in END_OPTIONS:
        if opt in options:
            hits = [n for n, t in enumerate(lines, 1) if n >= first and options[opt][1] in t]
            if hits:
                last = hits[0] - (1 if opt == "end-before" else 0)
    if "lines" in options:
        m = re.fullmatch(r"(\d*)-?(\d*)", options["lines"][1].replace(" ", ""))
        if m and (m.group(1) or m.group(2)):
            first, last = first + int(m.group(1) or 1) - 1, first + int(m.group(2) or last - first + 1) - 1
    return first, last


EXERCISE = re.compile(r"^\.\.\s+exercise::\s*(\S+)")


def page_order(page: str) -> int:
    """Where a page sits in the course: a chapter page (docs/chapters/NN-name.rst) at its chapter NN;
    any other page (the FAQ, the limitations, the index) after every chapter."""
    m = re.match(r"docs/chapters/(\d+)-", page)
    return int(m.group(1)) if m else 10 ** 6


def early_answer_problems(pages: dict[str, str], code: dict[str, str], manifest: dict) -> list[str]:
    """Every literalinclude of library code that shows (part of) a library twin of an exercise, not
    folded under `.. details::`, before the student reaches that exercise: above it on the page that
    introduces it, or on any page before that one in the course (chapter 02's listing of the chain
    once showed exercise 06.2's min_new_tokens unfolded). The twins are the functions the manifest's
    `answer` names; a whole class (`decodebook::Gpt2::*`) is there to stop calls of its helpers,
    not a listing of the answer, so it is not one."""
    answers = {e["id"]: [a for a in e["answer"] if not a.endswith("::*")] for e in manifest["exercises"]}
    homes = {}  # exercise id -> (page, line) of its `.. exercise::`, the first in course order
    for page in sorted(pages, key=lambda p: (page_order(p), p)):
        for n, line in enumerate(pages[page].splitlines(), 1):
            if (m := EXERCISE.match(line)):
                homes.setdefault(m.group(1), (page, n))
    problems = []
    for page in sorted(pages):
        lines = pages[page].splitlines()
        for line, target, options in literalincludes(page, pages[page]):
            if not target.startswith("lib/") or target not in code or folded(lines, line - 1):
                continue
            first, last = included_lines(code[target], options)
            shown = [(name, a, b) for name, a, b in top_level_functions(code[target]) if a <= last and b >= first]
            for exercise, (home, at) in sorted(homes.items()):
                before = at > line if home == page else page_order(home) > page_order(page)
                if not before:  # the student has met the exercise already
                    continue
                for name, a, b in shown:
                    if any(answer_matches(answer, name) for answer in answers.get(exercise, [])):
                        where = f"line {at}" if home == page else f"{home}:{at}, a later page"
                        problems.append(f"{page}:{line}: shows {target}'s {name} (lines {max(a, first)}-{min(b, last)}"
                                        f" of {a}-{b}), the answer to exercise {exercise}, before the exercise "
                                        f"({where}) and not folded: put it under `.. details::` or after "
                                        f"the exercise")
    return problems


def check_answers_folded(c: Checks, manifest: dict) -> None:
    print("answers after their exercises:")
    pages, code = read_site_files()
    problems = early_answer_problems(pages, code, manifest)
    if not problems:
        exercises = sum(1 for t in pages.values() for line in t.splitlines() if EXERCISE.match(line))
        c.check(True, f"no page shows a library answer unfolded above its exercise ({exercises} exercises)")
    for p in problems:
        c.check(False, p)


# ------------------------------------------------------------------- the programs the site runs

PROGRAM_OUTPUT = re.compile(r"^\s*\.\.\s+(?:command|program)-output::\s*(\S+)")
CHAPTER_CSV = re.compile(r"chapter_csv\(\s*[\"']([^\"']+)[\"']")


def docs_program_problems(pages: dict[str, str], plots: dict[str, str], docs_cmake: str) -> list[str]:
    """Every program a page runs (`.. command-output:: PROGRAM ...`) or a plot runs
    (`chapter_csv("PROGRAM", ...)`) must be a dependency of the `docs` target in docs/CMakeLists.txt
    (chapter-NN through `${chapters}`), or a fresh build folder's `docs` fails: the README's site
    command run by CI finds it too, after a full build; this finds it before the build."""
    m = re.search(r"^\s*DEPENDS\s+(.*)$", docs_cmake, re.M)
    depends = set(m.group(1).split()) if m else set()
    used = {}
    for path, text in sorted(pages.items()) + sorted(plots.items()):
        pattern = PROGRAM_OUTPUT if path.endswith(".rst") else CHAPTER_CSV
        for n, line in enumerate(text.splitlines(), 1):
            for hit in pattern.finditer(line):
                used.setdefault(hit.group(1), f"{path}:{n}")
    problems = []
    for program, where in sorted(used.items()):
        covered = program in depends or (re.fullmatch(r"chapter-\d\d", program) and "${chapters}" in depends)
        if not covered:
            problems.append(f"{where}: runs {program}, which the docs target does not build: add it to DEPENDS in "
                            f"docs/CMakeLists.txt")
    return problems


def check_docs_programs(c: Checks) -> None:
    print("programs the site runs:")
    pages, _ = read_site_files()
    plots = {}
    for path in glob.glob(os.path.join(ROOT, DOCS, "plots", "*.py")):
        with open(path, encoding="utf-8") as f:
            plots[os.path.relpath(path, ROOT).replace(os.sep, "/")] = f.read()
    with open(os.path.join(ROOT, DOCS, "CMakeLists.txt"), encoding="utf-8") as f:
        problems = docs_program_problems(pages, plots, f.read())
    if not problems:
        c.check(True, "the docs target builds every program a page or a plot runs")
    for p in problems:
        c.check(False, p)


# ---------------------------------------------------------------------- quizzes not guessed by length

QUIZ_FIELD = re.compile(r"^\s+:(answer_[a-f]|correct):\s*(.*)$")


def quiz_questions(text: str) -> list[tuple[int, dict[str, str], str]]:
    """(line, {letter: option text}, correct letter) of every `.. question::` of a page."""
    out = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if not re.match(r"^\s*\.\.\s+question::", line):
            continue
        options, correct = {}, ""
        for follow in lines[n + 1:]:
            m = QUIZ_FIELD.match(follow)
            if m and m.group(1) == "correct":
                correct = m.group(2).strip()
            elif m:
                options[m.group(1)[-1]] = m.group(2).strip()
            elif re.match(r"^\s*\.\.\s+question::", follow) or (follow.strip() and not follow.startswith(" ")):
                break
        out.append((n + 1, options, correct))
    return out


def quiz_length_problems(page: str, text: str) -> list[str]:
    """Problems of check 12 on one page: the longest option right in more than half its questions,
    or an option over twice the shortest in more than a quarter of them."""
    questions = [q for q in quiz_questions(text) if q[1] and q[2] in q[1]]
    if not questions:
        return []
    longest_right, lopsided = [], []
    for line, options, correct in questions:
        lengths = {k: len(v) for k, v in options.items()}
        top = max(lengths.values())
        if lengths[correct] == top and list(lengths.values()).count(top) == 1:
            longest_right.append(line)
        if top > 2 * min(lengths.values()):
            lopsided.append(line)
    problems = []
    n = len(questions)
    if 2 * len(longest_right) > n:
        problems.append(f"{page}: the longest option is the right one in {len(longest_right)} of {n} questions "
                        f"(at most half may be): lines {', '.join(map(str, longest_right))}")
    if 4 * len(lopsided) > n:
        problems.append(f"{page}: an option is over twice as long as the shortest in {len(lopsided)} of {n} "
                        f"questions (at most a quarter may be): lines {', '.join(map(str, lopsided))}")
    return problems


def check_quizzes(c: Checks) -> None:
    for page in sorted(glob.glob(os.path.join(ROOT, "docs", "chapters", "*.rst"))):
        rel = os.path.relpath(page, ROOT)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        n = len(quiz_questions(text))
        if n == 0:
            continue
        problems = quiz_length_problems(rel, text)
        c.check(not problems, f"{rel}: its {n} quiz questions cannot be answered by length", "\n".join(problems))


# ------------------------------------------------------------------- numbers a page states (build)

# The chapter pages re-read beside their binaries (issue 25): every number their prose states is
# one the programs the page runs print. Another page joins this list once it has been re-read.
NUMBER_PAGES = ("docs/chapters/00-naive-loop.rst", "docs/chapters/01-greedy.rst",
                "docs/chapters/02-temperature.rst", "docs/chapters/03-truncation.rst", "docs/chapters/04-penalties.rst",
                "docs/chapters/05-beam-search.rst", "docs/chapters/06-stop-sequences.rst",
                "docs/chapters/07-kv-cache.rst", "docs/chapters/08-speculative.rst",
                "docs/chapters/09-constrained.rst", "docs/chapters/10-other-samplers.rst",
                "docs/chapters/11-logprobs.rst", "docs/chapters/12-paged-cache.rst")

# Numbers such a page may state although no program prints them, each with its reason: facts of a
# format or of a published model, not of a run. Keep it short: a number of the run belongs in the
# program's output.
NUMBER_FACTS = {
    "docs/chapters/01-greedy.rst": {
        "3.0": "the quiz's made-up logits, where ids 1 and 2 tie",
    },
    "docs/chapters/02-temperature.rst": {
        "20": "how many tokens the plot follows (chapter-02 --csv writes them), a choice of the plot",
        "53": "a double's significand, a fact of the format (the coin's bits)",
        "89": "exp(89) overflows float32 (its largest value is about exp(88.72)), a fact of the format",
    },
    "docs/chapters/03-truncation.rst": {
        "40": "llama.cpp's default top_k, a fact of its code (common/common.h)",
        "50": "Hugging Face's default top_k, a fact of its GenerationConfig",
        "0.95": "llama.cpp's default top_p, a fact of its code (common/common.h)",
    },
    "docs/chapters/04-penalties.rst": {
        "64": "llama.cpp's default penalty_last_n, a fact of its code (common/common.h)",
        "1.33": "the quiz's hand-worked -2 / 1.5 (the naive rule), not a run",
        "1.7": "the quiz's hand-worked wrong answer 3.0 - 0.5 - 0.8, not a run",
    },
    "docs/chapters/06-stop-sequences.rst": {
        "10": "the quiz's made-up request (min_new_tokens 10), not a run",
    },
    "docs/chapters/07-kv-cache.rst": {
        "512": "2 MiB over 4 KiB, the two page sizes' ratio",
        "1,600": "GPT-2 XL's width, a fact of its published config (exercise 07.4's tests use it)",
        "48": "GPT-2 XL's layers, a fact of its published config (exercise 07.4's tests use it)",
    },
    "docs/chapters/08-speculative.rst": {
        "500": "GPT-2 124M's float32 weights, 494,616,576 bytes: a fact of its shape (model/roofline.hpp)",
        "20": "Hugging Face's default num_assistant_tokens, a fact of its GenerationConfig",
    },
    "docs/chapters/09-constrained.rst": {
        "16": "llama.cpp users' tokens/s without a grammar, reported in llama.cpp issue #3980",
        "10": "the same report's tokens/s with a grammar (llama.cpp issue #3980), not a run",
        "50": "llguidance's published mask time per token (docs/optimizations.md), not a run",
    },
    "docs/chapters/10-other-samplers.rst": {
        "100": "mirostat 1's m, the top probabilities its Zipf fit reads: llama.cpp's constant (decoding/chain_end.cpp uses it)",
    },
    "docs/chapters/11-logprobs.rst": {
        "0.2433": "lm-eval's arc_challenge accuracy against a server without prompt logprobs, reported in llama.cpp issue 27174",
        "1024": "2 to the 10th: a probability of 1/1024 is ten bits of surprise, the definition's arithmetic",
        "20": "vLLM's default max_logprobs and OpenAI's limit on top_logprobs (sampling/logprobs.hpp kMaxLogprobs)",
        "-9999.0": "what vLLM's server writes for -inf in JSON (serving_completion.py, max(logprob, -9999.0)); tests/openai_json.py checks it",
    },
    "docs/chapters/12-paged-cache.rst": {
        "37": "the quiz's made-up prompt length (37 tokens: two full blocks of 16 and a partial one), not a run",
    },
}

DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:-]+)::\s*(.*)$")
QUIZ_OPTION = re.compile(r"^\s+:(?:answer|feedback)_\w+:\s*(.*)$")
# inline markup that holds no claim in words: ``code``, :role:`text`, `link <url>`_, a link's <url>,
# |subst| (a paragraph may wrap any of them over two lines). A :printed:`figure` is a role too: the
# site build checks it against the page's output text exactly (docs/_ext/decodebook_site.py)
INLINE_SKIP = re.compile(r"``.*?``|:[\w:+-]+:`[^`]*`|`[^`]*<[^>]*>`__?|<[^>\s]*>|\|[^|\s][^|]*\|", re.S)
# what is a name, not a number of the run: chapter, part and exercise numbers, model and format
# names (GPT-2, 124M, 70B, 7B, bf16, float32, UTF-8, x86-64-v4), versions, issues, years in brackets
NAME_SKIP = re.compile(r"(?i)\b(?:chapters?|parts?|exercises?|steps? \d+ to|sections?|issues?|PR|v)\s*#?\d[\d.,]*(?:\s*(?:to|and|-|–)\s*\d[\d.]*)?"
                       r"|#\d+|\b[\w-]*\d+[A-Za-z][\w-]*|\b[A-Za-z][\w]*-\d[\w.-]*|\b[A-Za-z]+\d+\b|\(\d{4}\)|\b(?:19|20)\d\d\)")
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w.]*\w)")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of what a reader reads as sentences: paragraphs, lists, headings, and the
    quiz's questions, answers and feedback; not code, program output, math or included files."""
    out = []
    skip_indent = None  # inside a directive whose body is not prose: lines indented deeper than this
    for n, line in enumerate(text.splitlines(), 1):
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if not line.strip() or indent > skip_indent:
                continue
            skip_indent = None
        m = DIRECTIVE.match(line)
        if m:
            if m.group(2) not in ("quiz", "question", "details"):
                skip_indent = len(m.group(1))
            elif m.group(2) == "details":
                out.append((n, m.group(3)))  # the summary is read
            continue
        if re.match(r"^\s*\.\.(\s|$)", line) or re.match(r"^\s*([=~\-^\"'`#*+])\1{3,}\s*$", line):
            continue  # a comment or a label; a heading's underline
        if line.rstrip().endswith("::") and not line.strip().startswith(".."):
            out.append((n, line.rstrip()[:-2]))
            skip_indent = indent  # a literal block follows
            continue
        q = QUIZ_OPTION.match(line)
        if q:
            out.append((n, q.group(1)))
        elif re.match(r"^\s+:[\w-]+:", line):
            continue  # another directive option
        else:
            out.append((n, line))
    return out


def prose_numbers(text: str) -> list[tuple[int, str]]:
    """(line, number as written) for each number of 10 or more, or with a decimal point, in the
    prose: counts below ten are mostly words of the explanation (two rows, 4 beams), not results."""
    lines = prose_lines(text)
    # markup may wrap: cut it from the joined prose, keeping its line breaks so lines keep their numbers
    joined = INLINE_SKIP.sub(lambda m: " " + "\n" * m.group(0).count("\n"), "\n".join(line for _, line in lines))
    found = []
    for (n, _), line in zip(lines, joined.split("\n")):
        line = NAME_SKIP.sub(" ", line)
        for m in NUMBER.finditer(line):
            written = m.group(0).rstrip(",")
            value = written.replace(",", "")
            if re.match(r"-?0\d", value):
                continue  # 05, 06.1: a chapter's or an exercise's number
            if "." in value or abs(float(value)) >= 10:
                found.append((n, written))
    return found


def printed_numbers(output: str) -> list[str]:
    """Every number in a program's output, commas dropped ("75,497,472" -> "75497472")."""
    return [m.group(0).replace(",", "").lstrip("+") for m in re.finditer(r"[-+]?\d[\d,]*(?:\.\d+)?", output)]


def is_printed(written: str, printed: list[str]) -> bool:
    """A page's number is printed when the output has it as written, or a number that rounds to it
    at the page's precision ("72 MiB" for "72.00 MiB", "46.7" for "46.67")."""
    value = written.replace(",", "")
    decimals = len(value.split(".")[1]) if "." in value else 0
    for p in printed:
        if p == value:
            return True
        p_decimals = len(p.split(".")[1]) if "." in p else 0
        if p_decimals > decimals and round(float(p), decimals) == float(value):
            return True
    return False


def page_commands(text: str) -> list[str]:
    """The commands a page runs (`.. command-output:: CMD`), in order, each once."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*\.\.\s+(?:command|program)-output::\s*(.+?)\s*$", line)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def unprinted_numbers(page: str, text: str, outputs: dict[str, str], facts: dict[str, str]) -> list[str]:
    """The numbers a page states that no output of its commands prints and no fact explains."""
    printed = [p for out in outputs.values() for p in printed_numbers(out)]
    problems = []
    for n, written in prose_numbers(text):
        if written in facts or is_printed(written, printed):
            continue
        problems.append(f"{page}:{n}: the page states {written}, which {', '.join(sorted(outputs)) or 'no program'} "
                        f"does not print: print it from the code, or say it in words the output backs")
    return problems


def run_page_command(build_dir: str, command: str) -> str:
    import shlex
    args = shlex.split(command)
    exe = os.path.join(build_dir, args[0])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([exe] + args[1:], capture_output=True, text=True, check=False, env=env, cwd=build_dir,
                          timeout=300)
    return done.stdout


def check_page_numbers(c: Checks, build_dir: str) -> None:
    print("numbers the re-read pages state, against what their programs print:")
    for page in NUMBER_PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        commands = page_commands(text)
        missing = [cmd for cmd in commands if not os.path.isfile(os.path.join(build_dir, cmd.split()[0]))]
        c.check(not missing, f"{page}: its programs are built", f"build {', '.join(missing)} in {build_dir}")
        if missing:
            continue
        outputs = {cmd: run_page_command(build_dir, cmd) for cmd in commands}
        facts = NUMBER_FACTS.get(page, {})
        problems = unprinted_numbers(page, text, outputs, facts)
        stated = {written for _, written in prose_numbers(text)}
        problems += [f"{page}: NUMBER_FACTS lists {number}, which the page no longer states: drop it"
                     for number in sorted(facts) if number not in stated]
        c.check(not problems, f"{page}: {len(prose_numbers(text))} numbers in its prose, each printed by "
                f"{', '.join(commands)} or a listed fact", "\n    ".join(problems))


# ------------------------------------------------------------------------------------ flags (build)

# The programs whose every flag must change what they print; the tools take every knob for their
# one run, so only their own options are run (FLAG_KNOBS_TOO says which programs have knobs run).
FLAG_PROGRAMS = [f"chapter-{n:02d}" for n in range(13)] + ["decodebook-generate", "decodebook-score"]
FLAG_KNOBS_TOO = {p for p in FLAG_PROGRAMS if p.startswith("chapter-")}
FLAG_SLOW = ["chapter-07", "chapter-11", "chapter-06", "chapter-00", "chapter-08"]  # started first
# Flags that change speed or notes on standard error, never the text, by design; and the ones that
# print something else instead of running (or read standard input).
FLAG_EXEMPT = {"threads", "blas", "verbose", "help", "show-config", "interactive",
               "dtype"}  # the embedded checkpoint is float16: f32 and f16 hold the same logits (chapter 07); q8_0 and q4_0 (tests/test_quant.cpp)
# The shortest run of each program that still exercises its flags: the base of every run.
FLAG_BASE = {"chapter-09": {"samples": "8"}, "chapter-11": {"items": "1"}, "decodebook-score": {"text": "{tmp}/short.txt"}}
FLAG_SHORT_N = {"decodebook-generate": "8"}  # -n of every program that offers it (else 2), unless a flag's companions say otherwise
COMMON_ID = "258"  # " a" in the embedded model's tokenizer: a token every default run writes early
# flag -> (value, companions): the value is not the flag's default; the companions (flags the
# program offers only are kept) are in both runs compared, so the flag alone makes the difference.
# None as a value: a flag without value; a value "-": chosen from --help (a choice or a boolean
# other than the default). A companion False drops a flag of the base; the flag itself as a
# companion is its value in the run without it.
FLAG_VALUES = {
    "prompt": ("A dog is", {}), "model": ("{draft}", {}), "dtype": ("f16", {}), "csv": ("{tmp}/flag.csv", {}),
    "show-steps": (None, {}), "show-chain": (None, {}), "reference": ("{root}/tests/data/greedy.json", {}),
    "samples": ("9", {}), "items": ("2", {"items": "1", "task": "author", "text": False}), "assistant-model": ("{model}", {}),
    "logprobs": ("2", {}), "prompt-logprobs": ("2", {}), "logprobs-mode": ("processed_logprobs", {"logprobs": "2"}),
    "json": ("{tmp}/flag.json", {}), "text": ("{tmp}/other.txt", {}), "window": ("64", {}), "stride": ("32", {}),
    "context": ("Q: What is", {"continuation": " a fish", "text": False}),
    "continuation": (" a fish", {"context": "Q: What is", "text": False}), "task": ("author", {"items": "1", "text": False}),
    "max-new-tokens": ("3", {}), "min-new-tokens": ("4", {"eos-token-id": COMMON_ID, "max-new-tokens": "8"}),
    "eos-token-id": (COMMON_ID, {"max-new-tokens": "8"}), "stop": ("a", {"max-new-tokens": "8"}),
    "include-stop-str-in-output": ("-", {"stop": "a", "max-new-tokens": "8"}),
    "stop-match": ("-", {"stop": ["a", " a"], "max-new-tokens": "8"}),
    "skip-special-tokens": ("-", {"eos-token-id": COMMON_ID, "max-new-tokens": "8"}),
    "do-sample": ("-", {}), "temperature": ("1.7", {}), "top-k": ("2", {}), "top-p": ("0.3", {}), "min-p": ("0.3", {}),
    "min-tokens-to-keep": ("9", {"top-k": "1", "do-sample": "true"}), "order": ("-", {"top-p": "0.5", "temperature": "1.8"}),
    "seed": ("7", {}), "block-size": ("8", {}), "typical-p": ("0.3", {}), "epsilon-cutoff": ("0.05", {}), "eta-cutoff": ("0.05", {}),
    "top-n-sigma": ("0.5", {}), "mirostat-tau": ("1.5", {}), "mirostat-eta": ("0.5", {}),
    "repetition-penalty": ("2.5", {}), "penalty-scope": ("-", {}), "penalty-last-n": ("1", {"penalty-scope": "last_n"}),
    "presence-penalty": ("2", {}), "frequency-penalty": ("2", {}), "no-repeat-ngram-size": ("1", {}),
    "num-beams": ("2", {}), "length-penalty": ("-3", {}), "early-stopping": ("-", {}), "num-return-sequences": ("1", {}),
    "beam-scoring": ("-", {}), "num-assistant-tokens": ("2", {}), "prompt-lookup-num-tokens": ("3", {}),
    "max-matching-ngram-size": ("3", {}), "prompt-lookup-min": ("1", {}), "verify-rule": ("sample_and_compare", {}),
    "num-assistant-tokens-schedule": ("heuristic", {}), "regex": (" (yes|no)", {}), "choice": (" yes", {}),
    "json-schema": ("{tmp}/schema.json", {}),
}
SCHEMA = '{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}'
# Run-to-run noise: a number with a unit of time or speed, or a speed-up ("1.52x").
NOISE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s*(?:ms|µs|us|ns|s|x|×|tokens/s|tok/s|[KMGT]i?B/s)(?![A-Za-z])")


def help_flags(text: str) -> list[tuple[str, bool, str]]:
    """(flag, takes a value, help) for every option of a cxxopts `--help`, in its order."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s+(?:-\w, )?--([a-z0-9-]+)(?: (\S+))?(?:\s{2,}(.*))?$", line)
        if m:
            out.append([m.group(1), m.group(2) is not None, m.group(3) or ""])
        elif out and line.startswith("   ") and line.strip():
            out[-1][2] += " " + line.strip()
        elif not line.strip():
            continue
    return [(f, v, " ".join(h.split())) for f, v, h in out]


def other_value(help_line: str) -> str:
    """A choice's or a boolean's value other than its default, read from its help line."""
    default = re.search(r"default ([^;)]+)\)", help_line)
    default = default.group(1).strip() if default else ""
    if "true or false" in help_line:
        return "false" if default == "true" else "true"
    choices = re.search(r"one of: ([^;]+);", help_line)
    for choice in (c.strip() for c in (choices.group(1).split(",") if choices else [])):
        if choice != default:
            return choice
    return ""


def mask_noise(text: str) -> list[str]:
    return [NOISE.sub("#", line.rstrip()) for line in text.splitlines()]


def flag_args(values: dict) -> list[str]:
    args = []
    for flag, value in values.items():
        for v in value if isinstance(value, list) else [value]:
            args += [f"--{flag}"] + ([] if v is None else [v])
    return args


NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def noise_of(a: str, b: str):
    """What differs between two lines of runs without the flag: None (nothing), the indices of the
    numbers that differ when the text around them is the same, or "line" (the whole line)."""
    if a == b:
        return None
    if NUMBER.split(a) != NUMBER.split(b):
        return "line"
    return {i for i, (x, y) in enumerate(zip(NUMBER.findall(a), NUMBER.findall(b))) if x != y}


def same_line(base: str, noise, other: str) -> bool:
    if noise is None:
        return base == other
    if noise == "line":
        return True
    if NUMBER.split(base) != NUMBER.split(other):
        return False
    return all(i in noise or x == y for i, (x, y) in enumerate(zip(NUMBER.findall(base), NUMBER.findall(other))))


def same_output(base: list[str], noisy: dict, other: list[str]) -> bool:
    """The flag's run prints what the base run prints, but for the numbers (or lines) that differ
    between two runs without the flag (`noisy`: line index -> noise_of)."""
    return len(base) == len(other) and all(same_line(a, noisy.get(i), b) for i, (a, b) in enumerate(zip(base, other)))


def skeleton(line: str) -> str:
    """A line with its numbers masked: what two runs of a program print alike when only measured
    figures differ."""
    return NUMBER.sub("#", line)


def flag_verdict(flag: str, code: int, out: list[str], base: list[str], noisy: dict, err: str,
                 seen: set | None = None) -> str:
    """'' when the flag passes: it changed the output, or it was refused (exit 2 with a message).
    `seen`: the skeletons of every line the runs without the flag printed. A line none of them
    printed is the flag's doing, even where `noisy` excuses whole lines: a program whose prose
    follows its measurements (chapter 07) prints a line more or less from run to run, and every
    line after it shifts, so the index-wise noise would excuse the flag's own line too."""
    if code == 2 and err.strip() and "\n".join(out).strip() == "\n".join(mask_noise(err)).strip():
        return ""
    if code != 0:
        return f"--{flag} exited {code}: {err.strip()[-300:]}"
    if seen is not None and any(skeleton(line) not in seen for line in out):
        return ""
    if same_output(base, noisy, out):
        return f"--{flag} was accepted and changed nothing: make it steer a part (and say which in --help) or refuse it"
    return ""


def runs_values(base: dict, companions: dict) -> dict:
    """The base's flags with the companions' (False: the base's flag dropped)."""
    values = {**base, **companions}
    return {f: v for f, v in values.items() if v is not False}


def run_program(exe: str, args: list[str], cwd: str) -> tuple[int, list[str], str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([exe] + args, capture_output=True, text=True, check=False, env=env, cwd=cwd, timeout=300)
    return done.returncode, mask_noise(done.stdout + done.stderr), done.stderr


def flag_runs(build_dir: str, program: str, tmp: str) -> tuple[list[tuple[str, str]], float]:
    """(flag, problem or '') for every flag of `program`'s --help, and the seconds it took."""
    import time
    start = time.monotonic()
    exe = os.path.join(build_dir, program)
    listed = help_flags(subprocess.run([exe, "--help"], capture_output=True, text=True, check=False).stdout)
    # a knob --show-config prints is one the command line takes, listed in --help or not
    shown = subprocess.run([exe, "--show-config"], capture_output=True, text=True, check=False).stdout
    for name in re.findall(r"^(\w+) = ", shown, re.M):
        if name.replace("_", "-") not in {f for f, _, _ in listed}:
            listed.append((name.replace("_", "-"), True, "(not in --help)"))
    offered = {f for f, _, _ in listed}
    fill = {"tmp": tmp, "root": ROOT, "draft": os.path.join(ROOT, "models", "fortunes-draft"),
            "model": os.path.join(ROOT, "models", "fortunes-gpt2")}
    base = {f: v.format(**fill) for f, v in FLAG_BASE.get(program, {}).items()}
    if "max-new-tokens" in offered:
        base["max-new-tokens"] = FLAG_SHORT_N.get(program, "2")
    baselines: dict[str, tuple[list[str], dict, set]] = {}

    def baseline(companions: dict) -> tuple[list[str], dict, set]:
        args = flag_args(runs_values(base, companions))
        key = "\0".join(args)
        if key not in baselines:
            _, a, _ = run_program(exe, args, tmp)
            plain = baselines.get("\0".join(flag_args(base)))
            if plain and len(plain[0]) == len(a):  # the plain run's noise, line by line: one run is enough
                baselines[key] = (a, plain[1], plain[2] | {skeleton(line) for line in a})
                return baselines[key]
            _, b, _ = run_program(exe, args, tmp)
            noisy = {i: noise_of(x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y}
            noisy.update({i: "line" for i in range(min(len(a), len(b)), max(len(a), len(b)))})
            baselines[key] = (a, noisy, {skeleton(line) for line in a + b})
        return baselines[key]

    baseline({})

    results = []
    for flag, takes_value, text in listed:
        if flag in FLAG_EXEMPT or (program not in FLAG_KNOBS_TOO and re.search(r"; default [^)]*\)|not in --help", text)):
            continue
        if flag not in FLAG_VALUES:
            results.append((flag, f"--{flag} has no value in FLAG_VALUES (tests/course/check_course.py): add one"))
            continue
        value, companions = FLAG_VALUES[flag]
        if value == "-":
            value = other_value(text)
        if takes_value and isinstance(value, str):
            value = value.format(**fill)
        companions = {f: ([x.format(**fill) for x in v] if isinstance(v, list) else v if v is False else v.format(**fill))
                      for f, v in companions.items() if f in offered}
        ref, noisy, seen = baseline(companions)
        code, out, err = run_program(exe, flag_args(runs_values(base, {**companions, flag: value if takes_value else None})), tmp)
        problem = flag_verdict(flag, code, out, ref, noisy, err, seen)
        results.append((flag, problem + (" (--show-config prints it; --help does not list it)" if problem and
                                         text == "(not in --help)" else "")))
    return results, time.monotonic() - start


def check_flags(c: Checks, build_dir: str) -> None:
    import time
    print("every flag a program offers changes what it prints, or is refused:")
    start = time.monotonic()
    programs = [p for p in FLAG_PROGRAMS if os.path.isfile(os.path.join(build_dir, p))]
    c.check(len(programs) > 0, "the chapters and tools are built", f"build them in {build_dir}")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "schema.json"), "w", encoding="utf-8") as f:
            f.write(SCHEMA)
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for name, offset in (("short.txt", 0), ("other.txt", 3000)):  # two short texts for decodebook-score
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(readme[offset:offset + 1500])
        with ThreadPoolExecutor(max_workers=2) as pool:  # two processes at most: CI's time budget
            slowest_first = sorted(programs, key=lambda p: FLAG_SLOW.index(p) if p in FLAG_SLOW else len(FLAG_SLOW))
            found = dict(zip(slowest_first, pool.map(lambda p: flag_runs(build_dir, p, tmp), slowest_first)))
    for program in programs:
        results, seconds = found[program]
        problems = [why for _, why in results if why]
        c.check(not problems, f"{program}: each of its {len(results)} flags changes its output or is refused ({seconds:.1f} s)",
                "\n        ".join(problems))
    print(f"  (the flags took {time.monotonic() - start:.0f} s)")


# ------------------------------------------------------------------------------------ tests (build)

def test_binaries(build_dir: str) -> list[str]:
    """The exercise_tests_NN executables (one per chapter), which land in the build folder itself."""
    found = glob.glob(os.path.join(glob.escape(build_dir), "exercise_tests_*"))
    return sorted(p for p in found if os.path.isfile(p) and os.access(p, os.X_OK))


def test_names(exe: str) -> list[str]:
    out = subprocess.run([exe, "--list-test-names-only"], capture_output=True, text=True, check=False).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def check_test_names(c: Checks, manifest: dict, build_dir: str) -> None:
    print("tests:")
    ids = {e["id"] for e in manifest["exercises"]}
    binaries = test_binaries(build_dir)
    c.check(len(binaries) > 0, "the exercise test binaries (exercise_tests_NN) are built",
            f"no exercise_tests_* executable in {build_dir}: build first (cmake --build {build_dir})")
    if not binaries:
        return
    names = []
    for exe in binaries:
        listed = test_names(exe)
        c.check(len(listed) > 0, f"{os.path.basename(exe)} lists its test cases",
                f"{exe} --list-test-names-only printed nothing")
        names += listed
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


def load_grader():
    """./grade's package (tools/grader/), for its runner, its limits and its check of the objects."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import grader.excerpts
    import grader.runner
    import grader.symbols
    return grader


def run_graded(build_dir: str, label: str):
    """Run the tests with this CTest label as ./grade runs them (its runner and limits)."""
    runner = load_grader().runner
    listed = subprocess.run(["ctest", "--test-dir", build_dir, "-L", f"^{label}$", "--show-only=json-v1"],
                            capture_output=True, text=True, check=False).stdout
    specs = runner.parse_test_list(listed[listed.find("{"):]) if "{" in listed else []
    return runner.run_tests(specs, 2)


@contextlib.contextmanager
def busy_cores(count: int):
    """`count` other CPU-bound jobs running meanwhile (a student's machine is rarely idle)."""
    jobs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for job in jobs:
            job.kill()
            job.wait()


def check_solutions_and_stubs(c: Checks, build_dir: str, record_seconds: bool = False) -> None:
    grader = load_grader()
    runner = grader.runner
    print("solutions (every test must pass under ./grade's limits, with 5x headroom in CPU time, while two other "
          "CPU-bound jobs run):")
    with busy_cores(0 if record_seconds else 2):  # the seconds recorded are a quiet machine's
        results = run_graded(build_dir, "course")
    c.check(len(results) > 0, "solution tests ran")
    for r in sorted(results, key=lambda r: r.name):
        c.check(r.outcome == "pass", f"{r.name} passes",
                "\n        ".join(grader.excerpts.describe_failure(r)[:8]) if r.outcome != "pass" else "")
    seconds = runner.solution_seconds()
    for r in results:
        name = runner.test_name(r.name)
        limit = runner.limits_for(name, seconds).cpu
        c.check(r.cpu * 5 <= limit, f"{name}: needs {r.cpu:.2f} s of CPU, ./grade gives {limit} s",
                f"less than 5 times headroom: record what it needs in {os.path.relpath(runner.SECONDS_FILE, ROOT)} "
                f"(tests/course/check_course.py --record-seconds), or make it faster")
    if record_seconds:
        slow = {runner.test_name(r.name): math.ceil(r.cpu * 10) / 10 for r in results if r.cpu > runner.LIMITS.cpu / 10}
        doc = {"about": "CPU seconds the worked solution needs, for each exercise test that needs more than a "
                        "tenth of ./grade's CPU-time floor (Limits.cpu): ./grade gives such a test 10 times this. "
                        "Written by tests/course/check_course.py --record-seconds (with OPENBLAS_NUM_THREADS=1).",
               "seconds": dict(sorted(slow.items()))}
        with open(runner.SECONDS_FILE, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=2) + "\n")
        print(f"  wrote {os.path.relpath(runner.SECONDS_FILE, ROOT)}: {len(slow)} slow tests")
    print("solutions call only the library functions their exercise may use (./grade's check of the objects):")
    manifest = json.load(open(os.path.join(ROOT, "exercises", "manifest.json"), encoding="utf-8"))["exercises"]
    for chapter in sorted({e["chapter"] for e in manifest}):
        found = grader.symbols.check_calls(build_dir, chapter, manifest, solutions=True)
        for ex in (e for e in manifest if e["chapter"] == chapter):
            c.check(ex["id"] not in found, f"{ex['id']}'s worked solution keeps to may_use", found.get(ex["id"], ""))
    print("the modules hold no answer of their chapter, so none can be called by address (the linker's maps):")
    for chapter in sorted({e["chapter"] for e in manifest}):
        exercises = [e for e in manifest if e["chapter"] == chapter]
        for kind in ("solution", "student"):
            path = os.path.join(build_dir, "tests", f"{kind}_module_{chapter}.map")
            if not os.path.isfile(path):
                c.check(False, f"{kind}_module_{chapter}'s link map exists", f"{path} is missing: is the module "
                        "linked with -Wl,-Map (tests/CMakeLists.txt)?")
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                held = grader.symbols.module_answers(f.read(), exercises)
            c.check(not held, f"{kind}_module_{chapter} holds none of chapter {chapter}'s answers",
                    "; ".join(f"{name} ({ex_id}'s answer)" for ex_id, name in held) +
                    ": a function the chapter's code may use calls it, so its address is reachable: move the "
                    "answer out of that path, or drop the caller from may_use")
    print("stubs (every test must fail):")
    if not exercises_pristine():
        print("  skip  exercises/ has local changes (your work?): the stub check runs on a clean checkout")
        return
    stubs = run_ctest(build_dir, "student")
    c.check(len(stubs) == len(results), "the stubs are tested by the same tests as the solutions")
    for name, ok in sorted(stubs.items()):
        c.check(not ok, f"{name} fails against the untouched stub",
                "a stub that passes its test is a broken exercise: make the test demand the real answer")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build-tests", help="a build of the default configuration (stubs)")
    ap.add_argument("--no-build", action="store_true", help="only the checks that need no build (1-3, 7-10)")
    ap.add_argument("--layering", action="store_true", help="only check 8, the library's layering")
    ap.add_argument("--flags", action="store_true", help="only check 13, every flag changes the output (needs a build)")
    ap.add_argument("--record-seconds", action="store_true",
                    help="write tests/course/test_seconds.json from this run's solution tests (CPU time)")
    args = ap.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    with open(os.path.join(ROOT, "exercises", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    c = Checks()
    if args.layering:
        check_layering(c)
        return 1 if c.failed else 0
    if args.flags:
        check_flags(c, build_dir)
        print(f"course checks: {c.passed} passed, {c.failed} failed")
        return 1 if c.failed else 0
    check_layering(c)
    check_manifest(c, manifest)
    check_todos(c, manifest)
    check_site_markers(c)
    check_answers_folded(c, manifest)
    check_docs_programs(c)
    check_stub_includes(c, manifest)
    check_quizzes(c)
    if args.no_build:
        print("  skip  tests, solutions and stubs (--no-build)")
    else:
        check_test_names(c, manifest, build_dir)
        check_page_numbers(c, build_dir)
        check_flags(c, build_dir)
        check_solutions_and_stubs(c, build_dir, args.record_seconds)
    print(f"course checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
