#!/usr/bin/python3
"""Tests for the pure parts of ./grade (JUnit parsing, failure excerpts, scoring, the report).

    /usr/bin/python3 tests/course/test_grade.py     (or -m unittest from tests/course/)

The fixtures in tests/course/grade_fixtures/ are real CTest 3.25 + Catch2 v2.13 output from a throwaway
project laid out like the course (paths anonymised to /home/student/decodebook):
  all.xml / all.ctest.txt   `ctest -L student --timeout 2 -j2 --output-junit all.xml` and its
                            stdout: passes, a failed CHECK with expected/found messages, two
                            not-started stubs, a segfault, an abort, a silent timeout, a timeout
                            after printing, an exit(1), odd bytes, a test of no exercise
  empty.xml                 a run whose -R matched no test
  build_error.txt           `cmake --build` with compile errors in exercises/01-greedy/argmax.cpp
  link_error.txt            the same file emptied (undefined reference at link time)
  manifest.json             the exercises of all.xml, plus 02.7 which has no tests
"""
import contextlib
import io
import json
import re
import sys
import tempfile
import unittest
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "grade_fixtures"
ROOT = "/home/student/decodebook"


def load_grade():
    loader = SourceFileLoader("grade", str(HERE.parents[1] / "grade"))
    module = module_from_spec(spec_from_loader("grade", loader))
    loader.exec_module(module)
    return module


grade = load_grade()


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def fixture_results():
    reasons = grade.parse_ctest_reasons(fixture("all.ctest.txt"))
    tests = grade.parse_junit(fixture("all.xml"), reasons, timeout=2)
    manifest = json.loads(fixture("manifest.json"))["exercises"]
    return grade.group_by_exercise(manifest, tests)


class ParseJunit(unittest.TestCase):
    def setUp(self):
        reasons = grade.parse_ctest_reasons(fixture("all.ctest.txt"))
        self.tests = {t.name: t for t in grade.parse_junit(fixture("all.xml"), reasons, timeout=2)}

    def test_every_testcase_is_read_with_its_prefix_removed(self):
        self.assertEqual(len(self.tests), 14)
        self.assertIn('ex00.2 append_token grows the context <&> "quoted"', self.tests)
        self.assertTrue(all(name.startswith("ex") for name in self.tests))

    def test_prefix_with_or_without_the_space(self):
        self.assertEqual(grade.test_name("student:ex00.1 a b"), "ex00.1 a b")
        self.assertEqual(grade.test_name("student: ex00.1 a b"), "ex00.1 a b")

    def test_exercise_id_comes_from_the_name(self):
        self.assertEqual(self.tests["ex01.2 greedy stops at EOS"].exercise, "01.2")
        self.assertEqual(grade.TestResult("no id here", "pass").exercise, "")

    def test_outcomes(self):
        outcomes = {name: t.outcome for name, t in self.tests.items()}
        self.assertEqual(outcomes, {
            "ex00.1 last_position_logits returns the last row": "pass",
            "ex00.1 last_position_logits keeps the width": "pass",
            'ex00.2 append_token grows the context <&> "quoted"': "pass",
            "ex01.1 argmax picks the largest logit": "fail",
            "ex01.1 argmax breaks ties towards the lowest id": "fail",
            "ex01.2 greedy matches the golden tokens": "fail",
            "ex01.2 greedy stops at EOS": "pass",
            "ex02.1 softmax sums to one": "crash",
            "ex02.2 top_k keeps k tokens": "crash",
            "ex02.3 top_p stops at p": "timeout",
            "ex02.4 temperature scales logits": "timeout",
            "ex02.5 sample draws from the distribution": "fail",
            "ex02.6 min_p prints odd bytes": "fail",
            "ex99.1 a test for no exercise in the manifest": "pass"})

    def test_ctest_reasons_come_from_its_closing_list(self):
        reasons = grade.parse_ctest_reasons(fixture("all.ctest.txt"))
        self.assertEqual(reasons["student:ex02.1 softmax sums to one"], "SEGFAULT")
        self.assertEqual(reasons["student:ex02.2 top_k keeps k tokens"], "Subprocess aborted")
        self.assertEqual(reasons["student:ex02.3 top_p stops at p"], "Timeout")
        self.assertEqual(len(reasons), 9)
        self.assertEqual(grade.parse_ctest_reasons("100% tests passed, 0 tests failed out of 3"), {})

    def test_without_ctest_reasons_crashes_and_timeouts_are_still_recognised(self):
        tests = {t.name: t.outcome for t in grade.parse_junit(fixture("all.xml"), {}, timeout=2)}
        self.assertEqual(tests["ex02.1 softmax sums to one"], "crash")
        self.assertEqual(tests["ex02.3 top_p stops at p"], "timeout")
        self.assertEqual(tests["ex02.5 sample draws from the distribution"], "fail")

    def test_odd_bytes_arrive_as_ctest_placeholders(self):
        self.assertIn("[NON-XML-CHAR-0x1B]", self.tests["ex02.6 min_p prints odd bytes"].output)

    def test_a_run_without_tests(self):
        self.assertEqual(grade.parse_junit(fixture("empty.xml")), [])


class Excerpts(unittest.TestCase):
    def setUp(self):
        reasons = grade.parse_ctest_reasons(fixture("all.ctest.txt"))
        self.tests = {t.exercise: t for t in grade.parse_junit(fixture("all.xml"), reasons, timeout=2)
                      if t.outcome != "pass"}

    def test_failed_check_shows_its_first_block_with_expected_and_found(self):
        lines = grade.failure_excerpt(self.tests["01.2"].output, ROOT)
        self.assertEqual(lines[0], "tests/exercises/test_01_greedy.cpp:13: FAILED:")
        self.assertIn("  CHECK( found == expected )", lines)
        self.assertIn("  expected: 307, 12, 99", lines)
        self.assertIn("  found:    307, 12, 12", lines)
        self.assertFalse(any("found[2]" in line for line in lines))  # only the first block

    def test_not_started_stub_is_recognised(self):
        self.assertTrue(self.tests["01.1"].not_started)
        self.assertFalse(self.tests["01.2"].not_started)
        lines = grade.failure_excerpt(self.tests["01.1"].output, ROOT)
        self.assertIn("  exercise 01.1 (argmax) is not implemented yet", lines)

    def test_timeout_and_crash_wording(self):
        self.assertEqual(grade.describe_failure(self.tests["02.3"], ROOT),
                         ["timed out after 30 s (an endless loop?)"])
        self.assertEqual(grade.describe_failure(self.tests["02.4"], ROOT),
                         ["timed out after 30 s (an endless loop?)", "step 1 done"])
        crash = grade.describe_failure(self.tests["02.1"], ROOT)
        self.assertEqual(crash[0], "crashed (segmentation fault?)")
        self.assertIn("  SIGSEGV - Segmentation violation signal", crash)
        self.assertTrue(grade.describe_failure(self.tests["02.2"], ROOT)[0].startswith("crashed (aborted"))

    def test_exit_without_a_catch_report(self):
        lines = grade.describe_failure(self.tests["02.5"], ROOT)
        self.assertIn("exit()", lines[0])
        self.assertEqual(lines[1:], ["about to quit"])

    def test_long_output_is_clipped(self):
        output = "x.cpp:1: FAILED:\n" + "\n".join(f"  line {i}" for i in range(40)) + "\n\n"
        lines = grade.failure_excerpt(output, ROOT, limit=15)
        self.assertEqual(len(lines), 15)
        self.assertEqual(lines[-1], "... (27 more lines)")

    def test_a_long_expansion_gives_way_to_the_messages(self):
        vector = ["  197, 197, 197,"] * 5
        block = (["t.cpp:9: FAILED:", "  CHECK( found == expected )", "with expansion:"] + vector + ["  =="]
                 + vector + ["with messages:", "  expected: 307, 258", "  found:    263, 198"])
        lines = grade.failure_excerpt("\n".join(block) + "\n\n", ROOT, limit=15)
        self.assertEqual(lines, block[:2] + ["with expansion: (11 lines, left out)"] + block[-3:])
        short = block[:3] + ["  1 == 2"] + block[-3:]
        self.assertEqual(grade.failure_excerpt("\n".join(short), ROOT), short)

    def test_program_output_drops_catch_boilerplate(self):
        kept = grade.program_output(self.tests["02.6"].output, ROOT)
        self.assertFalse(any("Catch v" in l or l.startswith("Filters:") or "test cases:" in l for l in kept))
        self.assertFalse(any(l == "tests/exercises/test_02_sampling.cpp:12" for l in kept))  # header


class CompileErrors(unittest.TestCase):
    def test_errors_in_an_exercise_start_at_its_context_line(self):
        lines, mine = grade.compile_errors(fixture("build_error.txt"), ROOT)
        self.assertTrue(mine)
        self.assertTrue(lines[0].startswith("exercises/01-greedy/argmax.cpp: In function"))
        self.assertIn("error: expected", lines[1])
        self.assertFalse(any("gmake" in l or "%]" in l for l in lines))

    def test_link_errors_are_shown_but_not_blamed_on_exercise_files(self):
        lines, mine = grade.compile_errors(fixture("link_error.txt"), ROOT)
        self.assertFalse(mine)
        self.assertTrue(any("undefined reference to `argmax" in l for l in lines))

    def test_at_most_the_limit(self):
        log = "\n".join(f"exercises/a.cpp:{i}:1: error: e{i}" for i in range(100))
        self.assertEqual(len(grade.compile_errors(log, ROOT, limit=40)[0]), 40)


class Scoring(unittest.TestCase):
    def setUp(self):
        self.exercises, self.strays = fixture_results()
        self.by_id = {ex.info["id"]: ex for ex in self.exercises}

    def test_states(self):
        states = {i: ex.state for i, ex in self.by_id.items()}
        self.assertEqual(states, {"00.1": "pass", "00.2": "pass", "01.1": "not-started", "01.2": "fail",
                                  "02.1": "fail", "02.2": "fail", "02.3": "fail", "02.4": "fail",
                                  "02.5": "fail", "02.6": "fail", "02.7": "no-tests"})
        self.assertEqual([t.name for t in self.strays], ["ex99.1 a test for no exercise in the manifest"])

    def test_an_exercise_passes_only_when_all_its_tests_pass(self):
        ex = self.by_id["01.2"]
        self.assertEqual([t.outcome for t in ex.tests], ["fail", "pass"])
        self.assertEqual(ex.earned, 0)

    def test_results_json(self):
        doc = grade.results_json(self.exercises, 1.234, root=ROOT)
        json.dumps(doc)
        self.assertEqual((doc["version"], doc["status"], doc["score"], doc["max_score"]), (2, "fail", 2, 12))
        self.assertEqual(doc["execution_time"], 1.23)
        self.assertNotIn("message", doc)
        tests = {t["name"]: t for t in doc["tests"]}
        passing = tests["ex01.2 greedy stops at EOS"]
        self.assertEqual((passing["status"], passing["score"], passing["max_score"]), ("pass", 1.0, 1.0))
        self.assertNotIn("message", passing)
        failing = tests["ex01.2 greedy matches the golden tokens"]
        self.assertEqual((failing["status"], failing["score"], failing["exercise"], failing["chapter"]),
                         ("fail", 0, "01.2", "01"))
        self.assertIn("found:    307, 12, 12", failing["message"])
        self.assertNotIn(ROOT, failing["output"])
        self.assertEqual(tests["ex01.1 argmax picks the largest logit"]["status"], "error")
        self.assertEqual(tests["ex02.3 top_p stops at p"]["status"], "error")
        self.assertEqual(tests["ex02.7 (no tests)"]["max_score"], 1)
        self.assertIn("has no tests", tests["ex02.7 (no tests)"]["message"])
        self.assertEqual(sum(t["max_score"] for t in doc["tests"]), doc["max_score"])
        self.assertTrue(all(t["visibility"] == "visible" for t in doc["tests"]))

    def test_gradescope_json(self):
        doc = grade.gradescope_json(grade.results_json(self.exercises, 1.234, root=ROOT))
        json.dumps(doc)
        self.assertEqual((doc["score"], doc["execution_time"]), (2, 1.23))
        self.assertNotIn("max_score", doc)  # Gradescope sums the tests' max_score itself
        tests = {t["name"]: t for t in doc["tests"]}
        self.assertEqual(tests["ex01.2 greedy stops at EOS"]["status"], "passed")
        failing = tests["ex01.2 greedy matches the golden tokens"]
        self.assertEqual((failing["status"], failing["score"], failing["number"]), ("failed", 0, "01.2"))
        self.assertIn("found:    307, 12, 12", failing["output"])
        self.assertEqual(tests["ex01.1 argmax picks the largest logit"]["status"], "failed")  # no "error" there
        self.assertEqual({t["status"] for t in doc["tests"]}, {"passed", "failed"})

    def test_gradescope_json_when_nothing_ran(self):
        exercises = [grade.ExerciseResult(ex.info, []) for ex in self.exercises]
        doc = grade.gradescope_json(grade.results_json(exercises, 0.5, "the exercises did not compile", root=ROOT))
        self.assertEqual((doc["score"], doc["tests"], doc["output"]), (0, [], "the exercises did not compile"))

    def test_results_json_when_nothing_ran(self):
        exercises = [grade.ExerciseResult(ex.info, []) for ex in self.exercises]
        doc = grade.results_json(exercises, 0.5, "the exercises did not compile", root=ROOT)
        self.assertEqual((doc["status"], doc["score"], doc["max_score"], doc["tests"]), ("error", 0, 12, []))
        self.assertEqual(doc["message"], "the exercises did not compile")

    def test_all_passed(self):
        done = [grade.ExerciseResult(ex.info, [grade.TestResult(f"ex{ex.info['id']} t", "pass")])
                for ex in self.exercises]
        doc = grade.results_json(done, 0, root=ROOT)
        self.assertEqual((doc["status"], doc["score"]), ("pass", 12))


class Selection(unittest.TestCase):
    manifest = json.loads(fixture("manifest.json"))["exercises"]

    def ids(self, which):
        return [e["id"] for e in grade.select_exercises(self.manifest, which)]

    def test_chapter_forms(self):
        for which in ("01", "1", "01-greedy", "exercises/01-greedy/"):
            self.assertEqual(self.ids(which), ["01.1", "01.2"], which)
        self.assertEqual(self.ids("02.3"), ["02.3"])
        self.assertEqual(len(self.ids(None)), 11)
        self.assertEqual(self.ids("07"), [])

    def test_ctest_regex_escapes_dots_and_matches_whole_ids(self):
        pattern = re.compile(grade.ctest_regex(["01.1", "01.2"]))
        self.assertEqual(grade.ctest_regex(["01.1"]), r"^student: ?ex(01\.1) ")
        self.assertTrue(pattern.search("student:ex01.1 argmax picks"))
        self.assertTrue(pattern.search("student: ex01.2 greedy"))
        self.assertFalse(pattern.search("student:ex01.10 later"))
        self.assertFalse(pattern.search("student:ex0111 odd"))

    def test_cache_mode(self):
        self.assertTrue(grade.cache_says_solutions("X:BOOL=1\nDECODEBOOK_SOLUTIONS:BOOL=ON\n"))
        self.assertFalse(grade.cache_says_solutions("DECODEBOOK_SOLUTIONS:BOOL=OFF\n"))
        self.assertFalse(grade.cache_says_solutions("CMAKE_BUILD_TYPE:STRING=Release\n"))


class Report(unittest.TestCase):
    def setUp(self):
        exercises, strays = fixture_results()
        self.text = grade.render_report(exercises, strays, colour=False, root=ROOT)

    def test_lines(self):
        lines = self.text.splitlines()
        self.assertIn("  ✓ 00.1 Take the last position's logits", lines)
        self.assertIn("  ✗ 01.1 Argmax with the tie rule (not started)", lines)
        self.assertIn("      start in exercises/01-greedy/argmax.cpp", lines)
        self.assertIn("  ✗ 01.2 Greedy generation with the EOS rule  (1 of 2 tests failed)", lines)
        self.assertIn("        timed out after 30 s (an endless loop?)", lines)
        self.assertIn("        crashed (segmentation fault?)", lines)
        self.assertIn("          found:    307, 12, 12", lines)
        self.assertIn("      hint: hint for 01.2: look at generate_greedy.", lines)
        self.assertIn("  chapter 01: 0/2 exercises, 0/3 points", lines)
        self.assertIn("[####----------------] 2/11 exercises, 2/12 points", lines)
        self.assertTrue(any("02.7" in l and "has no tests — tell your instructor" in l for l in lines))
        self.assertTrue(any("ex99.1" in l and "no exercise" in l for l in lines))

    def test_not_started_has_no_dump(self):
        block = self.text.split("01.1 Argmax")[1].split("01.2 Greedy")[0]
        self.assertNotIn("FAILED", block)

    def test_colour_only_when_asked(self):
        self.assertNotIn("\033[", self.text)
        exercises, strays = fixture_results()
        self.assertIn("\033[32m✓\033[0m", grade.render_report(exercises, strays, colour=True, root=ROOT))

    def test_long_hints_are_wrapped(self):
        info = dict(json.loads(fixture("manifest.json"))["exercises"][0], hint="word " * 60)
        ex = grade.ExerciseResult(info, [grade.TestResult("ex00.1 t", "fail", "x.cpp:1: FAILED:\n")])
        lines = grade.exercise_lines(ex, colour=False, root=ROOT)
        hint = [l for l in lines if l.startswith("      hint:") or l.startswith("            word")]
        self.assertGreater(len(hint), 2)
        self.assertTrue(all(len(l) <= 96 for l in lines))
        self.assertEqual(" ".join(l.strip() for l in hint), "hint: " + " ".join(["word"] * 60))

    def test_progress_bar(self):
        self.assertEqual(grade.progress_bar(3, 4, width=8), "[######--]")
        self.assertEqual(grade.progress_bar(0, 0, width=4), "[----]")


class Main(unittest.TestCase):
    def test_unknown_chapter_is_a_usage_error(self):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(grade.main(["99-nothing"]), 2)
        self.assertIn("no chapter or exercise", err.getvalue())

    def test_no_build_without_a_build_dir_writes_an_error_result(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            code = grade.main(["--no-build", "--build-dir", f"{tmp}/nothing",
                               "--json", f"{tmp}/r.json", "--junit", f"{tmp}/r.xml"])
            doc = json.loads(Path(f"{tmp}/r.json").read_text())
            junit = Path(f"{tmp}/r.xml").read_text()
        self.assertEqual(code, 1)
        self.assertEqual((doc["status"], doc["score"], doc["tests"]), ("error", 0, []))
        self.assertIn("not a configured build directory", doc["message"])
        self.assertIn('<testcase name="build"', junit)


if __name__ == "__main__":
    unittest.main()
