#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/gpu/kit.sh DIR: what tests/gpu/run.sh needs on a GPU machine that
# cannot build the project (no -dev packages, no registry to fetch them
# from) and does not see ../shared: the programs built here, the few
# libraries they use beyond glibc and CUDA's, and the fixtures.
#
#   bash tests/gpu/kit.sh .gpu-kit          (here; /.gpu-kit/ is ignored)
#   bash tests/gpu/run.sh --kit .gpu-kit    (there, with .gpu-kit carried)
#
# The programs link CUDA's runtime statically and cuBLAS dynamically: the
# GPU machine's own CUDA (13.x) provides libcublas.
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=${1:?usage: tests/gpu/kit.sh DIR}
SHARED=${SHARED:-../shared}

make -j"$(nproc)" all build/unit_tests build/synth_model build/gpu_model >/dev/null
make -j"$(nproc)" cuda >/dev/null
rm -rf "$kit"
mkdir -p "$kit/cuda" "$kit/lib" "$kit/shared/corpus"
cp build/glyd build/unit_tests build/synth_model build/gpu_engine build/gpu_model "$kit/"
cp build/cuda/gpu_check build/cuda/libglyd_cuda.so "$kit/cuda/"
mkdir -p "$kit/shared/fixtures"
cp -r "$SHARED/fixtures/stories260K" "$kit/shared/fixtures/"
# every library the programs load but glibc's and CUDA's
for bin in "$kit"/glyd "$kit"/unit_tests "$kit"/synth_model "$kit"/gpu_engine "$kit"/gpu_model "$kit"/cuda/*; do
    ldd "$bin" | awk '/=> \// { print $1, $3 }'
done | sort -u | while read -r name path; do
    case "$name" in
        libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcublas*|libcuda.so*) ;;
        libstdc++.so*|libgcc_s.so*) ;; # the machine's own are newer, and compatible
        *) cp -L "$path" "$kit/lib/$name" ;;
    esac
done
du -sh "$kit"
