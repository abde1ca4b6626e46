#!/usr/bin/env bash
# tests/gpu/run.sh: the GPU checks, in one run on a machine with an NVIDIA
# GPU (a few minutes on one H200). Builds the library, the kernels and
# libglyd_cuda.so, runs the CPU emulation tests of the kernels and of the
# GPU backend, then:
#   build/cuda/gpu_check  decoding bit for bit against the CPU decoder (the
#                         stories260K fixture, a synthetic 1 GiB set), the
#                         fused product bit for bit against its emulation,
#                         bulk decode throughput, the product against cuBLAS;
#   build/gpu_engine check  the engine on the GPU: logits against the CPU
#                         engine and the references, coded == plain bit for
#                         bit (--exact), greedy decoding on the device;
#   build/gpu_engine bench  tokens/s of a synthetic 8B-shaped model (Llama
#                         3 8B's shapes, 32 layers), compressed against plain
#                         bf16 weights, both on the GPU.
# The report goes to $OUT/gpu_check.md when OUT is set, and to standard
# output. GPU_BENCH_LAYERS=N shortens the synthetic model (default: all 32).
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
out=${OUT:-}
synth=$(mktemp -d "${TMPDIR:-/tmp}/glyd-synth-8b.XXXXXX")

make -j"$(nproc)" all build/unit_tests build/synth_model >/dev/null
make -j"$(nproc)" cuda >/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

report=$(mktemp)
trap 'rm -rf "$report" "$report.unit" "$synth"' EXIT
status=0
run() { "$@" || status=$?; }
{
    echo "## CPU emulation of the kernels and of the GPU backend"
    echo
    GLYD_CORPUS="$SHARED/corpus" run build/unit_tests gpu_ >"$report.unit" 2>&1
    tail -n 1 "$report.unit"
    echo
    run build/cuda/gpu_check "$SHARED/fixtures"
    run build/gpu_engine check "$SHARED/fixtures"
    layers=()
    [ -n "${GPU_BENCH_LAYERS:-}" ] && layers=(--layers "$GPU_BENCH_LAYERS")
    build/synth_model --shape 8b "${layers[@]}" -o "$synth" >/dev/null
    run build/gpu_engine bench "$synth" --prompt 256 --tokens 128 --rounds 2
} >"$report" 2>&1
cat "$report"
if [ -n "$out" ]; then
    mkdir -p "$out"
    cp "$report" "$out/gpu_check.md"
fi
exit "$status"
