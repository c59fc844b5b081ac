#!/usr/bin/env bash
# The whole test suite, from a fresh clone: install what is missing, then, before the build, the
# course checks that need none (tests/course/check_course.py --no-build and its own tests:
# manifest and tree agree, every stub has a TODO, the site's code markers are sound), build
# everything, then
#   1. the engine's tests (library against hand-computed cases and the independent reference),
#   2. the chapters' smoke tests (each binary runs; --help; bad input gives a clear error), and
#      decodebook-serve over HTTP with curl's kind of requests and OpenAI's Node client (tests/serve/),
#   3. the course checks (tests/course/check_course.py): the above, and every solution passes its
#      exercise's tests, every untouched stub fails them, every number a re-read chapter page
#      states is printed by the programs it runs,
#   4. the grader's end-to-end test (tests/course/broken_stub.py: a chapter-04 stub that does not
#      compile breaks only chapter 04; reconfigures BUILD_DIR back when done) and its own tests
#      (tests/course/test_grade.py),
#   5. the course site: the README's site command, read out of README.md (tools/readme_command.py)
#      and run as printed in a fresh copy of the tree (BUILD_DIR-site/, so its build/ folder is
#      new): Doxygen + Sphinx with every warning an error (target `docs`, which builds and runs
#      the programs its pages run), then tools/test_site.py opens it in headless Chromium and
#      saves a screenshot to BUILD_DIR/site-screenshot.png;
#   6. the sanitizer job: the engine, chapter and course tests again (but the long golden and reference sweeps listed below and
#      the chapters' runs from another folder),
#      built with ASan + UBSan at -O1 (the Catch2 test files themselves without them) in
#      BUILD_DIR-asan (-DDECODEBOOK_SANITIZE=address,undefined; target sanitized_tests builds only
#      what those tests run), in the background from the start of step 5; any sanitizer report
#      fails its test;
#   7. the fuzz smoke run: the libFuzzer targets of tests/fuzz/ (clang, BUILD_DIR-fuzz), 20 s each, two at a time
#      from their seed corpora (tests/fuzz/README.md); any crash, sanitizer report or broken
#      invariant fails the run. FUZZ_SECONDS=N changes the 20 s.
# The main build goes through ccache (BUILD_DIR-ccache, new each run), which step 5's build reads.
# Each step prints the seconds spent so far.
# Usage: tools/run-tests.sh [BUILD_DIR]     (default: build-tests)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tests}

tools/install-deps.sh --docs --fuzz --ccache --clients
# Tests run two at a time on two cores: one OpenBLAS thread each avoids oversubscription.
export OPENBLAS_NUM_THREADS=1
# decodebook-serve's test with OpenAI's Node client fails here, rather than skips, without the client.
export DECODEBOOK_REQUIRE_CLIENTS=1
SECONDS=0
step() { echo "run-tests: ${SECONDS} s so far; next: $*"; }

step "the course checks that need no build"
/usr/bin/python3 tests/course/test_check_course.py
/usr/bin/python3 tests/course/check_course.py --no-build
step "the build in $build"
# Through ccache, into a cache of this run's own ($build-ccache, emptied first): the site's fresh
# build in step 5 compiles the same files with the same flags, and takes them from it (about 90 %
# of them; those with this folder's paths in their -D flags are compiled again). CCACHE_BASEDIR
# makes paths relative, so the copy's files hash alike; the sloppiness lets ccache trust the
# precompiled header and the copy's new file times; depend mode reads the compiler's own
# dependency files, so a miss costs no extra run of the preprocessor.
export CCACHE_DIR="$PWD/$build-ccache" CCACHE_BASEDIR="$PWD" CCACHE_DEPEND=true
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
rm -rf "$CCACHE_DIR"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDECODEBOOK_SOLUTIONS=OFF -DDECODEBOOK_COURSE_TESTS=ON \
      -DDECODEBOOK_EXERCISES_DIR="$PWD/exercises" \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
cmake --build "$build" -j2
step "1-2. the engine's and the chapters' tests"
ctest --test-dir "$build" -L "engine|chapter" -j2 --timeout 300 --output-on-failure --output-junit junit-engine.xml
step "3. the course checks"
/usr/bin/python3 tests/course/check_course.py --build-dir "$build"
step "4. the grader's end-to-end test and its own tests"
/usr/bin/python3 tests/course/broken_stub.py --build-dir "$build"
/usr/bin/python3 tests/course/test_grade.py

# The sanitizer build (step 6) starts now, in the background at the lowest priority: Sphinx runs
# on one core, so the other would be idle for most of step 5. Its output goes to a log, shown if
# it fails; step 6 waits for it.
asan="$build-asan"
asan_log="$build/sanitizer-build.log"
# It runs in a process group of its own, stopped whole if this script ends first.
setsid bash -c 'cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DDECODEBOOK_SANITIZE=address,undefined \
                      -DDECODEBOOK_SOLUTIONS=OFF -DDECODEBOOK_COURSE_TESTS=ON -DDECODEBOOK_EXERCISES_DIR="$PWD/exercises" &&
                nice -n 19 cmake --build "$1" -j2 --target sanitized_tests' _ "$asan" >"$asan_log" 2>&1 &
asan_build=$!
trap 'kill -- -"$asan_build" 2>/dev/null || true' EXIT

step "5. the course site: the README's site command, as printed, in a fresh copy of the tree ($build-site)"
# The README's command builds in build/ from the repository root; run in a copy of this tree's
# files (tracked and new, not ignored), its build/ is a fresh folder, as a newcomer's is, so a
# program the site runs but the docs target does not build fails here. It is read out of
# README.md, so the README and CI cannot drift apart.
site="$build-site"
rm -rf "$site"
mkdir -p "$site"
git ls-files -z --cached --others --exclude-standard |
  tar --null --files-from=- --ignore-failed-read -cf - | tar -xf - -C "$site"
site_command=$(/usr/bin/python3 tools/readme_command.py "## Course site")
site_start=$SECONDS
# CMAKE_BUILD_PARALLEL_LEVEL: the command's `cmake --build` uses both cores, as the rest of CI does.
# CMAKE_CXX_COMPILER_LAUNCHER: the site's compiles go through the cache step 0's build filled.
(cd "$site" && echo "\$ $site_command" &&
 CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_CXX_COMPILER_LAUNCHER=ccache bash -c "$site_command")
echo "run-tests: the README's site command took $((SECONDS - site_start)) s in $site"
/usr/bin/python3 tools/test_site.py --site "$site/build/html" --screenshot "$build/site-screenshot.png"

step "6. sanitizers (ASan + UBSan) in $asan: waiting for its build (started before step 5)"
if ! wait "$asan_build"; then
  echo "run-tests: the sanitizer build failed; the end of $asan_log:"
  tail -60 "$asan_log"
  exit 1
fi
step "6. the sanitizer build is done; its tests"
# Distinct exit codes: a sanitizer report can never pass for an expected exit status 1 or 2.
# Five tests repeat one path over every golden case or prompt at 3-5x the Release run's time (beam
# search by the naive loop, speculative greedy, greedy through the general loop, cached greedy, 200
# constrained prompts; docs/measurements.md has their times). Their values are
# checked in step 1; under the sanitizers the same paths run in the smaller tests of beam search,
# speculative decoding, generate, the cache and constraints (a choice in greedy, beam and
# speculative decoding), and in chapters 01, 05, 07, 08.
asan_skip="beam search equals the reference's beams on the embedded model|speculative greedy equals plain greedy token"
asan_skip+="|greedy through the general loop equals the naive loop|cached greedy equals the naive loop token for token"
asan_skip+="|greedy and beam outputs from 200 prompts all satisfy each constraint"
# and two chapter tests that repeat a run the sanitizers already see: chapter-01's sweep of the
# golden cases, and each chapter's run from another folder (a path test; "runs" is the same run)
asan_skip+="|chapter-01 --reference agrees with every golden case|finds its model from another folder"
# and chapter 11's checks of figures against the reference over the whole held-out text or task
# (the same windows and scorings as smaller tests the sanitizers run: ex11.2's worked windows,
# which compare with the library, "chapter-11 runs" and evaluate_choice_task on 8 items)
asan_skip+="|chapter-11 part 3 is the reference's perplexity|the held-out fortunes' perplexity is the reference's"
asan_skip+="|sliding-window perplexity of held-out fortunes equals the reference's"
asan_skip+="|sliding_window_perplexity equals the float64 reference at stride"
asan_skip+="|every 8th item of the author-choice task scores and picks as the reference"
# and three more sweeps of one path over every golden case or 200 seeds (20-30 s each under the
# sanitizers): the naive greedy loop against every reference continuation, the library's and
# ex01.2's solution's, and 200 sampled JSON-schema outputs; under the sanitizers the same loops
# run in "greedy decoding is deterministic", ex01.2's EOS and determinism tests, and the smaller
# constraint tests ("greedy and sampled outputs always match the regex")
asan_skip+="|greedy continuations equal the independent reference token for token"
asan_skip+="|ex01.2 greedy_generate matches the independent reference|sampled outputs under a JSON schema parse and satisfy it"
# and two runs the sanitizers see twice: chapter-07 -n 16 (its "runs" test is the same program),
# and decode on 1 and 2 threads on every kernel target (the f16 and f32 holding test runs decode
# on every target on 1 and 2 threads under the sanitizers too)
asan_skip+="|chapter-07 a cached step's position is the cache's length"
asan_skip+="|decode gives the same bits on one thread and on two on every kernel target"
ASAN_OPTIONS=exitcode=86:detect_leaks=1:strict_string_checks=1:check_initialization_order=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87 LSAN_OPTIONS=exitcode=88 \
  ctest --test-dir "$asan" -L "engine|chapter|course" -E "$asan_skip" -j2 --timeout 600 --output-on-failure \
        --output-junit junit-asan.xml

step "7. fuzz smoke run in $build-fuzz"
fuzz="$build-fuzz"
cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-14 -DDECODEBOOK_FUZZ=ON
cmake --build "$fuzz" -j2 --target fuzz_targets
tests/fuzz/run.sh "$fuzz" "${FUZZ_SECONDS:-20}"
echo "run-tests: everything passed in ${SECONDS} s"
