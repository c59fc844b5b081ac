"""No answer by call (docs/design.md): every decodebook:: function an exercise's compiled object
refers to must be on its manifest list `may_use`. The objects are read (nm), not the source, so a
`using`, a macro or an asm label cannot hide a call."""
import re
import subprocess
from pathlib import Path

from . import REPO
from .runner import run


ALWAYS_ALLOWED = ("decodebook::your_*",                 # the student's own functions
                  "decodebook::NotImplemented::*",      # what an untouched stub throws
                  "decodebook::Error::*")               # what bad input throws

NOT_CODE = re.compile(r"^(vtable|typeinfo|typeinfo name|VTT|construction vtable|guard variable|"
                      r"reference temporary|non-virtual thunk|virtual thunk|covariant return thunk) ")


def qualified_name(demangled):
    """'void decodebook::f<int>(int) const' -> 'decodebook::f': the function's qualified name, its
    template arguments, parameters and return type left out (None for data that is not code)."""
    if NOT_CODE.match(demangled):
        return None
    depth, cut = 0, len(demangled)
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not demangled[:i].endswith("operator"):
            cut = i
            break
    head, depth, start = demangled[:cut], 0, 0
    for i, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            start = i + 1                      # after a return type
    name, depth, out = head[start:], 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out) or None


def allowed(name, patterns):
    """Whether a qualified name matches one of the patterns: 'ns::f' exactly, or a prefix ending in
    '*' ('ns::C::*' for a class's members, 'ns::your_*')."""
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in patterns)


def parse_nm(text):
    """`nm -A ARCHIVE` (mangled names) -> {member: [(type, mangled name)]}."""
    members = {}
    for line in text.splitlines():
        match = re.match(r"^[^:]+:([^:]+):\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if match:
            members.setdefault(match.group(1), []).append((match.group(2), match.group(3)))
    return members


def library_uses(symbols, demangled, header_names):
    """One object's symbols -> the library functions it uses: every undefined decodebook:: symbol,
    and every weak one (a header's inline function or template, compiled into the object) whose
    name the library's headers declare (the student's own inline helpers are theirs)."""
    uses = []
    for kind, mangled in symbols:
        if kind not in "UWVuw":
            continue
        name = qualified_name(demangled.get(mangled, mangled))
        if not name or not name.startswith("decodebook::"):
            continue
        if kind in "WVu" and name.split("::")[-1] not in header_names:
            continue
        if name not in uses:
            uses.append(name)
    return uses


def call_violation(exercise, uses):
    """The message that scores an exercise 0 for a library function it may not call, or None."""
    patterns = (*ALWAYS_ALLOWED, *exercise.get("may_use", []))
    function = exercise.get("function", "your code")
    for name in uses:
        if allowed(name, patterns):
            continue
        if allowed(name, exercise.get("answer", [])):
            return f"{function} calls {name}, which is the answer: write it yourself"
        may = ", ".join(exercise.get("may_use", [])) or "none"
        return (f"{function} calls {name}, which exercise {exercise['id']} may not use: write that part yourself "
                f"(the library functions it may use: {may})")
    return None


def header_function_names(root=REPO):
    """Every identifier followed by '(' in the library's headers: the names an inline library
    function can have."""
    names = set()
    for header in (Path(root) / "lib" / "include").rglob("*.hpp"):
        names.update(re.findall(r"\b([A-Za-z_]\w*)\s*\(", header.read_text(encoding="utf-8", errors="replace")))
    return names


def check_calls(build_dir, chapter, manifest, solutions, root=REPO):
    """{exercise id: message} for the exercises of a built chapter that call a library function
    they may not (call_violation), read from the compiled objects of lib{exercises,solutions}_NN.a."""
    archive = Path(build_dir) / f"lib{'solutions' if solutions else 'exercises'}_{chapter}.a"
    listed = run(["nm", "-A", str(archive)])
    members = parse_nm(listed.stdout) if listed.returncode == 0 else {}
    names = sorted({m for symbols in members.values() for _, m in symbols})
    demangled = dict(zip(names, subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                                               text=True).stdout.splitlines())) if names else {}
    headers = header_function_names(root)
    found = {}
    for ex in manifest:
        if ex["chapter"] != chapter:
            continue
        uses = []
        for f in ex.get("solution_files" if solutions else "files", []):
            member = Path(f).name + ".o"
            if member not in members:
                found[ex["id"]] = (f"the grader could not read {member} in {archive} to check what {ex['function']} "
                                   "calls (tell your instructor)")
                break
            uses += library_uses(members[member], demangled, headers)
        else:
            violation = call_violation(ex, uses)
            if violation:
                found[ex["id"]] = violation
    return found


# A function's own section (-ffunction-sections) in the linker's map: .text.NAME, or
# .text.unlikely.NAME and the like for code GCC split off or placed apart.
KEPT_SECTION = re.compile(r"^\s*\.text(?:\.unlikely|\.hot|\.startup|\.exit)?\.(_Z\S+)", re.M)


def module_answers(map_text, exercises):
    """No answer by address (docs/design.md): [(exercise id, answer name)] for each answer of
    `exercises` (their manifest `answer` patterns) that a linked module still holds, read from the
    linker's map (-Wl,-Map). The library is compiled with -ffunction-sections and the modules linked
    with --gc-sections, so a module holds only the functions its table reaches: an answer no
    allowed function calls is not in it, and no address computed from another function reaches it."""
    kept = map_text.split("Linker script and memory map", 1)[-1]
    mangled = sorted(set(KEPT_SECTION.findall(kept)))
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                               text=True).stdout.splitlines() if mangled else []
    names = sorted({n for n in map(qualified_name, demangled) if n})
    return [(ex["id"], name) for ex in exercises for name in names if allowed(name, ex.get("answer", []))]
