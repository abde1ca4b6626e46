#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench_tokenizer.sh: times `glyd tokenize` on inputs made to find a
# tokenizer's worst cases (digits, one emoji repeated, random bytes, one
# long line without spaces, one run of line breaks) and on alice29.txt, and
# prints a markdown table of wall seconds, peak memory and the number of
# ids. A run that passes the time limit is shown as "> LIMIT".
#
#   bench/bench_tokenizer.sh [GLYD [TOKENIZER [LIMIT_S]]]
#
# GLYD defaults to build/glyd, TOKENIZER to ../shared/fixtures/qwen3-tokenizer,
# LIMIT_S to 60. The inputs are written once to $BENCH_TOKENIZER_DIR
# (default /tmp/glyd-bench-tokenizer) and reused by later runs.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GLYD=${1:-$REPO/build/glyd}
TOK=${2:-$REPO/../shared/fixtures/qwen3-tokenizer}
LIMIT=${3:-60}
DIR=${BENCH_TOKENIZER_DIR:-/tmp/glyd-bench-tokenizer}
ALICE=$REPO/../shared/corpus/text/alice29.txt
KiB=1024
MiB=$((1024 * 1024))

[ -x "$GLYD" ] || { echo "bench_tokenizer: $GLYD is not an executable (run make)" >&2; exit 1; }
[ -r "$TOK/tokenizer.json" ] || { echo "bench_tokenizer: no tokenizer.json in $TOK" >&2; exit 1; }
[ -r "$ALICE" ] || { echo "bench_tokenizer: $ALICE is missing" >&2; exit 1; }
mkdir -p "$DIR" || exit 1

# repeat TEXT BYTES FILE: TEXT over and over, cut at BYTES (a multiple of
# TEXT's length, so that no character is cut in two).
repeat() {
    [ -s "$3" ] && return
    yes "$1" | tr -d '\n' | head -c "$2" > "$3.tmp" && mv "$3.tmp" "$3"
}

# Random bytes from a fixed key, so that every run sees the same ones.
random_bytes() {
    [ -s "$2" ] && return
    openssl enc -aes-128-ctr -nosalt -K 00112233445566778899aabbccddeeff -iv 0 < /dev/zero 2>/dev/null |
        head -c "$1" > "$2.tmp" && mv "$2.tmp" "$2"
}

repeat 0123456789 $((50 * KiB)) "$DIR/digits-50K"
repeat 0123456789 $((200 * KiB)) "$DIR/digits-200K"
repeat 0123456789 $((1 * MiB)) "$DIR/digits-1M"
repeat 0123456789 $((50 * MiB)) "$DIR/digits-50M"
repeat "😀" $((50 * MiB)) "$DIR/emoji-50M"
# one piece that merges 31 times in 32 (tokens of 32 line breaks): the
# most work the heap of merges meets
[ -s "$DIR/newlines-50M" ] || head -c $((50 * MiB)) /dev/zero | tr '\0' '\n' > "$DIR/newlines-50M"
random_bytes $((50 * MiB)) "$DIR/random-50M"
# alice29.txt without its spaces and line breaks, over and over: one line
if [ ! -s "$DIR/line-50M" ]; then
    text=$(tr -d ' \r\n' < "$ALICE")
    repeat "$text" $((50 * MiB)) "$DIR/line-50M"
fi

echo "| input | bytes | seconds | peak MiB | ids |"
echo "|---|---:|---:|---:|---:|"
for name in digits-50K digits-200K digits-1M digits-50M emoji-50M random-50M line-50M newlines-50M alice29.txt; do
    file=$DIR/$name
    [ "$name" = alice29.txt ] && file=$ALICE
    bytes=$(wc -c < "$file")
    out=$DIR/out.ids
    /usr/bin/time -o "$DIR/time" -f "%e %M" timeout "$LIMIT" "$GLYD" tokenize "$TOK" --file "$file" \
        > "$out" 2> "$DIR/err"
    rc=$?
    read -r secs kib < <(tail -n 1 "$DIR/time")
    if [ "$rc" -eq 124 ]; then
        echo "| $name | $bytes | > $LIMIT | - | - |"
    elif [ "$rc" -ne 0 ]; then
        echo "| $name | $bytes | $secs | $((kib / 1024)) | refused: $(sed 's/.*: //' "$DIR/err" | head -n 1) |"
    else
        echo "| $name | $bytes | $secs | $((kib / 1024)) | $(wc -w < "$out") |"
    fi
done
rm -f "$DIR/out.ids" "$DIR/err" "$DIR/time"
