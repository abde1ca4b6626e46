#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/demo.sh: the main job on the bundled sample: compress it, verify the
# frame, restore it byte for byte, and set the ratio beside zstd's.
#
#   tools/demo.sh [BUILD_DIR]
set -eu
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$REPO/build}
GLYD=$BUILD/glyd
SAMPLE=$REPO/samples/alice29.txt
"$REPO/tools/deps.sh" demo

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$SAMPLE" "$work/alice29.txt"

"$GLYD" -q "$work/alice29.txt"                    # -> alice29.txt.glyd
"$GLYD" -q -t "$work/alice29.txt.glyd"            # checksum and structure
"$GLYD" -q -d -o "$work/restored" "$work/alice29.txt.glyd"
cmp "$work/restored" "$SAMPLE"

orig=$(stat -c %s "$SAMPLE")
ours=$(stat -c %s "$work/alice29.txt.glyd")
theirs=$(zstd -q -3 -c "$SAMPLE" | wc -c)
"$GLYD" -l "$work/alice29.txt.glyd"
echo
awk -v o="$orig" -v g="$ours" -v z="$theirs" 'BEGIN {
    printf "sample      samples/alice29.txt (%d bytes)\n", o
    printf "glyd -3     %8d bytes  ratio %.3f  (verified: restored byte for byte)\n", g, o / g
    printf "zstd -3     %8d bytes  ratio %.3f\n", z, o / z
    printf "glyd output is %.1f%% of zstd'"'"'s\n", 100 * g / z
}'
