#!/usr/bin/python3
"""Tests of check_course.py's rules that need no build: the site-marker check, the answers-after-
exercises check, reading the numbers a page states (check 11's rule, without running the programs)
and finding the per-chapter exercise test binaries; the quiz extension's shuffle and
its guessable-answer check (docs/_ext/quiz.py), and the site's output excerpts and :printed: figures
(docs/_ext/decodebook_site.py). Run by tools/run-tests.sh before the build.

    /usr/bin/python3 tests/course/test_check_course.py      (or: -m unittest from tests/course)
"""
import contextlib
import io
import os
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_course  # noqa: E402

CODE = """\
#include "x.hpp"
// [ch02:softmax]
void softmax() {}
// [/ch02:softmax]
    // [ch02:indented]
    int y;
    // [/ch02:indented]
"""

PAGE = """\
Softmax
=======

.. literalinclude:: /../lib/src/x.cpp
   :language: cpp
   :start-after: // [ch02:softmax]
   :end-before: // [/ch02:softmax]

.. note::

   .. literalinclude:: ../../lib/src/x.cpp
      :start-after: // [ch02:indented]
      :end-before: // [/ch02:indented]
      :dedent: 4
"""


def problems(page=PAGE, code=CODE, extra=None):
    files = {"lib/src/x.cpp": code, **(extra or {})}
    return check_course.marker_problems({"docs/chapters/02-x.rst": page}, files)


class SiteMarkers(unittest.TestCase):
    def test_good_tree_passes(self):
        self.assertEqual(problems(), [])

    def test_includes_are_parsed_with_lines_and_resolved_like_sphinx(self):
        got = check_course.literalincludes("docs/chapters/02-x.rst", PAGE)
        self.assertEqual([(line, target) for line, target, _ in got],
                         [(4, "lib/src/x.cpp"), (11, "lib/src/x.cpp")])
        self.assertEqual(got[0][2]["start-after"], (6, "// [ch02:softmax]"))
        self.assertEqual(got[1][2]["dedent"], (14, "4"))

    def test_missing_file(self):
        page = PAGE.replace("/../lib/src/x.cpp", "/../lib/src/gone.cpp")
        got = problems(page)
        self.assertIn("docs/chapters/02-x.rst:4: literalinclude of lib/src/gone.cpp, which does not exist", got)
        self.assertTrue(any("lib/src/x.cpp:2:" in p and "used by no page" in p for p in got), got)

    def test_marker_missing_from_file(self):
        got = problems(PAGE.replace(":end-before: // [/ch02:softmax]", ":end-before: // [/ch02:softmaxx]"))
        self.assertTrue(any(p.startswith("docs/chapters/02-x.rst:7: :end-before: '// [/ch02:softmaxx]' is in "
                                         "lib/src/x.cpp 0 times") for p in got), got)

    def test_marker_twice_in_file(self):
        code = CODE + "// [ch02:softmax]\n"
        got = problems(code=code)
        self.assertTrue(any(p.startswith("docs/chapters/02-x.rst:6:") and "2 times (lines 2, 8)" in p
                            for p in got), got)
        self.assertTrue(any(p.startswith("lib/src/x.cpp:8: // [ch02:softmax] again") for p in got), got)

    def test_begin_without_end(self):
        code = CODE + "// [ch03:top-k]\n"
        self.assertEqual(problems(code=code), ["lib/src/x.cpp:8: // [ch03:top-k] has no matching // [/ch03:top-k]"])

    def test_end_without_begin(self):
        code = CODE + "// [/ch03:top-k]\n"
        self.assertEqual(problems(code=code),
                         ["lib/src/x.cpp:8: // [/ch03:top-k] has no matching // [ch03:top-k] before it"])

    def test_out_of_order(self):
        code = CODE + "// [/ch03:top-k]\nint z;\n// [ch03:top-k]\n"
        self.assertEqual(problems(code=code),
                         ["lib/src/x.cpp:8: // [/ch03:top-k] comes before // [ch03:top-k] (line 10)"])

    def test_unused_pair(self):
        code = CODE + "// [ch03:top-k]\nint z;\n// [/ch03:top-k]\n"
        got = problems(code=code)
        self.assertEqual(len(got), 1, got)
        self.assertTrue(got[0].startswith("lib/src/x.cpp:8: marker pair // [ch03:top-k] ... // [/ch03:top-k] "
                                          "is used by no page"), got)

    def test_unused_pair_in_other_scanned_file(self):
        got = problems(extra={"solutions/02-temperature/softmax.cpp": "// [ch02:softmax]\n// [/ch02:softmax]\n"})
        self.assertEqual(len(got), 1, got)
        self.assertTrue(got[0].startswith("solutions/02-temperature/softmax.cpp:1: marker pair"), got)

    def test_mismatched_cut(self):
        page = PAGE.replace(":end-before: // [/ch02:softmax]", ":end-before: // [/ch02:indented]")
        got = problems(page)
        self.assertTrue(any(p.startswith("docs/chapters/02-x.rst:6: cuts lib/src/x.cpp from '// [ch02:softmax]' "
                                         "to '// [/ch02:indented]'") for p in got), got)


ANSWER_CODE = """\
#include <string>
namespace decodebook {
namespace {
const int kTable[] = {1, 2};  // an initializer, not a function
}  // namespace
// [ch06:find-stop]
int find_stop(const std::string& text) {
    if (text == "}") return 1;  // a brace in a string
    return 0;
}
// [/ch06:find-stop]
// [ch06:helper]
int Stream::push(int x) {
    // [ch06:middle]
    return x + 1;
    // [/ch06:middle]
}
// [/ch06:helper]
}  // namespace decodebook
"""

MANIFEST = {"exercises": [{"id": "06.1", "answer": ["decodebook::find_stop"]},
                          {"id": "06.2", "answer": ["decodebook::Stream::*"]}]}


def answer_page(include: str, folded: bool, exercise_first: bool = False) -> str:
    block = f".. literalinclude:: /../lib/src/s.cpp\n   :start-after: // [{include}]\n   :end-before: // [/{include}]\n"
    if folded:
        block = ".. details:: The library's code\n\n" + "".join("   " + line + "\n" for line in block.splitlines())
    exercise = ".. exercise:: 06.1\n\n.. exercise:: 06.2\n"
    parts = [exercise, block] if exercise_first else [block, exercise]
    return "Stops\n=====\n\n" + "\n".join(parts)


def early(page: str) -> list:
    return check_course.early_answer_problems({"docs/chapters/06-x.rst": page}, {"lib/src/s.cpp": ANSWER_CODE}, MANIFEST)


class AnswersAfterExercises(unittest.TestCase):
    """check_course.early_answer_problems: a page must not show an exercise's library twin, unfolded,
    above the exercise (issue 25 item 5: chapters 03, 06 and 09 once did)."""

    def test_functions_are_found_with_their_lines(self):
        self.assertEqual(check_course.top_level_functions(ANSWER_CODE),
                         [("find_stop", 7, 10), ("Stream::push", 13, 17)])

    def test_an_unfolded_answer_above_its_exercise_fails(self):
        got = early(answer_page("ch06:find-stop", folded=False))
        self.assertEqual(len(got), 1, got)
        self.assertIn("docs/chapters/06-x.rst:4: shows lib/src/s.cpp's find_stop (lines 7-10 of 7-10), "
                      "the answer to exercise 06.1, before the exercise (line 8)", got[0])

    def test_folded_or_after_the_exercise_passes(self):
        self.assertEqual(early(answer_page("ch06:find-stop", folded=True)), [])
        self.assertEqual(early(answer_page("ch06:find-stop", folded=False, exercise_first=True)), [])

    def test_part_of_an_answer_counts_but_a_whole_class_wildcard_does_not(self):
        # Stream::* only forbids calls (06.2 may not call Stream's members): it names no twin.
        self.assertEqual(early(answer_page("ch06:middle", folded=False)), [])
        manifest = {"exercises": [{"id": "06.1", "answer": ["decodebook::Stream::push"]}]}
        got = check_course.early_answer_problems({"docs/chapters/06-x.rst": answer_page("ch06:middle", folded=False)},
                                                 {"lib/src/s.cpp": ANSWER_CODE}, manifest)
        self.assertEqual(len(got), 1, got)
        self.assertIn("Stream::push (lines 15-15 of 13-17)", got[0])

    def test_a_later_chapters_exercise_counts_on_every_earlier_page(self):
        # find_stop is 06.1's answer; chapter 02's page shows it unfolded, chapter 06's page has
        # the exercise: the student meets the answer four chapters early. After chapter 06 (page 07)
        # or folded, the same listing is fine.
        listing = answer_page("ch06:find-stop", folded=False).split(".. exercise::")[0]
        exercises = ".. exercise:: 06.1\n\n.. exercise:: 06.2\n"
        pages = {"docs/chapters/02-early.rst": listing, "docs/chapters/06-x.rst": exercises}
        got = check_course.early_answer_problems(pages, {"lib/src/s.cpp": ANSWER_CODE}, MANIFEST)
        self.assertEqual(got, ["docs/chapters/02-early.rst:4: shows lib/src/s.cpp's find_stop (lines 7-10 of 7-10), "
                               "the answer to exercise 06.1, before the exercise (docs/chapters/06-x.rst:1, a later "
                               "page) and not folded: put it under `.. details::` or after the exercise"])
        later = {"docs/chapters/07-late.rst": listing, "docs/chapters/06-x.rst": exercises}
        self.assertEqual(check_course.early_answer_problems(later, {"lib/src/s.cpp": ANSWER_CODE}, MANIFEST), [])
        folded = {"docs/chapters/02-early.rst": answer_page("ch06:find-stop", folded=True).split(".. exercise::")[0],
                  "docs/chapters/06-x.rst": exercises}
        self.assertEqual(check_course.early_answer_problems(folded, {"lib/src/s.cpp": ANSWER_CODE}, MANIFEST), [])

    def test_pages_outside_the_chapters_come_after_them(self):
        self.assertEqual(check_course.page_order("docs/chapters/06-stop-sequences.rst"), 6)
        self.assertGreater(check_course.page_order("docs/faq.rst"), check_course.page_order("docs/chapters/10-x.rst"))
        pages = {"docs/faq.rst": answer_page("ch06:find-stop", folded=False).split(".. exercise::")[0],
                 "docs/chapters/06-x.rst": ".. exercise:: 06.1\n"}
        self.assertEqual(check_course.early_answer_problems(pages, {"lib/src/s.cpp": ANSWER_CODE}, MANIFEST), [])

    def test_chapter_02s_chain_listing_unfolded_is_named(self):
        # Issue 25: chapter 02's stage listing ([ch02:stages]) showed 06.2's min_new_tokens unfolded. The real
        # page, with its details block taken away (the listing dedented to the page's level), fails
        # with 06.2's twin named; the real page, folded, passes (test_the_real_site_passes).
        pages, code = check_course.read_site_files()
        with open(os.path.join(check_course.ROOT, "exercises", "manifest.json"), encoding="utf-8") as f:
            manifest = check_course.json.load(f)
        page = "docs/chapters/02-temperature.rst"
        lines = pages[page].splitlines()
        at = next(n for n, line in enumerate(lines) if line.startswith(".. details::") and "stage table" in line)
        end = next(n for n in range(at + 2, len(lines)) if lines[n] and not lines[n].startswith("   "))
        unfolded = lines[:at] + [line[3:] for line in lines[at + 2:end]] + lines[end:]
        got = check_course.early_answer_problems({**pages, page: "\n".join(unfolded)}, code, manifest)
        self.assertEqual(len(got), 1, got)
        self.assertRegex(got[0], r"^docs/chapters/02-temperature.rst:\d+: shows lib/src/decoding/stages.cpp's "
                                 r"apply_min_new_tokens .*the answer to exercise 06.2, before the exercise "
                                 r"\(docs/chapters/06-stop-sequences.rst:\d+, a later page\)")

    def test_the_real_site_passes(self):
        pages, code = check_course.read_site_files()
        with open(os.path.join(check_course.ROOT, "exercises", "manifest.json"), encoding="utf-8") as f:
            manifest = check_course.json.load(f)
        self.assertEqual(check_course.early_answer_problems(pages, code, manifest), [])


class DocsPrograms(unittest.TestCase):
    """check_course.docs_program_problems: the docs target must build what the site runs (issue 25:
    chapter 04's page ran decodebook-diversity, which a fresh build folder did not have)."""
    CMAKE = "add_custom_target(docs\n  COMMAND x\n  DEPENDS ${chapters} decodebook-generate\n  VERBATIM)\n"
    PAGES = {"docs/chapters/04-x.rst": "Text\n\n.. command-output:: decodebook-diversity\n   :nostderr:\n",
             "docs/chapters/00-x.rst": ".. command-output:: chapter-00 -n 4\n\n.. program-output:: decodebook-generate\n"}
    PLOTS = {"docs/plots/p.py": 'rows = chapter_csv("decodebook-bench", "--csv")\nchapter_csv("chapter-07")\n'}

    def test_a_program_the_docs_target_does_not_build_is_named_where_it_runs(self):
        got = check_course.docs_program_problems(self.PAGES, self.PLOTS, self.CMAKE)
        self.assertEqual(got, [
            "docs/plots/p.py:1: runs decodebook-bench, which the docs target does not build: add it to DEPENDS in "
            "docs/CMakeLists.txt",
            "docs/chapters/04-x.rst:3: runs decodebook-diversity, which the docs target does not build: add it to "
            "DEPENDS in docs/CMakeLists.txt"])

    def test_listed_programs_and_chapters_pass(self):
        cmake = self.CMAKE.replace("decodebook-generate", "decodebook-generate decodebook-diversity decodebook-bench")
        self.assertEqual(check_course.docs_program_problems(self.PAGES, self.PLOTS, cmake), [])
        self.assertEqual(len(check_course.docs_program_problems(self.PAGES, {}, cmake.replace("${chapters} ", ""))), 1)


class PageNumbers(unittest.TestCase):
    """check_course.prose_numbers / unprinted_numbers: a re-read page states only numbers its programs
    print (issue 25: chapter 07 said "T/2 = 96" beside a printed 85, and "48 times" beside a printed
    52.2x)."""
    PAGE = """\
Chapter 07 · The KV cache
=========================

Part 2 prints 85 flops per byte; :math:`T/2` would be 96 for :math:`T = 192`. GPT-2 124M and a
70B model (Pope et al., 2022) need ``./chapter-07 --max-new-tokens
200 --csv FILE``; see `the post <https://example.org/a/2506.09501>`_ and exercise 07.4.

.. math::

   s_j = 12 C^2

.. command-output:: chapter-07
   :ellipsis: 30

.. literalinclude:: /../lib/src/x.cpp
   :start-after: // [ch07:x]

The cache takes 75,497,472 bytes (72 MiB), about 47 ms, and 46.7 ms exactly.

.. quiz:: ch07

   .. question:: bound
      :answer_a: About 47 ms per token
      :feedback_a: Right: 140 GB / 3 TB/s.
      :correct: a

      A 70B model reads 140 GB per token at 3 TB/s (1,024 positions)?
"""
    OUTPUT = "flops per byte: prefill 85, decode 0.5\n75,497,472 bytes = 72.00 MiB\n70e9 x 2 = 140 GB: 46.7 ms\n"

    def numbers(self, text):
        return check_course.prose_numbers(text)

    def test_numbers_are_read_from_prose_and_quiz_only(self):
        self.assertEqual(self.numbers(self.PAGE), [
            (4, "85"), (4, "96"), (18, "75,497,472"), (18, "72"), (18, "47"), (18, "46.7"),
            (23, "47"), (24, "140"), (27, "140"), (27, "1,024")])

    def test_a_number_no_output_prints_is_named_with_its_line(self):
        got = check_course.unprinted_numbers("p.rst", self.PAGE, {"chapter-07": self.OUTPUT}, {})
        self.assertEqual(got, [
            "p.rst:4: the page states 96, which chapter-07 does not print: print it from the code, or say it in "
            "words the output backs",
            "p.rst:27: the page states 1,024, which chapter-07 does not print: print it from the code, or say it in "
            "words the output backs"])

    def test_a_listed_fact_passes_and_a_more_precise_page_does_not(self):
        facts = {"96": "a reason", "1,024": "a reason"}
        self.assertEqual(check_course.unprinted_numbers("p.rst", self.PAGE, {"c": self.OUTPUT}, facts), [])
        # the output's 47 does not back a page's 46.7: a page may round what is printed, never refine it
        self.assertFalse(check_course.is_printed("46.7", check_course.printed_numbers("about 47 ms")))
        self.assertTrue(check_course.is_printed("47", check_course.printed_numbers("46.7 ms")))
        self.assertTrue(check_course.is_printed("-1.022", check_course.printed_numbers("log-prob -1.022 (p 0.36)")))
        self.assertFalse(check_course.is_printed("14", check_course.printed_numbers("38 tokens, then 24 tokens")))

    def test_a_printed_figure_is_left_to_the_site_build(self):
        # :printed: figures are checked exactly by docs/_ext/decodebook_site.py; check 11 reads the rest
        page = "Text\n\nIt takes :printed:`46.7 ms`, and 96 more.\n"
        self.assertEqual(self.numbers(page), [(3, "96")])

    def test_the_re_read_pages_state_numbers_and_their_facts(self):
        for page in check_course.NUMBER_PAGES:
            with open(os.path.join(check_course.ROOT, page), encoding="utf-8") as f:
                stated = {written for _, written in check_course.prose_numbers(f.read())}
            self.assertTrue(stated, page)
            for number, reason in check_course.NUMBER_FACTS.get(page, {}).items():
                self.assertIn(number, stated, f"{page}: a listed fact the page no longer states")
                self.assertTrue(reason.strip(), f"{page}: {number} needs its reason")


class TestBinaries(unittest.TestCase):
    def test_finds_executables_sorted_and_nothing_else(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("exercise_tests_02", "exercise_tests_00", "solution_tests_00", "exercise_tests_01.txt"):
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write("#!/bin/sh\n")
                if not name.endswith(".txt"):
                    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
            os.mkdir(os.path.join(d, "exercise_tests_03"))  # a folder is not a binary
            self.assertEqual([os.path.basename(p) for p in check_course.test_binaries(d)],
                             ["exercise_tests_00", "exercise_tests_02"])

    def test_none_fails_clearly(self):
        with tempfile.TemporaryDirectory() as d:
            c, out = check_course.Checks(), io.StringIO()
            with contextlib.redirect_stdout(out):
                check_course.check_test_names(c, {"exercises": [{"id": "00.1"}]}, d)
            self.assertEqual((c.passed, c.failed), (0, 1))
            self.assertIn(f"no exercise_tests_* executable in {d}", out.getvalue())


class Layering(unittest.TestCase):
    TREE = {
        "lib/include/decodebook/base/error.hpp": "#include <string>\n",
        "lib/include/decodebook/model/gpt2.hpp": '#include "decodebook/base/error.hpp"\n',
        "lib/src/model/kernels/matvec.cpp": '#include "common.hpp"\n#include "decodebook/model/kernels.hpp"\n',
        "lib/include/decodebook/sampling/sampling.hpp": '#include "decodebook/base/error.hpp"\n',
        "lib/include/decodebook/decoding/generate.hpp": '#include "decodebook/model/gpt2.hpp"\n'
                                                        '#include "decodebook/sampling/sampling.hpp"\n',
        "lib/include/decodebook/course/cli.hpp": '#include "decodebook/decoding/generate.hpp"\n'
                                                 '#include "decodebook/exercises.hpp"\n',
        "lib/include/decodebook/exercises.hpp": '#include "decodebook/decoding/generate.hpp"\n',
        "lib/README.txt": "not code\n",
    }

    def planted(self, path, line):
        tree = dict(self.TREE)
        tree[path] = tree.get(path, "") + line
        return check_course.layering_problems(tree)

    def test_the_real_tree_and_a_good_one_pass(self):
        self.assertEqual(check_course.layering_problems(self.TREE), [])
        c, out = check_course.Checks(), io.StringIO()
        with contextlib.redirect_stdout(out):
            check_course.check_layering(c)
        self.assertEqual((c.passed, c.failed), (1, 0), out.getvalue())

    def test_each_rule_fails_on_a_planted_include(self):
        cases = [  # (file, include planted in it, the wing named as allowed)
            ("lib/include/decodebook/base/error.hpp", "model/gpt2.hpp", "base/ may include only itself and nothing"),
            ("lib/include/decodebook/model/gpt2.hpp", "decoding/generate.hpp", "model/ may include only itself and base/"),
            ("lib/include/decodebook/model/gpt2.hpp", "sampling/sampling.hpp", "model/ may include only itself and base/"),
            ("lib/include/decodebook/sampling/sampling.hpp", "model/gpt2.hpp", "sampling/ may include only itself and base/"),
            ("lib/src/constrain/dfa.cpp", "decoding/generate.hpp", "constrain/ may include only itself and base/"),
            ("lib/src/decoding/generate.cpp", "course/cli.hpp", "decoding/ may include only itself and base/"),
            ("lib/include/decodebook/decoding/generate.hpp", "exercises.hpp", "decoding/ may include only"),
        ]
        for path, target, rule in cases:
            got = self.planted(path, f'#include "decodebook/{target}"\n')
            self.assertEqual(len(got), 1, (path, target, got))
            self.assertIn(f"includes decodebook/{target}, but {rule}", got[0])
            self.assertTrue(got[0].startswith(path + ":"), got[0])

    def test_a_file_outside_the_wings_is_named(self):
        got = check_course.layering_problems({**self.TREE, "lib/include/decodebook/kernels.hpp": ""})
        self.assertEqual(len(got), 1, got)
        self.assertIn("lib/include/decodebook/kernels.hpp: is in no wing", got[0])


class QuizShuffle(unittest.TestCase):
    """docs/_ext/quiz.py: answers shown in a seeded order; a build where one position holds most
    right answers fails."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "_ext"))
        import quiz  # noqa: E402  (needs python3-sphinx: tools/install-deps.sh --docs)
        cls.quiz = quiz

    def test_the_order_is_a_permutation_and_the_same_every_build(self):
        order = self.quiz.shuffled(["a", "b", "c"], "chapters/08:ch08:round")
        self.assertEqual(sorted(order), ["a", "b", "c"])
        self.assertEqual(order, self.quiz.shuffled(["a", "b", "c"], "chapters/08:ch08:round"))
        firsts = {self.quiz.shuffled(["a", "b", "c"], f"page:quiz:q{i}")[0] for i in range(30)}
        self.assertEqual(firsts, {"a", "b", "c"})  # the seed moves the authored first answer around

    def env(self, positions):
        class Env:
            pass
        env = Env()
        env.quiz_positions = {"chapters/00": [(p, 3) for p in positions]}
        return env

    def test_a_guessable_site_fails_the_build(self):
        with self.assertRaisesRegex(Exception, "answer A is the right one in 3 of 5 questions"):
            self.quiz.check_positions(None, self.env([0, 0, 0, 1, 2]))
        self.quiz.check_positions(None, self.env([0, 0, 1, 1, 2]))  # two of five: fine



def quiz_page(questions):
    """A page whose quiz holds one question per (answers, correct letter)."""
    lines = [".. quiz:: chXX", ""]
    for i, (answers, correct) in enumerate(questions):
        lines.append(f"   .. question:: q{i}")
        for letter, text in zip("abcdef", answers):
            lines += [f"      :answer_{letter}: {text}", f"      :feedback_{letter}: why."]
        lines += [f"      :correct: {correct}", "", "      A question?", ""]
    return "\n".join(lines) + "\n"


class QuizLengths(unittest.TestCase):
    """Check 12: a quiz cannot be answered by picking the longest option."""

    def test_reads_each_question(self):
        qs = check_course.quiz_questions(quiz_page([(["one", "two two"], "b")]))
        self.assertEqual([(q[1], q[2]) for q in qs], [({"a": "one", "b": "two two"}, "b")])

    def test_longest_right_in_half_passes_and_in_more_fails(self):
        even = [(["aaaa", "bbbbb", "cccc"], "b"), (["aaaaa", "bbbb", "cccc"], "b")]
        self.assertEqual(check_course.quiz_length_problems("p", quiz_page(even)), [])
        more = even + [(["aaaa", "bbbb", "ccccc"], "c")]
        problems = check_course.quiz_length_problems("p", quiz_page(more))
        self.assertEqual(len(problems), 1)
        self.assertIn("longest option is the right one in 2 of 3", problems[0])

    def test_a_tie_for_longest_does_not_count(self):
        tied = [(["aaaa", "bbbb"], "a"), (["aaaa", "bbbb"], "b")]
        self.assertEqual(check_course.quiz_length_problems("p", quiz_page(tied)), [])

    def test_lopsided_options_in_more_than_a_quarter_fail(self):
        fine = [(["aaaa", "bbbbbbbbb"], "a")] + [(["aaaa", "bbbb"], "a")] * 3  # 9 > 2 x 4 once in 4
        self.assertEqual(check_course.quiz_length_problems("p", quiz_page(fine)), [])
        lopsided = fine + [(["aaaa", "bbbbbbbbb"], "a")]
        problems = check_course.quiz_length_problems("p", quiz_page(lopsided))
        self.assertEqual(len(problems), 1)
        self.assertIn("over twice as long as the shortest in 2 of 5", problems[0])


class OutputExcerpt(unittest.TestCase):
    """docs/_ext/decodebook_site.py's output-excerpt: a part of a program's output, the prompt line
    kept; a :from: or :to: in no line fails the build (the program changed)."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "_ext"))
        import decodebook_site  # noqa: E402  (needs python3-sphinx: tools/install-deps.sh --docs)
        cls.site = decodebook_site

    OUTPUT = ["$ ./chapter-07", "== 1. one ==", "a", "", "== 2. two ==", "b", "c", "", "== 3. three ==", "d"]

    def test_a_middle_part_is_cut_on_both_sides(self):
        self.assertEqual(self.site.excerpt_lines(self.OUTPUT, "== 2.", "== 3."),
                         ["$ ./chapter-07", "...", "== 2. two ==", "b", "c", "..."])

    def test_to_the_end_and_from_the_start(self):
        self.assertEqual(self.site.excerpt_lines(self.OUTPUT, "== 3.", ""), ["$ ./chapter-07", "...", "== 3. three ==", "d"])
        self.assertEqual(self.site.excerpt_lines(self.OUTPUT, "== 1.", "== 2."), ["$ ./chapter-07", "== 1. one ==", "a", "..."])

    def test_a_text_in_no_line_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "no line of the output contains '== 9.'"):
            self.site.excerpt_lines(self.OUTPUT, "== 9.", "")
        with self.assertRaisesRegex(ValueError, "no line after '== 3.' contains '== 1.'"):
            self.site.excerpt_lines(self.OUTPUT, "== 3.", "== 1.")


class PrintedFigures(unittest.TestCase):
    """docs/_ext/decodebook_site.py's :printed: role: a figure in the prose must be in one of the
    page's program outputs (spaces squeezed), never in a block the page writes itself."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "_ext"))
        import decodebook_site  # noqa: E402  (needs python3-sphinx: tools/install-deps.sh --docs)
        cls.site = decodebook_site

    def warnings_for(self, written: str, output: str, figures: list) -> list:
        from docutils import nodes
        from docutils.frontend import OptionParser
        from docutils.parsers.rst import Parser
        from docutils.utils import new_document
        doc = new_document("page", OptionParser(components=(Parser,)).get_default_values())
        doc += nodes.literal_block(written, written)       # a code block the page writes
        self.site.note_written_blocks(None, doc)
        doc += nodes.literal_block(output, output)         # what programoutput puts in later
        para = nodes.paragraph()
        for f in figures:
            para += self.site.printed_role("printed", f, f, 1, None)[0]
        doc += para
        said = []
        original = self.site.logger.warning
        self.site.logger.warning = lambda message, **kw: said.append(message)
        try:
            self.site.check_printed(None, doc)
        finally:
            self.site.logger.warning = original
        return said

    def test_a_figure_the_output_holds_passes_even_wrapped(self):
        self.assertEqual(self.warnings_for("", "beam 4      20.0   tokens\nsampling 18.2 tokens", ["20.0 tokens", "18.2\ntokens"]), [])

    def test_a_figure_the_output_lacks_fails_naming_it(self):
        said = self.warnings_for("", "beam 4 20.0 tokens", ["shorter than 18.2 tokens"])
        self.assertEqual(len(said), 1)
        self.assertIn("'shorter than 18.2 tokens'", said[0])

    def test_a_block_the_page_writes_does_not_count(self):
        self.assertEqual(len(self.warnings_for("sampling 18.2 tokens", "beam 4 20.0 tokens", ["18.2 tokens"])), 1)


HELP = """\
Usage:
  chapter-08 [OPTION...]

  -p, --prompt arg            text to continue (default: The best way to)
      --show-config           print every decoding parameter this command
                              line gives, then exit
  -n, --max-new-tokens VALUE  tokens to generate at most (>= 1; default 48)
                              (parts 2-4)
      --order VALUE  processor order of an engine (one of: hf, llama.cpp,
                     vllm; default hf) (part 6)
      --do-sample VALUE  sample (true) or not (true or false; default true)

 speculative decoding options:
      --num-assistant-tokens VALUE
                                tokens the draft model proposes per round
                                (in [1, 64]; default 4) (part 1)
"""


class FlagsChangeOutput(unittest.TestCase):
    def test_help_lists_each_flag_with_its_wrapped_help(self):
        flags = check_course.help_flags(HELP)
        self.assertEqual([f for f, _, _ in flags],
                         ["prompt", "show-config", "max-new-tokens", "order", "do-sample", "num-assistant-tokens"])
        self.assertEqual([v for _, v, _ in flags], [True, False, True, True, True, True])
        self.assertTrue(flags[5][2].endswith("(in [1, 64]; default 4) (part 1)"))

    def test_other_value_is_not_the_default(self):
        flags = {f: h for f, _, h in check_course.help_flags(HELP)}
        self.assertEqual(check_course.other_value(flags["order"]), "llama.cpp")
        self.assertEqual(check_course.other_value(flags["do-sample"]), "false")

    def test_timings_and_speed_ups_are_masked(self):
        self.assertEqual(check_course.mask_noise("[12 tokens in 0.02 s: 695.6 tokens/s] 1.52x, 3 ms, 7 tokens"),
                         ["[12 tokens in #: #] #, #, 7 tokens"])

    def test_a_flag_that_changes_nothing_fails(self):
        base, noisy = ["a", "t 1", "b"], {1: "line"}
        self.assertEqual(check_course.flag_verdict("k", 0, ["a", "t 2", "b"], base, noisy, ""),
                         "--k was accepted and changed nothing: make it steer a part (and say which in --help) or refuse it")
        self.assertEqual(check_course.flag_verdict("k", 0, ["a", "t 2", "c"], base, noisy, ""), "")
        self.assertEqual(check_course.flag_verdict("k", 0, ["a", "t 2", "b", "d"], base, noisy, ""), "")

    def test_a_line_no_run_printed_is_the_flags_even_where_lines_shifted(self):
        # two runs without the flag printed a line more or less, so every line after it is noise by
        # index; the flag's run adds a line neither printed: that is the flag's doing
        base, noisy = ["a", "t 1", "b"], {1: "line", 2: "line"}
        seen = {"a", "t #", "b", "extra"}
        self.assertEqual(check_course.flag_verdict("csv", 0, ["a", "t 2", "wrote 3 rows"], base, noisy, "", seen), "")
        self.assertIn("changed nothing", check_course.flag_verdict("csv", 0, ["a", "extra", "b"], base, noisy, "", seen))

    def test_a_noisy_line_still_compares_its_steady_numbers(self):
        noise = check_course.noise_of("yours n <= 2: 1.31", "yours n <= 2: 1.07")
        self.assertEqual(noise, {1})
        self.assertTrue(check_course.same_line("yours n <= 2: 1.31", noise, "yours n <= 2: 0.98"))
        self.assertFalse(check_course.same_line("yours n <= 2: 1.31", noise, "yours n <= 3: 1.31"))
        self.assertEqual(check_course.noise_of("a 1", "b 1"), "line")

    def test_a_refused_flag_passes_and_a_crash_does_not(self):
        err = "error: chapter-10 sets its own top_k\n  fix: drop --top-k"
        self.assertEqual(check_course.flag_verdict("top-k", 2, check_course.mask_noise(err), [], {}, err), "")
        self.assertIn("exited 1", check_course.flag_verdict("top-k", 1, [], [], {}, "boom"))
        self.assertNotEqual(check_course.flag_verdict("top-k", 2, ["partial", "error"], [], {}, "error"), "")


if __name__ == "__main__":
    unittest.main()
