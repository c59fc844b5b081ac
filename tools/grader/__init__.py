"""The decodebook grader (./grade is its entry point): build the exercises, run their tests, report per exercise.

    ./grade                  every exercise, in course order
    ./grade 01               one chapter (or ./grade 01-greedy, or one exercise: ./grade 01.2)
    ./grade --solutions      the worked solutions instead (built in build-solutions/)
    ./grade --no-build       run the tests of an existing build as it is
    ./grade --json results.json --junit results.xml     machine-readable results
    ./grade --hints          every tier of every exercise's hint (otherwise see "Hints" below)
    options: --build-dir DIR (default build/, or build-solutions/), --jobs N (default 2)

Each chapter builds on its own (target exercise_tests_NN, cmake/Chapters.cmake), with the build
tool's keep-going flag: a stub that does not compile fails only its chapter (and those that use
it: 01 uses 00). The exercise whose file the compiler names (or whose your_* function is an
undefined reference: a signature that differs from exercises.hpp) is reported as not compiling,
with its first error under it; the other exercises of that chapter as "not graded" (their test
program needs every file of the chapter). When the error is in no exercise's file, every exercise
of the chapter is reported as not compiling, the error shown once under the chapter. Only the
tests of the chapters that built run, so an old test binary of a broken chapter never runs.

Running the tests. CTest only lists them (their command lines); ./grade runs each test process
itself, --jobs at a time, with one OpenBLAS thread, under limits (class Limits): CPU time (a busy
machine does not use up a correct answer's time), wall-clock time, memory (address space) and
file size. Catch2 writes its report of the case to a file of its own; the test passes only when
the process exits with 0 and that report says the case passed with at least one assertion. The
program's own output is read as it comes, keeping only its start and end, so its size (50 MB or
more) never changes a verdict, and nothing it prints can pass a test.

Exit status: 0 when the report was printed, even if exercises fail or do not compile; 1 when
nothing could be built or run (a configure error, no selected chapter compiled, no tests at
all); 2 for a bad command line.

Scoring. An exercise counts as passed only when every one of its tests passed; it then earns
its `points` from exercises/manifest.json. The report's score and the top-level `score` of
results.json are the sum of the points of passed exercises (all or nothing per exercise).
In results.json every test also gets an even share of its exercise's points: `max_score` is
points / number of tests, and `score` is that share when the test itself passed, else 0. The
per-test scores show partial progress; they can add up to more than the top-level `score`,
which is the grade (Gradescope takes the top-level score when one is given). `status` follows
exercism v2: top level "pass" (every selected exercise passed), "fail", or "error" with a
`message` when no test could run (for instance nothing compiled); per test "pass", "fail" (a
check failed, or the program ended before Catch2 reported the case) or "error" (an unexpected
exception, running out of memory, a crash, a time limit, a stub not started). Passing tests carry
no `message`. An exercise without tests is listed as an "error" entry named "exID (no tests)";
one that does not compile as an "error" entry named "exID (does not compile)", score 0, with the
compiler's error as its `message`, and the others of its chapter as "exID (not graded)" (in
--junit: a testcase with an <error> each). tests/course/grade_fixtures/expected/ holds, for each
way a test can end, the exact results.json, Gradescope and JUnit files these rules give.

Hints. An exercise's hint is a list of tiers, from a nudge (what to look at) to the exact step
(a plain string is one tier), kept in tools/grader/hints.json (manifest.load adds it to each
entry as `hint`), not in exercises/manifest.json, where a student reads the contracts. A failing exercise shows tier 1 after its first
failed try, tier 2 once another version of its files has failed, and so on up to the last tier;
a passing exercise, a stub left untouched and one that does not compile show none; --hints
shows every tier of every selected exercise, whatever its state. The versions
are told apart by a hash of the exercise's files, kept in ATTEMPTS_FILE in the build directory
(per exercise: the hashes of the distinct versions that failed), never in the source tree.

The parts, one role each (a module imports only those above it in this list):
    excerpts   the lines worth showing of a build log or a test's output (repository-relative, clipped)
    scoring    an exercise's state and points: BuildFailure, ExerciseResult, group_by_exercise
    runner     running processes: the tools (run), CTest's list of tests, each test under Limits
    manifest   exercises/manifest.json: load it, select exercises and chapters, the student's files
    build      configure, build one chapter (keep going), a failed build -> its BuildFailure
    symbols    no answer by call: what an exercise's compiled objects call (nm), check_calls
    hints      hint tiers and the attempts file (source_hash, hint_tier)
    report     the report ./grade prints
    formats    results.json (exercism v2), Gradescope's results.json, JUnit XML
    cli        the command line and main()

The grader is ./grade and the files of this package. ./grade runs them from their source only (no
bytecode written or read, tools/ not on sys.path): grading with a trusted copy of the grader means
a trusted copy of ./grade and tools/grader/ both.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]     # the repository: tools/grader/ is in it
