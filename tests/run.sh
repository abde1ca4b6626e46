#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/run.sh: runs every test suite and closes with the combined
# "N passed, N failed" line. Suites: the unit tests (C), the CLI tests, the
# refusals of `glyd run` (its options, config.json), the CLI against hostile
# surroundings (devices, links, full disks, damage, kills), the libraries as
# installed (what they need and export, pkg-config, plain make), the Go
# module (go/test.sh), the Python package (tests/python).
#
#   tests/run.sh BUILD_DIR     (default: build)
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$REPO/build}
export GLYD_CORPUS=${GLYD_CORPUS:-$REPO/../shared/corpus}
passed=0
failed=0

# Adds a suite's closing "N passed, N failed" line to the totals; a suite
# that ends without one (a crash) counts as one failure.
tally() {
    local name=$1 log=$2 status=$3 line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "== $name: ended without a summary (exit $status)"
        failed=$((failed + 1))
        return
    fi
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
    if [ "$status" -ne 0 ] && [ "$(echo "$line" | cut -d' ' -f3)" -eq 0 ]; then
        echo "== $name: exit $status despite no failed test"
        failed=$((failed + 1))
    fi
}

run_suite() {
    local name=$1; shift
    local log
    log=$(mktemp)
    echo "== $name"
    "$@" 2>&1 | tee "$log"
    tally "$name" "$log" "${PIPESTATUS[0]}"
    rm -f "$log"
}

run_suite "unit tests" "$BUILD/unit_tests"
run_suite "CLI tests" bash "$REPO/tests/cli/cli_test.sh" "$BUILD/glyd"
run_suite "config tests" bash "$REPO/tests/cli/config_test.sh" "$BUILD/glyd"
run_suite "hostile CLI tests" bash "$REPO/tests/cli/hostile_test.sh" "$BUILD/glyd"
# The libraries as shipped, and the bindings over them (the Python package
# builds its own copy with pip): a sanitized build would need its runtime
# loaded first.
if nm "$BUILD/glyd" 2>/dev/null | grep -q '__asan_init'; then
    echo "== library, Go and Python tests: not run on a sanitized build"
else
    run_suite "library tests" bash "$REPO/tests/build/library_test.sh" "$BUILD"
    run_suite "Go tests" bash "$REPO/go/test.sh" "$BUILD"
    run_suite "Python tests" bash "$REPO/tests/python/run.sh" "$BUILD"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
