#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
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
#                         3 8B's shapes, 32 layers), compressed (fast layout,
#                         and the entropy layout) against plain bf16 weights,
#                         all on the GPU;
#   compute-sanitizer     the engine's checks again, memcheck (GPU_SANITIZE=0
#                         leaves it out);
#   build/gpu_model       the same products and bulk decoding modelled on
#                         the CPU (bench/gpu_model.c), to set beside what
#                         gpu_check measured;
#   Nsight Compute        last, where ncu is on the PATH and a minute of
#                         the run is left: the products and bulk decoders
#                         launched once each (gpu_check --profile) under
#                         ncu, for what their warps wait on and how busy
#                         memory is; the whole report in $OUT/ncu.txt, its
#                         main lines in this one. A profiler that cannot
#                         run there fails no check (GPU_PROFILE=0 leaves it
#                         out).
# The report goes to $OUT/gpu_check.md when OUT is set, and to standard
# output. GPU_BENCH_LAYERS=N shortens the synthetic model (default: all 32).
#
# On a machine that can build the project (its -dev packages installed):
#   bash tests/gpu/run.sh
# On a lent GPU machine (no registry, no ../shared), with a kit made here
# by tests/gpu/kit.sh and carried there:
#   bash tests/gpu/kit.sh .gpu-kit                  (here)
#   bash tests/gpu/run.sh --kit .gpu-kit            (there; carry .gpu-kit)
# The whole run keeps within GPU_RUN_SECONDS (default 360: the 6 minutes
# it is meant to take on one H200, builds included): each step has its own
# limit, so that one that hangs leaves the others, and none runs past the
# run's end. The report ends with each step's time.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
deadline=$((start + ${GPU_RUN_SECONDS:-360}))
kit=
if [ "${1:-}" = --kit ]; then kit=${2:?--kit DIR}; fi
out=${OUT:-}
synth=$(mktemp -d "${TMPDIR:-/tmp}/glyd-synth-8b.XXXXXX")

if [ -n "$kit" ]; then
    SHARED=$kit/shared
    bin=$kit
    # cuBLAS from the machine's CUDA: the toolkit's, or the Python wheel's
    cublas=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null || true)
    export LD_LIBRARY_PATH="$kit/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib${cublas:+:$cublas}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
    SHARED=${SHARED:-../shared}
    bin=build
    make -j"$(nproc)" all build/unit_tests build/synth_model build/gpu_model >/dev/null
    make -j"$(nproc)" cuda >/dev/null
fi
gpu_check=$bin/cuda/gpu_check
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

# the report is written as it goes (under $OUT when set), so that a run
# stopped from outside still leaves what it measured
if [ -n "$out" ]; then
    mkdir -p "$out"
    report=$out/gpu_check.md
    trap 'rm -rf "$report.unit" "$report.memcheck" "$report.ncu" "$synth"' EXIT
else
    report=$(mktemp)
    trap 'rm -rf "$report" "$report.unit" "$report.memcheck" "$report.ncu" "$synth"' EXIT
fi
status=0
last=0 # the last step's exit status
steps=
# a step (LIMIT NAME COMMAND...): its own time limit, cut to what is left
# of the run's; a failure is recorded, the next step runs
run() {
    local limit=$1 name=$2
    shift 2
    local rc=0 left=$((deadline - SECONDS)) t0=$SECONDS
    if [ "$limit" -gt "$left" ]; then limit=$left; fi
    if [ "$limit" -lt 5 ]; then
        echo "**not run, the run's $((deadline - start)) s are spent: $* **"
        status=124 last=124
        steps+="| $name | - | not run |"$'\n'
        return 0
    fi
    timeout "$limit" "$@" || rc=$?
    last=$rc
    if [ "$rc" != 0 ]; then status=$rc; fi
    if [ "$rc" = 124 ]; then echo "**timed out after $limit s: $* **"; fi
    steps+="| $name | $((SECONDS - t0)) | $([ "$rc" = 0 ] && echo passed || echo "exit $rc") |"$'\n'
    return 0
}
t_steps=$SECONDS
{
    echo "## CPU emulation of the kernels and of the GPU backend"
    echo
    GLYD_CORPUS="$SHARED/corpus" run 120 "emulation tests" "$bin/unit_tests" gpu_ >"$report.unit" 2>&1
    tail -n 1 "$report.unit"
    echo
    run 150 gpu_check "$gpu_check" "$SHARED/fixtures"
    run 60 "engine checks" "$bin/gpu_engine" check "$SHARED/fixtures"
    layers=()
    [ -n "${GPU_BENCH_LAYERS:-}" ] && layers=(--layers "$GPU_BENCH_LAYERS")
    run 120 "synthetic 8B model" "$bin/synth_model" --shape 8b "${layers[@]}" \
        --like "$SHARED/fixtures/stories260K/model.safetensors" -o "$synth" >/dev/null
    run 180 "engine benchmark" "$bin/gpu_engine" bench "$synth" --prompt 256 --tokens 128 --rounds 2
    # last, so that it takes no time from the figures: the engine's checks
    # again under compute-sanitizer (bad accesses and uninitialised reads)
    if [ "${GPU_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
        echo "## The engine's checks under compute-sanitizer (memcheck)"
        echo
        run 120 "engine checks, memcheck" compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 \
            "$bin/gpu_engine" check "$SHARED/fixtures" >"$report.memcheck" 2>&1
        tail -n 25 "$report.memcheck"
    fi
    echo "## The same kernels modelled on the CPU (bench/gpu_model.c), beside gpu_check's measures"
    echo
    run 60 "model (CPU)" "$bin/gpu_model"
    echo
    if [ "${GPU_PROFILE:-1}" = 1 ] && command -v ncu >/dev/null && [ $((deadline - SECONDS)) -ge 60 ]; then
        echo "## Nsight Compute: the products and bulk decoders, once each (gpu_check --profile)"
        echo
        # a profile that fails (counters the machine does not give) is reported, not counted as a failed check
        counted=$status
        run 90 "profile (ncu)" ncu --section SpeedOfLight --section LaunchStats --section Occupancy \
            --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
            "$gpu_check" "$SHARED/fixtures" --profile >"$report.ncu" 2>&1
        status=$counted
        if [ "$last" = 0 ]; then
            # each kernel's line, then its main figures
            main='^  [^ ].*\(|Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput'
            main+='|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Warp Cycles Per Issued'
            main+='|Issue Slots Busy|No Eligible|being stalled'
            grep -E "$main" "$report.ncu" || true
        else
            echo "ncu ended with $last (not counted as a failed check):"
            tail -n 15 "$report.ncu"
        fi
        [ -n "$out" ] && cp "$report.ncu" "$out/ncu.txt"
        echo
    fi
    echo "## Time, of the run's $((deadline - start)) s (builds before the steps: $((t_steps - start)) s)"
    echo
    echo "| step | s | result |"
    echo "| --- | ---: | --- |"
    printf '%s' "$steps"
    echo
    echo "In all: $((SECONDS - start)) s."
} >"$report" 2>&1
cat "$report"
exit "$status"
