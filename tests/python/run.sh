#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/python/run.sh: the Python package's tests (pytest, in the virtual
# environment of venv.sh), closing with pytest's count as "N passed, N
# failed" (errors count as failures, skips are left out), as tests/run.sh
# tallies suites.
#
#   tests/python/run.sh BUILD_DIR [PYTEST_ARGS...]
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(mkdir -p "${1:-$REPO/build}" && cd "${1:-$REPO/build}" && pwd)
shift || true
if ! bash "$REPO/tests/python/venv.sh" "$BUILD"; then
    echo "python tests: the virtual environment could not be made (see above)"
    echo "0 passed, 1 failed"
    exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
GLYD_CLI=$BUILD/glyd GLYD_CORPUS=${GLYD_CORPUS:-$REPO/../shared/corpus} \
    "$BUILD/venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$REPO/tests/python" \
    "$REPO/tests/python" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(grep -E '^[=]* *[0-9]+ (passed|failed|skipped|error|errors|deselected)' "$log" | tail -n 1)
count() { echo "$summary" | grep -oE "[0-9]+ $1" | head -n 1 | cut -d' ' -f1; }
passed=$(count passed)
failed=$(( $(count failed || true) + $(count 'errors?' || true) + 0 ))
[ -n "$summary" ] || failed=$((failed + 1))
# pytest failing with nothing counted as failed (a crash, a usage error)
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "${passed:-0} passed, $failed failed"
[ "$failed" -eq 0 ]
