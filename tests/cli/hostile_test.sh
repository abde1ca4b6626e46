#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/cli/hostile_test.sh: the glyd command against hostile surroundings:
# outputs that are device nodes, FIFOs and symbolic links, full devices on
# every output and on standard output, --rm with outputs that are not files,
# damaged inputs (frames and packed models), decompression bombs, and runs
# killed half-way. Nothing may be replaced that is not a regular file, no
# input lost, no half-made output left, no write error ignored.
#
#   bash tests/cli/hostile_test.sh [path/to/glyd]   (default: build/glyd)
#
# Prints "ok - ..." or "FAIL - ... (details)" per test and closes with
# "N passed, N failed". Device nodes are made with mknod inside the test's own
# temporary folder (never in /dev), so those tests need root: without it they
# print "ok - ... # skip". Standard output then goes to /dev/full, which is
# only written to.

set -u
umask 022
exec </dev/null

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$REPO/tests/cli/testlib.sh"
bail() { echo "FAIL - setup ($1)"; FAIL=$((FAIL + 1)); summary_and_exit; }

GLYD_ARG=${1:-$REPO/build/glyd}
[ -f "$GLYD_ARG" ] && [ -x "$GLYD_ARG" ] || bail "glyd binary '$GLYD_ARG' missing or not executable (run make first)"
GLYD=$(cd "$(dirname "$GLYD_ARG")" && pwd)/$(basename "$GLYD_ARG")

CORPUS=$REPO/../shared/corpus
FIX=$REPO/../shared/fixtures/stories260K
QWEN=$REPO/../shared/fixtures/qwen3-tokenizer
for f in "$CORPUS/text/alice29.txt" "$CORPUS/logs/HPC_2k.log" "$CORPUS/tables/diamonds.csv" \
         "$CORPUS/bin/libllvm14.part" "$FIX/model.safetensors" "$QWEN/tokenizer.json"; do
    [ -r "$f" ] || bail "shared data not found: $f"
done

W=$(mktemp -d "${TMPDIR:-/tmp}/glyd-hostile.XXXXXX") || bail "mktemp -d failed"
CHILDREN=()
cleanup() {
    local p
    for p in "${CHILDREN[@]}"; do kill -KILL "$p" 2>/dev/null; done
    cd / && rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
CAP=$W/cap
D=$W/data
mkdir -p "$CAP" "$D" "$W/t"
start=$(date +%s)

ROOT=0
[ "$(id -u)" -eq 0 ] && ROOT=1
# AddressSanitizer reserves terabytes of address space: no ulimit -v then
ASAN=0
grep -qa __asan_init "$GLYD" && ASAN=1

# --- helpers ------------------------------------------------------------------

# run_to FILE CMD...: the same with standard output going to FILE
run_to() {
    local to=$1; shift
    LAST_CMD="$(fmt_cmd "$@") > $to"
    ( "$@"; exit $? ) >"$to" 2>"$CAP/err"
    RC=$?
}

want_err() {
    [ -n "$WHY" ] && return
    grep -qF -- "$1" "$CAP/err" || WHY="stderr lacks '$1'; cmd: $LAST_CMD; exit $RC; stderr: $(errtxt)"
}
# want_err_is LINE: stderr is exactly this one line
want_err_is() {
    [ -n "$WHY" ] && return
    [ "$(cat "$CAP/err")" = "$1" ] && [ "$(wc -l <"$CAP/err")" -eq 1 ] ||
        WHY="stderr is not exactly '$1'; cmd: $LAST_CMD; exit $RC; stderr: $(errtxt)"
}
# want_err_last LINE: the last line of stderr is exactly this
want_err_last() {
    [ -n "$WHY" ] && return
    [ "$(tail -n 1 "$CAP/err")" = "$1" ] ||
        WHY="stderr does not end with '$1'; cmd: $LAST_CMD; exit $RC; stderr: $(errtxt)"
}
want_err_lines_is() {
    [ -n "$WHY" ] && return
    [ "$(wc -l <"$CAP/err")" -eq "$1" ] || WHY="stderr has $(wc -l <"$CAP/err") lines, expected $1; cmd: $LAST_CMD"
}
want_quiet_err() {
    [ -n "$WHY" ] && return
    [ ! -s "$CAP/err" ] || WHY="expected nothing on stderr; cmd: $LAST_CMD; stderr: $(errtxt)"
}

# fresh NAME [DATAFILE...]: an empty folder for one test, entered, with copies
fresh() {
    local d=$W/t/$1 f; shift
    rm -rf "$d"; mkdir -p "$d"; cd "$d" || exit 1
    for f in "$@"; do cp -r "$D/$f" "$f"; done
}

# is_node PATH MAJOR MINOR: a character device with these numbers
is_node() { [ -c "$1" ] && [ "$(stat -c '%t,%T' "$1")" = "$(printf '%x,%x' "$2" "$3")" ]; }
mk_null() { mknod "$1" c 1 3; }
mk_full() { mknod "$1" c 1 7; }
# set_byte FILE OFFSET VALUE
set_byte() { printf "\\$(printf %03o "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
# temp_files: glyd's temporary names in the current folder
temp_files() { compgen -G '.*.glydtmp'; }

# The standard output that is always full: a node of our own as root
if [ $ROOT -eq 1 ]; then
    FULL=$W/full
    mk_full "$FULL" || bail "mknod failed although root"
else
    FULL=/dev/full
fi
[ -w "$FULL" ] || bail "$FULL is not writable"
ENOSPC="No space left on device"

# --- data ---------------------------------------------------------------------

cp "$CORPUS/text/alice29.txt" "$D/alice.txt"
cp "$CORPUS/logs/HPC_2k.log" "$D/hpc.log"
head -c 3000 "$CORPUS/text/alice29.txt" >"$D/small"
mkdir "$D/samples"
head -n 600 "$CORPUS/logs/HPC_2k.log" | (cd "$D/samples" && split -l 1 -a 3 - r)
cp "$FIX/model.safetensors" "$D/w.safetensors"
cp -r "$FIX" "$D/model"
chmod -R u+w "$D"
(cd "$D" && "$GLYD" -q alice.txt small) || bail "glyd cannot compress the test data"
"$GLYD" pack -q "$FIX" -o "$D/m.glyd" || bail "glyd cannot pack the fixture"
# the references that outputs written elsewhere must equal
"$GLYD" -q --train "$D"/samples/* -o "$D/ref.dict" || bail "glyd --train failed"
"$GLYD" -q -o "$D/w.ref.glyd" "$D/w.safetensors" || bail "glyd cannot compress a safetensors file"
TOKENS="1 461 461 401"
"$GLYD" run "$FIX" --tokens "$TOKENS" --dump-logits "$D/ref.f32" || bail "glyd run failed"

# The commands that write an output file, OUT standing for it; "F" where -f
# goes. run --dump-logits replaces its file always (no -f).
OUT_CASES=(compress decompress train pack safetensors dump)
out_cmd() { # out_cmd CASE OUT FORCE: sets CMD
    local f=()
    [ "$3" = 1 ] && f=(-f)
    case $1 in
        compress) CMD=("$GLYD" -q "${f[@]}" -o "$2" alice.txt) ;;
        decompress) CMD=("$GLYD" -q -d "${f[@]}" -o "$2" alice.txt.glyd) ;;
        train) CMD=("$GLYD" -q --train "$D"/samples/* "${f[@]}" -o "$2") ;;
        pack) CMD=("$GLYD" pack -q "${f[@]}" "$FIX" -o "$2") ;;
        safetensors) CMD=("$GLYD" -q "${f[@]}" -o "$2" w.safetensors) ;;
        dump) CMD=("$GLYD" run "$FIX" --tokens "$TOKENS" --dump-logits "$2") ;;
    esac
}
# out_ref CASE: the bytes the output must hold
out_ref() {
    case $1 in
        compress) echo "$D/alice.txt.glyd" ;;
        decompress) echo "$D/alice.txt" ;;
        train) echo "$D/ref.dict" ;;
        pack) echo "$D/m.glyd" ;;
        safetensors) echo "$D/w.ref.glyd" ;;
        dump) echo "$D/ref.f32" ;;
    esac
}
# out_err CASE OUT: the one line a full device gives
out_err() {
    case $1 in
        pack) echo "glyd: pack: $2: write error: $ENOSPC" ;;
        *) echo "glyd: $2: write error: $ENOSPC" ;;
    esac
}
case_inputs=(alice.txt alice.txt.glyd w.safetensors)

# --- device nodes as outputs: written through, never replaced ------------------

for c in "${OUT_CASES[@]}"; do
    for force in 0 1; do
        [ "$c" = dump ] && [ $force = 1 ] && continue
        fl=""; [ $force = 1 ] && fl=" -f"
        if [ $ROOT -ne 1 ]; then
            skip "$c$fl -o NODE (1,3: null) writes through the node" "(mknod needs root)"
            skip "$c$fl -o NODE (1,7: full) fails with one line, node kept" "(mknod needs root)"
            continue
        fi
        begin "$c$fl -o NODE (1,3: null) writes through the node"
        fresh "node-null-$c-$force" "${case_inputs[@]}"
        mk_null nul
        out_cmd "$c" nul $force
        run "${CMD[@]}"; want_rc 0
        want "nul is no longer the null device: $(ls -l nul)" is_node nul 1 3
        want_files nul "${case_inputs[@]}"
        finish

        begin "$c$fl -o NODE (1,7: full) fails with one line, node kept"
        fresh "node-full-$c-$force" "${case_inputs[@]}"
        mk_full full
        out_cmd "$c" full $force
        run "${CMD[@]}"; want_rc 1
        want_err_is "$(out_err "$c" full)"
        want "full is no longer the full device: $(ls -l full)" is_node full 1 7
        want_files full "${case_inputs[@]}"
        finish
    done
done

for force in 0 1; do
    fl=""; [ $force = 1 ] && fl=" -f"
    if [ $ROOT -ne 1 ]; then skip "unpack$fl -o NODE is refused, node kept" "(mknod needs root)"; continue; fi
    begin "unpack$fl -o NODE is refused, node kept"
    fresh "node-unpack-$force" m.glyd
    mk_null nul
    if [ $force = 1 ]; then run "$GLYD" unpack -q -f m.glyd -o nul; else run "$GLYD" unpack -q m.glyd -o nul; fi
    want_rc 1
    want_err_is "glyd: nul: exists and is not a directory"
    want "nul is no longer the null device" is_node nul 1 3
    want_files nul m.glyd
    finish
done

# --- FIFOs as outputs: written through with the exact bytes --------------------

for c in "${OUT_CASES[@]}"; do
    for force in 0 1; do
        [ "$c" = dump ] && [ $force = 1 ] && continue
        fl=""; [ $force = 1 ] && fl=" -f"
        begin "$c$fl -o FIFO writes the exact output into the FIFO, which stays"
        fresh "fifo-$c-$force" "${case_inputs[@]}"
        mkfifo pipe
        timeout 60 cat pipe >"$W/got" &
        reader=$!
        out_cmd "$c" pipe $force
        run timeout 60 "${CMD[@]}"; want_rc 0
        [ "$RC" -ne 0 ] && kill "$reader" 2>/dev/null
        wait "$reader"
        want "pipe is no longer a FIFO: $(ls -l pipe)" test -p pipe
        want "the FIFO did not receive the output's bytes" same "$W/got" "$(out_ref "$c")"
        want_files pipe "${case_inputs[@]}"
        finish
    done
done

# --- symbolic links as outputs: written through, the link kept -----------------

for c in "${OUT_CASES[@]}"; do
    if [ "$c" != dump ]; then
        begin "$c -o LINK (to a file) without -f: refused, link and file unchanged"
        fresh "link-$c-0" "${case_inputs[@]}"
        echo old >target
        ln -s target link
        out_cmd "$c" link 0
        run "${CMD[@]}"; want_rc 1
        want_err_is "glyd: link: already exists; not overwritten (use -f to overwrite)"
        want "link is no longer a link to target" test "$(readlink link)" = target
        want "target changed" test "$(cat target)" = old
        want_files link target "${case_inputs[@]}"
        finish
    fi

    fl=" -f"; [ "$c" = dump ] && fl=""
    begin "$c$fl -o LINK (to a file in another folder): the file replaced, the link kept"
    fresh "link-$c-1" "${case_inputs[@]}"
    mkdir far
    echo old >far/target
    ln -s far/target link
    out_cmd "$c" link 1
    run "${CMD[@]}"; want_rc 0
    want "link is no longer a link to far/target: $(ls -l link)" test "$(readlink link)" = far/target
    want "the link's target does not hold the output" same far/target "$(out_ref "$c")"
    want_files far link "${case_inputs[@]}"
    want_files_in far target
    finish

    begin "$c$fl -o LINK to nothing: refused, nothing created"
    fresh "dangling-$c" "${case_inputs[@]}"
    ln -s nowhere link
    out_cmd "$c" link 1
    run "${CMD[@]}"; want_rc 1
    want_err_is "glyd: link: a symbolic link to a missing file; not written through (name the target)"
    want_files link "${case_inputs[@]}"
    finish

    if [ $ROOT -eq 1 ]; then
        begin "$c$fl -o LINK to a null node: written through, node and link kept"
        fresh "link-node-$c" "${case_inputs[@]}"
        mk_null nul
        ln -s nul link
        out_cmd "$c" link 1
        run "${CMD[@]}"; want_rc 0
        want "nul is no longer the null device" is_node nul 1 3
        want "link is no longer a link" test "$(readlink link)" = nul
        want_files link nul "${case_inputs[@]}"
        finish
    else
        skip "$c$fl -o LINK to a null node: written through, node and link kept" "(mknod needs root)"
    fi
done

begin "unpack -o LINK (to a folder) restores into the folder, the link kept"
fresh link-unpack m.glyd
mkdir real
ln -s real link
run "$GLYD" unpack -q m.glyd -o link; want_rc 0
want "link is no longer a link" test "$(readlink link)" = real
want "the folder does not hold the model" diff -r real "$FIX"
want_files link real m.glyd
finish

# --- standard output on a full device: one line, exit 1 ------------------------

# stdout_full DESC CMD...: CMD's standard output is the full device
stdout_full() {
    local desc=$1; shift
    begin "stdout full: $desc"
    run_to "$FULL" "$@"; want_rc 1
    want_err_last "glyd: stdout: write error: $ENOSPC"
    want "not one error line: $(errtxt)" test "$(grep -c '^glyd:' "$CAP/err")" -eq 1
    finish
}
fresh stdout-full alice.txt alice.txt.glyd m.glyd small samples
stdout_full "-c" "$GLYD" -q -c alice.txt
stdout_full "-dc" "$GLYD" -q -dc alice.txt.glyd
stdout_full "-dc -T2" "$GLYD" -q -T2 -dc alice.txt.glyd
stdout_full "-l" "$GLYD" -l alice.txt.glyd
stdout_full "-lv" "$GLYD" -lv alice.txt.glyd
stdout_full "-b1 -i1 FILE" "$GLYD" -b1 -i1 small
stdout_full "-h" "$GLYD" -h
stdout_full "--help" "$GLYD" --help
stdout_full "-V" "$GLYD" -V
stdout_full "--version" "$GLYD" --version
stdout_full "info" "$GLYD" info m.glyd
stdout_full "info --json" "$GLYD" info --json m.glyd
stdout_full "verify" "$GLYD" verify m.glyd "$FIX"
stdout_full "pack --help" "$GLYD" pack --help
stdout_full "run --help" "$GLYD" run --help
stdout_full "run --tokens -n" "$GLYD" run "$FIX" --tokens "$TOKENS" -n 4
stdout_full "run --tokens -n 5000" "$GLYD" run "$FIX" --tokens 1 -n 5000 --ctx 6000
stdout_full "tokenize" "$GLYD" tokenize "$QWEN" --file alice.txt
stdout_full "tokenize --help" "$GLYD" tokenize --help
if command -v python3 >/dev/null; then
    # a chat model: the fixture and a byte-level tokenizer with ChatML tokens
    mkdir chat
    cp "$FIX/model.safetensors" "$FIX/config.json" chat/
    python3 - chat/tokenizer.json <<'EOF'
import json, sys
keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
chars, extra = {}, 0
for b in range(256):
    if b in keep:
        chars[b] = chr(b)
    else:
        chars[b] = chr(256 + extra)
        extra += 1
json.dump({"version": "1.0",
           "added_tokens": [{"id": 510, "content": "<|im_start|>", "special": True},
                            {"id": 511, "content": "<|im_end|>", "special": True}],
           "normalizer": {"type": "NFC"},
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "model": {"type": "BPE", "vocab": {chars[b]: b for b in range(256)}, "merges": []}},
          open(sys.argv[1], "w"))
EOF
    stdout_full "run -p (the chat's reply)" "$GLYD" run chat -p Hello -n 40 --seed 3 -T1
    begin "stdout full: the chat in a loop ends at the first reply"
    printf 'Hello\nAgain\n' >lines
    LAST_CMD="glyd run chat -n 40 < lines > full"
    ( "$GLYD" run chat -n 40 --seed 3 -T1 <lines; exit $? ) >"$FULL" 2>"$CAP/err"; RC=$?
    want_rc 1
    want_err_last "glyd: stdout: write error: $ENOSPC"
    finish
else
    skip "stdout full: run -p (the chat's reply)" "(no python3 to make a tokenizer)"
    skip "stdout full: the chat in a loop ends at the first reply" "(no python3)"
fi

begin "a closed stdout that nothing is written to is no error"
run "$GLYD" -q -o x.glyd small
want_rc 0
rm -f x.glyd
LAST_CMD="glyd -q -o x.glyd small >&-"
( "$GLYD" -q -o x.glyd small; exit $? ) >&- 2>"$CAP/err"; RC=$?
want_rc 0
want_quiet_err
finish

# --- --rm: the input stays unless a regular file holds the output --------------

if [ $ROOT -eq 1 ]; then NULLOUT=nul; else NULLOUT=/dev/null; fi
note_kept() { echo "glyd: $1: kept despite --rm: $2"; }
notfile="the output is not a regular file"

begin "--rm -o NULL (a null device): input kept, a note, exit 0"
fresh rm-null alice.txt
[ $ROOT -eq 1 ] && mk_null nul
run "$GLYD" --rm alice.txt -o $NULLOUT; want_rc 0
want_err_is "$(note_kept alice.txt "$notfile")"
want "alice.txt removed" same alice.txt "$D/alice.txt"
finish

begin "-d --rm -o NULL: input kept, a note, exit 0"
fresh rm-null-d alice.txt.glyd
[ $ROOT -eq 1 ] && mk_null nul
run "$GLYD" -d --rm alice.txt.glyd -o $NULLOUT; want_rc 0
want_err_is "$(note_kept alice.txt.glyd "$notfile")"
want "alice.txt.glyd removed" same alice.txt.glyd "$D/alice.txt.glyd"
finish

begin "--rm FILE.safetensors -o NULL (packed by the library): input kept, a note"
fresh rm-null-st w.safetensors
[ $ROOT -eq 1 ] && mk_null nul
run "$GLYD" --rm w.safetensors -o $NULLOUT; want_rc 0
want_err_is "$(note_kept w.safetensors "$notfile")"
want "w.safetensors removed" same w.safetensors "$D/w.safetensors"
finish

begin "-q --rm -o NULL: input kept, and -q keeps the note quiet"
fresh rm-null-q alice.txt
[ $ROOT -eq 1 ] && mk_null nul
run "$GLYD" -q --rm alice.txt -o $NULLOUT; want_rc 0
want_quiet_err
want "alice.txt removed" same alice.txt "$D/alice.txt"
finish

begin "--rm -o FIFO: input kept, a note, the FIFO got the output"
fresh rm-fifo alice.txt
mkfifo pipe
timeout 60 cat pipe >"$W/got" &
reader=$!
run timeout 60 "$GLYD" --rm alice.txt -o pipe; want_rc 0
[ "$RC" -ne 0 ] && kill "$reader" 2>/dev/null
wait "$reader"
want_err_is "$(note_kept alice.txt "$notfile")"
want "alice.txt removed" same alice.txt "$D/alice.txt"
want "the FIFO did not get the output" same "$W/got" "$D/alice.txt.glyd"
finish

begin "--rm -c (standard output): input kept, a note"
fresh rm-stdout alice.txt
run "$GLYD" --rm -c alice.txt; want_rc 0
want_err_is "$(note_kept alice.txt "the output is standard output")"
want "alice.txt removed" same alice.txt "$D/alice.txt"
want "stdout is not the output" same "$CAP/out" "$D/alice.txt.glyd"
finish

begin "--rm -f -o LINK (to a file): the file written, the link kept, the input removed"
fresh rm-link alice.txt
echo old >target
ln -s target link
run "$GLYD" --rm -f alice.txt -o link; want_rc 0
want_quiet_err
want "link is no longer a link" test "$(readlink link)" = target
want "target does not hold the output" same target "$D/alice.txt.glyd"
want_files link target
finish

if [ $ROOT -eq 1 ]; then
    begin "--rm -o LINK (to a null node): input kept, a note, node kept"
    fresh rm-link-node alice.txt
    mk_null nul
    ln -s nul link
    run "$GLYD" --rm alice.txt -o link; want_rc 0
    want_err_is "$(note_kept alice.txt "$notfile")"
    want "alice.txt removed" same alice.txt "$D/alice.txt"
    want "nul is no longer the null device" is_node nul 1 3
    finish

    begin "--rm -o FULL: exit 1, input kept, node kept"
    fresh rm-full alice.txt
    mk_full full
    run "$GLYD" --rm alice.txt -o full; want_rc 1
    want_err_is "glyd: full: write error: $ENOSPC"
    want "alice.txt removed" same alice.txt "$D/alice.txt"
    want "full is no longer the full device" is_node full 1 7
    finish
else
    skip "--rm -o LINK (to a null node): input kept, a note, node kept" "(mknod needs root)"
    skip "--rm -o FULL: exit 1, input kept, node kept" "(mknod needs root)"
fi

# --- damaged packed models: unpack leaves nothing ------------------------------

# a byte in the middle of the first tensor blob (from the packed index)
blob=$(tail -c 20000 "$D/m.glyd" | grep -ao '"offset":[0-9]*,"stored":[0-9]*,"codec":"tensor"' | head -n 1)
boff=$(echo "$blob" | sed 's/"offset":\([0-9]*\),.*/\1/')
bsize=$(echo "$blob" | sed 's/.*"stored":\([0-9]*\),.*/\1/')
if [ -n "$boff" ] && [ -n "$bsize" ]; then
    cp "$D/m.glyd" "$D/bad.glyd"
    flip_byte "$D/bad.glyd" $((boff + bsize / 2))
    for t in 1 2; do
        begin "unpack -T$t of a damaged packed model: one line, no folder, no temporary files"
        fresh "unpack-bad-$t" bad.glyd
        run "$GLYD" unpack -q -T$t bad.glyd -o out; want_rc 1
        want_files bad.glyd
        want_err_is "glyd: bad.glyd: model.safetensors: tensor model.embed_tokens.weight is damaged"
        finish
    done

    begin "unpack of a damaged packed model into an existing folder leaves it as it was"
    fresh unpack-bad-into bad.glyd
    mkdir out && echo mine >out/notes.txt
    run "$GLYD" unpack -q bad.glyd -o out; want_rc 1
    want_files bad.glyd out
    want_files_in out notes.txt
    finish

    begin "unpack -f of a damaged packed model over a complete folder changes none of it"
    fresh unpack-bad-over bad.glyd m.glyd
    run "$GLYD" unpack -q m.glyd -o out; want_rc 0
    touch -d '2001-01-01' out/*
    run "$GLYD" unpack -q -f bad.glyd -o out; want_rc 1
    want "a file of the folder changed" diff -r out "$FIX"
    want "a file of the folder was rewritten" test -z "$(find out -type f -newermt 2002-01-01)"
    want_files_in out $(ls -A "$FIX")
    finish
else
    bad "damaged packed models" "no tensor blob found in the packed index"
fi

begin "unpack into an existing folder: a conflict is found before anything is written"
fresh unpack-conflict m.glyd
mkdir out && echo mine >out/model.safetensors
run "$GLYD" unpack -q m.glyd -o out; want_rc 1
want_err_is "glyd: out/model.safetensors: already exists; not overwritten (use -f to overwrite)"
want_files_in out model.safetensors
want "out/model.safetensors changed" test "$(cat out/model.safetensors)" = mine
finish

begin "unpack into an existing folder: a file where a folder should be fails it first"
fresh unpack-notdir small
mkdir -p model/sub && cp small model/sub/f && cp small model/top
run "$GLYD" pack -q model -o q.glyd; want_rc 0
mkdir out && echo mine >out/sub
run "$GLYD" unpack -q q.glyd -o out; want_rc 1
want_files_in out sub
want_err_is "glyd: out/sub/f: Not a directory"
finish

# --- damaged packed models: nothing runs on them, the damage is named ---------

# index_entry PACKED NAME: "OFFSET STORED" of a file or tensor in the index
index_entry() {
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
at, size = struct.unpack("<QQ", data[-32:-16])
for f in json.loads(data[at:at + size])["files"]:
    for e in [f] + f.get("tensors", []):
        if e.get("name", e.get("path")) == sys.argv[2] and "offset" in e:
            print(e["offset"], e["stored"])
PY
}

# flip_in PACKED NAME: inverts the byte in the middle of NAME's blob
flip_in() {
    local place
    place=$(index_entry "$1" "$2")
    [ -n "$place" ] || return 1
    set -- "$1" $place
    flip_byte "$1" $(($2 + $3 / 2))
}

if command -v python3 >/dev/null; then
    "$GLYD" pack -q --fast-layout "$FIX" -o "$D/mf.glyd" || bail "glyd cannot pack the fixture in the fast layout"
    # a matrix, the embedding (tied: the output layer too) and a norm's
    # vector, in each layout, through every way the engine takes weights
    for pk in m mf; do
        for tn in model.layers.2.mlp.down_proj.weight model.embed_tokens.weight model.layers.0.input_layernorm.weight; do
            cp "$D/$pk.glyd" "$D/dmg.glyd"
            flip_in "$D/dmg.glyd" "$tn" || bail "no $tn in the index of $pk.glyd"
            for form in "" --compact --plain --gpu=emulated; do
                begin "run ${form:-(fast layout)} on $pk.glyd with $tn damaged: refused, naming it"
                fresh "dmg-run" dmg.glyd
                run "$GLYD" run dmg.glyd $form --tokens "$TOKENS" --dump-logits l.f32; want_rc 1
                want_err_is "glyd: dmg.glyd: tensor $tn is damaged: its bytes do not match the packed model's checksum"
                want_files dmg.glyd
                finish
            done
            begin "verify of $pk.glyd with $tn damaged names it, alone and against the folder"
            fresh "dmg-verify" dmg.glyd
            run "$GLYD" verify dmg.glyd; want_rc 1
            want "verify did not name $tn" grep -qxF "DAMAGED  model.safetensors: tensor $tn" "$CAP/out"
            run "$GLYD" verify dmg.glyd "$FIX"; want_rc 1
            want "verify against the folder did not name $tn" grep -qxF "DAMAGED  model.safetensors: tensor $tn" "$CAP/out"
            finish
        done
    done

    begin "run --no-verify takes a damaged pack at its word (the check is what stops it)"
    cp "$D/mf.glyd" "$D/dmg.glyd"
    flip_in "$D/dmg.glyd" model.layers.2.mlp.down_proj.weight
    fresh "dmg-noverify" dmg.glyd
    run "$GLYD" run dmg.glyd --no-verify --tokens "$TOKENS" --dump-logits l.f32; want_rc 0
    want "no logits written" test -s l.f32
    want "damaged weights gave the reference logits" differs l.f32 "$D/ref.f32"
    finish

    begin "verify of an undamaged pack, alone: every file and tensor matches"
    fresh "ok-verify" m.glyd mf.glyd
    run "$GLYD" verify m.glyd; want_rc 0
    want "no success line" grep -qxF "m.glyd: all 5 files and 47 tensors match their checksums" "$CAP/out"
    run "$GLYD" verify mf.glyd; want_rc 0
    finish

    begin "run on a pack whose config.json is damaged says so"
    cp "$D/m.glyd" "$D/dmg.glyd"
    flip_in "$D/dmg.glyd" config.json
    fresh "dmg-config" dmg.glyd
    run "$GLYD" run dmg.glyd --tokens "$TOKENS"; want_rc 1
    want_err_is "glyd: dmg.glyd: config.json is damaged: Restored data doesn't match checksum"
    finish

    begin "-d of a damaged one-file pack: the tensor named, no output"
    fresh "dmg-single" w.safetensors
    run "$GLYD" -q w.safetensors; want_rc 0
    flip_in w.safetensors.glyd model.layers.0.mlp.gate_proj.weight
    rm w.safetensors
    run "$GLYD" -d w.safetensors.glyd; want_rc 1
    want_err_is "glyd: w.safetensors.glyd: w.safetensors: tensor model.layers.0.mlp.gate_proj.weight is damaged"
    want_files w.safetensors.glyd
    finish

    begin "tokenize on a pack whose tokenizer.json is damaged says so"
    fresh "dmg-tokenizer" small
    run "$GLYD" pack -q "$REPO/../shared/fixtures/qwen3-tokenizer" -o tk.glyd; want_rc 0
    flip_in tk.glyd tokenizer.json
    run "$GLYD" tokenize tk.glyd --file small; want_rc 1
    want_err "glyd: tk.glyd: tokenizer.json is damaged: "
    want_err_lines_is 1
    finish

    # truncated anywhere, or with a byte of its index changed: every command
    # refuses it before anything else
    for cut in 100 200000 $(($(size_of "$D/m.glyd") - 40)) $(($(size_of "$D/m.glyd") - 1)); do
        begin "a pack cut to $cut bytes: run, verify, unpack, info and tokenize refuse it"
        fresh "cut-$cut" m.glyd
        head -c "$cut" m.glyd >cut.glyd
        for c in "run cut.glyd --tokens 1" "verify cut.glyd" "unpack cut.glyd -o out" "info cut.glyd" \
                 "tokenize cut.glyd --file m.glyd"; do
            run "$GLYD" $c; want_rc 1
            want_err "cut.glyd: truncated or damaged packed model"
        done
        want_files m.glyd cut.glyd
        finish
    done
    begin "a pack whose index has a byte changed: every command refuses it"
    fresh "dmg-index" m.glyd
    cp m.glyd di.glyd
    flip_byte di.glyd $(($(size_of di.glyd) - 32 - 300))
    for c in "run di.glyd --tokens 1" "verify di.glyd" "unpack di.glyd -o out" "info di.glyd"; do
        run "$GLYD" $c; want_rc 1
        want_err "di.glyd: the index is damaged (checksum)"
    done
    want_files m.glyd di.glyd
    finish
else
    skip "damaged packed models through every command" "no python3"
fi

# --- runs killed half-way -------------------------------------------------------

# freeze_when GLOB PID: freezes PID (SIGSTOP) as soon as GLOB matches in the
# current folder while PID runs; 0 if it was frozen with the match present
freeze_when() {
    local glob=$1 pid=$2 i
    for ((i = 0; i < 200000; i++)); do
        if compgen -G "$glob" >/dev/null; then
            kill -STOP "$pid" 2>/dev/null || return 1
            compgen -G "$glob" >/dev/null && return 0
            kill -CONT "$pid"
            return 1
        fi
        kill -0 "$pid" 2>/dev/null || return 1
    done
    return 1
}

# a model folder whose packing and unpacking take long enough to catch
mkdir "$D/slow"
truncate -s 384M "$D/slow/a.bin"
cp "$CORPUS"/tables/* "$D/slow/"
"$GLYD" pack -q "$D/slow" -o "$D/slow.glyd" || bail "cannot pack the slow model"

# killed SIG DESC CMD...: CMD (which writes out.glyd or out/) gets SIG half-way
killed() {
    local sig=$1 desc=$2 glob=$3 try pid caught=0; shift 3
    begin "$desc"
    for try in 1 2 3 4 5; do
        rm -rf out out.glyd .*.glydtmp
        "$@" >/dev/null 2>"$CAP/err" &
        pid=$!
        if freeze_when "$glob" $pid; then
            kill -"$sig" $pid
            kill -CONT $pid
            caught=1
        fi
        { wait $pid; } 2>/dev/null; RC=$?
        [ $caught = 1 ] && break
    done
    LAST_CMD="$(fmt_cmd "$@"); kill -$sig"
    want "never caught the command half-way in 5 tries" test $caught = 1
    want_rc $((128 + $(kill -l "$sig")))
    want_files
    finish
}
fresh kill-pack
killed TERM "SIGTERM during pack removes its temporary file" '.out.glyd.*.glydtmp' \
    "$GLYD" pack -q "$D/slow" -o out.glyd
killed HUP "SIGHUP during pack removes its temporary file" '.out.glyd.*.glydtmp' \
    "$GLYD" pack -q "$D/slow" -o out.glyd
killed TERM "SIGTERM during unpack removes the folder being made" '.out.*.glydtmp/*' \
    "$GLYD" unpack -q "$D/slow.glyd" -o out
killed HUP "SIGHUP during unpack removes the folder being made" '.out.*.glydtmp/*' \
    "$GLYD" unpack -q "$D/slow.glyd" -o out

begin "a signal ignored from the start (nohup) stays ignored: the output completes"
fresh nohup small
mkfifo in
( trap '' HUP; exec "$GLYD" -q -o small.glyd <in ) 2>"$CAP/err" &
pid=$!
exec 3>in
for _ in $(seq 100); do temp_files >/dev/null && break; sleep 0.05; done
kill -HUP $pid
cat small >&3
exec 3>&-
wait $pid; RC=$?
LAST_CMD="trap '' HUP; glyd -q -o small.glyd < fifo; kill -HUP"
want_rc 0
want "small.glyd does not decode to small" cmp -s <("$GLYD" -dc small.glyd) small
finish

begin "SIGKILL leaves a temporary file that a later glyd removes once stale"
fresh stale small
mkfifo in
"$GLYD" -q -o k.glyd <in 2>/dev/null &
pid=$!
CHILDREN+=($pid)
exec 3>in
for _ in $(seq 100); do temp_files >/dev/null && break; sleep 0.05; done
kill -KILL $pid
{ wait $pid; } 2>/dev/null
exec 3>&-
left=$(temp_files)
LAST_CMD="glyd -q -o k.glyd < fifo; kill -KILL"
want "SIGKILL left no temporary file to clean (expected .k.glyd.$pid.glydtmp)" test "$left" = ".k.glyd.$pid.glydtmp"
# decoys: a live writer's, a recent one, names not of glyd's making
sleep 300 &
live=$!
CHILDREN+=($live)
: >".live.$live.glydtmp"
: >".fresh.999999998.glydtmp"
: >".nopid.glydtmp"
: >"noDot.999999997.glydtmp"
: >".x.999999996.glydtmp.bak"
mkdir ".dir.999999995.glydtmp" && echo x >".dir.999999995.glydtmp/f"
mkdir -p ".deep.999999994.glydtmp/a/b" && echo x >".deep.999999994.glydtmp/a/b/f"
old=(".k.glyd.$pid.glydtmp" ".live.$live.glydtmp" ".nopid.glydtmp" "noDot.999999997.glydtmp"
     ".x.999999996.glydtmp.bak" ".dir.999999995.glydtmp" ".deep.999999994.glydtmp")
touch -d '-20 minutes' "${old[@]}"
run "$GLYD" -q -k small; want_rc 0
want_files small small.glyd in ".live.$live.glydtmp" ".fresh.999999998.glydtmp" ".nopid.glydtmp" \
    "noDot.999999997.glydtmp" ".x.999999996.glydtmp.bak"
kill $live 2>/dev/null
finish

if [ $ROOT -eq 1 ]; then
    begin "a stale temporary file of another user is kept"
    fresh stale-user small
    : >".other.999999993.glydtmp"
    chown 65534 ".other.999999993.glydtmp"
    touch -d '-20 minutes' ".other.999999993.glydtmp"
    run "$GLYD" -q small; want_rc 0
    want_files small small.glyd ".other.999999993.glydtmp"
    finish
else
    skip "a stale temporary file of another user is kept" "(chown needs root)"
fi

begin "SIGKILL during unpack leaves a folder that a later glyd removes once stale"
fresh stale-unpack small
caught=0
for try in 1 2 3 4 5; do
    rm -rf out .*.glydtmp
    "$GLYD" unpack -q "$D/slow.glyd" -o out 2>/dev/null &
    pid=$!
    if freeze_when '.out.*.glydtmp/*' $pid; then caught=1; kill -KILL $pid; fi
    { wait $pid; } 2>/dev/null
    [ $caught = 1 ] && break
done
LAST_CMD="glyd unpack -q slow.glyd -o out; kill -KILL"
want "never caught unpack half-way in 5 tries" test $caught = 1
want "SIGKILL left no folder to clean" test -d ".out.$pid.glydtmp"
touch -d '-20 minutes' ".out.$pid.glydtmp"
run "$GLYD" -q small; want_rc 0
want_files small small.glyd
finish

# --- messages -------------------------------------------------------------------

fresh msgs alice.txt m.glyd
mkdir dir
expect_line() { # expect_line DESC LINE CMD...: exit 1 and exactly this line
    local desc=$1 line=$2; shift 2
    begin "$desc"
    run "$@"; want_rc 1
    want_err_is "$line"
    want_files alice.txt m.glyd dir
    finish
}
expect_line "-o '' is refused at parsing" "glyd: -o: the output name is empty" "$GLYD" -o "" alice.txt
expect_line "-d -o '' is refused at parsing" "glyd: -o: the output name is empty" "$GLYD" -d -o "" m.glyd
expect_line "--output= is refused" "glyd: --output=: the output name is empty" "$GLYD" --output= alice.txt
expect_line "pack -o '' is refused" "glyd: -o: the output name is empty" "$GLYD" pack "$FIX" -o ""
expect_line "unpack -o '' is refused" "glyd: -o: the output name is empty" "$GLYD" unpack m.glyd -o ""
expect_line "run --dump-logits '' is refused" "glyd: --dump-logits: the output name is empty" \
    "$GLYD" run "$FIX" --tokens 1 --dump-logits ""
expect_line "-d DIR says it is a directory" \
    "glyd: dir: is a directory (glyd works on files; use tar for directories)" "$GLYD" -d dir
expect_line "-o DIR says it is a directory" "glyd: dir: is a directory" "$GLYD" -f -o dir alice.txt
expect_line "pack -o DIR says it is a directory" "glyd: dir: is a directory" "$GLYD" pack -f "$FIX" -o dir

# a frame after a good one, damaged three ways; -lv gives where it starts
fresh frames alice.txt.glyd small.glyd
cat small.glyd alice.txt.glyd >two.glyd
at=$(size_of small.glyd)
hdr=$( ("$GLYD" -lv alice.txt.glyd | sed -n 's/.*header \([0-9]*\) bytes.*/\1/p'))
for t in 1 2; do
    begin "-T$t: a damaged frame is named with its number and start (data corruption)"
    cp two.glyd c.glyd
    set_byte c.glyd $((at + hdr + 3)) 255 # the first block's size beyond the frame's blocks
    run "$GLYD" -T$t -t c.glyd; want_rc 1
    want_err_is "glyd: c.glyd: frame 2 (at byte $at): data corruption detected"
    finish

    begin "-T$t: a damaged checksum is named with the frame's number and start"
    cp two.glyd k.glyd
    flip_byte k.glyd $(($(size_of two.glyd) - 2))
    run "$GLYD" -T$t -t k.glyd; want_rc 1
    want_err_is "glyd: k.glyd: frame 2 (at byte $at): corrupted data: checksum mismatch"
    finish

    begin "-T$t: a truncated frame is named with its number and start"
    head -c $(($(size_of two.glyd) - 100)) two.glyd >cut.glyd
    run "$GLYD" -T$t -t cut.glyd; want_rc 1
    want_err_is "glyd: cut.glyd: frame 2 (at byte $at): truncated input: the frame is incomplete"
    finish
done

begin "trailing bytes that are not a frame are named as the frame after the last"
printf 'garbage!' >g.glyd.tail
cat two.glyd g.glyd.tail >g.glyd
run "$GLYD" -t g.glyd; want_rc 1
want_err_is "glyd: g.glyd: frame 3 (at byte $(size_of two.glyd)): not a glyd frame"
finish

# --- damaged frames: refused with one line, or decoded exactly ------------------

# variants of real files, compressed at several levels: bytes flipped across
# the header and the body, and cuts; each must decode to the original or
# fail with exit 1 and one line naming the file; never crash
fresh damage
cp "$CORPUS/text/alice29.txt" a
head -c 400000 "$CORPUS/bin/libllvm14.part" >b
head -c 300000 "$CORPUS/tables/diamonds.csv" >c
"$GLYD" -q -1 -o a1.glyd a && "$GLYD" -q -19 -o a19.glyd a && "$GLYD" -q --fast=4 -o b4.glyd b &&
    "$GLYD" -q -9 --long -o c9.glyd c && "$GLYD" -q --no-check -3 -o bn.glyd b || bail "cannot compress"
cat a1.glyd bn.glyd >ab.glyd; cat a b >ab
variants=0; crashes=""; unclear=""; wrong=""
budget=$((SECONDS + 20))
check_variant() { # check_variant FILE ORIGINAL THREADS [unchecked]
    local rc
    "$GLYD" -T"$3" -dc "$1" >v.out 2>v.err; rc=$?
    variants=$((variants + 1))
    if [ $rc -ge 2 ]; then crashes+=" $1(exit $rc)"; cp "$1" "$W/crash-$variants.glyd"
    elif [ $rc -eq 0 ] && [ -z "${4:-}" ] && ! cmp -s v.out "$2"; then wrong+=" $1"
    elif [ $rc -eq 1 ] && { [ "$(wc -l <v.err)" -ne 1 ] || ! grep -q "^glyd: $1: " v.err; }; then
        unclear+=" $1:$(head -c 100 v.err | tr '\n' '|')"
    fi
}
begin "a few hundred damaged frames: exact output or one clear line, never a crash"
# (without a checksum, a flipped literal decodes to other bytes: only a
# crash or an unclear error is wrong there)
for base in a1:a: a19:a: b4:b: c9:c: bn:b:unchecked ab:ab:unchecked; do
    IFS=: read -r g orig unchecked <<<"$base"
    g=$g.glyd
    v=v-$g
    n=$(size_of "$g")
    for off in $(seq 0 21) $(seq 22 $(( (n - 22) / 23 + 1 )) $((n - 1))); do
        [ $SECONDS -ge $budget ] && break 2
        cp "$g" "$v"; flip_byte "$v" "$off"
        check_variant "$v" "$orig" $(( (off & 1) + 1 )) $unchecked
    done
    for cut in 1 4 9 13 $((n / 3)) $((n / 2)) $((n - 9)) $((n - 1)); do
        [ $SECONDS -ge $budget ] && break 2
        head -c "$cut" "$g" >"$v"
        check_variant "$v" "$orig" $(( (cut & 1) + 1 )) $unchecked
    done
done
LAST_CMD="glyd -dc on $variants damaged variants"
[ -z "$crashes" ] || WHY="crashed on:$crashes (copies in the test folder)"
[ -z "$WHY" ] && [ -n "$wrong" ] && WHY="decoded to wrong bytes with exit 0:$wrong"
[ -z "$WHY" ] && [ -n "$unclear" ] && WHY="unclear errors:$unclear"
# (sanitizers slow each run down: fewer variants fit then)
least=200
[ $ASAN -eq 1 ] || [ -n "${GLYD_TEST_QUICK:-}" ] && least=50
[ -z "$WHY" ] && [ "$variants" -lt $least ] && WHY="only $variants variants in the time allowed"
T="$T ($variants variants)"
finish

# -T2 on damaged frames of several independent segments (decoded in parallel)
begin "-T2 on damaged segmented frames: exact output or one clear line"
cat "$CORPUS/tables/diamonds.csv" "$CORPUS/bin/libllvm14.part" "$CORPUS/tables/gsm8k_train.jsonl" \
    "$CORPUS/delta/snappy_old.tar" "$CORPUS/delta/snappy_new.tar" | head -c 20000000 >big
"$GLYD" -q -T2 -3 -o big.glyd big
segs=$("$GLYD" -l big.glyd | awk 'NR == 2 { print $(NF - 1) }')
n=$(size_of big.glyd)
variants=0; crashes=""; unclear=""; wrong=""
for k in $(seq 1 24); do
    cp big.glyd v.glyd; flip_byte v.glyd $((k * (n / 25)))
    check_variant v.glyd big 2
done
head -c $((n * 2 / 3)) big.glyd >v.glyd; check_variant v.glyd big 2
LAST_CMD="glyd -T2 -dc on $variants damaged variants of a 20 MB frame"
want "the frame has $segs segment(s), expected 3 or more" test "${segs:-0}" -ge 3
[ -z "$WHY" ] && [ -n "$crashes" ] && WHY="crashed on:$crashes"
[ -z "$WHY" ] && [ -n "$wrong" ] && WHY="decoded to wrong bytes:$wrong"
[ -z "$WHY" ] && [ -n "$unclear" ] && WHY="unclear errors:$unclear"
finish

# --- decompression bombs: no huge allocation ------------------------------------

if [ $ASAN -eq 1 ]; then
    skip "decompression bombs under ulimit -v" "(AddressSanitizer reserves the address space)"
else
    fresh bombs
    truncate -s 1G zeros
    "$GLYD" -q -o zeros.glyd zeros
    rm zeros
    head -c 3000 zeros.glyd >cut.glyd
    # a frame of 3 bytes that declares 3 GiB: the header's check byte found by trial
    printf 'abc' >small
    "$GLYD" -q small
    forged=""
    for v in $(seq 0 255); do
        cp small.glyd f.glyd
        set_byte f.glyd 11 192 # content size 3 + 0xC0 << 24 = 3 GiB
        set_byte f.glyd 16 "$v"
        "$GLYD" -t f.glyd 2>f.err
        grep -q "data corruption" f.err || { forged=f.glyd; break; }
    done
    limit=400000 # KiB: far below what the declared contents would take
    for t in 1 2; do
        begin "-T$t: a 40 KB frame that produces 1 GiB decodes within ulimit -v $limit"
        LAST_CMD="ulimit -v $limit; glyd -T$t -t zeros.glyd"
        (ulimit -v $limit; exec "$GLYD" -T$t -t zeros.glyd) >/dev/null 2>"$CAP/err"; RC=$?
        want_rc 0
        finish

        begin "-T$t: a cut 1 GiB frame fails with one line within ulimit -v $limit"
        LAST_CMD="ulimit -v $limit; glyd -T$t -t cut.glyd"
        (ulimit -v $limit; exec "$GLYD" -T$t -t cut.glyd) >/dev/null 2>"$CAP/err"; RC=$?
        want_rc 1
        want_err_is "glyd: cut.glyd: frame 1 (at byte 0): truncated input: the frame is incomplete"
        finish

        begin "-T$t: a 3-byte frame declaring 3 GiB fails with one line within ulimit -v $limit"
        LAST_CMD="ulimit -v $limit; glyd -T$t -t f.glyd"
        if [ -z "$forged" ]; then
            WHY="could not forge the header's check byte"
        else
            (ulimit -v $limit; exec "$GLYD" -T$t -t f.glyd) >/dev/null 2>"$CAP/err"; RC=$?
            want_rc 1
            want_err "glyd: f.glyd: frame 1 (at byte 0): "
        fi
        finish
    done
fi

cd "$W" || exit 1
echo "# run time: $(($(date +%s) - start)) s"
summary_and_exit
