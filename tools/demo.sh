#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/demo.sh: the two main jobs on bundled inputs. A file: compress it,
# verify the frame, restore it byte for byte, and set the ratio beside
# zstd's. A model: pack it, show its bits per weight, verify it against its
# folder and run it. The model is the stories260K fixture of ../shared where
# it is beside the clone (a trained model, whose greedy continuation is
# checked against llama2.c's), else the tiny Qwen3 of tests/data.
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

# A model: packed, checked, run from its coded weights
model=$REPO/../shared/fixtures/stories260K
[ -f "$model/model.safetensors" ] || model=$REPO/tests/data/tiny-qwen3
echo
echo "model       ${model#"$REPO"/}"
"$GLYD" pack -q "$model" -o "$work/model.glyd"
"$GLYD" info "$work/model.glyd"
"$GLYD" verify "$work/model.glyd" "$model"
ours=$("$GLYD" run "$work/model.glyd" --tokens 1 -n 20)
echo "greedy continuation of token 1, from the packed model: $ours"
if [ -f "$model/reference.json" ] && grep -q greedy_from_bos "$model/reference.json"; then
    want=$(python3 -c 'import json, sys; print(*json.load(open(sys.argv[1]))["greedy_from_bos"][1:21])' \
        "$model/reference.json")
    [ "$ours" = "$want" ] || { echo "demo: the packed model's tokens differ from llama2.c's: $want" >&2; exit 1; }
    echo "the same tokens as llama2.c's reference implementation on the original weights"
fi

