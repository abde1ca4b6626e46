#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# go/test.sh: the Go module's checks against one build folder: gofmt, go
# vet and go test (the package's tests and examples, one line each), with
# nothing fetched and the Go caches under BUILD_DIR/go. Closes with "N
# passed, N failed", as every suite of tests/run.sh does.
#
#   go/test.sh BUILD_DIR     (default: build; libglyd.a and glyd built)
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$REPO/build}" && pwd) || exit 1
passed=0
failed=0
result() { # result NAME STATUS
    if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "FAIL - $1"; fi
}

if ! command -v go >/dev/null 2>&1; then
    echo "FAIL - go test (no go command; on Debian or Ubuntu: sudo apt-get install golang-go)"
    echo "0 passed, 1 failed"
    exit 1
fi

# Hermetic: no module proxy, no toolchain download, no user settings.
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOENV=off GOWORK=off GOTELEMETRY=off CGO_ENABLED=1
export GOCACHE=$BUILD/go/cache GOPATH=$BUILD/go/path GOMODCACHE=$BUILD/go/path/pkg/mod
export GLYD_CLI=$BUILD/glyd
tags=()
if [ "$BUILD" != "$REPO/build" ]; then
    # link_tree.go names build/; another folder comes through the environment
    tags=(-tags glyd_external)
    export CGO_CFLAGS="-I$REPO/include" CGO_LDFLAGS="$BUILD/libglyd.a -lxxhash -lpthread -lm"
fi
cd "$REPO/go" || exit 1

unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || echo "gofmt would change: $unformatted"
result "gofmt" "$([ -z "$unformatted" ] && echo 0 || echo 1)"
go vet "${tags[@]}" ./...
result "go vet" $?

# The package links the codec alone: nothing of libglyd-llm or its libraries.
bin=$(mktemp -d)
if go test "${tags[@]}" -c -o "$bin/glyd.test" . && [ -s "$bin/glyd.test" ]; then
    llm=$(nm "$bin/glyd.test" | grep -E ' (glyd_llm|glyd_model|glyd_tokenizer|glyd_packModel|json_|pcre2_|utf8proc_)' |
        head -n 3 | tr '\n' ' ')
    [ -z "$llm" ] || echo "the test binary holds: $llm"
    result "the package links libglyd alone" "$([ -z "$llm" ] && echo 0 || echo 1)"
else
    result "the package links libglyd alone" 1
fi
rm -rf "$bin"

# -count=1: cached results would not see a rebuilt libglyd.a
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test "${tags[@]}" -count=1 -timeout 15m -v ./... 2>&1 | tee "$log" | grep -vE '^(=== (RUN|PAUSE|CONT)|PASS$)'
status=${PIPESTATUS[0]}
ok=$(grep -cE '^ *--- (PASS|SKIP):' "$log")
bad=$(grep -cE '^ *--- FAIL:' "$log")
passed=$((passed + ok))
failed=$((failed + bad))
if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
    echo "FAIL - go test exited $status with no failed test (a build error, a panic or a timeout)"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
