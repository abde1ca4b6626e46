# SPDX-License-Identifier: BSD-3-Clause
# tests/cli/testlib.sh: what the CLI suites share, sourced by each: the
# counts and their closing "N passed, N failed" line, running a command with
# its outputs kept in $CAP/out and $CAP/err, and checks that record the
# first failure of a test (begin ... want_* ... finish). A suite defines
# $CAP, and $GLYD for the name its failure messages show as "glyd".

PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); echo "ok - $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL - $1 ($2)"; }
skip() { PASS=$((PASS + 1)); echo "ok - $1 # skip $2"; }
summary_and_exit() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ]
    exit $?
}

# A command as a shell line, glyd named "glyd", for failure messages.
fmt_cmd() {
    local s="" a redir=""
    if [ "$1" = with_stdin ]; then redir=" < $(printf %q "$2")"; shift 2; fi
    if [ "$1" = from_pipe ]; then s="cat $(printf %q "$2") |"; shift 2; fi
    for a in "$@"; do
        [ "$a" = "$GLYD" ] && a=glyd
        s+="${s:+ }$(printf %q "$a")"
    done
    printf '%s%s' "$s" "$redir"
}

# run CMD...: runs in the current directory; sets RC, LAST_CMD and leaves the
# outputs in $CAP/out and $CAP/err.
run() {
    LAST_CMD=$(fmt_cmd "$@")
    # in a subshell that is not replaced by the command, so that a crash
    # ("Segmentation fault") is reported in $CAP/err
    ( "$@"; exit $? ) >"$CAP/out" 2>"$CAP/err"
    RC=$?
}

errtxt() { head -c 400 "$CAP/err" | tr '\n' '|' | sed 's/|$//'; }

# begin DESC; checks (want_*) record the first failure; finish reports.
begin() { T=$1; WHY=""; }
finish() { if [ -z "$WHY" ]; then ok "$T"; else bad "$T" "$WHY"; fi; }
want_rc() {
    [ -n "$WHY" ] && return
    [ "$RC" -eq "$1" ] || WHY="exit $RC, expected $1; cmd: $LAST_CMD; stderr: $(errtxt)"
}

want() { # want MESSAGE CMD...: CMD must succeed
    local msg=$1; shift
    [ -n "$WHY" ] && return
    "$@" >/dev/null 2>&1 || WHY="$msg; after: $LAST_CMD"
}

# want_files NAME...: the current folder holds exactly these (hidden ones too)
want_files() {
    [ -n "$WHY" ] && return
    local have want
    have=$(ls -A | LC_ALL=C sort | tr '\n' ' ')
    want=""
    [ $# -gt 0 ] && want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
    [ "$have" = "$want" ] || WHY="folder holds [${have% }], expected [${want% }]; after: $LAST_CMD"
}

# want_files_in DIR NAME...: the same for the folder DIR
want_files_in() {
    local dir=$1; shift
    pushd "$dir" >/dev/null || { WHY="${WHY:-$dir is missing; after: $LAST_CMD}"; return; }
    want_files "$@"
    popd >/dev/null || exit 1
}

size_of() { stat -c %s "$1"; }
same() { cmp -s "$1" "$2"; }
differs() { ! cmp -s "$1" "$2"; }
# flip_byte FILE OFFSET: inverts the byte at OFFSET
flip_byte() {
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "\\$(printf %03o $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
