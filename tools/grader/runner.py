"""Running processes: the tools (cmake, ctest, nm) through run(), CTest's list of the exercise
tests, and each test process under Limits, its verdict read from Catch2's report of the case."""
import contextlib
import json
import math
import os
import re
import resource
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from . import REPO

LABEL = "student"                  # the CTest label (and name prefix) of the exercise tests
NOT_STARTED = "is not implemented yet"


@dataclass(frozen=True)
class Limits:
    """What one test process may use. ./grade runs every test itself (not through CTest), so these
    hold whatever a stub does, and a verdict never depends on how much a test printed.
    cpu: seconds of CPU time (RLIMIT_CPU). CPU time, not wall time, so a busy machine does not
      use up a correct answer's time. This is the floor; a test whose worked solution needs more
      than a tenth of it gets 10 times what it needs (tests/course/test_seconds.json, see
      limits_for); tests/course/check_course.py checks in CI that every solution test keeps at
      least 5 times headroom under the limit it gets.
    wall: seconds of wall-clock time, for a test that waits (sleep, a lock) instead of computing;
      at least 6 times its CPU limit, room for a machine busy with other work.
    memory: bytes of address space (RLIMIT_AS): a stub that allocates 50 GB gets std::bad_alloc at
      once instead of swapping the machine.
    report: bytes the test may write to a file (RLIMIT_FSIZE), Catch2's report included."""
    cpu: int = 3
    wall: int = 60
    memory: int = 1 << 30
    report: int = 64 << 20


LIMITS = Limits()

SECONDS_FILE = REPO / "tests" / "course" / "test_seconds.json"


def solution_seconds(path=SECONDS_FILE):
    """{test name (without the label): CPU seconds its worked solution needs} for the slow tests."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")).get("seconds", {})
    except (OSError, ValueError):
        return {}


def limits_for(name, seconds, limits=LIMITS):
    """The limits of one test: the floor, or 10 times what its worked solution needs, whichever is
    more (and a wall-clock limit of at least 6 times the CPU limit)."""
    needed = seconds.get(name)
    cpu = max(limits.cpu, math.ceil(10 * needed)) if needed else limits.cpu
    return replace(limits, cpu=cpu, wall=max(limits.wall, 6 * cpu))


KEEP_OUTPUT = 64 << 10             # bytes kept of a test's own output: its start and its end

PASSED = re.compile(r"^All tests passed \([1-9][0-9]* assertions? in 1 test case\)", re.M)
# Tests run --jobs at a time: one OpenBLAS thread each, or their spinning threads fight for the cores
# and a correct answer can time out on a busy machine.
TEST_ENV = {"OPENBLAS_NUM_THREADS": "1"}


@dataclass
class TestResult:
    name: str            # the Catch2 name, e.g. "ex01.2 greedy stops at EOS"
    outcome: str         # pass | fail | exception | memory | timeout | crash | notrun
    output: str = ""     # what the test program printed (its start and end when it printed a lot)
    seconds: float = 0.0
    reason: str = ""     # why it did not pass: "cpu"/"wall" (timeout), a signal name, "exit status N"
    report: str = ""     # Catch2's own report of the case (its console reporter, written to a file)
    cpu: float = 0.0     # seconds of CPU time used
    limits: Limits = LIMITS   # what it was allowed

    @property
    def exercise(self):
        match = re.match(r"ex(\S+)\s", self.name)
        return match.group(1) if match else ""

    @property
    def not_started(self):
        return self.outcome in ("fail", "exception") and NOT_STARTED in self.report


def run(cmd, env=None):
    """Run a command, its stderr folded into its stdout; a missing program becomes exit 127."""
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                              env=dict(os.environ, **env) if env else None)
    except FileNotFoundError:
        return subprocess.CompletedProcess(cmd, 127, f"{cmd[0]} is not installed (or not on PATH)\n")


def test_name(ctest_name):
    """'student:ex00.1 ...' -> 'ex00.1 ...' (also 'solution:...', the course checks' runs).
    catch_discover_tests drops the space of the TEST_PREFIX "student: ", so CTest's names read
    'student:ex00.1 ...'; accept both."""
    return re.sub(rf"^({LABEL}|solution):\s*", "", ctest_name)


@dataclass
class TestSpec:
    """One test to run: its Catch2 name and the command CTest would run (catch_discover_tests)."""
    name: str            # CTest's name, e.g. "student:ex01.2 greedy stops at EOS"
    command: list
    cwd: str = None


def parse_test_list(json_text):
    """`ctest --show-only=json-v1` -> [TestSpec] in CTest's order. Only the command line is taken
    from CTest: the test runs under ./grade's own limits and its verdict is Catch2's report."""
    specs = []
    for test in json.loads(json_text).get("tests", []):
        if not test.get("command"):
            continue
        props = {p.get("name"): p.get("value") for p in test.get("properties", [])}
        specs.append(TestSpec(test["name"], list(test["command"]), props.get("WORKING_DIRECTORY")))
    return specs


def ctest_regex(ids):
    """CTest -R pattern for these exercises' tests, e.g. ^student: ?ex(01\\.1|01\\.2) """
    return f"^{LABEL}: ?ex(" + "|".join(re.escape(i) for i in ids) + ") "


def chapters_regex(chapters):
    """CTest -R pattern for every test of these chapters, e.g. ^student: ?ex(00|01)\\."""
    return f"^{LABEL}: ?ex(" + "|".join(re.escape(c) for c in chapters) + r")\."


def tests_regex(manifest, selected, failed_chapters):
    """The CTest -R pattern for the selected exercises of the chapters that built (None when no
    chapter did). Whole chapters match by chapter, so that a test of theirs that belongs to no
    manifest entry is still run and reported; a single exercise matches by its id."""
    built = [e for e in selected if e["chapter"] not in failed_chapters]
    if not built:
        return None
    chapters = list(dict.fromkeys(e["chapter"] for e in built))
    whole = all(sum(m["chapter"] == c for m in manifest) == sum(e["chapter"] == c for e in built)
                for c in chapters)
    return chapters_regex(chapters) if whole else ctest_regex([e["id"] for e in built])


def list_tests(build_dir, regex):
    """The exercise tests of these chapters or exercises, as CTest knows them -> [TestSpec]."""
    done = run(["ctest", "--test-dir", str(build_dir), "-L", LABEL, "-R", regex, "--show-only=json-v1"])
    try:
        return parse_test_list(done.stdout[done.stdout.find("{"):]), ""
    except ValueError:
        return [], done.stdout


def signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def verdict(returncode, report, cpu, timed_out=False, limits=LIMITS):
    """How one test process ended -> (outcome, reason). A test passes only when it exited with 0
    and Catch2's report says the case passed with at least one assertion: never on an exit code
    alone (a stub that calls std::exit(0) fails), and never from the program's own output (which
    may be any size, and may print Catch2's words)."""
    if timed_out:
        return "timeout", "wall"
    if returncode < 0:
        name = signal_name(-returncode)
        if name == "SIGXCPU" or (name == "SIGKILL" and cpu >= limits.cpu):
            return "timeout", "cpu"
        if "std::bad_alloc" in report:
            return "memory", name
        return "crash", name
    if returncode == 0 and PASSED.search(report):
        return "pass", ""
    if "std::bad_alloc" in report:
        return "memory", f"exit status {returncode}"
    if "due to unexpected exception" in report:
        return "exception", f"exit status {returncode}"
    return "fail", f"exit status {returncode}"


class OutputKeeper(threading.Thread):
    """Reads a test's output as it comes and keeps its first and last KEEP_OUTPUT bytes only: a
    stub may print gigabytes, the grader's memory and the verdict do not depend on it."""

    def __init__(self, stream, keep=KEEP_OUTPUT):
        super().__init__(daemon=True)
        self.stream, self.keep = stream, keep
        self.head, self.tail, self.total = bytearray(), deque(), 0

    def run(self):
        tail_size = 0
        while chunk := self.stream.read1(1 << 16):
            self.total += len(chunk)
            if len(self.head) < self.keep:
                take = self.keep - len(self.head)
                self.head += chunk[:take]
                chunk = chunk[take:]
            if chunk:
                self.tail.append(chunk)
                tail_size += len(chunk)
                while tail_size - len(self.tail[0]) >= self.keep:
                    tail_size -= len(self.tail.popleft())

    def text(self):
        tail = b"".join(self.tail)[-self.keep:]
        left_out = self.total - len(self.head) - len(tail)
        middle = f"\n... ({left_out} bytes of output left out)\n".encode() if left_out > 0 else b""
        return (bytes(self.head) + middle + tail).decode("utf-8", errors="replace")


def read_start(path, limit=1 << 20):
    """The first `limit` bytes of a file as text ('' when it does not exist)."""
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def run_test(spec, folder, limits=LIMITS):
    """Run one test under the limits, Catch2's report going to a file of its own -> TestResult."""
    report = Path(folder) / f"report-{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}.txt"
    cmd = [*spec.command, "--reporter", "console", "--out", str(report), "--use-colour", "no"]

    def apply_limits():                       # in the child, before exec
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu, limits.cpu + 5))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.report, limits.report))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                cwd=spec.cwd, env=dict(os.environ, **TEST_ENV), preexec_fn=apply_limits,
                                start_new_session=True)
    except OSError as error:
        return TestResult(test_name(spec.name), "notrun", reason=f"cannot start it: {error.strerror}")
    keeper = OutputKeeper(proc.stdout)
    keeper.start()
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > limits.wall:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever the test left running would hold the pipe
    keeper.join(5)
    proc.stdout.close()
    text = read_start(report)
    with contextlib.suppress(OSError):
        report.unlink()
    cpu = usage.ru_utime + usage.ru_stime
    outcome, reason = verdict(proc.returncode, text, cpu, timed_out, limits)
    return TestResult(test_name(spec.name), outcome, keeper.text(), time.monotonic() - start, reason, text, cpu,
                      limits)


def run_tests(specs, jobs, limits=LIMITS, seconds=None):
    """Run the tests `jobs` at a time, each under limits_for it -> [TestResult] in the order of
    `specs`. seconds: what each slow test's worked solution needs (default: SECONDS_FILE)."""
    seconds = solution_seconds() if seconds is None else seconds
    with tempfile.TemporaryDirectory(prefix="grade-") as folder, ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda spec: run_test(spec, folder, limits_for(test_name(spec.name), seconds, limits)),
                             specs))
