#!/usr/bin/python3
"""Tests for ./grade (the package tools/grader/, imported here as `grader`): its test runner on
real processes, its pure parts (verdicts, failure excerpts, per-chapter and per-exercise build
failures, scoring, the report, results.json and JUnit) and its main() with cmake and ctest stood in
for (FakeTools.standing_in: the `run` of grader.build, grader.runner and grader.symbols).

    /usr/bin/python3 tests/course/test_grade.py     (or -m unittest from tests/course/)

grade_fixtures/runs.cpp is a throwaway Catch2 v2 program with one test case for each way a test
can end (named like the exercises of grade_fixtures/manifest.json; 02.7 has no tests on purpose).
These tests compile it once (about 20 s) and run every case through ./grade's own runner under
small limits: the verdicts below are those of real processes, not of recorded output.
The other fixtures in tests/course/grade_fixtures/ are real build logs (paths anonymised to
/home/student/decodebook):
  build_error.txt           `cmake --build` with compile errors in exercises/01-greedy/argmax.cpp
  link_error.txt            the same file emptied (undefined reference at link time)
From the course's own build (CMake 3.25, GCC 12, Unix Makefiles, -j2):
  chapter_04_error.txt      `cmake --build BUILD --target exercise_tests_04 -j2` with a missing ';'
                            in exercises/04-penalties/repetition.cpp
  chapter_01_uses_00.txt    `... --target exercise_tests_01 -j2` with a missing ';' in chapter 00's
                            exercises/00-naive-loop/last_position.cpp (chapter 01 links 00's)
  chapter_04_mixed.txt      `... --target exercise_tests_04 -j2` while tests/golden.hpp was also
                            broken: an error outside the student's files comes first
grade_fixtures/expected/<ending>/ holds, for each way a test can end, the exact results.json,
Gradescope and JUnit files ./grade writes, written by hand (class Golden; its README.md says how to
check and change them).
"""
import atexit
import contextlib
import dataclasses
import functools
import importlib.util
import io
import json
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import unittest
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "grade_fixtures"
ROOT = "/home/student/decodebook"
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tools"))

import grader.build  # noqa: E402  (tools/grader/, ./grade's package)
import grader.cli  # noqa: E402
import grader.excerpts  # noqa: E402
import grader.formats  # noqa: E402
import grader.hints  # noqa: E402
import grader.manifest  # noqa: E402
import grader.report  # noqa: E402
import grader.runner  # noqa: E402
import grader.scoring  # noqa: E402
import grader.symbols  # noqa: E402

LIVE_LIMITS = grader.runner.Limits(cpu=1, wall=10, memory=1 << 30)   # wall: room for a loaded machine


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def live_runs():
    """Compile grade_fixtures/runs.cpp and run each of its cases with ./grade's runner, two at a
    time as ./grade does -> {test name: TestResult}, in the program's order."""
    folder = Path(tempfile.mkdtemp(prefix="test-grade-"))
    atexit.register(shutil.rmtree, folder, True)
    exe = folder / "runs"
    done = subprocess.run(["g++", "-std=c++20", "-O0", "-o", str(exe), str(FIXTURES / "runs.cpp")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("grade_fixtures/runs.cpp does not compile:\n" + done.stderr[-3000:])
    names = subprocess.run([str(exe), "--list-test-names-only"], capture_output=True, text=True).stdout
    specs = [grader.runner.TestSpec(f"student:{n.strip()}", [str(exe), n.strip(), "--warn", "NoTests"], str(folder))
             for n in names.splitlines() if n.strip()]
    results = grader.runner.run_tests(specs, 2, LIVE_LIMITS, seconds={})
    for r in results:           # as if the program had been built in the student's repository
        r.report = r.report.replace(str(FIXTURES / "runs.cpp"), f"{ROOT}/tests/exercises/runs.cpp")
    return {r.name: r for r in results}


def fixture_results():
    manifest = json.loads(fixture("manifest.json"))["exercises"]
    return grader.scoring.group_by_exercise(manifest, list(live_runs().values()))


class Runs(unittest.TestCase):
    """Every way a test can end, on real processes, through ./grade's runner."""

    def setUp(self):
        self.tests = live_runs()

    def test_outcomes(self):
        outcomes = {name: (t.outcome, t.reason) for name, t in self.tests.items()}
        self.assertEqual(outcomes, {
            "ex00.1 last_position_logits returns the last row": ("pass", ""),
            "ex00.1 last_position_logits keeps the width": ("pass", ""),
            "ex00.2 append_token grows the context <&> after printing 50 MB": ("pass", ""),
            "ex01.1 argmax picks the largest logit": ("exception", "exit status 1"),
            "ex01.1 argmax breaks ties towards the lowest id": ("exception", "exit status 1"),
            "ex01.2 greedy matches the golden tokens": ("fail", "exit status 2"),
            "ex01.2 greedy stops at EOS": ("pass", ""),
            "ex02.1 softmax sums to one": ("crash", "SIGSEGV"),
            "ex02.2 top_k keeps k tokens": ("crash", "SIGABRT"),
            "ex02.3 top_p stops at p": ("timeout", "cpu"),
            "ex02.4 temperature scales logits": ("timeout", "wall"),
            "ex02.5 sample draws from the distribution": ("fail", "exit status 0"),
            "ex02.5 sample allocates 50 GB": ("memory", "exit status 1"),
            "ex02.6 min_p prints odd bytes": ("fail", "exit status 1"),
            "ex02.6 min_p throws": ("exception", "exit status 1"),
            "ex99.1 a test for no exercise in the manifest": ("pass", "")})

    def test_exit_0_before_any_check_does_not_pass(self):
        test = self.tests["ex02.5 sample draws from the distribution"]
        self.assertEqual((test.outcome, test.report), ("fail", ""))
        self.assertIn("about to quit", test.output)

    def test_output_size_does_not_decide_and_is_not_kept_whole(self):
        test = self.tests["ex00.2 append_token grows the context <&> after printing 50 MB"]
        self.assertEqual(test.outcome, "pass")
        self.assertLess(len(test.output), 3 * grader.runner.KEEP_OUTPUT)
        self.assertIn("bytes of output left out", test.output)
        self.assertTrue(test.output.rstrip().endswith("All tests passed (1 assertion in 1 test case)"))

    def test_printing_catch2s_words_does_not_pass(self):
        self.assertEqual(grader.runner.verdict(0, "", 0.1), ("fail", "exit status 0"))
        self.assertEqual(grader.runner.verdict(0, "All tests passed (0 assertions in 1 test case)", 0.1)[0], "fail")

    def test_the_limits_hold_and_end_the_test_fast(self):
        loop = self.tests["ex02.3 top_p stops at p"]
        self.assertGreaterEqual(loop.cpu, LIVE_LIMITS.cpu * 0.9)
        self.assertLess(loop.seconds, LIVE_LIMITS.wall)
        sleep = self.tests["ex02.4 temperature scales logits"]
        self.assertLess(sleep.cpu, 1)
        self.assertLess(sleep.seconds, LIVE_LIMITS.wall + 3)
        huge = self.tests["ex02.5 sample allocates 50 GB"]
        self.assertLess(huge.seconds, 3)
        self.assertIn("std::bad_alloc", huge.report)

    def test_odd_bytes_survive_as_text(self):
        test = self.tests["ex02.6 min_p prints odd bytes"]
        self.assertIn("\x1b[31m", test.output)
        self.assertIn("\ufffd", test.output)
        ET.fromstring(grader.formats.junit_xml(grader.scoring.group_by_exercise(
            json.loads(fixture("manifest.json"))["exercises"], [test])[0]))   # still valid XML

    def test_exercise_id_comes_from_the_name(self):
        self.assertEqual(self.tests["ex01.2 greedy stops at EOS"].exercise, "01.2")
        self.assertEqual(grader.runner.TestResult("no id here", "pass").exercise, "")

    def test_prefix_with_or_without_the_space(self):
        self.assertEqual(grader.runner.test_name("student:ex00.1 a b"), "ex00.1 a b")
        self.assertEqual(grader.runner.test_name("student: ex00.1 a b"), "ex00.1 a b")
        self.assertEqual(grader.runner.test_name("solution:ex00.1 a b"), "ex00.1 a b")

    def test_a_slow_test_gets_ten_times_what_its_solution_needs(self):
        floor = grader.runner.Limits(cpu=5, wall=60)
        seconds = {"ex01.2 slow": 4.57, "ex01.2 quick": 0.2}
        self.assertEqual(grader.runner.limits_for("ex01.2 slow", seconds, floor), grader.runner.Limits(cpu=46, wall=276))
        self.assertEqual(grader.runner.limits_for("ex01.2 quick", seconds, floor), floor)
        self.assertEqual(grader.runner.limits_for("ex09.9 unknown", seconds, floor), floor)
        self.assertEqual(grader.runner.solution_seconds("/nonexistent/file.json"), {})
        recorded = grader.runner.solution_seconds()      # the course's own file
        self.assertTrue(recorded and all(isinstance(v, (int, float)) and v > 0 for v in recorded.values()))

    def test_a_program_that_cannot_start(self):
        spec = grader.runner.TestSpec("student:ex00.1 x", ["/nonexistent/program"])
        with tempfile.TemporaryDirectory() as tmp:
            result = grader.runner.run_test(spec, tmp)
        self.assertEqual(result.outcome, "notrun")
        self.assertIn("cannot start it", result.reason)


class TestList(unittest.TestCase):
    def test_ctest_show_only_json(self):
        text = json.dumps({"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "tests": [
            {"name": "student:ex01.1 argmax picks", "command": ["/b/exercise_tests_01", "ex01.1 argmax picks",
                                                                "--warn", "NoTests"],
             "properties": [{"name": "LABELS", "value": ["student"]},
                            {"name": "WORKING_DIRECTORY", "value": "/b/tests"}]},
            {"name": "student:ex01.2 not built", "properties": []}]})
        self.assertEqual(grader.runner.parse_test_list(text), [grader.runner.TestSpec(
            "student:ex01.1 argmax picks", ["/b/exercise_tests_01", "ex01.1 argmax picks", "--warn", "NoTests"],
            "/b/tests")])


class Excerpts(unittest.TestCase):
    def setUp(self):
        self.tests = {t.exercise: t for t in live_runs().values() if t.outcome != "pass"}

    def test_failed_check_shows_its_first_block_with_expected_and_found(self):
        lines = grader.excerpts.failure_excerpt(self.tests["01.2"].report, ROOT)
        self.assertEqual(lines[0], "tests/exercises/runs.cpp:37: FAILED:")
        self.assertIn("  CHECK( found == expected )", lines)
        self.assertIn("  expected: 307, 12, 99", lines)
        self.assertIn("  found:    307, 12, 12", lines)
        self.assertFalse(any("found[2]" in line for line in lines))  # only the first block

    def test_not_started_stub_is_recognised(self):
        self.assertTrue(self.tests["01.1"].not_started)
        self.assertFalse(self.tests["01.2"].not_started)
        lines = grader.excerpts.failure_excerpt(self.tests["01.1"].report, ROOT)
        self.assertIn("  exercise 01.1 (argmax) is not implemented yet", lines)

    def test_timeout_crash_and_memory_wording(self):
        tests = live_runs()
        loop = grader.excerpts.describe_failure(tests["ex02.3 top_p stops at p"], ROOT)
        self.assertEqual(loop, ["stopped at its limit of 1 s of CPU time (at least 10 times what the worked "
                                "solution needs; time spent waiting for a busy machine does not count): an "
                                "endless loop, or a very slow machine?"])
        sleep = grader.excerpts.describe_failure(tests["ex02.4 temperature scales logits"], ROOT)
        self.assertTrue(sleep[0].startswith("stopped after 10 s of wall-clock time, having used 0.0 s of CPU: "
                                            "is it waiting (sleep, input), or is the machine very busy?"))
        self.assertEqual(sleep[1:], ["step 1 done"])
        crash = grader.excerpts.describe_failure(tests["ex02.1 softmax sums to one"], ROOT)
        self.assertEqual(crash[0], "crashed (segmentation fault: an index out of range, or a dangling reference?)")
        self.assertIn("  SIGSEGV - Segmentation violation signal", crash)
        self.assertTrue(grader.excerpts.describe_failure(tests["ex02.2 top_k keeps k tokens"], ROOT)[0]
                        .startswith("crashed (aborted"))
        memory = grader.excerpts.describe_failure(tests["ex02.5 sample allocates 50 GB"], ROOT)
        self.assertEqual(memory[0], "ran out of memory (std::bad_alloc): a test may use 1024 MB; an allocation "
                                    "of a huge or negative size?")

    def test_exit_without_a_catch_report(self):
        lines = grader.excerpts.describe_failure(live_runs()["ex02.5 sample draws from the distribution"], ROOT)
        self.assertIn("exit()", lines[0])
        self.assertEqual(lines[1:], ["about to quit"])

    def test_long_output_is_clipped(self):
        output = "x.cpp:1: FAILED:\n" + "\n".join(f"  line {i}" for i in range(40)) + "\n\n"
        lines = grader.excerpts.failure_excerpt(output, ROOT, limit=15)
        self.assertEqual(len(lines), 15)
        self.assertEqual(lines[-1], "... (27 more lines)")

    def test_a_long_expansion_gives_way_to_the_messages(self):
        vector = ["  197, 197, 197,"] * 5
        block = (["t.cpp:9: FAILED:", "  CHECK( found == expected )", "with expansion:"] + vector + ["  =="]
                 + vector + ["with messages:", "  expected: 307, 258", "  found:    263, 198"])
        lines = grader.excerpts.failure_excerpt("\n".join(block) + "\n\n", ROOT, limit=15)
        self.assertEqual(lines, block[:2] + ["with expansion: (11 lines, left out)"] + block[-3:])
        short = block[:3] + ["  1 == 2"] + block[-3:]
        self.assertEqual(grader.excerpts.failure_excerpt("\n".join(short), ROOT), short)

    def test_program_output_drops_catch_boilerplate(self):
        kept = grader.excerpts.program_output(live_runs()["ex02.6 min_p prints odd bytes"].report, ROOT)
        self.assertFalse(any("Catch v" in l or l.startswith("Filters:") or "test cases:" in l for l in kept))
        self.assertFalse(any(l == "tests/exercises/runs.cpp:66" for l in kept))  # header


class CompileErrors(unittest.TestCase):
    def test_errors_in_an_exercise_start_at_its_context_line(self):
        lines, mine = grader.build.compile_errors(fixture("build_error.txt"), ROOT)
        self.assertTrue(mine)
        self.assertTrue(lines[0].startswith("exercises/01-greedy/argmax.cpp: In function"))
        self.assertIn("error: expected", lines[1])
        self.assertFalse(any("gmake" in l or "%]" in l for l in lines))

    def test_link_errors_are_shown_but_not_blamed_on_exercise_files(self):
        lines, mine = grader.build.compile_errors(fixture("link_error.txt"), ROOT)
        self.assertFalse(mine)
        self.assertTrue(any("undefined reference to `argmax" in l for l in lines))

    def test_at_most_the_limit(self):
        log = "\n".join(f"exercises/a.cpp:{i}:1: error: e{i}" for i in range(100))
        self.assertEqual(len(grader.build.compile_errors(log, ROOT, limit=40)[0]), 40)


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
        doc = grader.formats.results_json(self.exercises, 1.234, root=ROOT)
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
        doc = grader.formats.gradescope_json(grader.formats.results_json(self.exercises, 1.234, root=ROOT))
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
        exercises = [grader.scoring.ExerciseResult(ex.info, []) for ex in self.exercises]
        doc = grader.formats.gradescope_json(
            grader.formats.results_json(exercises, 0.5, "the exercises did not compile", root=ROOT))
        self.assertEqual((doc["score"], doc["tests"], doc["output"]), (0, [], "the exercises did not compile"))

    def test_results_json_when_nothing_ran(self):
        exercises = [grader.scoring.ExerciseResult(ex.info, []) for ex in self.exercises]
        doc = grader.formats.results_json(exercises, 0.5, "the exercises did not compile", root=ROOT)
        self.assertEqual((doc["status"], doc["score"], doc["max_score"], doc["tests"]), ("error", 0, 12, []))
        self.assertEqual(doc["message"], "the exercises did not compile")

    def test_all_passed(self):
        done = [grader.scoring.ExerciseResult(ex.info, [grader.runner.TestResult(f"ex{ex.info['id']} t", "pass")])
                for ex in self.exercises]
        doc = grader.formats.results_json(done, 0, root=ROOT)
        self.assertEqual((doc["status"], doc["score"]), ("pass", 12))


class LibraryCalls(unittest.TestCase):
    """No answer by call: what an exercise's object refers to, against its manifest lists."""

    SOFTMAX = {"id": "02.1", "function": "your_softmax", "may_use": [], "answer": ["decodebook::softmax"]}

    def test_qualified_names(self):
        cases = {"decodebook::softmax(xt::xtensor_container<xt::uvector<float, std::allocator<float> >, 1ul, "
                 "(xt::layout_type)1, xt::xtensor_expression_tag> const&)": "decodebook::softmax",
                 "decodebook::Gpt2::forward(std::vector<int, std::allocator<int> > const&) const":
                     "decodebook::Gpt2::forward",
                 "void decodebook::fill<int>(std::vector<int, std::allocator<int> >&)": "decodebook::fill",
                 "decodebook::f(int)::{lambda(int)#1}::operator()(int) const": "decodebook::f",
                 "std::vector<decodebook::Beam, std::allocator<decodebook::Beam> >::push_back(decodebook::Beam&&)":
                     "std::vector::push_back",
                 "decodebook::kTable": "decodebook::kTable"}
        for demangled, name in cases.items():
            self.assertEqual(grader.symbols.qualified_name(demangled), name, demangled)
        self.assertIsNone(grader.symbols.qualified_name("typeinfo for decodebook::Error"))
        self.assertIsNone(grader.symbols.qualified_name("vtable for decodebook::NotImplemented"))

    def test_patterns(self):
        self.assertTrue(grader.symbols.allowed("decodebook::Gpt2::forward", ["decodebook::Gpt2::*"]))
        self.assertTrue(grader.symbols.allowed("decodebook::your_argmax", grader.symbols.ALWAYS_ALLOWED))
        self.assertFalse(grader.symbols.allowed("decodebook::Gpt2x::forward", ["decodebook::Gpt2::*"]))
        self.assertFalse(grader.symbols.allowed("decodebook::softmax_all", ["decodebook::softmax"]))

    def test_nm_listing_by_member(self):
        text = ("libexercises_02.a:softmax.cpp.o:                 U _ZN10decodebook7softmaxERKi\n"
                "libexercises_02.a:softmax.cpp.o:0000000000000000 T _ZN10decodebook12your_softmaxERKi\n"
                "libexercises_02.a:sample.cpp.o:0000000000000010 W _ZN10decodebook15candidate_orderERKi\n"
                "libexercises_02.a:sample.cpp.o: no symbols\n")
        self.assertEqual(grader.symbols.parse_nm(text), {
            "softmax.cpp.o": [("U", "_ZN10decodebook7softmaxERKi"), ("T", "_ZN10decodebook12your_softmaxERKi")],
            "sample.cpp.o": [("W", "_ZN10decodebook15candidate_orderERKi")]})

    def test_a_module_map_names_the_answers_it_kept_and_not_those_it_dropped(self):
        # GNU ld's map: discarded sections first, then what was kept; a long section name on a line
        # of its own, its address on the next
        text = ("Discarded input sections\n\n"
                " .text._ZN10decodebook7softmaxERKN2xt7xtensorIfLm1EEE\n"
                "                0x0000000000000000       0x40 libdecodebook_sampling.a(sampling.cpp.o)\n\n"
                "Linker script and memory map\n\n"
                " .text._ZN10decodebook15candidate_orderERKN2xt7xtensorIfLm1EEE\n"
                "                0x0000000000001000       0x80 libdecodebook_sampling.a(sampling.cpp.o)\n"
                " .text.unlikely._ZN10decodebook11apply_top_kERN2xt7xtensorIfLm1EEEii\n"
                "                0x0000000000002000       0x10 libdecodebook_sampling.a(sampling.cpp.o)\n")
        exercises = [{"id": "02.1", "answer": ["decodebook::softmax"]},
                     {"id": "03.1", "answer": ["decodebook::apply_top_k", "decodebook::LogitsChain::*"]}]
        self.assertEqual(grader.symbols.module_answers(text, exercises), [("03.1", "decodebook::apply_top_k")])

    def test_undefined_and_inline_library_functions_count_but_not_the_students_own(self):
        demangled = {"a": "decodebook::softmax(int const&)", "b": "decodebook::your_softmax(int const&)",
                     "c": "decodebook::candidate_order(int const&)", "d": "decodebook::my_helper(int)",
                     "e": "std::exp(float)", "f": "decodebook::mine(int)"}
        symbols = [("U", "a"), ("T", "b"), ("W", "c"), ("W", "d"), ("U", "e"), ("t", "f")]
        self.assertEqual(grader.symbols.library_uses(symbols, demangled, {"softmax", "candidate_order"}),
                         ["decodebook::softmax", "decodebook::candidate_order"])

    def test_calling_the_answer_scores_zero_with_a_message_that_says_so(self):
        self.assertEqual(grader.symbols.call_violation(self.SOFTMAX, ["decodebook::softmax"]),
                         "your_softmax calls decodebook::softmax, which is the answer: write it yourself")

    def test_another_library_function_is_refused_with_what_is_allowed(self):
        sample = {"id": "02.3", "function": "your_sample_inverse_cdf", "may_use": ["decodebook::candidate_order"],
                  "answer": ["decodebook::sample_inverse_cdf"]}
        self.assertIsNone(grader.symbols.call_violation(sample, ["decodebook::candidate_order", "decodebook::your_softmax",
                                                        "decodebook::NotImplemented::NotImplemented"]))
        message = grader.symbols.call_violation(sample, ["decodebook::LogitsChain::apply"])
        self.assertEqual(message, "your_sample_inverse_cdf calls decodebook::LogitsChain::apply, which exercise "
                                  "02.3 may not use: write that part yourself (the library functions it may use: "
                                  "decodebook::candidate_order)")

    def test_a_violation_scores_zero_everywhere(self):
        exercises, _ = fixture_results()
        passing = next(ex for ex in exercises if ex.state == "pass")
        exercises, _ = grader.scoring.group_by_exercise([e.info for e in exercises], [t for e in exercises for t in e.tests],
                                               violations={passing.info["id"]: "your_x calls decodebook::x, which "
                                                           "is the answer: write it yourself"})
        ex = next(e for e in exercises if e.info["id"] == passing.info["id"])
        self.assertEqual((ex.state, ex.earned), ("forbidden", 0))
        lines = grader.report.exercise_lines(ex, colour=False)
        self.assertIn("(calls a library function it may not: scores 0)", lines[0])
        self.assertIn("which is the answer: write it yourself", "\n".join(lines))
        doc = grader.formats.results_json(exercises, 1.0, root=ROOT)
        entries = [t for t in doc["tests"] if t["exercise"] == ex.info["id"]]
        self.assertEqual([(t["status"], t["score"]) for t in entries], [("error", 0)])
        self.assertIn("which is the answer", entries[0]["message"])
        junit = grader.formats.junit_xml(exercises, root=ROOT)
        self.assertIn(f"ex{ex.info['id']} (calls a library function it may not)", junit)


class Selection(unittest.TestCase):
    manifest = json.loads(fixture("manifest.json"))["exercises"]

    def ids(self, which):
        return [e["id"] for e in grader.manifest.select_exercises(self.manifest, which)]

    def test_chapter_forms(self):
        for which in ("01", "1", "01-greedy", "exercises/01-greedy/"):
            self.assertEqual(self.ids(which), ["01.1", "01.2"], which)
        self.assertEqual(self.ids("02.3"), ["02.3"])
        self.assertEqual(len(self.ids(None)), 11)
        self.assertEqual(self.ids("07"), [])

    def test_several_chapters_and_exercises_at_once(self):
        self.assertEqual(self.ids(["02", "01"]), self.ids("01") + self.ids("02"))  # course order
        self.assertEqual(self.ids(["01.2", "01"]), ["01.1", "01.2"])                    # each once
        self.assertEqual(self.ids([]), self.ids(None))
        self.assertEqual(self.ids(["01", "07"]), [])                                    # one unknown: refused whole
        self.assertEqual(grader.manifest.unknown_selections(self.manifest, ["01", "07", "9.9"]), ["07", "9.9"])

    def test_ctest_regex_escapes_dots_and_matches_whole_ids(self):
        pattern = re.compile(grader.runner.ctest_regex(["01.1", "01.2"]))
        self.assertEqual(grader.runner.ctest_regex(["01.1"]), r"^student: ?ex(01\.1) ")
        self.assertTrue(pattern.search("student:ex01.1 argmax picks"))
        self.assertTrue(pattern.search("student: ex01.2 greedy"))
        self.assertFalse(pattern.search("student:ex01.10 later"))
        self.assertFalse(pattern.search("student:ex0111 odd"))

    def test_cache_mode(self):
        self.assertTrue(grader.build.cache_says_solutions("X:BOOL=1\nDECODEBOOK_SOLUTIONS:BOOL=ON\n"))
        self.assertFalse(grader.build.cache_says_solutions("DECODEBOOK_SOLUTIONS:BOOL=OFF\n"))
        self.assertFalse(grader.build.cache_says_solutions("CMAKE_BUILD_TYPE:STRING=Release\n"))


class Report(unittest.TestCase):
    def setUp(self):
        exercises, strays = fixture_results()
        self.text = grader.report.render_report(exercises, strays, colour=False, root=ROOT)

    def test_lines(self):
        lines = self.text.splitlines()
        self.assertIn("  ✓ 00.1 Take the last position's logits", lines)
        self.assertIn("  ✗ 01.1 Argmax with the tie rule (not started)", lines)
        self.assertIn("      start in exercises/01-greedy/argmax.cpp", lines)
        self.assertIn("  ✗ 01.2 Greedy generation with the EOS rule  (1 of 2 tests failed)", lines)
        at = lines.index("      test: ex02.3 top_p stops at p")
        self.assertEqual(lines[at + 1:at + 4], [
            "        stopped at its limit of 1 s of CPU time (at least 10 times what the worked solution",
            "        needs; time spent waiting for a busy machine does not count): an endless loop, or a very",
            "        slow machine?"])
        self.assertIn("        crashed (segmentation fault: an index out of range, or a dangling reference?)", lines)
        self.assertIn("          found:    307, 12, 12", lines)
        self.assertIn("      hint: hint for 01.2: look at generate_greedy.", lines)
        self.assertIn("  chapter 01: 0/2 exercises, 0/3 points", lines)
        self.assertIn("[####----------------] 2/11 exercises, 2/12 points", lines)
        self.assertTrue(any("02.7" in l and "has no tests — tell your instructor" in l for l in lines))
        self.assertTrue(any("ex99.1" in l and "no exercise" in l for l in lines))

    def test_hints_only_for_exercises_tried_and_failed(self):
        lines = self.text.splitlines()
        self.assertNotIn("      hint: hint for 01.1: look at argmax.", lines)       # not started: no hint
        self.assertIn("      hint: hint for 01.2: look at generate_greedy.", lines)  # tried and failed
        self.assertFalse(any("hint for 00." in l for l in lines))                    # passed
        exercises, strays = fixture_results()
        every = grader.report.render_report(exercises, strays, colour=False, root=ROOT, hints=True).splitlines()
        self.assertIn("      hint: hint for 01.1: look at argmax.", every)
        self.assertTrue(grader.cli.parse_args(["--hints"]).hints)
        self.assertFalse(grader.cli.parse_args([]).hints)

    def test_not_started_has_no_dump(self):
        block = self.text.split("01.1 Argmax")[1].split("01.2 Greedy")[0]
        self.assertNotIn("FAILED", block)

    def test_colour_only_when_asked(self):
        self.assertNotIn("\033[", self.text)
        exercises, strays = fixture_results()
        self.assertIn("\033[32m✓\033[0m", grader.report.render_report(exercises, strays, colour=True, root=ROOT))

    def test_long_hints_are_wrapped(self):
        info = dict(json.loads(fixture("manifest.json"))["exercises"][0], hint="word " * 60)
        ex = grader.scoring.ExerciseResult(info, [grader.runner.TestResult("ex00.1 t", "fail", report="x.cpp:1: FAILED:\n")])
        lines = grader.report.exercise_lines(ex, colour=False, root=ROOT)
        hint = [l for l in lines if l.startswith("      hint:") or l.startswith("            word")]
        self.assertGreater(len(hint), 2)
        self.assertTrue(all(len(l) <= 96 for l in lines))
        self.assertEqual(" ".join(l.strip() for l in hint), "hint: " + " ".join(["word"] * 60))

    def test_progress_bar(self):
        self.assertEqual(grader.report.progress_bar(3, 4, width=8), "[######--]")
        self.assertEqual(grader.report.progress_bar(0, 0, width=4), "[----]")


class HintTiers(unittest.TestCase):
    """./grade shows one more tier of a failing exercise's hint for each distinct version of its
    files that failed (a hash kept in the build directory); --hints shows them all."""
    TIERS = ["look at the ties", "keep the first maximum", "compare with >, not >="]

    def info(self, hint=None):
        return dict(fixture_manifest()[2], hint=self.TIERS if hint is None else hint)   # 01.1

    def failing(self, tier=1, hint=None):
        return grader.scoring.ExerciseResult(
            self.info(hint), [grader.runner.TestResult("ex01.1 t", "fail", report="x.cpp:1: FAILED:\n")], tier=tier)

    def shown(self, ex, hints=False):
        return [l.strip() for l in grader.report.exercise_lines(ex, colour=False, root=ROOT, hints=hints)
                if l.strip().startswith("hint")]

    def test_first_failure_shows_tier_1(self):
        attempts = {}
        self.assertEqual(grader.hints.hint_tier(attempts, "01.1", "fail", "v1"), 1)
        self.assertEqual(self.shown(self.failing(1)), ["hint 1 of 3: look at the ties"])
        text = "\n".join(grader.report.exercise_lines(self.failing(1), colour=False, root=ROOT))
        self.assertIn("hint 2 comes after another failed try with changed code", text)

    def test_the_same_code_failing_again_stays_at_its_tier(self):
        attempts = {}
        for _ in range(3):
            self.assertEqual(grader.hints.hint_tier(attempts, "01.1", "fail", "v1"), 1)

    def test_changed_code_failing_shows_the_next_tier(self):
        attempts = {}
        grader.hints.hint_tier(attempts, "01.1", "fail", "v1")
        self.assertEqual(grader.hints.hint_tier(attempts, "01.1", "fail", "v2"), 2)
        self.assertEqual(grader.hints.hint_tier(attempts, "01.1", "fail", "v1"), 2)   # back to an old version: no new tier
        self.assertEqual(self.shown(self.failing(2)), ["hint 1 of 3: look at the ties",
                                                       "hint 2 of 3: keep the first maximum"])

    def test_tiers_stop_at_the_last(self):
        attempts = {}
        tiers = [grader.hints.hint_tier(attempts, "01.1", "fail", f"v{n}") for n in range(5)]
        self.assertEqual(tiers, [1, 2, 3, 4, 5])
        lines = self.shown(self.failing(tiers[-1]))
        self.assertEqual(lines, [f"hint {n + 1} of 3: {t}" for n, t in enumerate(self.TIERS)])
        self.assertNotIn("comes after", "\n".join(grader.report.exercise_lines(self.failing(5), colour=False, root=ROOT)))

    def test_hints_shows_every_tier_even_before_a_try(self):
        not_started = grader.scoring.ExerciseResult(self.info(), [grader.runner.TestResult(
            "ex01.1 t", "exception", report=f"x.cpp:1: FAILED:\n  01.1 {grader.runner.NOT_STARTED}\n")])
        self.assertEqual(not_started.state, "not-started")
        self.assertEqual(self.shown(not_started), [])
        self.assertEqual(len(self.shown(not_started, hints=True)), 3)
        self.assertEqual(len(self.shown(self.failing(1), hints=True)), 3)
        passed = grader.scoring.ExerciseResult(self.info(), [grader.runner.TestResult("ex01.1 t", "pass")])
        self.assertEqual(passed.state, "pass")
        self.assertEqual(len(self.shown(passed)), 0)
        self.assertEqual(len(self.shown(passed, hints=True)), 3)  # --hints: every tier of every exercise

    def test_a_pass_or_an_untouched_stub_shows_none_and_counts_nothing(self):
        attempts = {}
        for state in ("pass", "not-started", "does-not-compile", "forbidden"):
            self.assertEqual(grader.hints.hint_tier(attempts, "01.1", state, "v1"), 0)
        self.assertEqual(attempts, {})
        passed = grader.scoring.ExerciseResult(self.info(), [grader.runner.TestResult("ex01.1 t", "pass")], tier=3)
        self.assertEqual(self.shown(passed, hints=False), [])

    def test_a_plain_string_is_one_tier(self):
        self.assertEqual(grader.hints.hint_tiers({"hint": "just this"}), ["just this"])
        self.assertEqual(grader.hints.hint_tiers({}), [])
        self.assertEqual(self.shown(self.failing(4, hint="just this")), ["hint: just this"])

    def test_no_build_reads_the_count_without_adding_to_it(self):
        attempts = {}
        grader.hints.hint_tier(attempts, "01.1", "fail", "v1")
        self.assertEqual(grader.hints.hint_tier(attempts, "01.1", "fail", "v2", record=False), 1)
        self.assertEqual(grader.hints.hint_tier({}, "01.1", "fail", "v2", record=False), 1)

    def test_the_hash_is_of_the_files_contents(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "a.cpp").write_text("int x;")
            first = grader.hints.source_hash(["a.cpp"], tmp)
            self.assertEqual(grader.hints.source_hash(["a.cpp"], tmp), first)
            (Path(tmp) / "a.cpp").write_text("int y;")
            self.assertNotEqual(grader.hints.source_hash(["a.cpp"], tmp), first)
            self.assertNotEqual(grader.hints.source_hash(["gone.cpp"], tmp), first)

    def test_attempts_survive_in_the_build_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(grader.hints.read_attempts(tmp), {})
            grader.hints.write_attempts(tmp, {"01.1": {"failed": ["v1", "v2"]}})
            self.assertEqual(grader.hints.read_attempts(tmp), {"01.1": {"failed": ["v1", "v2"]}})
            (Path(tmp) / grader.hints.ATTEMPTS_FILE).write_text("not json")
            self.assertEqual(grader.hints.read_attempts(tmp), {})
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), [grader.hints.ATTEMPTS_FILE])
        grader.hints.write_attempts("/nonexistent/folder", {"01.1": {"failed": ["v1"]}})   # no error: hints only


def fixture_manifest():
    return json.loads(fixture("manifest.json"))["exercises"]


def failed_chapter(chapter="01", log="build_error.txt"):
    return grader.build.chapter_failure(chapter, fixture(log), ROOT)


def results_with_failure(chapter="01"):
    """The fixture run as if `chapter` had not compiled: its tests never ran."""
    tests = [t for t in live_runs().values() if not t.exercise.startswith(chapter + ".")]
    return grader.scoring.group_by_exercise(fixture_manifest(), tests, {chapter: failed_chapter(chapter)})


class ChapterBuildFailures(unittest.TestCase):
    def test_a_real_chapter_failure_starts_at_the_stub_with_its_function(self):
        failure = grader.build.chapter_failure("04", fixture("chapter_04_error.txt"), ROOT)
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("exercises/04-penalties/repetition.cpp: In function"))
        self.assertRegex(failure.lines[1], r"^exercises/04-penalties/repetition\.cpp:\d+:\d+: error: expected ‘;’")
        self.assertFalse(any(ROOT in l or "gmake" in l or "%]" in l for l in failure.lines))
        self.assertEqual(failure.verdict, "chapter 04 does not compile: fix the first error above")
        self.assertTrue(failure.message.endswith("\n\nchapter 04 does not compile: fix the first error above"))

    def test_the_exercise_whose_file_has_the_error_is_named(self):
        manifest = json.loads((REPO / "exercises" / "manifest.json").read_text())["exercises"]
        log = fixture("chapter_04_error.txt").replace(ROOT, str(REPO))
        failure = grader.build.chapter_failure("04", log, REPO, manifest=manifest)
        owner = next(e["id"] for e in manifest if "exercises/04-penalties/repetition.cpp" in e["files"])
        self.assertEqual(list(failure.culprits), [owner])
        self.assertRegex(failure.culprits[owner][1], r"^exercises/04-penalties/repetition\.cpp:\d+:\d+: error:")
        exercises, _ = grader.scoring.group_by_exercise([e for e in manifest if e["chapter"] == "04"], [], {"04": failure})
        states = {ex.info["id"]: ex.state for ex in exercises}
        self.assertEqual(states.pop(owner), "does-not-compile")
        self.assertTrue(states and set(states.values()) == {"blocked"})

    def test_a_broken_chapter_00_stub_blocks_chapter_01(self):
        manifest = json.loads((REPO / "exercises" / "manifest.json").read_text())["exercises"]
        failure = grader.build.chapter_failure("01", fixture("chapter_01_uses_00.txt").replace(ROOT, str(REPO)), REPO,
                                        manifest=manifest)
        owner = next(e["id"] for e in manifest if "exercises/00-naive-loop/last_position.cpp" in e["files"])
        self.assertEqual(list(failure.culprits), [owner])
        exercises, _ = grader.scoring.group_by_exercise([e for e in manifest if e["chapter"] == "01"], [], {"01": failure})
        self.assertEqual({ex.state for ex in exercises}, {"blocked"})
        self.assertTrue(grader.report.render_report(exercises, colour=False, root=REPO).count(f"(not graded: {owner} does "
                                                                                       "not compile)") >= 2)

    def test_a_changed_signature_is_blamed_on_its_exercise(self):
        failure = grader.build.chapter_failure("01", fixture("link_error.txt"), ROOT, manifest=fixture_manifest())
        self.assertEqual(list(failure.culprits), ["01.1"])
        self.assertIn("undefined reference to `argmax", "\n".join(failure.culprits["01.1"]))
        self.assertIn("argmax is declared in lib/include/decodebook/exercises.hpp", failure.culprits["01.1"][-1])
        self.assertTrue(failure.mine)
        self.assertNotIn("tell your instructor", failure.verdict)

    def test_without_a_known_file_the_whole_chapter_does_not_compile(self):
        failure = grader.build.chapter_failure("02", "lib/src/x.cpp:1:1: error: boom\n", ROOT, manifest=fixture_manifest())
        self.assertIsNone(failure.culprits)
        exercises, _ = grader.scoring.group_by_exercise(fixture_manifest(), [], {"02": failure})
        self.assertEqual({ex.state for ex in exercises if ex.info["chapter"] == "02"}, {"does-not-compile"})

    def test_a_broken_chapter_00_stub_shows_in_chapter_01(self):
        failure = grader.build.chapter_failure("01", fixture("chapter_01_uses_00.txt"), ROOT)
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("exercises/00-naive-loop/last_position.cpp: In function"))

    def test_the_students_error_comes_first_even_after_another(self):
        log = fixture("chapter_04_mixed.txt")
        self.assertLess(log.index("tests/golden.hpp"), log.index("exercises/04-penalties/repetition.cpp"))
        failure = grader.build.chapter_failure("04", log, ROOT)
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("exercises/04-penalties/repetition.cpp: In function"))

    def test_a_failure_outside_the_students_files_is_for_the_instructor(self):
        log = "\n".join(l for l in fixture("chapter_04_mixed.txt").splitlines() if "exercises/" not in l)
        failure = grader.build.chapter_failure("04", log, ROOT)
        self.assertFalse(failure.mine)
        self.assertTrue(failure.lines[0].startswith("In file included from tests/golden.cpp"))
        self.assertIn("tell your instructor", failure.verdict)
        self.assertIn("chapter 04", failure.verdict)

    def test_a_copy_of_exercises_elsewhere_counts_as_the_students(self):
        log = fixture("chapter_04_error.txt").replace(f"{ROOT}/exercises/", "/tmp/submissions/ada/")
        failure = grader.build.chapter_failure("04", log, ROOT, exercises_dir="/tmp/submissions/ada")
        self.assertTrue(failure.mine)
        self.assertTrue(failure.lines[0].startswith("/tmp/submissions/ada/04-penalties/repetition.cpp: In"))
        unsaid = grader.build.chapter_failure("04", log, ROOT)   # without exercises_dir: still its only error
        self.assertTrue(unsaid.lines[0].startswith("/tmp/submissions/ada/04-penalties/repetition.cpp: In"))

    def test_a_warning_that_mentions_error_is_not_an_error(self):
        log = ("exercises/a.cpp:3:9: warning: unused variable ‘error’ [-Wunused-variable]\n"
               "src/lib.cpp:1:1: error: boom\n")
        self.assertEqual(grader.build.compile_errors(log, ROOT)[0], ["src/lib.cpp:1:1: error: boom"])

    def test_long_errors_are_clipped_per_chapter(self):
        log = "\n".join(f"exercises/a.cpp:{i}:1: error: e{i}" for i in range(100))
        failure = grader.build.chapter_failure("02", log, ROOT)
        self.assertEqual(len(failure.lines), grader.build.CHAPTER_ERROR_LINES)
        self.assertEqual(failure.lines[-1], "... (81 more lines)")

    def test_an_empty_log_still_says_something(self):
        self.assertEqual(grader.build.chapter_failure("02", "gmake: *** [all] Error 2\n", ROOT).lines,
                         ["(the build printed no error)"])

    def test_not_built_with_no_build(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "exercise_tests_00").touch()
            failures = grader.build.not_built(tmp, ["00", "01"])
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
        tests = list(live_runs().values())   # 01.2 has a passing test
        exercises, _ = grader.scoring.group_by_exercise(fixture_manifest(), tests, {"01": failed_chapter()})
        self.assertEqual({ex.info["id"]: ex.earned for ex in exercises if ex.info["chapter"] == "01"},
                         {"01.1": 0, "01.2": 0})

    def test_results_json_entries(self):
        doc = grader.formats.results_json(self.exercises, 2.0, root=ROOT)
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
        doc = grader.formats.gradescope_json(grader.formats.results_json(self.exercises, 2.0, root=ROOT))
        entry = {t["name"]: t for t in doc["tests"]}["ex01.1 (does not compile)"]
        self.assertEqual((entry["status"], entry["score"], entry["max_score"], entry["number"]),
                         ("failed", 0, 1, "01.1"))
        self.assertIn("error: expected", entry["output"])

    def test_when_no_chapter_compiled(self):
        failures = {"00": failed_chapter("00"), "01": failed_chapter("01")}
        manifest = [e for e in fixture_manifest() if e["chapter"] in failures]
        exercises, _ = grader.scoring.group_by_exercise(manifest, [], failures)
        doc = grader.formats.results_json(exercises, 1.0, root=ROOT)
        self.assertEqual((doc["status"], doc["score"], doc["max_score"]), ("error", 0, 5))
        self.assertTrue(doc["message"].startswith("no chapter could be built (00, 01); chapter 00:\n"))
        self.assertEqual([t["name"] for t in doc["tests"]],
                         ["ex00.1 (does not compile)", "ex00.2 (does not compile)",
                          "ex01.1 (does not compile)", "ex01.2 (does not compile)"])
        self.assertEqual(grader.formats.gradescope_json(doc)["output"], doc["message"])

    def test_junit_gets_an_error_testcase_per_exercise(self):
        suite = ET.fromstring(grader.formats.junit_xml(self.exercises, ROOT))
        # 11 tests of chapters 00 and 02 ran (3 pass, 2 failed checks, 6 errors), + 02.7 (no tests), + 01.1, 01.2
        self.assertEqual((suite.get("tests"), suite.get("failures"), suite.get("errors")), ("14", "2", "9"))
        case = suite.find("testcase[@name='student:ex01.1 (does not compile)']")
        self.assertEqual(case.get("status"), "fail")
        self.assertEqual(case.find("error").get("message"), "does not compile")
        self.assertIn("exercises/01-greedy/argmax.cpp", case.find("error").text)

    def test_junit_without_any_test_run(self):
        exercises, _ = grader.scoring.group_by_exercise(fixture_manifest()[:2], [], {"00": failed_chapter("00")})
        suite = ET.fromstring(grader.formats.junit_xml(exercises, ROOT))
        self.assertEqual((suite.get("tests"), suite.get("errors")), ("2", "2"))

    def test_junit_of_a_whole_run(self):
        exercises, _ = fixture_results()
        suite = ET.fromstring(grader.formats.junit_xml(exercises, ROOT))
        cases = {c.get("name"): c for c in suite.iter("testcase")}
        self.assertEqual(cases["student:ex01.2 greedy stops at EOS"].get("status"), "run")
        failed = cases["student:ex01.2 greedy matches the golden tokens"]
        self.assertIn("found:    307, 12, 12", failed.find("failure").text)
        self.assertEqual(cases["student:ex02.3 top_p stops at p"].find("error").get("message"), "timeout")
        self.assertIn("student:ex02.7 (no tests)", cases)


class ChapterFailureReport(unittest.TestCase):
    def setUp(self):
        exercises, strays = results_with_failure("01")
        self.text = grader.report.render_report(exercises, strays, colour=False, root=ROOT)
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
        self.assertIn("        crashed (segmentation fault: an index out of range, or a dangling reference?)",
                      self.lines)
        self.assertIn("[####----------------] 2/11 exercises, 2/12 points", self.lines)

    def test_next_points_at_the_first_broken_chapter(self):
        self.assertEqual(self.lines[-1], "next: make chapter 01 compile (its first error is shown above)")
        exercises, _ = grader.scoring.group_by_exercise(fixture_manifest(), [], {
            c: grader.scoring.BuildFailure(c, [], kind="not-built") for c in ("00", "01", "02")})
        text = grader.report.render_report(exercises, colour=False, root=ROOT)
        self.assertIn("  ✗ 00.1 Take the last position's logits (not built)", text)
        self.assertIn("  exercise_tests_00 is not built: run ./grade without --no-build", text)
        self.assertTrue(text.endswith("next: run ./grade without --no-build\n"))

    def test_colour(self):
        exercises, strays = results_with_failure("01")
        text = grader.report.render_report(exercises, strays, colour=True, root=ROOT)
        self.assertIn("\033[31m(does not compile)\033[0m", text)
        self.assertIn("\033[31mchapter 01 does not compile: fix the first error above\033[0m", text)

    def test_a_copy_of_exercises_is_named(self):
        exercises, _ = fixture_results()
        text = grader.report.render_report(exercises, colour=False, root=ROOT, exercises_dir=Path("/srv/ada/exercises"))
        self.assertTrue(text.startswith("decodebook: grading the exercises in /srv/ada/exercises\n"))
        self.assertIn("      start in /srv/ada/exercises/01-greedy/argmax.cpp", text.splitlines())
        solutions = grader.report.render_report(exercises, colour=False, solutions=True, root=ROOT,
                                        exercises_dir=Path("/srv/ada/exercises"))
        self.assertTrue(solutions.startswith("decodebook: grading the worked solutions\n"))


class Selection2(unittest.TestCase):
    manifest = fixture_manifest()

    def pick(self, which):
        return grader.manifest.select_exercises(self.manifest, which)

    def test_whole_chapters_run_by_chapter(self):
        self.assertEqual(grader.runner.tests_regex(self.manifest, self.pick(None), {}), r"^student: ?ex(00|01|02)\.")
        self.assertEqual(grader.runner.tests_regex(self.manifest, self.pick("01"), {}), r"^student: ?ex(01)\.")

    def test_chapters_that_failed_are_left_out(self):
        regex = grader.runner.tests_regex(self.manifest, self.pick(None), {"01": failed_chapter()})
        self.assertEqual(regex, r"^student: ?ex(00|02)\.")
        pattern = re.compile(regex)
        self.assertTrue(pattern.search("student:ex02.7 later test"))   # a test the manifest lacks still runs
        self.assertFalse(pattern.search("student:ex01.1 argmax picks"))
        self.assertFalse(pattern.search("student:ex0211 odd"))
        self.assertIsNone(grader.runner.tests_regex(self.manifest, self.pick("01"), {"01": failed_chapter()}))

    def test_single_exercises_run_by_id(self):
        self.assertEqual(grader.runner.tests_regex(self.manifest, self.pick("02.3"), {}), r"^student: ?ex(02\.3) ")

    def test_chapters_in_course_order(self):
        self.assertEqual(grader.manifest.selected_chapters(self.pick(None)), ["00", "01", "02"])
        self.assertEqual(grader.manifest.selected_chapters(self.pick("01.2")), ["01"])

    def test_exercises_dir_from_the_cache(self):
        cache = "DECODEBOOK_EXERCISES_DIR:PATH=/srv/ada/exercises\n"
        self.assertEqual(grader.build.other_exercises_dir(cache, ROOT), Path("/srv/ada/exercises"))
        self.assertIsNone(grader.build.other_exercises_dir(f"DECODEBOOK_EXERCISES_DIR:PATH={ROOT}/exercises\n", ROOT))
        self.assertIsNone(grader.build.other_exercises_dir("CMAKE_BUILD_TYPE:STRING=Release\n", ROOT))
        self.assertEqual(grader.build.cache_value("A:STRING=x y \nB:BOOL=ON\n", "A"), "x y")

    def test_student_files(self):
        files = ["exercises/01-greedy/argmax.cpp", "README.md"]
        self.assertEqual(grader.manifest.student_files(files), files)
        self.assertEqual(grader.manifest.student_files(files, "/srv/ada/exercises", ROOT),
                         ["/srv/ada/exercises/01-greedy/argmax.cpp", "README.md"])
        self.assertEqual(grader.manifest.student_files(files, f"{ROOT}/build-x/ex", ROOT),
                         ["build-x/ex/01-greedy/argmax.cpp", "README.md"])


class CommandLine(unittest.TestCase):
    def test_jobs_must_be_a_positive_whole_number(self):
        for bad in ("0", "-3", "two"):
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as exit_:
                grader.cli.parse_args(["--jobs", bad])
            self.assertEqual(exit_.exception.code, 2, bad)
            self.assertIn("--jobs", err.getvalue())
        self.assertEqual(grader.cli.parse_args(["--jobs", "3"]).jobs, 3)
        self.assertEqual(grader.cli.parse_args([]).jobs, 2)


class ReportFiles(unittest.TestCase):
    def test_a_report_file_in_a_missing_folder_is_a_usage_error(self):
        for option in ("--json", "--junit", "--gradescope"):
            with self.subTest(option=option), contextlib.redirect_stderr(io.StringIO()) as err, \
                    self.assertRaises(SystemExit) as exit_:
                grader.cli.parse_args([option, "/nonexistent/folder/x.json"])
            self.assertEqual(exit_.exception.code, 2)
            self.assertIn("does not exist", err.getvalue())

    def test_a_folder_is_not_a_report_file(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()) as err, \
                self.assertRaises(SystemExit) as exit_:
            grader.cli.parse_args(["--json", tmp])
        self.assertEqual(exit_.exception.code, 2)
        self.assertIn("is a folder", err.getvalue())

    def test_a_writable_path_is_accepted(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(grader.cli.parse_args(["--json", f"{tmp}/r.json"]).json, f"{tmp}/r.json")


class FakeTools:
    """Stands in for cmake and ctest: the chapters in `broken` fail to build with their log;
    `ctest --show-only=json-v1 -R REGEX` lists the live runs' tests that REGEX matches, as CTest
    would; running them (grader.runner.run_tests) returns those runs' results."""

    def __init__(self, broken=None):
        self.broken, self.calls, self.envs, self.ran = broken or {}, [], [], []

    def __call__(self, cmd, env=None):
        self.calls.append(cmd)
        self.envs.append(env)
        if cmd[0] == "cmake" and "--target" in cmd:
            chapter = cmd[cmd.index("--target") + 1].rsplit("_", 1)[1]
            log = self.broken.get(chapter)
            return subprocess.CompletedProcess(cmd, 2 if log else 0, log or "")
        if cmd[0] == "nm":   # every manifest file compiled, calling nothing of the library's
            manifest = json.loads(fixture("manifest.json"))["exercises"]
            members = {Path(f).name for e in manifest for f in e["files"] + e.get("solution_files", [])}
            return subprocess.CompletedProcess(cmd, 0, "".join(f"{cmd[-1]}:{m}.o:0000000000000000 T _Z1fv\n"
                                                               for m in sorted(members)))
        if cmd[0] == "ctest":
            assert "--show-only=json-v1" in cmd
            pattern = re.compile(cmd[cmd.index("-R") + 1])
            tests = [{"name": f"student:{name}", "command": ["exercise_tests", name], "properties": []}
                     for name in live_runs() if pattern.search(f"student:{name}")]
            return subprocess.CompletedProcess(cmd, 0, json.dumps({"kind": "ctestInfo", "tests": tests}))
        raise AssertionError(f"unexpected command {cmd}")

    @contextlib.contextmanager
    def standing_in(self):
        """For cmake, ctest and nm: every grader module that runs a tool calls its own `run`."""
        with contextlib.ExitStack() as stack:
            for module in (grader.build, grader.runner, grader.symbols):
                stack.enter_context(mock.patch.object(module, "run", self))
            yield self

    def run_tests(self, specs, jobs, limits=None):
        self.ran.append([s.name for s in specs])
        return [live_runs()[grader.runner.test_name(s.name)] for s in specs]

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
        with tools.standing_in(), mock.patch.object(grader.cli, "run_tests", tools.run_tests), \
                mock.patch.object(grader.cli, "REPO", self.dir / "repo"), \
                contextlib.redirect_stdout(io.StringIO()) as stdout:
            code = grader.cli.main(["--build-dir", str(self.dir / "build"), "--json", f"{out}.json",
                               "--junit", f"{out}.xml", "--gradescope", f"{out}.gs.json", *args])
        return code, stdout.getvalue(), json.loads(Path(f"{out}.json").read_text())

    def test_each_chapter_builds_on_its_own_and_a_broken_one_is_not_run(self):
        # the log names the real repository: main() shortens paths against it
        log = fixture("build_error.txt").replace(ROOT, str(grader.REPO))
        tools = FakeTools({"01": log})
        code, text, doc = self.grade_with(tools)
        self.assertEqual(code, 0)
        self.assertEqual(tools.targets(), ["exercise_tests_00", "exercise_tests_01", "exercise_tests_02"])
        self.assertEqual(tools.ctest_regexes(), [r"^student: ?ex(00|02)\."])
        lines = text.splitlines()
        self.assertIn("  ✗ 01.1 Argmax with the tie rule (does not compile)", lines)
        # the error is 01.1's (its file): shown under it, and 01.2 is not graded rather than "not compiling"
        at = lines.index("  ✗ 01.1 Argmax with the tie rule (does not compile)")
        self.assertEqual(lines[at + 2], "      exercises/01-greedy/argmax.cpp:6:3: error: expected ‘,’ or ‘;’ before ‘for’")
        self.assertIn("  ✗ 01.2 Greedy generation with the EOS rule (not graded: 01.1 does not compile)", lines)
        self.assertIn("  01.1 does not compile: fix the first error above (chapter 01's tests run once every file "
                      "they use compiles)", lines)
        self.assertEqual(text.count("error: expected ‘,’ or ‘;’ before ‘for’"), 1)
        self.assertIn("next: make 01.1 compile (its first error is shown above)", lines)
        self.assertIn("  ✓ 00.1 Take the last position's logits", lines)
        entries = {t["name"]: t for t in doc["tests"]}
        self.assertEqual(entries["ex01.1 (does not compile)"]["status"], "error")
        self.assertIn("argmax.cpp:6:3: error:", entries["ex01.1 (does not compile)"]["message"])
        self.assertEqual((entries["ex01.2 (not graded)"]["status"], entries["ex01.2 (not graded)"]["score"]),
                         ("error", 0))
        self.assertTrue(entries["ex01.2 (not graded)"]["message"].startswith("not graded: 01.1 does not compile"))
        self.assertNotIn("ex01.2 greedy stops at EOS", entries)
        self.assertEqual((doc["status"], doc["score"]), ("fail", 2))
        junit = ET.fromstring((self.dir / "out.xml").read_text())
        self.assertIsNotNone(junit.find("testcase[@name='student:ex01.1 (does not compile)']/error"))
        self.assertIsNotNone(junit.find("testcase[@name='student:ex01.2 (not graded)']/error"))
        gradescope = json.loads((self.dir / "out.gs.json").read_text())
        self.assertIn("ex01.1 (does not compile)", [t["name"] for t in gradescope["tests"]])

    def test_a_changed_failing_exercise_gets_its_next_hint_tier_kept_in_the_build_folder(self):
        manifest = json.loads(fixture("manifest.json"))
        for e in manifest["exercises"]:
            e["hint"] = [f"nudge for {e['id']}", f"more for {e['id']}"]
        (self.dir / "repo" / "exercises" / "manifest.json").write_text(json.dumps(manifest))
        stub = self.dir / "repo" / next(e for e in manifest["exercises"] if e["id"] == "01.2")["files"][0]
        stub.parent.mkdir(parents=True)
        stub.write_text("// try 1\n")
        hints = lambda text: [l.strip() for l in text.splitlines() if "for 01.2" in l]
        _, text, _ = self.grade_with(FakeTools(), "01.2")
        self.assertEqual(hints(text), ["hint 1 of 2: nudge for 01.2"])
        _, text, _ = self.grade_with(FakeTools(), "01.2")                  # the same code again
        self.assertEqual(hints(text), ["hint 1 of 2: nudge for 01.2"])
        stub.write_text("// try 2\n")
        _, text, _ = self.grade_with(FakeTools(), "01.2")
        self.assertEqual(hints(text), ["hint 1 of 2: nudge for 01.2", "hint 2 of 2: more for 01.2"])
        kept = json.loads((self.dir / "build" / grader.hints.ATTEMPTS_FILE).read_text())["exercises"]
        self.assertEqual(len(kept["01.2"]["failed"]), 2)
        self.assertEqual([p.name for p in (self.dir / "repo").rglob("*attempts*")], [])   # not in the source tree
        stub.write_text("// try 3\n")
        (self.dir / "build" / "exercise_tests_01").touch()
        _, text, _ = self.grade_with(FakeTools(), "01.2", "--no-build")     # its binaries may be of older code
        self.assertEqual(len(hints(text)), 2)
        self.assertEqual(len(json.loads((self.dir / "build" / grader.hints.ATTEMPTS_FILE).read_text())["exercises"]["01.2"]
                             ["failed"]), 2)

    def test_tests_run_with_one_blas_thread_each(self):
        self.assertEqual(grader.runner.TEST_ENV["OPENBLAS_NUM_THREADS"], "1")
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict("os.environ", {"OPENBLAS_NUM_THREADS": "8"}):
            spec = grader.runner.TestSpec("student:ex00.1 env", ["sh", "-c", "echo threads=$OPENBLAS_NUM_THREADS"])
            result = grader.runner.run_test(spec, tmp)
        self.assertIn("threads=1", result.output)

    def test_one_exercise_builds_only_its_chapter(self):
        tools = FakeTools()
        code, text, doc = self.grade_with(tools, "01.2")
        self.assertEqual((code, tools.targets(), tools.ctest_regexes()),
                         (0, ["exercise_tests_01"], [r"^student: ?ex(01\.2) "]))
        self.assertEqual([t["name"] for t in doc["tests"]],
                         ["ex01.2 greedy matches the golden tokens", "ex01.2 greedy stops at EOS"])

    def test_when_every_chapter_fails_the_report_is_printed_and_the_exit_is_1(self):
        tools = FakeTools({c: "lib/src/x.cpp:1:1: error: boom\n" for c in ("00", "01", "02")})
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
        with tools.standing_in(), contextlib.redirect_stderr(io.StringIO()), \
                self.assertRaises(SystemExit) as exit_:
            grader.cli.main(["--jobs", "0"])
        self.assertEqual((exit_.exception.code, tools.calls), (2, []))



class MainErrors(unittest.TestCase):
    def test_unknown_chapter_is_a_usage_error(self):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(grader.cli.main(["99-nothing"]), 2)
        self.assertIn("no chapter or exercise", err.getvalue())

    def test_no_build_without_a_build_dir_writes_an_error_result(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            code = grader.cli.main(["--no-build", "--build-dir", f"{tmp}/nothing",
                               "--json", f"{tmp}/r.json", "--junit", f"{tmp}/r.xml"])
            doc = json.loads(Path(f"{tmp}/r.json").read_text())
            junit = Path(f"{tmp}/r.xml").read_text()
        self.assertEqual(code, 1)
        self.assertEqual((doc["status"], doc["score"], doc["tests"]), ("error", 0, []))
        self.assertIn("not a configured build directory", doc["message"])
        self.assertIn('<testcase name="build"', junit)


EXPECTED = FIXTURES / "expected"
OUTCOMES = {"pass", "fail", "exception", "memory", "timeout", "crash", "notrun"}        # TestResult.outcome
STATES = {"pass", "fail", "not-started", "no-tests", "does-not-compile", "blocked", "not-built", "forbidden"}


def golden_case(folder):
    """grade_fixtures/expected/<ending>/case.json -> [ExerciseResult], as ./grade grades them (see
    the README there): live runs of runs.cpp, every test's time made 0."""
    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    manifest = {e["id"]: e for e in fixture_manifest()}
    tests = [live_runs()[name] for names in case["exercises"].values() for name in names]
    with tempfile.TemporaryDirectory() as tmp:
        tests += [grader.runner.run_test(grader.runner.TestSpec(f"student:{name}", ["/nonexistent/program"]), tmp)
                  for names in case.get("missing_program", {}).values() for name in names]
        chapters = grader.manifest.selected_chapters([manifest[i] for i in case["exercises"]])
        failures = grader.build.not_built(tmp, chapters) if case.get("not_built") else {}
    if "build_log" in case:
        failures = {c: grader.build.chapter_failure(c, fixture(case["build_log"]), ROOT, manifest=fixture_manifest())
                    for c in chapters}
    violations = {i: grader.symbols.call_violation(manifest[i], uses) for i, uses in case.get("calls", {}).items()}
    exercises, strays = grader.scoring.group_by_exercise(
        [manifest[i] for i in case["exercises"]], [dataclasses.replace(t, seconds=0.0) for t in tests], failures,
        violations)
    assert not strays, strays
    return exercises


def golden_files(exercises):
    """{expected file name: the text ./grade writes} for one case: --json, --gradescope, --junit."""
    doc = grader.formats.results_json(exercises, 0.0, root=ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        grader.formats.write_json(f"{tmp}/r.json", doc)
        grader.formats.write_json(f"{tmp}/g.json", grader.formats.gradescope_json(doc))
        return {"expected_results.json": Path(f"{tmp}/r.json").read_text(encoding="utf-8"),
                "expected_gradescope.json": Path(f"{tmp}/g.json").read_text(encoding="utf-8"),
                "expected_junit.xml": grader.formats.junit_xml(exercises, root=ROOT)}


class Golden(unittest.TestCase):
    """The report files, pinned by data: grade_fixtures/expected/<ending>/ holds, for each way a test
    can end, the exact files ./grade writes (written by hand; README.md there says how to check
    and change them). GOLDEN_ACTUAL=DIR also writes what the grader wrote to DIR/<ending>/."""

    maxDiff = None

    def test_each_ending_writes_its_expected_files(self):
        actual_dir = os.environ.get("GOLDEN_ACTUAL")
        folders = sorted(p for p in EXPECTED.iterdir() if p.is_dir())
        self.assertGreater(len(folders), 0)
        for folder in folders:
            files = golden_files(golden_case(folder))
            if actual_dir:
                (Path(actual_dir) / folder.name).mkdir(parents=True, exist_ok=True)
                for name, text in files.items():
                    (Path(actual_dir) / folder.name / name).write_text(text, encoding="utf-8")
            for name, text in files.items():
                with self.subTest(ending=folder.name, file=name):
                    self.assertEqual(text, (folder / name).read_text(encoding="utf-8"))

    def test_every_way_a_test_can_end_has_a_folder(self):
        outcomes, states = set(), set()
        for folder in (p for p in EXPECTED.iterdir() if p.is_dir()):
            for ex in golden_case(folder):
                states.add(ex.state)
                outcomes.update(t.outcome for t in ex.tests)
        self.assertEqual((outcomes, states), (OUTCOMES, STATES))


class EntryPoint(unittest.TestCase):
    """./grade runs the package from its source only, as the single script it was: a planted
    __pycache__/*.pyc (unchecked-hash: Python never compares it with its source) or a tools/*.py
    named like a standard module changes nothing, and no bytecode is written beside the package."""

    def test_planted_bytecode_and_modules_are_not_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp)
            shutil.copy2(REPO / "grade", copy / "grade")
            shutil.copytree(REPO / "tools" / "grader", copy / "tools" / "grader",
                            ignore=shutil.ignore_patterns("__pycache__"))
            forged = copy / "forged_cli.py"
            forged.write_text("def main(argv=None):\n    print('FORGED')\n    return 0\n")
            for name in ("__init__", "cli", "runner"):
                py_compile.compile(str(forged if name == "cli" else copy / "tools" / "grader" / f"{name}.py"),
                                   cfile=importlib.util.cache_from_source(str(copy / "tools" / "grader" / f"{name}.py")),
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            (copy / "tools" / "argparse.py").write_text("print('FORGED')\n")
            pycs = sorted(p.name for p in (copy / "tools").rglob("*.pyc"))
            done = subprocess.run(["/usr/bin/python3", str(copy / "grade"), "--help"], capture_output=True, text=True,
                                  cwd=tmp)
            self.assertEqual((done.returncode, done.stderr), (0, ""))
            self.assertNotIn("FORGED", done.stdout)
            self.assertIn("usage: grade", done.stdout)
            self.assertEqual(sorted(p.name for p in (copy / "tools").rglob("*.pyc")), pycs)   # none written


if __name__ == "__main__":
    unittest.main()
