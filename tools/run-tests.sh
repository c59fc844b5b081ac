#!/usr/bin/env bash
# The whole test suite, from a fresh clone: install what is missing, build everything, then
#   1. the engine's tests (library against hand-computed cases and the independent reference),
#   2. the chapters' smoke tests (each binary runs; --help; bad input gives a clear error),
#   3. the course checks (tools/check_course.py): every solution passes its exercise's tests,
#      every untouched stub fails them, every stub has a TODO, manifest and tree agree,
#   4. the grader's own tests (tools/test_grade.py).
# Usage: tools/run-tests.sh [BUILD_DIR]     (default: build-tests)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tests}

tools/install-deps.sh
# Tests run two at a time on two cores: one OpenBLAS thread each avoids oversubscription.
export OPENBLAS_NUM_THREADS=1

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDECODEBOOK_SOLUTIONS=OFF
cmake --build "$build" -j2
ctest --test-dir "$build" -L "engine|chapter" -j2 --timeout 300 --output-on-failure --output-junit junit-engine.xml
/usr/bin/python3 tools/check_course.py --build-dir "$build"
/usr/bin/python3 tools/test_grade.py
