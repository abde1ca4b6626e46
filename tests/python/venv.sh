#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/python/venv.sh: the virtual environment the Python tests and the
# Python benchmark run in, BUILD_DIR/venv: made with python3 -m venv, with
# numpy, pytest, ml_dtypes, torch, transformers and safetensors (and any
# PACKAGES named) from PyPI, then the glyd package installed from python/,
# again whenever its sources change.
#
#   tests/python/venv.sh BUILD_DIR [PACKAGES...]
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(mkdir -p "${1:-$REPO/build}" && cd "${1:-$REPO/build}" && pwd)
shift || true
VENV=$BUILD/venv
PY=${PYTHON:-python3}
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

want=(numpy pytest ml_dtypes torch transformers safetensors "$@")
modules=$(printf '%s\n' "${want[@]}" | tr '\n' ',' | sed 's/,$//')
if ! "$VENV/bin/python" -c "import $modules" 2>/dev/null; then
    if [ ! -x "$VENV/bin/python" ]; then
        rm -rf "$VENV"
        "$PY" -m venv "$VENV"
    fi
    "${PIP[@]}" install "${want[@]}"
fi

# The package, when anything it is built from is newer than its install.
stamp=$VENV/.glyd-installed
if [ ! -e "$stamp" ] || [ -n "$(find "$REPO/python" "$REPO/lib" "$REPO/llm" "$REPO/gpu" "$REPO/include" \
        -newer "$stamp" -type f ! -path '*/glyd.egg-info/*' -print -quit)" ]; then
    rm -f "$stamp"
    "${PIP[@]}" install --force-reinstall --no-deps "$REPO/python"
    touch "$stamp"
fi
