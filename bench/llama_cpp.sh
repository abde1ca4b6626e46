#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/llama_cpp.sh: llama.cpp beside the engine on the same model, the
# figures a user compares ours with. Everything lives in BUILD_DIR/llama-cpp
# and is made once: a virtual environment; llama-cpp-python's sdist from
# PyPI, pinned, which vendors llama.cpp; its llama-bench built twice, for
# this CPU (-march=native) and for AVX2 alone (the peer of the engine's
# --avx2 runs); MODEL_DIR written as a bf16 GGUF file. Then
# bench/vs_llama_cpp.py runs both engines in turns and prints one table.
#
#   bench/llama_cpp.sh BUILD_DIR MODEL_DIR [vs_llama_cpp.py options...]
#
# A model folder without a tokenizer (the synthetic ones) takes Qwen3's,
# LLAMA_CPP_TOKENIZER (default ../shared/fixtures/qwen3-tokenizer).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(mkdir -p "$1" && cd "$1" && pwd)
MODEL=$(cd "$2" && pwd)
shift 2

# llama-cpp-python 0.3.36 vendors llama.cpp at commit 0c1e570 (ggml 0.25.3).
VERSION=0.3.36
DIR=$BUILD/llama-cpp
SRC=$DIR/llama_cpp_python-$VERSION/vendor/llama.cpp
VENV=$DIR/venv
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
TOKENIZER=${LLAMA_CPP_TOKENIZER:-$REPO/../shared/fixtures/qwen3-tokenizer}
say() { echo "llama_cpp.sh: $*" >&2; }

mkdir -p "$DIR"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"

if [ ! -e "$SRC/CMakeLists.txt" ]; then
    say "fetching llama-cpp-python $VERSION's sdist from PyPI"
    "${PIP[@]}" download --no-binary :all: --no-deps -d "$DIR" "llama-cpp-python==$VERSION"
    rm -rf "$DIR/extract"
    mkdir "$DIR/extract"
    tar -xzf "$DIR/llama_cpp_python-$VERSION.tar.gz" -C "$DIR/extract"
    rm -rf "$DIR/llama_cpp_python-$VERSION"
    mv "$DIR/extract/llama_cpp_python-$VERSION" "$DIR/"
    rmdir "$DIR/extract"
fi

# gguf-py from the same tree, so that the file matches the llama.cpp that reads it.
if ! "$VENV/bin/python" -c 'import gguf, numpy' 2>/dev/null; then
    "${PIP[@]}" install numpy==2.2.6 "$SRC/gguf-py"
fi

# llama-bench alone, Release, the CPU backend with OpenMP, no BLAS, CUDA
# or HTTPS; static, so that each binary carries its own ggml.
build_llama_bench() {
    local name=$1 out=$DIR/build-$1
    shift
    [ -x "$out/bin/llama-bench" ] && return
    say "building llama-bench ($name) in $out, several minutes; log in $out.log"
    if ! { cmake -S "$SRC" -B "$out" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
               -DGGML_CUDA=OFF -DGGML_BLAS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
               -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF "$@" &&
           cmake --build "$out" --target llama-bench -j "$(nproc)"; } >"$out.log" 2>&1; then
        tail -20 "$out.log" >&2
        say "the $name build failed"
        exit 1
    fi
}
build_llama_bench native -DGGML_NATIVE=ON
build_llama_bench avx2 -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF \
    -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

# The model as bf16 GGUF, again when its folder changes; kept only once
# llama-bench has loaded it and run a token.
GGUF=$DIR/$(basename "$MODEL")-bf16.gguf
if [ ! -e "$GGUF" ] || [ -n "$(find "$MODEL/" -newer "$GGUF" -print -quit)" ]; then
    say "writing $GGUF"
    tok=$TOKENIZER
    [ -e "$MODEL/tokenizer.json" ] && tok=$MODEL
    rm -f "$GGUF"
    "$VENV/bin/python" "$REPO/bench/llama_cpp_gguf.py" "$MODEL" "$tok" "$GGUF.tmp"
    "$DIR/build-native/bin/llama-bench" -m "$GGUF.tmp" -p 0 -n 1 -r 1 -t "$(nproc)" >/dev/null
    mv "$GGUF.tmp" "$GGUF"
fi

exec "$VENV/bin/python" "$REPO/bench/vs_llama_cpp.py" --model "$MODEL" --gguf "$GGUF" \
    --llama-bench "$DIR/build-native/bin/llama-bench" --llama-bench-avx2 "$DIR/build-avx2/bin/llama-bench" "$@"
