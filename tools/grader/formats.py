"""The machine-readable results: results.json (exercism test runner interface v2 statuses, with
Gradescope's scores), Gradescope's own results.json, and JUnit XML (like exercism's data.py)."""
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from . import REPO
from .excerpts import describe_failure, trim_output
from .runner import LABEL
from .scoring import BUILD_STATES, FORBIDDEN, no_tests_message


JSON_STATUS = {"pass": "pass", "fail": "fail", "exception": "error", "memory": "error", "timeout": "error", "crash": "error",
               "notrun": "error"}


def test_entry(exercise, test, share, root):
    passed = test.outcome == "pass"
    entry = {"name": test.name, "exercise": exercise.info["id"], "chapter": exercise.info["chapter"],
             "status": "error" if test.not_started else JSON_STATUS[test.outcome],
             "score": share if passed else 0, "max_score": share,
             "message": None if passed else "\n".join(describe_failure(test, root)),
             "output": trim_output(test.output, root), "visibility": "visible"}
    return {k: v for k, v in entry.items() if v is not None}


def results_json(exercises, seconds, error=None, root=REPO):
    """The results.json document (exercism v2 and Gradescope); see the docstring at the top."""
    tests = []
    for ex in exercises:
        if ex.failure:
            tests.append(whole_exercise_entry(ex, BUILD_STATES[ex.state], exercise_failure_message(ex)))
            continue
        if ex.violation:
            tests.append(whole_exercise_entry(ex, FORBIDDEN, ex.violation))
            continue
        for test in ex.tests:
            tests.append(test_entry(ex, test, ex.points / len(ex.tests), root))
        if not ex.tests:
            tests.append(whole_exercise_entry(ex, "no tests", no_tests_message(ex)))
    keep_tests = not error
    failed = [ex.failure for ex in exercises if ex.failure]
    if not error and not any(ex.tests for ex in exercises):
        error = nothing_built_message(failed) if failed else "no tests ran"
        keep_tests = bool(failed)         # each exercise's entry says why it did not build
    status = "error" if error else "pass" if all(ex.state == "pass" for ex in exercises) else "fail"
    doc = {"version": 2, "status": status, "score": sum(ex.earned for ex in exercises),
           "max_score": sum(ex.points for ex in exercises), "execution_time": round(seconds, 2)}
    if error:
        doc["message"] = error
    doc["tests"] = tests if keep_tests else []
    return doc


def exercise_failure_message(ex):
    """Why an exercise of a chapter that did not build has no result: its own compile error, or
    (blocked) which other exercise's error keeps its tests from building."""
    failure = ex.failure
    if ex.state == "blocked":
        return (f"not graded: {' and '.join(failure.culprits)} {'does' if len(failure.culprits) == 1 else 'do'} "
                f"not compile, and chapter {failure.chapter}'s tests build only once every file they use compiles")
    if failure.culprits and ex.info["id"] in failure.culprits:
        return "\n".join(failure.culprits[ex.info["id"]] + ["", f"{ex.info['id']} does not compile: fix the first error above"])
    return failure.message


def whole_exercise_entry(ex, why, message):
    """A results.json entry standing for all the tests of an exercise that could not run."""
    return {"name": f"ex{ex.info['id']} ({why})", "exercise": ex.info["id"], "chapter": ex.info["chapter"],
            "status": "error", "score": 0, "max_score": ex.points, "message": message,
            "output": "", "visibility": "visible"}


def nothing_built_message(failures):
    """The top-level message when no selected chapter built: the first chapter's error in full."""
    chapters = list(dict.fromkeys(f.chapter for f in failures))
    return (f"no chapter could be built ({', '.join(chapters)}); chapter {chapters[0]}:\n"
            + failures[0].message)


def gradescope_json(doc):
    """Gradescope's results.json from ours: same scores, test status "passed"/"failed"
    (Gradescope's words; exercism's "error" becomes "failed"), failure text in "output"."""
    tests = []
    for t in doc["tests"]:
        text = "\n\n".join(part for part in (t.get("message"), t.get("output")) if part)
        tests.append({"name": t["name"], "number": t["exercise"], "score": t["score"], "max_score": t["max_score"],
                      "status": "passed" if t["status"] == "pass" else "failed", "output": text,
                      "visibility": "visible"})
    out = {"score": doc["score"], "execution_time": doc["execution_time"], "visibility": "visible",
           "stdout_visibility": "visible", "tests": tests}
    if doc.get("message"):
        out["output"] = doc["message"]
    return out


def error_junit(message):
    suite = ET.Element("testsuite", name="decodebook", tests="1", failures="1")
    case = ET.SubElement(suite, "testcase", name="build", classname="build", status="fail")
    ET.SubElement(case, "failure", message="nothing could be built or run").text = message
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def junit_xml(exercises, root=REPO):
    """JUnit XML of the run: one testcase per test (named as CTest names it, "student:exID ..."),
    with a <failure> for a failed check and an <error> for an exception, a crash, a timeout or a
    test that did not run; and one testcase with an <error> for each exercise whose chapter did not
    build (or whose tests are missing), named like its results.json entry."""
    suite = ET.Element("testsuite", name="decodebook")
    counts = {"tests": 0, "failures": 0, "errors": 0}
    for ex in exercises:
        entries = []
        if ex.failure or ex.violation or not ex.tests:
            why = BUILD_STATES[ex.state] if ex.failure else FORBIDDEN if ex.violation else "no tests"
            message = exercise_failure_message(ex) if ex.failure else ex.violation or no_tests_message(ex)
            entries.append((f"ex{ex.info['id']} ({why})", 0.0, "error", why, message, ""))
        for test in ([] if ex.failure or ex.violation else ex.tests):
            kind = None if test.outcome == "pass" else "failure" if test.outcome == "fail" and not test.not_started \
                else "error"
            message = None if kind is None else "\n".join(describe_failure(test, root))
            entries.append((test.name, test.seconds, kind, test.outcome, message, trim_output(test.output, root)))
        for name, seconds, kind, outcome, message, output in entries:
            case = ET.SubElement(suite, "testcase", name=f"{LABEL}:{name}", classname=f"{LABEL}:{name}",
                                 time=f"{seconds:.3f}", status="run" if kind is None else "fail")
            if kind:
                ET.SubElement(case, kind, message=outcome).text = xml_safe(message)
                counts["failures" if kind == "failure" else "errors"] += 1
            if output:
                ET.SubElement(case, "system-out").text = xml_safe(output)
            counts["tests"] += 1
    for key, value in counts.items():
        suite.set(key, str(value))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def xml_safe(text):
    """Text without the control characters XML 1.0 cannot hold (a test may print any bytes)."""
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", lambda m: f"[0x{ord(m.group()):02X}]", text or "")


def write_json(path, doc):
    Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
