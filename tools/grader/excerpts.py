"""The lines worth showing of a build log or a test's output: repository-relative, clipped, Catch2's
noise left out, and the sentence that says why a test did not pass (describe_failure)."""
import re

from . import REPO

DETAIL_LINES = 15                  # at most this many lines of a failing test's output


def short_path(line, root=REPO):
    """Absolute paths inside the repository -> repository-relative ones."""
    return line.replace(str(root).rstrip("/") + "/", "")


def clip(lines, limit):
    if len(lines) <= limit:
        return lines
    return lines[:limit - 1] + [f"... ({len(lines) - limit + 1} more lines)"]


CATCH_NOISE = re.compile(r"^(Filters: |[~=]{20,}$|.* is a Catch v[\d.]+ host application\.$|"
                         r"Run with -\? for options$|test cases: |assertions: |All tests passed)")


def program_output(output, root=REPO):
    """A test's output without Catch2's banner, its test-name header and its summary lines."""
    kept, in_header = [], False
    for line in output.splitlines():
        if re.match(r"^-{20,}$", line):        # the header: ----, names, ----, FILE:LINE, ....
            in_header = True
        elif re.match(r"^\.{20,}$", line):
            in_header = False
        elif line.strip() and not in_header and not CATCH_NOISE.match(line):
            kept.append(short_path(line, root))
    return kept


def condense(block, limit):
    """Clip a FAILED block to `limit` lines. When it is too long and has messages (expected: /
    found:), a 'with expansion:' section goes first: the messages say the same more clearly."""
    if len(block) > limit and "with expansion:" in block and any(l.startswith("with message") for l in block):
        start = block.index("with expansion:")
        end = next((i for i in range(start + 1, len(block)) if not block[i].startswith(" ")), len(block))
        block = block[:start] + [f"with expansion: ({end - start - 1} lines, left out)"] + block[end:]
    return clip(block, limit)


def failure_excerpt(output, root=REPO, limit=DETAIL_LINES):
    """The first Catch2 'FILE:LINE: FAILED:' block (the check, its expansion, the messages or
    the exception), or, without one, the last lines the program printed."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^.+:\d+: FAILED:\s*$", line):
            block = [short_path(line, root)]
            for following in lines[i + 1:]:
                if not following.strip():
                    break
                block.append(following)
            return condense(block, limit)
    return program_output(output, root)[-limit:]


def crash_hint(test):
    if test.reason == "SIGABRT":
        return "aborted: a failed assert() or std::terminate?"
    if test.reason == "SIGFPE":
        return "arithmetic error: an integer division by zero?"
    if test.reason == "SIGXFSZ":
        return f"it wrote more than {test.limits.report >> 20} MB to a file"
    if test.reason == "SIGSEGV":
        return "segmentation fault: an index out of range, or a dangling reference?"
    return f"killed by {test.reason}"


def describe_failure(test, root=REPO):
    """The lines that explain why one test did not pass."""
    limits = test.limits
    if test.outcome == "timeout" and test.reason == "wall":
        return [f"stopped after {limits.wall} s of wall-clock time, having used {test.cpu:.1f} s of CPU: "
                "is it waiting (sleep, input), or is the machine very busy? try ./grade --jobs 1"] \
            + program_output(test.output, root)[-5:]
    if test.outcome == "timeout":
        return [f"stopped at its limit of {limits.cpu} s of CPU time (at least 10 times what the worked "
                "solution needs; time spent waiting for a busy machine does not count): an endless loop, "
                "or a very slow machine?"] + program_output(test.output, root)[-5:]
    if test.outcome == "memory":
        return [f"ran out of memory (std::bad_alloc): a test may use {limits.memory >> 20} MB; "
                "an allocation of a huge or negative size?"] + failure_excerpt(test.report, root, DETAIL_LINES - 1)
    if test.outcome == "crash":
        return [f"crashed ({crash_hint(test)})"] + failure_excerpt(test.report, root, DETAIL_LINES - 1)
    if test.outcome == "notrun":
        return [f"did not run ({test.reason or 'not run'}): rebuild, or tell your instructor"]
    excerpt = failure_excerpt(test.report, root)
    if any(": FAILED:" in line for line in excerpt):
        return excerpt
    return [f"the test program ended ({test.reason or 'exit status 0'}) before Catch2 reported the case: "
            "did the code call exit()?"] + program_output(test.output, root)[-DETAIL_LINES + 1:]


def trim_output(output, root=REPO, limit=2000):
    text = "\n".join(program_output(output, root))
    return text if len(text) <= limit else text[:limit] + "\n... (output truncated)"
