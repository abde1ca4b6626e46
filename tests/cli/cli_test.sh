#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/cli/cli_test.sh: end-to-end tests of the glyd command line.
#
#   bash tests/cli/cli_test.sh [path/to/glyd]     (default: build/glyd of this repository)
#
# Every test prints "ok - DESCRIPTION" or "FAIL - DESCRIPTION (details)"; the
# last line is "N passed, N failed" and the exit status is 0 only when no test
# failed. Test data: real files of the shared corpus ($REPO/../shared/corpus)
# and small generated files, all copied into a fresh temporary directory that
# is removed at exit. The expected behaviour is zstd's where glyd follows it.

set -u
umask 022
exec </dev/null # no test reads the caller's terminal by accident

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$REPO/tests/cli/testlib.sh"
bail() { # a test run that cannot start at all
    echo "FAIL - setup ($1)"
    FAIL=$((FAIL + 1))
    summary_and_exit
}

# --- the command under test and the data ------------------------------------

GLYD_ARG=${1:-$REPO/build/glyd}
if [[ $GLYD_ARG != */* ]] && [ ! -e "$GLYD_ARG" ]; then
    GLYD_ARG=$(command -v "$GLYD_ARG") || bail "glyd command '${1}' not found"
fi
if [ ! -f "$GLYD_ARG" ] || [ ! -x "$GLYD_ARG" ]; then
    bail "glyd binary '$GLYD_ARG' missing or not executable (run make first)"
fi
GLYD=$(cd "$(dirname "$GLYD_ARG")" && pwd)/$(basename "$GLYD_ARG")

CORPUS=$REPO/../shared/corpus
for f in text/alice29.txt text/html text/fireworks.jpeg logs/HPC_2k.log tables/diamonds.csv \
         bin/libllvm14.part; do
    [ -r "$CORPUS/$f" ] || bail "test corpus not found: $CORPUS/$f is missing (expected the shared corpus beside the repository)"
done
CORPUS=$(cd "$CORPUS" && pwd)

W=$(mktemp -d "${TMPDIR:-/tmp}/glyd-cli-test.XXXXXX") || bail "mktemp -d failed"
trap 'cd / && rm -rf "$W"' EXIT
trap 'exit 130' INT TERM
CAP=$W/cap   # stdout and stderr of the last command
D=$W/data    # inputs, never modified by tests
mkdir -p "$CAP" "$D" "$W/t"

start=$(date +%s)

# --- helpers ----------------------------------------------------------------

# with_stdin FILE CMD...: runs CMD with standard input from FILE.
with_stdin() { local f=$1; shift; "$@" <"$f"; }
# from_pipe FILE CMD...: runs CMD with standard input from a pipe fed with FILE.
from_pipe() { local f=$1; shift; cat "$f" | "$@"; }

want_err() { # stderr contains a string (case-insensitive)
    [ -n "$WHY" ] && return
    grep -qiF -- "$1" "$CAP/err" || WHY="stderr lacks '$1'; cmd: $LAST_CMD; exit $RC; stderr: $(errtxt)"
}
want_out() { # stdout contains a string
    [ -n "$WHY" ] && return
    grep -qF -- "$1" "$CAP/out" || WHY="stdout lacks '$1'; cmd: $LAST_CMD; stdout: $(head -c 300 "$CAP/out" | tr '\n' '|')"
}
want_out_re() {
    [ -n "$WHY" ] && return
    grep -qE -- "$1" "$CAP/out" || WHY="stdout does not match /$1/; cmd: $LAST_CMD; stdout: $(head -c 300 "$CAP/out" | tr '\n' '|')"
}
want_err_lines() {
    [ -n "$WHY" ] && return
    local n; n=$(wc -l <"$CAP/err")
    [ "$n" -eq "$1" ] || WHY="stderr has $n lines, expected $1; cmd: $LAST_CMD; stderr: $(errtxt)"
}
want_quiet() { # nothing on stdout nor stderr
    [ -n "$WHY" ] && return
    [ ! -s "$CAP/out" ] && [ ! -s "$CAP/err" ] ||
        WHY="expected no output; cmd: $LAST_CMD; stdout $(wc -c <"$CAP/out") bytes; stderr: $(errtxt)"
}

# expect_ok DESC CMD...: exit status 0.
expect_ok() { begin "$1"; shift; run "$@"; want_rc 0; finish; }
# expect_fail DESC CODE SUBSTRING CMD...: exit status CODE and SUBSTRING on stderr.
expect_fail() {
    begin "$1"; local code=$2 sub=$3; shift 3
    run "$@"; want_rc "$code"
    [ -n "$sub" ] && want_err "$sub"
    finish
}

# fresh NAME [DATAFILE...]: an empty directory for one test, entered; the
# named data files copied in (writable, mode 644).
fresh() {
    local d=$W/t/$1 f; shift
    rm -rf "$d"; mkdir -p "$d"; cd "$d" || exit 1
    for f in "$@"; do cp "$D/$f" "$f"; chmod 644 "$f"; done
}

mode_of() { stat -c %a "$1"; }
# skippable FILE PAYLOAD: appends a skippable frame (magic 0x184D2A50, LE size)
skippable() {
    local n=${#2}
    printf '\x50\x2a\x4d\x18' >>"$1"
    printf "\\$(printf %03o $((n & 255)))\\$(printf %03o $(((n >> 8) & 255)))\\x00\\x00" >>"$1"
    printf '%s' "$2" >>"$1"
}

# --- test data --------------------------------------------------------------

cp "$CORPUS/text/alice29.txt" "$D/alice.txt"
cp "$CORPUS/text/html" "$D/html"
cp "$CORPUS/text/fireworks.jpeg" "$D/fireworks.jpeg"
cp "$CORPUS/logs/HPC_2k.log" "$D/hpc.log"
cat "$CORPUS"/logs/*.log >"$D/logs.log"
cp "$CORPUS/tables/diamonds.csv" "$D/diamonds.csv"
cp "$CORPUS/bin/libllvm14.part" "$D/llvm.bin"
: >"$D/empty"
printf 'x' >"$D/one"
head -c 1048576 /dev/urandom >"$D/random"
head -c 4194304 /dev/zero >"$D/zeros"
head -c 1048576 /dev/zero >"$D/zeros1m"
head -c 3145729 /dev/zero >"$D/zeros3m1"
head -c 1000 "$CORPUS/text/html" >"$D/small1"
head -c 3000 "$CORPUS/text/alice29.txt" >"$D/small2"
# 20 MiB (and a little more) of real data: more than one segment of a frame
BIG_SIZE=$((20971520 + 4321))
cat "$CORPUS"/tables/* "$CORPUS"/bin/* "$CORPUS"/delta/* "$CORPUS"/text/* "$CORPUS"/logs/* 2>/dev/null |
    head -c $BIG_SIZE >"$D/big"
chmod 644 "$D"/*
[ "$(size_of "$D/big")" -eq $BIG_SIZE ] || bail "could not build a 20 MiB input from the corpus"

# glyd files used by several tests
(cd "$D" && "$GLYD" -q alice.txt logs.log small1 small2 empty) || bail "glyd cannot compress the test data"
cp "$D/logs.log.glyd" "$D/corrupt.glyd"
flip_byte "$D/corrupt.glyd" $(($(size_of "$D/logs.log.glyd") / 2))
head -c $(($(size_of "$D/logs.log.glyd") / 2)) "$D/logs.log.glyd" >"$D/trunc.glyd"
# a compressed file whose name lacks the suffix
cp "$D/small1.glyd" "$D/frame.bin"
chmod 644 "$D"/*

# --- round trips ------------------------------------------------------------

# roundtrip DESC DATAFILE [OPTIONS...]: FILE -> FILE.glyd -> FILE, identical
roundtrip() {
    local desc=$1 src=$2; shift 2
    begin "round trip: $desc"
    fresh "rt-$src-$*" "$src"
    run "$GLYD" -q "$@" "$src"; want_rc 0
    want "$src.glyd not created" test -f "$src.glyd"
    want "input not kept" same "$src" "$D/$src"
    [ -z "$WHY" ] && rm -f "$src"
    run "$GLYD" -q -d "$src.glyd"; want_rc 0
    want "decompressed $src differs from the original" same "$src" "$D/$src"
    want "$src.glyd not kept" test -f "$src.glyd"
    finish
}

roundtrip "text, default level" alice.txt
roundtrip "text, -1" alice.txt -1
roundtrip "text, -3" alice.txt -3
roundtrip "text, -19 (small file)" alice.txt -19
roundtrip "text, --max (small file)" html --max
roundtrip "text, --fast" alice.txt --fast
roundtrip "text, --fast=5" alice.txt --fast=5
roundtrip "html, -19" html -19
roundtrip "jpeg, -3" fireworks.jpeg -3
roundtrip "log, -3" hpc.log -3
roundtrip "logs (2.3 MB), -1" logs.log -1
roundtrip "logs (2.3 MB), --fast=5" logs.log --fast=5
roundtrip "table (csv), -3" diamonds.csv -3
roundtrip "table (csv), -1" diamonds.csv -1
roundtrip "binary, -1" llvm.bin -1
roundtrip "binary, -3" llvm.bin -3
roundtrip "empty file" empty
roundtrip "log, -r" hpc.log -r
roundtrip "logs (2.3 MB), -r -19" logs.log -r -19
roundtrip "table (csv), -r" diamonds.csv -r
roundtrip "binary, -r (stays plain)" llvm.bin -r
roundtrip "empty file, -r" empty -r
roundtrip "log, --records -T2" hpc.log --records -T2
roundtrip "1-byte file" one
roundtrip "1-byte file, -19" one -19
roundtrip "random (incompressible) 1 MiB" random
roundtrip "logs (2.3 MB), --long" logs.log --long
roundtrip "binary, -1 --long=24" llvm.bin -1 --long=24

begin "--train makes a dictionary from records; -D uses it both ways"
fresh dict-train
mkdir samples
head -n 1200 "$CORPUS/logs/HPC_2k.log" | split -l 1 -a 4 - samples/r
run "$GLYD" -q --train samples/* -o logs.dict --maxdict=20000; want_rc 0
size=$(stat -c %s logs.dict 2>/dev/null || echo 0)
want "dictionary size $size not in 1000..20000" test "$size" -gt 1000 -a "$size" -le 20000
sed -n 1500p "$CORPUS/logs/HPC_2k.log" > rec
run "$GLYD" -q -c rec; want_rc 0; plain=$(wc -c < "$CAP/out")
run "$GLYD" -q -D logs.dict rec; want_rc 0
with=$(stat -c %s rec.glyd 2>/dev/null || echo 0)
want "a record with the dictionary ($with bytes) is not smaller than without ($plain)" test "$with" -lt "$plain"
run "$GLYD" -q -d -c -D logs.dict rec.glyd; want_rc 0
want "-D round trip differs" same "$CAP/out" rec
run "$GLYD" -q -d -c rec.glyd; want_rc 1
want_err "-D"
run "$GLYD" -q --train samples/raaaa -o one.dict; want_rc 1
want_err "more samples"
run "$GLYD" -q --train samples/raaab samples/raaac -o logs.dict; want_rc 1
want_err "exists"
run "$GLYD" -q -D no-such.dict -c rec; want_rc 1
want_err "no-such.dict"
finish

begin "--long finds a repeat 5 MiB back that -3 cannot, and decodes it"
fresh long-repeat random llvm.bin
cat random llvm.bin random > far
run "$GLYD" -q -3 -c far; want_rc 0; plain=$(wc -c < "$CAP/out")
run "$GLYD" -q -3 --long far; want_rc 0
long=$(stat -c %s far.glyd 2>/dev/null || echo 0)
want "--long output ($long bytes) not 1 MB smaller than -3's ($plain)" test "$((long + 1000000))" -lt "$plain"
run "$GLYD" -q -d -c far.glyd; want_rc 0
want "--long did not round-trip" same "$CAP/out" far
finish
roundtrip "4 MiB of zeros" zeros
roundtrip "1 MiB of zeros" zeros1m
roundtrip "3 MiB + 1 byte of zeros" zeros3m1

begin "random data expands by less than 1% + 64 bytes"
fresh exp random
run "$GLYD" -q random; want_rc 0
want "random.glyd is $(size_of random.glyd 2>/dev/null) bytes for $(size_of random) bytes" \
    test "$(size_of random.glyd)" -le $(($(size_of random) + $(size_of random) / 100 + 64))
finish

begin "4 MiB of zeros compress to less than 1%"
fresh zr zeros
run "$GLYD" -q zeros; want_rc 0
want "zeros.glyd is $(size_of zeros.glyd 2>/dev/null) bytes" test "$(size_of zeros.glyd)" -lt 41943
finish

begin "-19 output is not larger than -1 output (text)"
fresh lv alice.txt
run "$GLYD" -q -1 -o a1.glyd alice.txt; want_rc 0
run "$GLYD" -q -19 -o a19.glyd alice.txt; want_rc 0
want "-19 gives $(size_of a19.glyd 2>/dev/null) bytes, -1 gives $(size_of a1.glyd 2>/dev/null)" \
    test "$(size_of a19.glyd)" -le "$(size_of a1.glyd)"
finish

# --- standard streams, -c, -o -------------------------------------------------

begin "no file: compress stdin to stdout, and decompress stdin to stdout"
fresh stdio
run with_stdin "$D/alice.txt" "$GLYD"; want_rc 0
cp "$CAP/out" s.glyd
run with_stdin s.glyd "$GLYD" -d; want_rc 0
want "stdin round trip differs" same "$CAP/out" "$D/alice.txt"
want_files s.glyd
finish

begin "'-' as a file name reads stdin and writes stdout"
fresh dash
run with_stdin "$D/hpc.log" "$GLYD" -; want_rc 0
cp "$CAP/out" s.glyd
run with_stdin s.glyd "$GLYD" -d -; want_rc 0
want "round trip through '-' differs" same "$CAP/out" "$D/hpc.log"
want_files s.glyd
finish

begin "-c writes to stdout and creates no file"
fresh c alice.txt
run "$GLYD" -c alice.txt; want_rc 0
want_files alice.txt
cp "$CAP/out" x.glyd
run "$GLYD" -dc x.glyd; want_rc 0
want "-c output does not decode to the input" same "$CAP/out" alice.txt
finish

begin "--stdout is -c"
fresh stdout2 small1
run "$GLYD" --stdout small1; want_rc 0
want "--stdout output differs from the .glyd file" same "$CAP/out" "$D/small1.glyd"
want_files small1
finish

begin "-o FILE names the compressed output"
fresh o alice.txt
run "$GLYD" -q -o out.x alice.txt; want_rc 0
want_files alice.txt out.x
run "$GLYD" -dc out.x; want_rc 0
want "-o output does not decode to the input" same "$CAP/out" alice.txt
finish

begin "--output=FILE names the compressed output"
fresh o2 alice.txt
run "$GLYD" -q --output=out.x alice.txt; want_rc 0
want_files alice.txt out.x
run "$GLYD" -dc out.x; want_rc 0
want "--output output does not decode to the input" same "$CAP/out" alice.txt
finish

begin "-oFILE (attached) names the output"
fresh o3 small1
run "$GLYD" -q -oout.x small1; want_rc 0
want_files small1 out.x
finish

begin "-o FILE with stdin input"
fresh o4
run with_stdin "$D/hpc.log" "$GLYD" -q -o in.glyd; want_rc 0
run "$GLYD" -q -d -o back in.glyd; want_rc 0
want "round trip differs" same back "$D/hpc.log"
finish

begin "-o - writes to stdout"
fresh o5 small1
run "$GLYD" -o - small1; want_rc 0
want "-o - output differs" same "$CAP/out" "$D/small1.glyd"
want_files small1
finish

expect_fail "-o with two inputs fails" 1 "one" "$GLYD" -q -o x.glyd "$D/small1" "$D/small2"

begin "several files: each gets its own .glyd, and -d restores each"
fresh multi small1 small2 hpc.log
run "$GLYD" -q small1 small2 hpc.log; want_rc 0
want_files small1 small2 hpc.log small1.glyd small2.glyd hpc.log.glyd
[ -z "$WHY" ] && rm small1 small2 hpc.log
run "$GLYD" -q -d small1.glyd small2.glyd hpc.log.glyd; want_rc 0
want "small1 differs" same small1 "$D/small1"
want "small2 differs" same small2 "$D/small2"
want "hpc.log differs" same hpc.log "$D/hpc.log"
finish

begin "-c with several files: concatenated frames decode to the concatenation"
fresh multic small1 small2 hpc.log
run "$GLYD" -c small1 small2 hpc.log; want_rc 0
cp "$CAP/out" all.glyd
cat small1 small2 hpc.log >all.expected
run "$GLYD" -dc all.glyd; want_rc 0
want "decoded concatenation differs" same "$CAP/out" all.expected
want_files small1 small2 hpc.log all.glyd all.expected
finish

begin "-dc with several files writes the concatenation"
fresh multidc small1.glyd small2.glyd
run "$GLYD" -dc small1.glyd small2.glyd; want_rc 0
cat "$D/small1" "$D/small2" >exp
want "decoded output differs" same "$CAP/out" exp
finish

begin "-- ends options: a file named -x.txt"
fresh dd small1
mv small1 ./-x.txt
run "$GLYD" -q -- -x.txt; want_rc 0
want "-x.txt.glyd not created" test -f ./-x.txt.glyd
finish

begin "several files, one missing: the others are done, exit 1"
fresh onemissing small1 small2
run "$GLYD" -q small1 nosuchfile small2; want_rc 1
want_err "nosuchfile"
want "small1.glyd not created" test -f small1.glyd
want "small2.glyd not created" test -f small2.glyd
finish

# --- -k, --rm -----------------------------------------------------------------

begin "input kept by default (compress and decompress)"
fresh keep small1
run "$GLYD" -q small1; want_rc 0
want "small1 removed" test -f small1
mv small1 small1.orig
run "$GLYD" -q -d small1.glyd; want_rc 0
want "small1.glyd removed" test -f small1.glyd
finish

begin "-k keeps the input"
fresh keep2 small1
run "$GLYD" -q -k small1; want_rc 0
want_files small1 small1.glyd
finish

begin "--rm removes the input after compression"
fresh rm small1
run "$GLYD" -q --rm small1; want_rc 0
want_files small1.glyd
run "$GLYD" -dc small1.glyd
want "output does not decode to the input" same "$CAP/out" "$D/small1"
finish

begin "--rm -d removes the .glyd after decompression"
fresh rmd small1.glyd
run "$GLYD" -q --rm -d small1.glyd; want_rc 0
want_files small1
want "decompressed file differs" same small1 "$D/small1"
finish

begin "--rm keeps the input when the output already exists"
fresh rmfail small1 small2
cp small2 small1.glyd
run "$GLYD" -q --rm small1; want_rc 1
want "input removed after a failure" same small1 "$D/small1"
finish

begin "--rm keeps the input when the output cannot be created"
fresh rmfail2 small1
run "$GLYD" -q --rm -o nodir/x.glyd small1; want_rc 1
want_err "nodir/x.glyd"
want_files small1
finish

begin "--rm -d keeps a corrupted input"
fresh rmfail3 corrupt.glyd
run "$GLYD" -q --rm -d corrupt.glyd; want_rc 1
want_files corrupt.glyd
finish

begin "--rm -t never removes the input"
fresh rmt small1.glyd
run "$GLYD" -q --rm -t small1.glyd; want_rc 0
want_files small1.glyd
finish

begin "--rm is ignored with -c (like zstd): the input is kept"
fresh rmc small1
run "$GLYD" --rm -c small1; want_rc 0
want_files small1
finish

# --- overwriting --------------------------------------------------------------

begin "compress refuses to overwrite without -f; the file is unchanged"
fresh ow small1 small2
cp small2 small1.glyd
run "$GLYD" small1; want_rc 1
want_err "already exists"
want "existing small1.glyd changed" same small1.glyd "$D/small2"
want_files small1 small2 small1.glyd
finish

begin "decompress refuses to overwrite without -f; the file is unchanged"
fresh owd small1.glyd small2
cp small2 small1
run "$GLYD" -d small1.glyd; want_rc 1
want_err "already exists"
want "existing small1 changed" same small1 "$D/small2"
finish

begin "-o refuses to overwrite without -f"
fresh owo small1 small2
run "$GLYD" -o small2 small1; want_rc 1
want_err "already exists"
want "small2 changed" same small2 "$D/small2"
finish

begin "-f overwrites (compress)"
fresh owf small1 small2
cp small2 small1.glyd
run "$GLYD" -q -f small1; want_rc 0
run "$GLYD" -dc small1.glyd; want_rc 0
want "overwritten output does not decode to the input" same "$CAP/out" small1
want_files small1 small2 small1.glyd
finish

begin "-f overwrites (decompress)"
fresh owfd small1.glyd small2
cp small2 small1
run "$GLYD" -q -df small1.glyd; want_rc 0
want "overwritten output differs" same small1 "$D/small1"
finish

begin "input and output the same file: refused even with -f, input intact"
fresh samef small1
run "$GLYD" -q -f -o small1 small1; want_rc 1
want_err "same file"
want "input changed" same small1 "$D/small1"
want_files small1
finish

begin "-f -o FIFO writes into the FIFO and does not replace it (special files are written in place)"
fresh fifo small1.glyd
mkfifo sink
exec 4<>sink # a reader, so that writing never blocks
run "$GLYD" -q -d -f -o sink small1.glyd; want_rc 0
want "sink is no longer a FIFO: $(ls -l sink | cut -c1-10)" test -p sink
want_files sink small1.glyd
[ -p sink ] && timeout 5 head -c "$(size_of "$D/small1")" <&4 >got
want "the FIFO did not receive the decompressed data" same got "$D/small1"
exec 4<&-
rm -f got
finish

if [ "$(id -u)" -ne 0 ]; then # as root, a wrong fix could replace /dev/null itself
    expect_ok "-d -o /dev/null is accepted without -f (like zstd)" "$GLYD" -q -d -o /dev/null "$D/small1.glyd"
else
    skip "-d -o /dev/null is accepted without -f (like zstd)" "(not run as root)"
fi

begin "compressing a .glyd file again is refused without -f"
fresh again small1.glyd
run "$GLYD" small1.glyd; want_rc 1
want_err ".glyd"
want_files small1.glyd
finish

# --- decompression names ------------------------------------------------------

begin "-d FILE.glyd writes FILE"
fresh dname alice.txt.glyd
run "$GLYD" -q -d alice.txt.glyd; want_rc 0
want_files alice.txt alice.txt.glyd
want "alice.txt differs" same alice.txt "$D/alice.txt"
finish

begin "-d on a file without the .glyd suffix fails with a clear message"
fresh nosuf frame.bin
run "$GLYD" -d frame.bin; want_rc 1
want_err "suffix"
want_err "frame.bin"
want_files frame.bin
finish

begin "-d -o FILE accepts a file without the suffix"
fresh nosufo frame.bin
run "$GLYD" -q -d -o out frame.bin; want_rc 0
want "out differs" same out "$D/small1"
finish

begin "-d -c accepts a file without the suffix"
fresh nosufc frame.bin
run "$GLYD" -d -c frame.bin; want_rc 0
want "stdout differs" same "$CAP/out" "$D/small1"
want_files frame.bin
finish

begin "--decompress and --uncompress are -d"
fresh longd small1.glyd
run "$GLYD" --decompress -c small1.glyd; want_rc 0
want "--decompress output differs" same "$CAP/out" "$D/small1"
run "$GLYD" --uncompress -c small1.glyd; want_rc 0
want "--uncompress output differs" same "$CAP/out" "$D/small1"
finish

# --- -t -----------------------------------------------------------------------

begin "-t succeeds on a good file and writes nothing"
fresh t alice.txt.glyd logs.log.glyd
run "$GLYD" -t alice.txt.glyd logs.log.glyd; want_rc 0
want_files alice.txt.glyd logs.log.glyd
want "-t wrote to stdout" test ! -s "$CAP/out"
finish

begin "-t fails on a corrupted file and writes nothing"
fresh tc corrupt.glyd
run "$GLYD" -t corrupt.glyd; want_rc 1
want_err "corrupt"
want_files corrupt.glyd
finish

begin "-t fails on a truncated file (message says truncated)"
fresh tt trunc.glyd
run "$GLYD" -t trunc.glyd; want_rc 1
want_err "truncated"
want_files trunc.glyd
finish

begin "-t -T2 fails on a corrupted and on a truncated file"
fresh tt2 corrupt.glyd trunc.glyd
run "$GLYD" -t -T2 corrupt.glyd; want_rc 1
run "$GLYD" -t -T2 trunc.glyd; want_rc 1
want_err "truncated"
want_files corrupt.glyd trunc.glyd
finish

begin "-t fails on a file cut inside the frame header"
fresh th small1.glyd
head -c 10 small1.glyd >cut.glyd
run "$GLYD" -t cut.glyd; want_rc 1
want_err "truncated"
finish

begin "-t with a good and a bad file: exit 1"
fresh tgb small1.glyd corrupt.glyd
run "$GLYD" -q -t small1.glyd corrupt.glyd; want_rc 1
want_err "corrupt.glyd"
finish

begin "-t reads stdin"
fresh tstdin
run with_stdin "$D/small1.glyd" "$GLYD" -t; want_rc 0
want_files
finish

# --- bad input ----------------------------------------------------------------

expect_fail "-d on a non-glyd file: 'not in glyd format'" 1 "not in glyd format" "$GLYD" -dc "$D/alice.txt"
expect_fail "-d on non-glyd stdin: 'not in glyd format'" 1 "not in glyd format" with_stdin "$D/alice.txt" "$GLYD" -d
expect_fail "-d on an empty .glyd file fails" 1 "empty" "$GLYD" -dc "$D/empty"
expect_fail "-d on empty stdin fails" 1 "empty" with_stdin "$D/empty" "$GLYD" -d
expect_fail "-t on an empty file fails" 1 "empty" "$GLYD" -t "$D/empty"

begin "-d rejects trailing garbage after a frame"
fresh garbage small1.glyd
cp small1.glyd g.glyd; printf 'garbage!' >>g.glyd
run "$GLYD" -d g.glyd; want_rc 1
want_files g.glyd small1.glyd
finish

# --- no partial output --------------------------------------------------------

# partial DESC FILE OPTIONS...: decompressing FILE fails and leaves only FILE
partial() {
    local desc=$1 f=$2; shift 2
    begin "no partial output: $desc"
    fresh "partial-$f-$*" "$f"
    run "$GLYD" -q -d "$@" "$f"; want_rc 1
    want_files "$f"
    finish
}
partial "corrupted file" corrupt.glyd
partial "corrupted file, -T2" corrupt.glyd -T2
partial "truncated file" trunc.glyd
partial "truncated file, -T2" trunc.glyd -T2

begin "no partial output: -o FILE after a corrupted input"
fresh partialo corrupt.glyd
run "$GLYD" -q -d -o out corrupt.glyd; want_rc 1
want_files corrupt.glyd
finish

begin "no partial output: SIGTERM during compression removes the temporary file"
fresh sig
mkfifo fifo
"$GLYD" -q -o sig.glyd <fifo >/dev/null 2>"$CAP/err" &
pid=$!
exec 3<>fifo
head -c 30000 "$D/alice.txt" >&3 # less than a pipe holds: never blocks
for _ in $(seq 50); do compgen -G '.sig.glyd.*' >/dev/null && break; sleep 0.1; done
LAST_CMD="glyd -q -o sig.glyd < fifo; kill -TERM"
want "no temporary .sig.glyd.XXXXXX while writing" compgen -G '.sig.glyd.*'
kill -TERM "$pid" 2>/dev/null
wait "$pid"; RC=$?
exec 3>&-
want_rc 143
want_files fifo
finish

# --- missing inputs, directories, bad options ---------------------------------

begin "missing input file: exit 1, one line naming the file"
fresh missing
run "$GLYD" no-such-file.txt; want_rc 1
want_err "no-such-file.txt"
want_err_lines 1
want_files
finish

begin "missing input file with -d: exit 1, names the file"
fresh missingd
run "$GLYD" -d no-such-file.glyd; want_rc 1
want_err "no-such-file.glyd"
want_err_lines 1
finish

begin "a directory as input fails and mentions tar"
fresh dir
mkdir sub
run "$GLYD" sub; want_rc 1
want_err "tar"
want_err_lines 1
want_files sub
finish

begin "-d on a non-glyd file: one line on stderr"
run "$GLYD" -dc "$D/alice.txt"; want_rc 1
want_err_lines 1
finish

begin "-q does not hide errors"
fresh qerr
run "$GLYD" -q no-such-file; want_rc 1
want_err "no-such-file"
want_err_lines 1
finish

expect_fail "-r with -D fails" 1 "dictionary" "$GLYD" -r -D "$D/small1" -c "$D/hpc.log"

begin "-r: a log as columns, smaller than without, any reader decodes it"
fresh records hpc.log
run "$GLYD" -q -3 -o plain.glyd hpc.log; want_rc 0
run "$GLYD" -q -3 -r -o cols.glyd hpc.log; want_rc 0
want "-r did not make the log smaller" test "$(stat -c %s cols.glyd)" -lt "$(stat -c %s plain.glyd)"
run from_pipe cols.glyd "$GLYD" -d -c; want_rc 0
want "piped -d of a records frame differs" same "$CAP/out" hpc.log
run "$GLYD" -d -T2 -c cols.glyd; want_rc 0
want "-d -T2 of a records frame differs" same "$CAP/out" hpc.log
run "$GLYD" -lv cols.glyd; want_rc 0
want_out "records"
finish
expect_fail "unknown long option fails" 1 "unknown option" "$GLYD" --no-such-option "$D/small1"
expect_fail "unknown short option fails" 1 "unknown option" "$GLYD" -y "$D/small1"
expect_fail "level -20 is refused" 1 "-20" "$GLYD" -20 -c "$D/small1"
expect_fail "level -0 is refused" 1 "-0" "$GLYD" -0 -c "$D/small1"
expect_fail "--fast=0 is refused" 1 "--fast" "$GLYD" --fast=0 -c "$D/small1"
expect_fail "--fast=1000 is refused" 1 "--fast" "$GLYD" --fast=1000 -c "$D/small1"
expect_fail "--fast=x is refused" 1 "--fast" "$GLYD" --fast=x -c "$D/small1"
expect_fail "--long=9 is refused" 1 "--long" "$GLYD" --long=9 -c "$D/small1"
expect_fail "--long=x is refused" 1 "--long" "$GLYD" --long=x -c "$D/small1"
expect_fail "-T without a number is refused" 1 "-T" "$GLYD" -T -c "$D/small1"
expect_fail "--threads=x is refused" 1 "threads" "$GLYD" --threads=x -c "$D/small1"
expect_fail "-o without a file name is refused" 1 "-o" "$GLYD" -c "$D/small1" -o
expect_fail "-b0 is refused" 1 "-b" "$GLYD" -b0
expect_fail "-i0 is refused" 1 "-i" "$GLYD" -b1 -i0

begin "bad option: one line on stderr, nothing compressed"
fresh badopt small1
run "$GLYD" --bogus small1; want_rc 1
want_err_lines 1
want_files small1
finish

# --- -l -----------------------------------------------------------------------

begin "-l prints a table with the file name and the ratio"
fresh l alice.txt.glyd
run "$GLYD" -l alice.txt.glyd; want_rc 0
want_out "alice.txt.glyd"
want_out "Ratio"
ratio=$(awk -v a="$(size_of "$D/alice.txt")" -v b="$(size_of alice.txt.glyd)" 'BEGIN { printf "%.3f", a / b }')
want_out " $ratio "
finish

begin "-l with several files: one row each"
fresh l2 alice.txt.glyd small1.glyd
run "$GLYD" -l alice.txt.glyd small1.glyd; want_rc 0
want_out "alice.txt.glyd"
want_out "small1.glyd"
want "expected 3 lines" test "$(wc -l <"$CAP/out")" -eq 3
finish

begin "--list is -l"
run "$GLYD" --list "$D/small1.glyd"; want_rc 0
want_out "small1.glyd"
finish

begin "-lv prints per-frame lines"
fresh lv alice.txt.glyd small1.glyd
cat alice.txt.glyd small1.glyd >two.glyd
run "$GLYD" -lv two.glyd; want_rc 0
want_out "frame 1 at byte 0"
want_out "frame 2 at byte $(size_of alice.txt.glyd)"
want_out "two.glyd"
finish

begin "-l reads stdin"
run with_stdin "$D/small1.glyd" "$GLYD" -l; want_rc 0
want_out_re '[0-9]+\.[0-9]{3}'
finish

expect_fail "-l on a non-glyd file fails" 1 "not in glyd format" "$GLYD" -l "$D/alice.txt"
expect_fail "-l on an empty file fails" 1 "empty" "$GLYD" -l "$D/empty"
expect_fail "-l on a missing file fails, naming it" 1 "no-such.glyd" "$GLYD" -l no-such.glyd

# --- threads, 20 MiB ----------------------------------------------------------

begin "20 MiB: -T2 compress, -T2 -d round trip"
fresh t2 big
run "$GLYD" -q -T2 big; want_rc 0
[ -z "$WHY" ] && rm big
run "$GLYD" -q -T2 -d big.glyd; want_rc 0
want "-T2 round trip differs" same big "$D/big"
finish

begin "20 MiB: -T0 compress, -T0 -d round trip"
fresh t0 big
run "$GLYD" -q -T0 -o big.t0.glyd big; want_rc 0
run "$GLYD" -q -T0 -d -o back big.t0.glyd; want_rc 0
want "-T0 round trip differs" same back "$D/big"
finish

begin "20 MiB: --threads=2 -c and -T2 -dc"
fresh t2c big
run "$GLYD" --threads=2 -c big; want_rc 0
mv "$CAP/out" big.glyd
run "$GLYD" -T2 -dc big.glyd; want_rc 0
want "--threads=2 / -T2 -dc output differs" same "$CAP/out" "$D/big"
finish

begin "20 MiB: default (one thread) compress and -d round trip"
fresh t1 big
run "$GLYD" -q big; want_rc 0
[ -z "$WHY" ] && rm big
run "$GLYD" -q -d big.glyd; want_rc 0
want "round trip differs" same big "$D/big"
want_files big big.glyd
finish

begin "20 MiB: -T2 compressed file decodes with plain -d (one thread)"
fresh t2d1 big
run "$GLYD" -q -T2 -o big.glyd big; want_rc 0
run "$GLYD" -dc big.glyd; want_rc 0
want "plain -d output differs" same "$CAP/out" "$D/big"
finish

begin "20 MiB: -t on a -T2 compressed file (one thread)"
fresh t2t big
run "$GLYD" -q -T2 -o big.glyd big; want_rc 0
run "$GLYD" -t big.glyd; want_rc 0
finish

begin "20 MiB: -T2 -d from a pipe (streaming)"
fresh t2pipe big
run "$GLYD" -q -T2 -o big.glyd big; want_rc 0
run from_pipe big.glyd "$GLYD" -T2 -d; want_rc 0
want "piped -T2 -d output differs" same "$CAP/out" "$D/big"
finish

begin "20 MiB from a pipe (size unknown): compress and -T2 -d"
fresh bigstdin
run from_pipe "$D/big" "$GLYD" -T2 -q -o big.glyd; want_rc 0
run "$GLYD" -T2 -dc big.glyd; want_rc 0
want "output differs" same "$CAP/out" "$D/big"
finish

# --- benchmark ----------------------------------------------------------------

begin "-b1 -i1 prints a benchmark line with a ratio"
fresh b
run "$GLYD" -b1 -i1; want_rc 0
want_out_re '1#.*\( *[0-9]+\.[0-9]{3}\)'
want_out "MB/s"
finish

begin "-b1 -i1 FILE benchmarks the file"
fresh bf
run "$GLYD" -b1 -i1 "$D/alice.txt"; want_rc 0
want_out_re "1#alice\\.txt +$(size_of "$D/alice.txt") -> +[0-9]+ \\( *[0-9]+\\.[0-9]{3}\\)"
finish

expect_fail "-b1 on a missing file fails" 1 "no-such-file" "$GLYD" -b1 -i1 no-such-file

# --- verbosity ----------------------------------------------------------------

begin "-v prints a summary line on stderr (compress)"
fresh v small1
run "$GLYD" -v small1; want_rc 0
want_err "small1"
want_err "%"
want_err_lines 1
want "-v wrote to stdout" test ! -s "$CAP/out"
finish

begin "-v prints a summary line on stderr (decompress, test)"
fresh vd small1.glyd
run "$GLYD" -v -d small1.glyd; want_rc 0
want_err "small1.glyd"
want_err_lines 1
run "$GLYD" -v -t small1.glyd; want_rc 0
want_err "OK"
want_err_lines 1
finish

begin "-q prints nothing on success"
fresh q small1
run "$GLYD" -q small1; want_rc 0
want_quiet
run "$GLYD" -q -d -f small1.glyd; want_rc 0
want_quiet
run "$GLYD" -q -t small1.glyd; want_rc 0
want_quiet
finish

# --- help, version ------------------------------------------------------------

begin "-h prints help on stdout, exit 0, mentions tar"
run "$GLYD" -h; want_rc 0
want_out "tar"
want_out "Usage"
finish

begin "--help prints help, exit 0, mentions tar"
run "$GLYD" --help; want_rc 0
want_out "tar"
finish

version=$(sed -n 's/^#define GLYD_VERSION_STRING "\(.*\)"/\1/p' "$REPO/include/glyd.h" 2>/dev/null)
begin "-V prints the version"
run "$GLYD" -V; want_rc 0
want_out_re '^glyd [0-9]+\.[0-9]+\.[0-9]+'
[ -n "$version" ] && want_out "glyd $version"
finish

begin "--version prints the version"
run "$GLYD" --version; want_rc 0
want_out_re '^glyd [0-9]+\.[0-9]+\.[0-9]+'
[ -n "$version" ] && want_out "glyd $version"
finish

# --- terminals ----------------------------------------------------------------

# in_tty CMD: runs the shell line CMD with a terminal as stdin, stdout and stderr
in_tty() { SHELL=$BASH timeout 60 script -qec "$1" /dev/null; }
if command -v script >/dev/null 2>&1 && SHELL=$BASH script -qec true /dev/null >/dev/null 2>&1; then
    qg=$(printf %q "$GLYD")

    begin "refuses to write compressed data to a terminal"
    fresh tty1 small1
    run in_tty "$qg -c small1"; want_rc 1
    want_out "terminal"
    want_files small1
    finish

    begin "refuses to read data to compress from a terminal"
    fresh tty2
    run in_tty "$qg -o x.glyd"; want_rc 1
    want_out "terminal"
    want_files
    finish

    begin "-d refuses to read compressed data from a terminal"
    fresh tty3
    run in_tty "$qg -d -o x"; want_rc 1
    want_out "terminal"
    want_files
    finish

    begin "-q on a terminal prints nothing on success"
    fresh tty4 small1
    run in_tty "$qg -q small1"; want_rc 0
    want "output on the terminal: $(head -c 200 "$CAP/out" | tr '\r\n' '||')" test ! -s "$CAP/out"
    finish
else
    skip "refuses to write compressed data to a terminal" "(script not available)"
    skip "refuses to read data to compress from a terminal" "(script not available)"
    skip "-d refuses to read compressed data from a terminal" "(script not available)"
    skip "-q on a terminal prints nothing on success" "(script not available)"
fi

# --- permissions and times ----------------------------------------------------

begin "output keeps the input's permissions (600)"
fresh perm small1
chmod 600 small1
run "$GLYD" -q small1; want_rc 0
want "small1.glyd has mode $(mode_of small1.glyd 2>/dev/null), expected 600" test "$(mode_of small1.glyd)" = 600
mv small1 orig
run "$GLYD" -q -d small1.glyd; want_rc 0
want "decompressed small1 has mode $(mode_of small1 2>/dev/null), expected 600" test "$(mode_of small1)" = 600
finish

begin "output keeps the input's permissions (640)"
fresh perm2 small1
chmod 640 small1
run "$GLYD" -q -o out.glyd small1; want_rc 0
want "out.glyd has mode $(mode_of out.glyd 2>/dev/null), expected 640" test "$(mode_of out.glyd)" = 640
finish

begin "output keeps the input's modification time"
fresh mtime small1
touch -d '2001-02-03 04:05:06' small1
run "$GLYD" -q small1; want_rc 0
want "small1.glyd mtime $(stat -c %Y small1.glyd 2>/dev/null) != $(stat -c %Y small1)" \
    test "$(stat -c %Y small1.glyd)" = "$(stat -c %Y small1)"
finish

begin "output from stdin gets the default mode (0666 & ~umask = 644)"
fresh permstdin
run with_stdin "$D/small1" "$GLYD" -q -o s.glyd; want_rc 0
want "s.glyd has mode $(mode_of s.glyd 2>/dev/null), expected 644" test "$(mode_of s.glyd)" = 644
run with_stdin s.glyd "$GLYD" -q -d -o s; want_rc 0
want "decompressed s has mode $(mode_of s 2>/dev/null), expected 644" test "$(mode_of s)" = 644
finish

# --- concatenation, skippable frames --------------------------------------------

begin "cat a.glyd b.glyd decodes to the concatenation"
fresh cat small1.glyd alice.txt.glyd
cat small1.glyd alice.txt.glyd >both.glyd
cat "$D/small1" "$D/alice.txt" >exp
run "$GLYD" -dc both.glyd; want_rc 0
want "decoded concatenation differs" same "$CAP/out" exp
run "$GLYD" -T2 -dc both.glyd; want_rc 0
want "decoded concatenation differs with -T2" same "$CAP/out" exp
finish

begin "a skippable frame between frames is ignored by -d"
fresh skip small1.glyd small2.glyd
cp small1.glyd sk.glyd
skippable sk.glyd "some metadata"
cat small2.glyd >>sk.glyd
cat "$D/small1" "$D/small2" >exp
run "$GLYD" -q -d sk.glyd; want_rc 0
want "decoded sk differs" same sk exp
run "$GLYD" -T2 -dc sk.glyd; want_rc 0
want "decoded sk differs with -T2" same "$CAP/out" exp
run with_stdin sk.glyd "$GLYD" -d; want_rc 0
want "decoded sk differs from stdin" same "$CAP/out" exp
run "$GLYD" -t sk.glyd; want_rc 0
finish

begin "-l counts a skippable frame"
fresh skipl small1.glyd small2.glyd
cp small1.glyd sk.glyd
skippable sk.glyd "abc"
cat small2.glyd >>sk.glyd
run "$GLYD" -l sk.glyd; want_rc 0
want_out_re '^ +2 +1 .*sk\.glyd$'
run "$GLYD" -lv sk.glyd; want_rc 0
want_out "skippable"
finish

begin "an empty-content frame in a concatenation"
fresh catempty empty.glyd small1.glyd
cat empty.glyd small1.glyd empty.glyd >x.glyd
run "$GLYD" -dc x.glyd; want_rc 0
want "decoded output differs" same "$CAP/out" "$D/small1"
finish

# --- checksums ----------------------------------------------------------------

begin "--no-check: output 8 bytes smaller, round trips"
fresh nocheck alice.txt
run "$GLYD" -q -o with.glyd alice.txt; want_rc 0
run "$GLYD" -q --no-check -o without.glyd alice.txt; want_rc 0
want "with checksum $(size_of with.glyd 2>/dev/null) bytes, without $(size_of without.glyd 2>/dev/null)" \
    test "$(size_of without.glyd)" -eq $(($(size_of with.glyd) - 8))
run "$GLYD" -dc without.glyd; want_rc 0
want "--no-check output does not decode to the input" same "$CAP/out" alice.txt
run "$GLYD" -l without.glyd; want_rc 0
want_out "none"
finish

begin "a damaged checksum fails -d; -d --no-check skips the check"
fresh badck small2.glyd
flip_byte small2.glyd $(($(size_of small2.glyd) - 3))
run "$GLYD" -dc small2.glyd; want_rc 1
want_err "checksum"
run "$GLYD" -dc -T2 small2.glyd; want_rc 1
want_err "checksum"
run "$GLYD" -dc --no-check small2.glyd; want_rc 0
want "--no-check output differs" same "$CAP/out" "$D/small2"
finish

# --- progress -----------------------------------------------------------------

begin "--progress shows percentage and speed on stderr; output still correct"
fresh prog big
run "$GLYD" -9 --progress -o big.glyd big; want_rc 0
want_err "%"
want_err "MB/s"
run "$GLYD" -dc big.glyd; want_rc 0
want "output of --progress run does not decode to the input" same "$CAP/out" "$D/big"
finish

begin "no progress when stderr is not a terminal (and with --no-progress)"
fresh noprog big
run "$GLYD" -9 -o big.glyd big; want_rc 0
want_quiet
run "$GLYD" -9 --no-progress -f -o big.glyd big; want_rc 0
want_quiet
finish

# --- packed models --------------------------------------------------------------

FIX=$REPO/../shared/fixtures/stories260K
if [ -r "$FIX/model.safetensors" ]; then
    begin "pack, info, verify, unpack: the fixture folder comes back byte for byte"
    fresh pack1
    cp -r "$FIX" model && chmod -R u+w model
    run "$GLYD" pack model -o m.glyd; want_rc 0
    want "m.glyd does not start with the packed-model magic" test "$(head -c 8 m.glyd | od -An -tx1 | tr -d ' ')" = "f8474c595041434b"
    run "$GLYD" info m.glyd; want_rc 0
    want_out "embeddings"; want_out "bits/w"; want_out "total"
    run "$GLYD" info --json m.glyd; want_rc 0
    want_out '"bits_per_weight"'
    run "$GLYD" verify m.glyd model; want_rc 0
    want_out "match"
    run "$GLYD" unpack m.glyd -o out; want_rc 0
    want "unpacked folder differs from the source" diff -r model out
    finish

    begin "verify names the tensor that differs, and missing files"
    fresh pack2
    cp -r "$FIX" model && chmod -R u+w model
    run "$GLYD" pack -q model -o m.glyd; want_rc 0
    # a byte inside the last layer's weights (offset from the fixture's header)
    printf '\x55' | dd of=model/model.safetensors bs=1 seek=500000 conv=notrunc 2>/dev/null
    run "$GLYD" verify m.glyd model; want_rc 1
    want_out "DIFFERS"; want_out "model.safetensors"; want_out "model.layers"
    rm model/config.json
    run "$GLYD" verify m.glyd model; want_rc 1
    want_out "MISSING  config.json"
    finish

    begin "pack and unpack refuse to overwrite without -f; errors are one line"
    fresh pack3
    cp -r "$FIX" model && chmod -R u+w model
    run "$GLYD" pack -q model -o m.glyd; want_rc 0
    run "$GLYD" pack model -o m.glyd; want_rc 1
    want_err "already exists"; want_err_lines 1
    run "$GLYD" pack -q -f model -o m.glyd; want_rc 0
    run "$GLYD" unpack -q m.glyd -o out; want_rc 0
    run "$GLYD" unpack m.glyd -o out; want_rc 1
    want_err "already exists"
    run "$GLYD" unpack -q -f m.glyd -o out; want_rc 0
    run "$GLYD" pack no-such-model; want_rc 1
    want_err "no-such-model"; want_err_lines 1
    run "$GLYD" unpack model/config.json -o x; want_rc 1
    want_err "not a packed model"
    head -c 3000 m.glyd > cut.glyd
    run "$GLYD" info cut.glyd; want_rc 1
    want_err "truncated"; want_err_lines 1
    finish

    begin "a broken safetensors file stops pack, naming the file"
    fresh pack4
    mkdir model && printf '\x10\0\0\0\0\0\0\0{"x": 1}       ' > model/bad.safetensors
    run "$GLYD" pack model -o m.glyd; want_rc 1
    want_err "bad.safetensors"; want_err_lines 1
    want "no partial packed file" test ! -e m.glyd
    finish

    begin "glyd FILE.safetensors uses the tensor codec; -d and -t restore it exactly"
    fresh pack5
    cp "$FIX/model.safetensors" w.safetensors && chmod 644 w.safetensors
    run "$GLYD" -q w.safetensors; want_rc 0
    want "output is not a packed model" test "$(head -c 8 w.safetensors.glyd | od -An -tx1 | tr -d ' ')" = "f8474c595041434b"
    want "not about 2/3 of the input" test "$(size_of w.safetensors.glyd)" -lt $(( $(size_of w.safetensors) * 3 / 4 ))
    mv w.safetensors orig.safetensors
    run "$GLYD" -q -t w.safetensors.glyd; want_rc 0
    run "$GLYD" -q -d w.safetensors.glyd; want_rc 0
    want "restored file differs" same w.safetensors orig.safetensors
    finish

    # --- glyd run: the engine ------------------------------------------------------

    TOKENS="1 461 461 401 401 401 461 378 455 473 456 446 458 390 430 435"
    begin "run: logits from the folder and from the packed model are the same bytes"
    fresh run1
    run "$GLYD" pack -q "$FIX" -o m.glyd; want_rc 0
    run "$GLYD" run "$FIX" --tokens "$TOKENS" --dump-logits a.f32 --kv-dtype f32 -T2; want_rc 0
    want_quiet
    run "$GLYD" run m.glyd --tokens "$TOKENS" --dump-logits b.f32 --kv-dtype f32 -T1; want_rc 0
    run "$GLYD" run "$FIX" --plain --exact --tokens "$TOKENS" --dump-logits c.f32 --kv-dtype f32; want_rc 0
    want "logits file is not [16][512] floats" test "$(size_of a.f32)" -eq $((16 * 512 * 4))
    want "packed model gives other logits" same a.f32 b.f32
    want "plain weights give other logits" same a.f32 c.f32
    run "$GLYD" run m.glyd --compact --tokens "$TOKENS" --dump-logits d.f32 --kv-dtype f32; want_rc 0
    want "compact weights give other logits" same a.f32 d.f32
    run "$GLYD" pack -q --fast-layout "$FIX" -o f.glyd; want_rc 0
    run "$GLYD" run f.glyd --tokens "$TOKENS" --dump-logits e.f32 --kv-dtype f32; want_rc 0
    want "a model packed in the fast layout gives other logits" same a.f32 e.f32
    for bits in 3 4; do
        run "$GLYD" run f.glyd --code-bits $bits --tokens "$TOKENS" --dump-logits g$bits.f32 --kv-dtype f32; want_rc 0
        want "$bits-bit fast codes give other logits" same a.f32 g$bits.f32
    done
    run "$GLYD" run "$FIX" --plain --bf16-prompts --tokens "$TOKENS" --dump-logits h.f32 --kv-dtype f32; want_rc 0
    run "$GLYD" run m.glyd --bf16-prompts --tokens "$TOKENS" --dump-logits i.f32 --kv-dtype f32; want_rc 0
    want "prompts in bf16 pairs: the packed model gives other logits than plain weights" same h.f32 i.f32
    # one token: a token's products, as decoding runs them
    run "$GLYD" run "$FIX" --plain --bf16-decode --tokens 7 --dump-logits j.f32 -n 12; want_rc 0
    cp "$CAP/out" plain-tokens
    run "$GLYD" run f.glyd --bf16-decode --tokens 7 --dump-logits k.f32 -n 12; want_rc 0
    want "decoding in bf16 pairs: the packed model gives other logits than plain weights" same j.f32 k.f32
    want "decoding in bf16 pairs: the packed model continues otherwise than plain weights" same "$CAP/out" plain-tokens
    run "$GLYD" run f.glyd --code-bits 5 --tokens "$TOKENS"; want_rc 1
    want_err "--code-bits: expected a whole number in 3..4"
    run "$GLYD" run m.glyd -v --tokens "1" -n 3; want_rc 0
    want_err "LlamaForCausalLM"; want_err "bf16"
    want_out_re '^[0-9]+ [0-9]+ [0-9]+$'
    finish

    begin "run: --kv lossless gives the bf16 cache's logits and says what the cache holds"
    fresh run-kv
    LONG="$TOKENS $TOKENS $TOKENS $TOKENS $TOKENS"
    run "$GLYD" run "$FIX" --tokens "$LONG" --dump-logits a.f32 -T2; want_rc 0
    run "$GLYD" run "$FIX" --kv lossless --tokens "$LONG" --dump-logits b.f32 -T2 -v; want_rc 0
    want "a lossless cache gives other logits than bf16's" same a.f32 b.f32
    want "-v does not say what the cache holds against bf16" \
        grep -qE 'KV cache .* for the 80 positions run, [0-9.]+% of their .* in bf16' "$CAP/err"
    run "$GLYD" run "$FIX" --kv lossless --tokens "$TOKENS" -n 20 -T1; want_rc 0
    cp "$CAP/out" lossless-tokens
    run "$GLYD" run "$FIX" --kv bf16 --tokens "$TOKENS" -n 20 -T1; want_rc 0
    want "a lossless cache continues otherwise than bf16's" same "$CAP/out" lossless-tokens
    run "$GLYD" run "$FIX" --kv f16 --tokens "$TOKENS"; want_rc 1
    want_err "--kv: expected bf16, lossless or f32, got f16"
    run "$GLYD" run "$FIX" --kv lossless --gpu=emulated --tokens "$TOKENS"; want_rc 1
    want_err "on the CPU"
    finish

    if command -v python3 >/dev/null; then
        begin "run --chunked-prompts: Qwen3.5's prompt in blocks, near the recurrence's logits, not its bits"
        fresh run4
        Q35TOKENS=$(seq 0 39 | awk '{ printf "%d ", ($1 * 53 + 7) % 256 }')
        run "$GLYD" run "$REPO/tests/data/tiny-qwen3-5" --tokens "$Q35TOKENS" --dump-logits a.f32; want_rc 0
        run "$GLYD" run "$REPO/tests/data/tiny-qwen3-5" --chunked-prompts --tokens "$Q35TOKENS" --dump-logits b.f32
        want_rc 0
        want "chunked logits are not [40][256] floats near the recurrence's, or are its bits" python3 -c "
import struct, sys
a, b = open('a.f32', 'rb').read(), open('b.f32', 'rb').read()
if len(a) != 40 * 256 * 4 or len(b) != len(a): sys.exit(1)
a, b = struct.unpack('<10240f', a), struct.unpack('<10240f', b)
sys.exit(0 if a != b and max(abs(x - y) for x, y in zip(a, b)) < 1e-5 else 1)"
        finish
    else
        skip "run --chunked-prompts: Qwen3.5's prompt in blocks, near the recurrence's logits, not its bits" "no python3"
    fi

    begin "run --gpu: the GPU backend (emulated) gives the same logits for coded (both layouts) and plain weights"
    fresh run3
    run "$GLYD" run "$FIX" --gpu=emulated --tokens "$TOKENS" --dump-logits a.f32 --kv-dtype f32; want_rc 0
    run "$GLYD" run "$FIX" --gpu=emulated --plain --exact --tokens "$TOKENS" --dump-logits b.f32 --kv-dtype f32; want_rc 0
    want "logits file is not [16][512] floats" test "$(size_of a.f32)" -eq $((16 * 512 * 4))
    want "plain weights give other logits on the GPU backend" same a.f32 b.f32
    run "$GLYD" run "$FIX" --gpu=emulated -v --tokens "1" -n 3; want_rc 0
    want_err "in GPU memory"
    run "$GLYD" run "$FIX" --gpu=emulated --compact --tokens "$TOKENS" --dump-logits c.f32 --kv-dtype f32; want_rc 0
    want "the entropy layout gives other logits on the GPU backend" same a.f32 c.f32
    # CUDA: on a machine without a GPU (or without libglyd_cuda.so), a reason
    if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then
        run "$GLYD" run "$FIX" --gpu --tokens "1"; want_rc 1
        want_err "no GPU"
    fi
    finish

    if command -v python3 >/dev/null; then
        begin "run: greedy continuation from BOS is the reference's"
        fresh run2
        run "$GLYD" run "$FIX" --tokens 1 -n 183 --kv-dtype f32; want_rc 0
        cp "$CAP/out" got.txt
        want "greedy tokens differ from reference.json" python3 -c "
import json, sys
ref = json.load(open('$FIX/reference.json'))['greedy_from_bos']
got = [int(x) for x in open('got.txt').read().split()]
sys.exit(0 if got == ref[1:] else 1)"
        finish
    else
        skip "run: greedy continuation from BOS is the reference's" "no python3"
    fi

    # the chat through a pseudo-terminal (python3's pty module)
    if command -v python3 >/dev/null; then
        fresh chat
        while IFS= read -r line; do
            case "$line" in
                "ok - "*) ok "${line#ok - }" ;;
                "FAIL - "*) bad "${line#FAIL - }" "see above" ;;
                *) echo "# $line" ;;
            esac
        done < <(timeout 600 python3 "$REPO/tests/cli/chat_pty.py" "$GLYD" "$FIX" "$PWD" 2>&1)
    else
        skip "chat through a pseudo-terminal" "no python3"
    fi

    begin "run: clear one-line errors, no partial logits file"
    fresh run3
    run "$GLYD" run nowhere --tokens 1; want_rc 1
    want_err "nowhere"; want_err_lines 1
    mkdir gpt && cp "$FIX/model.safetensors" gpt/ && sed 's/LlamaForCausalLM/GPT2LMHeadModel/' "$FIX/config.json" > gpt/config.json
    run "$GLYD" run gpt --tokens 1; want_rc 1
    want_err "GPT2LMHeadModel"; want_err_lines 1
    run "$GLYD" run "$FIX" --tokens "1 512" --dump-logits x.f32; want_rc 1
    want_err "vocabulary"; want_err_lines 1
    want "a logits file was written" test ! -e x.f32
    run "$GLYD" run "$FIX" --tokens "1 x"; want_rc 1
    want_err "token id"
    run "$GLYD" run "$FIX" --kv-dtype f16 --tokens 1; want_rc 1
    want_err "kv-dtype"
    run "$GLYD" run "$FIX"; want_rc 1
    want_err "tokenizer.json"; want_err "--tokens"; want_err_lines 1
    finish
else
    skip "packed models" "fixtures missing"
fi

QWEN=$REPO/../shared/fixtures/qwen3-tokenizer
if [ -r "$QWEN/tokenizer.json" ]; then
    begin "tokenize: alice29.txt gives the reference ids, from the folder and a packed model"
    fresh tok1
    run "$GLYD" tokenize "$QWEN" --file "$REPO/../shared/corpus/text/alice29.txt"; want_rc 0
    tr -s ' \n' '  ' < "$CAP/out" > got.ids
    tr -s ' \n' '  ' < "$QWEN/alice29.ids" > want.ids
    want "ids differ from alice29.ids" same got.ids want.ids
    want "not one line" test "$(wc -l < "$CAP/out")" -eq 1
    run "$GLYD" pack -q "$QWEN" -o q.glyd; want_rc 0
    printf '<|im_start|>user\nHello, my dog is cute<|im_end|>' > chat.txt
    run "$GLYD" tokenize q.glyd --file chat.txt; want_rc 0
    want_out_re '^151644 872 198 9707 11 847 5562 374 18838 151645$'
    finish

    begin "tokenize: one-line errors"
    fresh tok2
    printf 'a\377b' > bad.txt
    run "$GLYD" tokenize "$QWEN" --file bad.txt; want_rc 1
    want_err "UTF-8"; want_err_lines 1
    run "$GLYD" tokenize "$FIX" --file bad.txt; want_rc 1
    want_err "tokenizer.json"; want_err_lines 1
    run "$GLYD" tokenize "$QWEN" --file missing.txt; want_rc 1
    want_err "missing.txt"; want_err_lines 1
    finish
else
    skip "tokenize" "fixtures missing"
fi

cd "$W" || exit 1
echo "# run time: $(($(date +%s) - start)) s"
summary_and_exit
