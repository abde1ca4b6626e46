#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/fuzz_one.sh BUILD SECONDS TARGET: runs $BUILD/fuzz/fuzz_TARGET for
# SECONDS from its seeds (seeds-TARGET, else the CLI's frames) and the
# corpus it keeps; prints its final lines, each led by its name (targets
# run side by side), and fails when it finds a failure (kept in findings/).
set -uo pipefail
build=$1 seconds=$2 target=$3
seeds=$build/fuzz/seeds
[ -d "$build/fuzz/seeds-$target" ] && seeds=$build/fuzz/seeds-$target
[ "$target" = cuda ] && seeds=$build/fuzz/seeds-tensor
mkdir -p "$build/fuzz/corpus-$target"
echo "fuzz_$target: $seconds s"
"$build/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=16384 -print_final_stats=0 \
    -artifact_prefix="$build/fuzz/findings/" "$build/fuzz/corpus-$target" "$seeds" 2>&1 |
    grep -E "^#[0-9]+ *DONE|ERROR|SUMMARY|^Done" | sed "s/^/fuzz_$target: /"
if [ "${PIPESTATUS[0]}" -ne 0 ]; then echo "fuzz_$target found a failure"; exit 1; fi
