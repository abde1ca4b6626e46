#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/deps.sh: what the build needs, checked or installed.
#
#   tools/deps.sh check
#       Builds and links a small program against each library the build
#       uses (with the build's CC, CPPFLAGS and LDFLAGS, so it works off
#       Debian too) and names what is missing, with the Debian install line.
#       Installs nothing: plain `make` runs this.
#   tools/deps.sh build|test|bench|fuzz|valgrind|demo|cudacpu|go|all
#       Installs the Debian packages that task needs, where missing: as root
#       through apt-get, otherwise through sudo where it needs no password,
#       and else prints the command to run and fails. `make test`, `make
#       demo` and the other task targets run this.
set -eu

# library  header  link flag  Debian package (what check probes)
probes=(
    "xxhash|xxhash.h|-lxxhash|libxxhash-dev"
    "jansson|jansson.h|-ljansson|libjansson-dev"
    "pcre2|pcre2.h|-lpcre2-8|libpcre2-dev"
    "utf8proc|utf8proc.h|-lutf8proc|libutf8proc-dev"
)

check() {
    local cc=${CC:-cc} dir missing=() packages=() entry name header flag package
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "glyd: cannot build: no C compiler ($cc); on Debian or Ubuntu: sudo apt-get install gcc make" >&2
        return 1
    fi
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' RETURN
    for entry in "${probes[@]}"; do
        IFS='|' read -r name header flag package <<<"$entry"
        printf '#define PCRE2_CODE_UNIT_WIDTH 8\n#include <%s>\nint main(void) { return 0; }\n' "$header" \
            > "$dir/probe.c"
        # CPPFLAGS and LDFLAGS are word lists by design
        # shellcheck disable=SC2086
        if ! "$cc" ${CPPFLAGS:-} "$dir/probe.c" -o "$dir/probe" ${LDFLAGS:-} "$flag" >/dev/null 2>&1; then
            missing+=("$name ($header, $flag)")
            packages+=("$package")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local list
    list=$(printf ', %s' "${missing[@]}")
    echo "glyd: cannot build: missing ${list:2}" >&2
    echo "glyd: on Debian or Ubuntu: sudo apt-get install ${packages[*]}" >&2
    echo "glyd: elsewhere, install those libraries, or point CPPFLAGS and LDFLAGS at them" >&2
    return 1
}

build=(gcc make libc6-dev libxxhash-dev libjansson-dev libpcre2-dev libutf8proc-dev)
test=("${build[@]}" bsdutils python3 python3-venv python3-dev pkg-config binutils golang-go)
bench=("${build[@]}" libzstd-dev liblz4-dev libsnappy-dev libbrotli-dev liblzma-dev gnuplot-nox zstd)
fuzz=("${build[@]}" clang libclang-rt-14-dev)
valgrind=("${build[@]}" valgrind)
demo=("${build[@]}" zstd)
cudacpu=("${build[@]}" g++)
go=("${build[@]}" golang-go)

case "${1:-check}" in
    check) check; exit ;;
    build) want=("${build[@]}") ;;
    test) want=("${test[@]}") ;;
    bench) want=("${bench[@]}") ;;
    fuzz) want=("${fuzz[@]}") ;;
    valgrind) want=("${valgrind[@]}") ;;
    demo) want=("${demo[@]}") ;;
    cudacpu) want=("${cudacpu[@]}") ;;
    go) want=("${go[@]}") ;;
    all) want=("${test[@]}" "${bench[@]}" "${fuzz[@]}" "${valgrind[@]}" "${cudacpu[@]}") ;;
    *) echo "usage: tools/deps.sh check|build|test|bench|fuzz|valgrind|demo|cudacpu|go|all" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# one entry per package
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
elif sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "glyd: missing packages; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
