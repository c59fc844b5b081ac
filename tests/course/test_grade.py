#!/usr/bin/python3
"""Tests for ./grade: its pure parts (JUnit parsing, failure excerpts, per-chapter build failures,
scoring, the report, results.json and JUnit) and its main() with cmake and ctest stood in for.

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
From the course's own build (CMake 3.25, GCC 12, Unix Makefiles, -j2):
  chapter_04_error.txt      `cmake --build BUILD --target exercise_tests_04 -j2` with a missing ';'
                            in exercises/04-penalties/repetition.cpp
  chapter_01_uses_00.txt    `... --target exercise_tests_01 -j2` with a missing ';' in chapter 00's
                            exercises/00-naive-loop/last_position.cpp (chapter 01 links 00's)
  chapter_04_mixed.txt      `... --target exercise_tests_04 -j2` while tests/golden.hpp was also
                            broken: an error outside the student's files comes first
"""
import contextlib
import io
import json
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import unittest
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from unittest import mock

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
                         ["timed out after 30 s (an endless loop? or a very busy machine: try ./grade --jobs 1)"])
        self.assertEqual(grade.describe_failure(self.tests["02.4"], ROOT),
                         ["timed out after 30 s (an endless loop? or a very busy machine: try ./grade --jobs 1)", "step 1 done"])
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
        self.assertIn("        timed out after 30 s (an endless loop? or a very busy machine: try ./grade --jobs 1)", lines)
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


def fixture_manifest():
    return json.loads(fixture("manifest.json"))["exercises"]


def failed_chapter(chapter="01", log="build_error.txt"):
    return grade.chapter_failure(chapter, fixture(log), ROOT)


def results_with_failure(chapter="01"):
    """The fixture run as if `chapter` had not compiled: its tests never ran."""
    reasons = grade.parse_ctest_reasons(fixture("all.ctest.txt"))
    tests = [t for t in grade.parse_junit(fixture("all.xml"), reasons, timeout=2)
             if not t.exercise.startswith(chapter + ".")]
    return grade.group_by_exercise(fixture_manifest(), tests, {chapter: failed_chapter(chapter)})


class ChapterBuildFailures(unittest.TestCase):
    def test_a_real_chapter_failure_starts_at_the_stub_with_its_function(self):
        failure = grade.chapter_failure("04", fixture("chapter_04_error.txt"), ROOT)
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("exercises/04-penalties/repetition.cpp: In function"))
        self.assertRegex(failure.lines[1], r"^exercises/04-penalties/repetition\.cpp:\d+:\d+: error: expected ‘;’")
        self.assertFalse(any(ROOT in l or "gmake" in l or "%]" in l for l in failure.lines))
        self.assertEqual(failure.verdict, "chapter 04 does not compile: fix the first error above")
        self.assertTrue(failure.message.endswith("\n\nchapter 04 does not compile: fix the first error above"))

    def test_a_broken_chapter_00_stub_shows_in_chapter_01(self):
        failure = grade.chapter_failure("01", fixture("chapter_01_uses_00.txt"), ROOT)
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("exercises/00-naive-loop/last_position.cpp: In function"))

    def test_the_students_error_comes_first_even_after_another(self):
        log = fixture("chapter_04_mixed.txt")
        self.assertLess(log.index("tests/golden.hpp"), log.index("exercises/04-penalties/repetition.cpp"))
        failure = grade.chapter_failure("04", log, ROOT)
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("exercises/04-penalties/repetition.cpp: In function"))

    def test_a_failure_outside_the_students_files_is_for_the_instructor(self):
        log = "\n".join(l for l in fixture("chapter_04_mixed.txt").splitlines() if "exercises/" not in l)
        failure = grade.chapter_failure("04", log, ROOT)
        self.assertFalse(failure.mine)
        self.assertTrue(failure.lines[0].startswith("In file included from tests/golden.cpp"))
        self.assertIn("tell your instructor", failure.verdict)
        self.assertIn("chapter 04", failure.verdict)

    def test_a_copy_of_exercises_elsewhere_counts_as_the_students(self):
        log = fixture("chapter_04_error.txt").replace(f"{ROOT}/exercises/", "/tmp/submissions/ada/")
        failure = grade.chapter_failure("04", log, ROOT, exercises_dir="/tmp/submissions/ada")
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("/tmp/submissions/ada/04-penalties/repetition.cpp: In"))
        unsaid = grade.chapter_failure("04", log, ROOT)   # without exercises_dir: still its only error
        self.assertTrue(unsaid.lines[0].startswith("/tmp/submissions/ada/04-penalties/repetition.cpp: In"))

    def test_a_warning_that_mentions_error_is_not_an_error(self):
        log = ("exercises/a.cpp:3:9: warning: unused variable ‘error’ [-Wunused-variable]\n"
               "src/lib.cpp:1:1: error: boom\n")
        self.assertEqual(grade.compile_errors(log, ROOT)[0], ["src/lib.cpp:1:1: error: boom"])

    def test_long_errors_are_clipped_per_chapter(self):
        log = "\n".join(f"exercises/a.cpp:{i}:1: error: e{i}" for i in range(100))
        failure = grade.chapter_failure("02", log, ROOT)
        self.assertEqual(len(failure.lines), grade.CHAPTER_ERROR_LINES)
        self.assertEqual(failure.lines[-1], "... (81 more lines)")

    def test_an_empty_log_still_says_something(self):
        self.assertEqual(grade.chapter_failure("02", "gmake: *** [all] Error 2\n", ROOT).lines,
                         ["(the build printed no error)"])

    def test_not_built_with_no_build(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "exercise_tests_00").touch()
            failures = grade.not_built(tmp, ["00", "01"])
        self.assertEqual(list(failures), ["01"])
        self.assertEqual(failures["01"].kind, "not-built")
        self.assertEqual(failures["01"].message, "exercise_tests_01 is not built: run ./grade without --no-build")


class ChapterFailureScoring(unittest.TestCase):
    def setUp(self):
        self.exercises, self.strays = results_with_failure("01")
        self.by_id = {ex.info["id"]: ex for ex in self.exercises}

    def test_every_exercise_of_the_chapter_does_not_compile(self):
        states = {i: ex.state for i, ex in self.by_id.items()}
        self.assertEqual(states["01.1"], "does-not-compile")
        self.assertEqual(states["01.2"], "does-not-compile")
        self.assertEqual((states["00.1"], states["02.1"], states["02.7"]), ("pass", "fail", "no-tests"))
        self.assertEqual((self.by_id["01.1"].earned, self.by_id["01.2"].tests), (0, []))

    def test_even_passing_tests_of_a_broken_chapter_do_not_count(self):
        tests = grade.parse_junit(fixture("all.xml"), {}, timeout=2)   # 01.2 has a passing test
        exercises, _ = grade.group_by_exercise(fixture_manifest(), tests, {"01": failed_chapter()})
        self.assertEqual({ex.info["id"]: ex.earned for ex in exercises if ex.info["chapter"] == "01"},
                         {"01.1": 0, "01.2": 0})

    def test_results_json_entries(self):
        doc = grade.results_json(self.exercises, 2.0, root=ROOT)
        json.dumps(doc)
        self.assertEqual((doc["status"], doc["score"], doc["max_score"]), ("fail", 2, 12))
        self.assertNotIn("message", doc)
        tests = {t["name"]: t for t in doc["tests"]}
        entry = tests["ex01.2 (does not compile)"]
        self.assertEqual((entry["status"], entry["score"], entry["max_score"], entry["exercise"], entry["chapter"]),
                         ("error", 0, 2, "01.2", "01"))
        self.assertTrue(entry["message"].startswith("exercises/01-greedy/argmax.cpp: In function"))
        self.assertTrue(entry["message"].endswith("chapter 01 does not compile: fix the first error above"))
        self.assertFalse(any(t["name"].startswith("ex01.") and "compile" not in t["name"] for t in doc["tests"]))
        self.assertIn("ex02.1 softmax sums to one", tests)                    # other chapters as usual
        self.assertEqual(sum(t["max_score"] for t in doc["tests"]), doc["max_score"])

    def test_gradescope_shows_the_error_as_a_failed_test(self):
        doc = grade.gradescope_json(grade.results_json(self.exercises, 2.0, root=ROOT))
        entry = {t["name"]: t for t in doc["tests"]}["ex01.1 (does not compile)"]
        self.assertEqual((entry["status"], entry["score"], entry["max_score"], entry["number"]),
                         ("failed", 0, 1, "01.1"))
        self.assertIn("error: expected", entry["output"])

    def test_when_no_chapter_compiled(self):
        failures = {"00": failed_chapter("00"), "01": failed_chapter("01")}
        manifest = [e for e in fixture_manifest() if e["chapter"] in failures]
        exercises, _ = grade.group_by_exercise(manifest, [], failures)
        doc = grade.results_json(exercises, 1.0, root=ROOT)
        self.assertEqual((doc["status"], doc["score"], doc["max_score"]), ("error", 0, 5))
        self.assertTrue(doc["message"].startswith("no chapter could be built (00, 01); chapter 00:\n"))
        self.assertEqual([t["name"] for t in doc["tests"]],
                         ["ex00.1 (does not compile)", "ex00.2 (does not compile)",
                          "ex01.1 (does not compile)", "ex01.2 (does not compile)"])
        self.assertEqual(grade.gradescope_json(doc)["output"], doc["message"])

    def test_junit_gets_an_error_testcase_per_exercise(self):
        text = grade.junit_with_failures(fixture("all.xml"), self.exercises)
        suite = ET.fromstring(text)
        self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("errors")), ("16", "9", "2"))
        case = suite.find("testcase[@name='student:ex01.1 (does not compile)']")
        self.assertEqual(case.get("status"), "error")
        self.assertEqual(case.find("error").get("message"), "does not compile")
        self.assertIn("exercises/01-greedy/argmax.cpp", case.find("error").text)

    def test_junit_without_any_test_run(self):
        exercises, _ = grade.group_by_exercise(fixture_manifest()[:2], [], {"00": failed_chapter("00")})
        suite = ET.fromstring(grade.junit_with_failures(None, exercises))
        self.assertEqual((suite.get("tests"), suite.get("errors")), ("2", "2"))

    def test_junit_is_ctests_own_when_everything_built(self):
        exercises, _ = fixture_results()
        self.assertEqual(grade.junit_with_failures(fixture("all.xml"), exercises), fixture("all.xml"))


class ChapterFailureReport(unittest.TestCase):
    def setUp(self):
        exercises, strays = results_with_failure("01")
        self.text = grade.render_report(exercises, strays, colour=False, root=ROOT)
        self.lines = self.text.splitlines()

    def test_lines(self):
        chapter = self.text.split("Chapter 01: Greedy decoding\n")[1].split("\n\n")[0].splitlines()
        self.assertEqual(chapter[:4], [
            "  ✗ 01.1 Argmax with the tie rule (does not compile)",
            "  ✗ 01.2 Greedy generation with the EOS rule (does not compile)",
            "      exercises/01-greedy/argmax.cpp: In function ‘int argmax(const std::vector<float>&)’:",
            "      exercises/01-greedy/argmax.cpp:6:3: error: expected ‘,’ or ‘;’ before ‘for’"])
        self.assertEqual(chapter[-2:], ["  chapter 01 does not compile: fix the first error above",
                                        "  chapter 01: 0/2 exercises, 0/3 points"])
        self.assertFalse(any(l.startswith("      start in") or "hint for 01" in l for l in chapter))

    def test_the_error_is_shown_once(self):
        self.assertEqual(self.text.count("error: expected ‘,’ or ‘;’ before ‘for’"), 1)
        self.assertEqual(self.text.count("fix the first error above"), 1)

    def test_other_chapters_as_usual(self):
        self.assertIn("  ✓ 00.1 Take the last position's logits", self.lines)
        self.assertIn("        crashed (segmentation fault?)", self.lines)
        self.assertIn("[####----------------] 2/11 exercises, 2/12 points", self.lines)

    def test_next_points_at_the_first_broken_chapter(self):
        self.assertEqual(self.lines[-1], "next: make chapter 01 compile (its first error is shown above)")
        exercises, _ = grade.group_by_exercise(fixture_manifest(), [], {
            c: grade.BuildFailure(c, [], kind="not-built") for c in ("00", "01", "02")})
        text = grade.render_report(exercises, colour=False, root=ROOT)
        self.assertIn("  ✗ 00.1 Take the last position's logits (not built)", text)
        self.assertIn("  exercise_tests_00 is not built: run ./grade without --no-build", text)
        self.assertTrue(text.endswith("next: run ./grade without --no-build\n"))

    def test_colour(self):
        exercises, strays = results_with_failure("01")
        text = grade.render_report(exercises, strays, colour=True, root=ROOT)
        self.assertIn("\033[31m(does not compile)\033[0m", text)
        self.assertIn("\033[31mchapter 01 does not compile: fix the first error above\033[0m", text)

    def test_a_copy_of_exercises_is_named(self):
        exercises, _ = fixture_results()
        text = grade.render_report(exercises, colour=False, root=ROOT, exercises_dir=Path("/srv/ada/exercises"))
        self.assertTrue(text.startswith("decodebook: grading the exercises in /srv/ada/exercises\n"))
        self.assertIn("      start in /srv/ada/exercises/01-greedy/argmax.cpp", text.splitlines())
        solutions = grade.render_report(exercises, colour=False, solutions=True, root=ROOT,
                                        exercises_dir=Path("/srv/ada/exercises"))
        self.assertTrue(solutions.startswith("decodebook: grading the worked solutions\n"))


class Selection2(unittest.TestCase):
    manifest = fixture_manifest()

    def pick(self, which):
        return grade.select_exercises(self.manifest, which)

    def test_whole_chapters_run_by_chapter(self):
        self.assertEqual(grade.tests_regex(self.manifest, self.pick(None), {}), r"^student: ?ex(00|01|02)\.")
        self.assertEqual(grade.tests_regex(self.manifest, self.pick("01"), {}), r"^student: ?ex(01)\.")

    def test_chapters_that_failed_are_left_out(self):
        regex = grade.tests_regex(self.manifest, self.pick(None), {"01": failed_chapter()})
        self.assertEqual(regex, r"^student: ?ex(00|02)\.")
        pattern = re.compile(regex)
        self.assertTrue(pattern.search("student:ex02.7 later test"))   # a test the manifest lacks still runs
        self.assertFalse(pattern.search("student:ex01.1 argmax picks"))
        self.assertFalse(pattern.search("student:ex0211 odd"))
        self.assertIsNone(grade.tests_regex(self.manifest, self.pick("01"), {"01": failed_chapter()}))

    def test_single_exercises_run_by_id(self):
        self.assertEqual(grade.tests_regex(self.manifest, self.pick("02.3"), {}), r"^student: ?ex(02\.3) ")

    def test_chapters_in_course_order(self):
        self.assertEqual(grade.selected_chapters(self.pick(None)), ["00", "01", "02"])
        self.assertEqual(grade.selected_chapters(self.pick("01.2")), ["01"])

    def test_exercises_dir_from_the_cache(self):
        cache = "DECODEBOOK_EXERCISES_DIR:PATH=/srv/ada/exercises\n"
        self.assertEqual(grade.other_exercises_dir(cache, ROOT), Path("/srv/ada/exercises"))
        self.assertIsNone(grade.other_exercises_dir(f"DECODEBOOK_EXERCISES_DIR:PATH={ROOT}/exercises\n", ROOT))
        self.assertIsNone(grade.other_exercises_dir("CMAKE_BUILD_TYPE:STRING=Release\n", ROOT))
        self.assertEqual(grade.cache_value("A:STRING=x y \nB:BOOL=ON\n", "A"), "x y")

    def test_student_files(self):
        files = ["exercises/01-greedy/argmax.cpp", "README.md"]
        self.assertEqual(grade.student_files(files), files)
        self.assertEqual(grade.student_files(files, "/srv/ada/exercises", ROOT),
                         ["/srv/ada/exercises/01-greedy/argmax.cpp", "README.md"])
        self.assertEqual(grade.student_files(files, f"{ROOT}/build-x/ex", ROOT),
                         ["build-x/ex/01-greedy/argmax.cpp", "README.md"])


class CommandLine(unittest.TestCase):
    def test_jobs_must_be_a_positive_whole_number(self):
        for bad in ("0", "-3", "two"):
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as exit_:
                grade.parse_args(["--jobs", bad])
            self.assertEqual(exit_.exception.code, 2, bad)
            self.assertIn("--jobs", err.getvalue())
        self.assertEqual(grade.parse_args(["--jobs", "3"]).jobs, 3)
        self.assertEqual(grade.parse_args([]).jobs, 2)


class ReportFiles(unittest.TestCase):
    def test_a_report_file_in_a_missing_folder_is_a_usage_error(self):
        for option in ("--json", "--junit", "--gradescope"):
            with self.subTest(option=option), contextlib.redirect_stderr(io.StringIO()) as err, \
                    self.assertRaises(SystemExit) as exit_:
                grade.parse_args([option, "/nonexistent/folder/x.json"])
            self.assertEqual(exit_.exception.code, 2)
            self.assertIn("does not exist", err.getvalue())

    def test_a_folder_is_not_a_report_file(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()) as err, \
                self.assertRaises(SystemExit) as exit_:
            grade.parse_args(["--json", tmp])
        self.assertEqual(exit_.exception.code, 2)
        self.assertIn("is a folder", err.getvalue())

    def test_a_writable_path_is_accepted(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(grade.parse_args(["--json", f"{tmp}/r.json"]).json, f"{tmp}/r.json")


class FakeTools:
    """Stands in for cmake and ctest: the chapters in `broken` fail to build with their log; ctest
    writes the fixture's testcases that its -R matches, as CTest would."""

    def __init__(self, broken=None):
        self.broken, self.calls, self.envs = broken or {}, [], []

    def __call__(self, cmd, env=None):
        self.calls.append(cmd)
        self.envs.append(env)
        if cmd[0] == "cmake" and "--target" in cmd:
            chapter = cmd[cmd.index("--target") + 1].rsplit("_", 1)[1]
            log = self.broken.get(chapter)
            return subprocess.CompletedProcess(cmd, 2 if log else 0, log or "")
        if cmd[0] == "ctest":
            pattern = re.compile(cmd[cmd.index("-R") + 1])
            suite = ET.fromstring(fixture("all.xml"))
            for case in suite.findall("testcase"):
                if not pattern.search(case.get("name")):
                    suite.remove(case)
            Path(cmd[cmd.index("--output-junit") + 1]).write_text(ET.tostring(suite, encoding="unicode"))
            return subprocess.CompletedProcess(cmd, 8, fixture("all.ctest.txt"))
        raise AssertionError(f"unexpected command {cmd}")

    def targets(self):
        return [c[c.index("--target") + 1] for c in self.calls if c[0] == "cmake"]

    def ctest_regexes(self):
        return [c[c.index("-R") + 1] for c in self.calls if c[0] == "ctest"]


class Main(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        tmp = Path(self.tmp.name)
        (tmp / "repo" / "exercises").mkdir(parents=True)
        (tmp / "repo" / "exercises" / "manifest.json").write_text(fixture("manifest.json"))
        (tmp / "build").mkdir()
        (tmp / "build" / "CMakeCache.txt").write_text("DECODEBOOK_SOLUTIONS:BOOL=OFF\n")
        self.dir = tmp

    def grade_with(self, tools, *args):
        out = self.dir / "out"
        with mock.patch.object(grade, "run", tools), mock.patch.object(grade, "REPO", self.dir / "repo"), \
                contextlib.redirect_stdout(io.StringIO()) as stdout:
            code = grade.main(["--build-dir", str(self.dir / "build"), "--json", f"{out}.json",
                               "--junit", f"{out}.xml", "--gradescope", f"{out}.gs.json", *args])
        return code, stdout.getvalue(), json.loads(Path(f"{out}.json").read_text())

    def test_each_chapter_builds_on_its_own_and_a_broken_one_is_not_run(self):
        # the log names the real repository: main() shortens paths against it
        log = fixture("build_error.txt").replace(ROOT, str(grade.REPO))
        tools = FakeTools({"01": log})
        code, text, doc = self.grade_with(tools)
        self.assertEqual(code, 0)
        self.assertEqual(tools.targets(), ["exercise_tests_00", "exercise_tests_01", "exercise_tests_02"])
        self.assertEqual(tools.ctest_regexes(), [r"^student: ?ex(00|02)\."])
        self.assertIn("  ✗ 01.1 Argmax with the tie rule (does not compile)", text.splitlines())
        self.assertIn("      exercises/01-greedy/argmax.cpp:6:3: error: expected ‘,’ or ‘;’ before ‘for’",
                      text.splitlines())
        self.assertIn("  ✓ 00.1 Take the last position's logits", text.splitlines())
        statuses = {t["name"]: t["status"] for t in doc["tests"]}
        self.assertEqual((statuses["ex01.1 (does not compile)"], statuses["ex01.2 (does not compile)"]),
                         ("error", "error"))
        self.assertNotIn("ex01.2 greedy stops at EOS", statuses)
        self.assertEqual((doc["status"], doc["score"]), ("fail", 2))
        junit = ET.fromstring((self.dir / "out.xml").read_text())
        self.assertEqual(junit.get("errors"), "2")
        gradescope = json.loads((self.dir / "out.gs.json").read_text())
        self.assertIn("ex01.1 (does not compile)", [t["name"] for t in gradescope["tests"]])

    def test_tests_run_with_one_blas_thread_each(self):
        tools = FakeTools()
        self.grade_with(tools, "01")
        ctest_envs = [env for cmd, env in zip(tools.calls, tools.envs) if cmd[0] == "ctest"]
        self.assertEqual(ctest_envs, [{"OPENBLAS_NUM_THREADS": "1"}])

    def test_one_exercise_builds_only_its_chapter(self):
        tools = FakeTools()
        code, text, doc = self.grade_with(tools, "01.2")
        self.assertEqual((code, tools.targets(), tools.ctest_regexes()),
                         (0, ["exercise_tests_01"], [r"^student: ?ex(01\.2) "]))
        self.assertEqual([t["name"] for t in doc["tests"]],
                         ["ex01.2 greedy matches the golden tokens", "ex01.2 greedy stops at EOS"])

    def test_when_every_chapter_fails_the_report_is_printed_and_the_exit_is_1(self):
        tools = FakeTools({c: fixture("build_error.txt") for c in ("00", "01", "02")})
        code, text, doc = self.grade_with(tools)
        self.assertEqual(code, 1)
        self.assertEqual(tools.ctest_regexes(), [])                   # nothing stale is run
        self.assertEqual(text.count("(does not compile)"), 11)
        self.assertIn("[--------------------] 0/11 exercises, 0/12 points", text)
        self.assertEqual(doc["status"], "error")
        self.assertEqual(len(doc["tests"]), 11)

    def test_no_build_skips_chapters_without_a_test_program(self):
        for chapter in ("00", "02"):
            (self.dir / "build" / f"exercise_tests_{chapter}").touch()
        tools = FakeTools()
        code, text, doc = self.grade_with(tools, "--no-build")
        self.assertEqual((code, tools.targets(), tools.ctest_regexes()), (0, [], [r"^student: ?ex(00|02)\."]))
        self.assertIn("  ✗ 01.1 Argmax with the tie rule (not built)", text.splitlines())
        self.assertIn("ex01.1 (not built)", [t["name"] for t in doc["tests"]])

    def test_a_build_of_a_copy_that_is_gone_says_how_to_fix_it(self):
        (self.dir / "build" / "CMakeCache.txt").write_text(
            "DECODEBOOK_SOLUTIONS:BOOL=OFF\nDECODEBOOK_EXERCISES_DIR:PATH=/nonexistent/copy/exercises\n")
        tools = FakeTools()
        code, text, doc = self.grade_with(tools)
        self.assertEqual((code, tools.calls, doc["status"]), (1, [], "error"))
        self.assertIn("/nonexistent/copy/exercises, which does not exist", text)
        self.assertIn("-DDECODEBOOK_EXERCISES_DIR=", doc["message"])

    def test_jobs_zero_is_refused_before_anything_runs(self):
        tools = FakeTools()
        with mock.patch.object(grade, "run", tools), contextlib.redirect_stderr(io.StringIO()), \
                self.assertRaises(SystemExit) as exit_:
            grade.main(["--jobs", "0"])
        self.assertEqual((exit_.exception.code, tools.calls), (2, []))



class MainErrors(unittest.TestCase):
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
