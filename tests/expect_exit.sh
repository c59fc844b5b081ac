#!/bin/sh
# expect_exit.sh CODE PATTERN PROGRAM [ARGS...]
# Run PROGRAM; pass if it exits with CODE and its output (stdout + stderr) matches the
# extended regex PATTERN. Used by the chapters' smoke tests.
code=$1; pattern=$2; shift 2
out=$("$@" 2>&1); got=$?
if [ "$got" -ne "$code" ]; then
  printf 'expected exit code %s, found %s\noutput:\n%s\n' "$code" "$got" "$out"; exit 1
fi
if ! printf '%s' "$out" | grep -Ezq -- "$pattern"; then
  printf 'output does not match /%s/:\n%s\n' "$pattern" "$out"; exit 1
fi
printf '%s\n' "$out" | tail -n 5
