#!/usr/bin/env bash
# The whole test suite, from a fresh clone: install what is missing, then, before the build, the
# course checks that need none (tests/course/check_course.py --no-build and its own tests:
# manifest and tree agree, every stub has a TODO, the site's code markers are sound), build
# everything, then
#   1. the engine's tests (library against hand-computed cases and the independent reference),
#   2. the chapters' smoke tests (each binary runs; --help; bad input gives a clear error),
#   3. the course checks (tests/course/check_course.py): the above, and every solution passes its
#      exercise's tests, every untouched stub fails them,
#   4. the grader's end-to-end test (tests/course/broken_stub.py: a chapter-04 stub that does not
#      compile breaks only chapter 04; reconfigures BUILD_DIR back when done) and its own tests
#      (tests/course/test_grade.py),
#   5. the course site: Doxygen + Sphinx with every warning an error (target `docs`, which runs
#      the chapter binaries), then tools/test_site.py opens it in headless Chromium and saves
#      a screenshot to BUILD_DIR/site-screenshot.png.
# Usage: tools/run-tests.sh [BUILD_DIR]     (default: build-tests)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tests}

tools/install-deps.sh --docs
# Tests run two at a time on two cores: one OpenBLAS thread each avoids oversubscription.
export OPENBLAS_NUM_THREADS=1

/usr/bin/python3 tests/course/test_check_course.py
/usr/bin/python3 tests/course/check_course.py --no-build
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDECODEBOOK_SOLUTIONS=OFF -DDECODEBOOK_EXERCISES_DIR="$PWD/exercises"
cmake --build "$build" -j2
ctest --test-dir "$build" -L "engine|chapter" -j2 --timeout 300 --output-on-failure --output-junit junit-engine.xml
/usr/bin/python3 tests/course/check_course.py --build-dir "$build"
/usr/bin/python3 tests/course/broken_stub.py --build-dir "$build"
/usr/bin/python3 tests/course/test_grade.py
cmake --build "$build" --target docs
/usr/bin/python3 tools/test_site.py --site "$build/html" --screenshot "$build/site-screenshot.png"
